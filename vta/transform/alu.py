"""AnnotateALUCoProcScope and InjectALUIntrin: ``alu`` stages -> ALU micro-op kernels.

Reference tvm-vta-software.md 2.4.

*AnnotateALUCoProcScope* (phase 1) wraps every ``pragma_alu`` region in ``coproc_scope = 2``
and ``coproc_uop_scope = "VTAPushALUOp"`` (a fresh string each time, so two ALU kernels never
merge), keeping the pragma inside; ``pragma_skip_alu`` (mock environments) becomes a no-op.

*InjectALUIntrin* (phase 2, after SRAM allocation) turns the loop nest under ``pragma_alu``
into ``VTAUopLoopBegin``/``tir.vta.uop_push``/``VTAUopLoopEnd``. The stored value fixes the
operation: ``+`` ADD, ``*`` MUL, ``min``/``max``, ``>> k`` SHR k, ``<< k`` SHR -k, a plain copy
SHR 0, ``- k`` ADD -k, ``a - b`` MUL -1 then ADD, a constant c MUL 0 then ADD c, the call
``tir.vta.requant(x, b)`` REQ (hardware option ``ALU_REQUANT``; refused without it) and the call
``tir.vta.mov(b)`` MOV (hardware option ``ALU_MOV``, e.g. from InjectBiasMov; refused without it).

The ALU computes ``acc[dst] = op(acc[dst], src or imm)``. When an operand is the destination
tile itself (SRAM allocation made the stage in place) one instruction does it; otherwise the
first operand is copied into the destination first (MUL by 0, then ADD it). Each instruction
is a kernel in its own uop scope.

The lane loop(s) are dropped, indices divided by the tile size, and adjacent loops merged when
they walk memory contiguously; the two innermost become the ALU's hardware loops and any outer
ones host loops that record one uop per iteration.
"""

from __future__ import annotations

from ..env import Environment
from ..errors import ScheduleError
from ..tir import nodes as n
from ..tir.arith import as_const_int
from ..tir.linear import detect_linear_equation
from ..tir.functor import StmtExprMutator, post_order_visit, stmt_map
from ._util import Pass, call_extern, coproc_scope, find_coproc_axis, uop_push

__all__ = ["MOV_OP", "annotate_alu_coproc_scope", "inject_alu_intrin"]

#: The TIR call of an ALU MOV, ``acc[dst] = b`` (hardware option ``ALU_MOV``).
MOV_OP = "tir.vta.mov"


def annotate_alu_coproc_scope(env: Environment) -> Pass:
    """The AnnotateALUCoProcScope pass (module docstring)."""

    def run(func: n.PrimFunc) -> n.PrimFunc:
        axis = find_coproc_axis(func.body)

        def fpost(s):
            if isinstance(s, n.AttrStmt) and s.attr_key == "pragma_alu":
                uop = n.AttrStmt(axis, "coproc_uop_scope", n.StringImm("VTAPushALUOp"), s)
                return coproc_scope(axis, env.dev.QID_COMPUTE, uop)
            if isinstance(s, n.AttrStmt) and s.attr_key == "pragma_skip_alu":
                return n.Evaluate(n.IntImm(0))
            return s

        return func.with_body(stmt_map(func.body, fpost))

    return Pass("AnnotateALUCoProcScope", run)


_BINARY = {n.Add: "ADD", n.Mul: "MUL", n.Min: "MIN", n.Max: "MAX"}


def _opcode(env: Environment, value: n.PrimExpr, what: str):
    """(opcode, lhs, rhs) of an ALU stage's stored value.

    The opcode is an ALU opcode, ``"const"`` for a constant value (``lhs``), ``"mov"`` for the
    copy of the tile ``lhs`` (the call ``tir.vta.mov``), or ``None`` for the subtraction of two
    tiles (lowered with several instructions).

    Raises
    ------
    ScheduleError
        If the value is no ALU operation (e.g. a division).
    """
    dev = env.dev
    if isinstance(value, n.Cast) and isinstance(value.value, n.Load) and value.dtype == value.value.dtype:
        value = value.value
    if as_const_int(value) is not None:  # e.g. x - x or x * 0 after constant folding
        return "const", value, None
    for cls, name in _BINARY.items():
        if type(value) is cls:
            return getattr(dev, f"ALU_OPCODE_{name}"), value.a, value.b
    if isinstance(value, n.Sub) and as_const_int(value.b) is not None:
        # x - k is x + (-k): the ALU adds the negated immediate.
        return dev.ALU_OPCODE_ADD, value.a, n.IntImm(-as_const_int(value.b))
    if isinstance(value, n.Sub):
        return None, value.a, value.b  # two tiles: lowered with MUL -1 and ADD
    if isinstance(value, n.Call) and value.op == "tir.vta.requant":
        if not env.ALU_REQUANT:
            raise ScheduleError(f"{what}: {env.option_refusal('ALU_REQUANT', 'a one-micro-op requantisation (REQ)')}")
        return dev.ALU_OPCODE_REQ, value.args[0], value.args[1]
    if isinstance(value, n.Call) and value.op == MOV_OP:
        if not env.ALU_MOV:
            raise ScheduleError(f"{what}: {env.option_refusal('ALU_MOV', 'a copy into the accumulator (MOV)')}")
        if as_const_int(value.args[0]) is not None:
            return "const", value.args[0], None
        return "mov", value.args[0], None
    if isinstance(value, n.Call) and value.op == "tir.shift_right":
        return dev.ALU_OPCODE_SHR, value.args[0], value.args[1]
    if isinstance(value, n.Call) and value.op == "tir.shift_left":
        k = as_const_int(value.args[1])
        if k is None:
            raise ScheduleError(
                f"{what}: a left shift needs a constant amount (it becomes SHR by -k), got {value.args[1]!r}"
            )
        return dev.ALU_OPCODE_SHR, value.args[0], n.IntImm(-k)
    if isinstance(value, n.Load):
        return dev.ALU_OPCODE_SHR, value, n.IntImm(0)
    raise ScheduleError(
        f"{what}: the value {type(value).__name__} is not an ALU operation; accepted: +, *, min, max, >>, << "
        "or a copy, with operands in the accumulator buffer or constant"
    )


class _ALU(StmtExprMutator):
    def __init__(self, env: Environment):
        self.env = env

    def visit_AttrStmt(self, op: n.AttrStmt):
        if op.attr_key == "coproc_uop_scope" and isinstance(op.value, n.StringImm) and op.value.value == "VTAPushALUOp":
            pragmas: list[n.AttrStmt] = []
            post_order_visit(op.body, lambda x: pragmas.append(x) if isinstance(x, n.AttrStmt)
                             and x.attr_key == "pragma_alu" else None)
            if len(pragmas) == 1:
                kernels = self._kernels(pragmas[0])
                # One kernel per ALU instruction: each gets its own scope (and scope value).
                scopes = [n.AttrStmt(op.node, op.attr_key, op.value if k == 0 else n.StringImm("VTAPushALUOp"),
                                     _replace(op.body, pragmas[0], kern)) for k, kern in enumerate(kernels)]
                return n.seq(*scopes)
            return self.generic_visit(op)
        if op.attr_key == "pragma_alu":
            kernels = self._kernels(op)
            if len(kernels) != 1:
                raise ScheduleError("an alu stage outside an ALU uop scope must be a single in-place operation")
            return kernels[0]
        return self.generic_visit(op)

    def _kernels(self, op: n.AttrStmt) -> list[n.Stmt]:
        """The ALU kernels computing the stage: one when it works in place, else a copy first."""
        env, dev = self.env, self.env.dev
        axis_name = getattr(getattr(op.node, "var", op.node), "name", repr(op.node))
        body, loops = op.body, []
        while isinstance(body, n.For):
            loops.append(body)
            body = body.body
        what = f"alu stage at axis {axis_name!r}"
        if not isinstance(body, n.Store):
            raise ScheduleError(f"{what}: expected a perfect loop nest around one store, found {type(body).__name__}")
        what = f"alu stage writing {body.buffer_var.name!r} at axis {axis_name!r}"
        extents = []
        for lp in loops:
            e = as_const_int(lp.extent)
            if e is None or as_const_int(lp.min) != 0:
                raise ScheduleError(f"{what}: loop {lp.loop_var.name!r} must run from 0 over a constant extent")
            extents.append(e)
        loop_vars = [lp.loop_var for lp in loops]
        opcode, lhs, rhs = _opcode(env, body.value, what)

        def coefs(expr, side):
            c = detect_linear_equation(expr, loop_vars)
            if c is None:
                raise ScheduleError(f"{what}: the {side} index {expr!r} is not linear in the loops")
            out = []
            for v, x in zip(loop_vars, c[:-1], strict=True):
                xi = as_const_int(x)
                if xi is None:
                    raise ScheduleError(f"{what}: the {side} stride of loop {v.name!r} is not constant ({x!r})")
                out.append(xi)
            return out, c[-1]

        def tile(operand, side):
            if not isinstance(operand, n.Load) or operand.buffer_var is not body.buffer_var:
                raise ScheduleError(
                    f"{what}: the {side} must be an accumulator tile of the same on-chip buffer (after SRAM "
                    f"allocation every acc buffer is one buffer) or a constant, got {operand!r}"
                )
            return coefs(operand.index, side)

        def emit(code, src, use_imm=0, imm=0):
            return self._emit(what, loops, extents, dst, src, code, use_imm, imm)

        def copy_from(src):
            if env.ALU_MOV:  # acc[dst] = acc[src]: one MOV
                return [emit(dev.ALU_OPCODE_MOV, src)]
            # acc[dst] = acc[dst] * 0, then acc[dst] += acc[src]: a copy with two ALU instructions.
            return [emit(dev.ALU_OPCODE_MUL, dst, 1, 0), emit(dev.ALU_OPCODE_ADD, src)]

        dst = coefs(body.index, "destination")
        if opcode == "mov":  # acc[dst] = b: a tile (a constant b is folded to "const" above)
            src = tile(lhs, "MOV source")
            # SRAM allocation may have put the destination onto its source (e.g. a bias map
            # that dies here): the copy is then the identity and no instruction at all
            return [] if _same(src, dst) else [emit(dev.ALU_OPCODE_MOV, src)]
        if opcode == "const":  # fill: anything * 0, then + c (one MOV c with ALU_MOV)
            c = as_const_int(lhs)
            if not -(1 << 15) <= c < (1 << 15):
                raise ScheduleError(f"{what}: the constant {c} does not fit the signed 16-bit ALU immediate")
            if env.ALU_MOV:
                return [emit(dev.ALU_OPCODE_MOV, dst, 1, c)]
            return [emit(dev.ALU_OPCODE_MUL, dst, 1, 0)] + ([emit(dev.ALU_OPCODE_ADD, dst, 1, c)] if c else [])
        if opcode is None:  # a - b of two tiles: negate b (MUL -1) and add a
            lcoef, rcoef = tile(lhs, "left operand"), tile(rhs, "right operand")
            neg = emit(dev.ALU_OPCODE_MUL, dst, 1, -1)
            if _same(rcoef, dst):
                return [neg, emit(dev.ALU_OPCODE_ADD, lcoef)]
            if _same(lcoef, dst):  # -(-a + b)
                return [neg, emit(dev.ALU_OPCODE_ADD, rcoef), emit(dev.ALU_OPCODE_MUL, dst, 1, -1)]
            return copy_from(rcoef) + [neg, emit(dev.ALU_OPCODE_ADD, lcoef)]
        rc, lc = as_const_int(rhs), as_const_int(lhs)
        if rc is not None or (lc is not None and opcode not in (dev.ALU_OPCODE_SHR, dev.ALU_OPCODE_REQ)):
            imm, operand = (rc, lhs) if rc is not None else (lc, rhs)
            if not -(1 << 15) <= imm < (1 << 15):
                raise ScheduleError(f"{what}: immediate {imm} does not fit the signed 16-bit ALU field")
            src = tile(operand, "non-constant operand")
            if _same(src, dst):
                return [emit(opcode, dst, 1, imm)]
            # The input tile lives on after this stage: copy it, then operate in place.
            tail = [] if (opcode == dev.ALU_OPCODE_SHR and imm == 0) else [emit(opcode, dst, 1, imm)]
            return copy_from(src) + tail
        lcoef, rcoef = tile(lhs, "left operand"), tile(rhs, "right operand")
        if _same(lcoef, dst):
            return [emit(opcode, rcoef)]
        if _same(rcoef, dst) and opcode not in (dev.ALU_OPCODE_SHR, dev.ALU_OPCODE_REQ):  # the others commute
            return [emit(opcode, lcoef)]
        if _same(rcoef, dst):
            raise ScheduleError(
                f"{what}: the shift amount (or REQ operand) tile is overwritten by the result; compute it in a "
                "stage whose first operand (not the amount) dies here"
            )
        return copy_from(lcoef) + [emit(opcode, rcoef)]

    def _emit(self, what, loops, extents, dst, src, opcode, use_imm, imm) -> n.Stmt:
        env = self.env
        block = env.BATCH * env.BLOCK_OUT
        (dcoef, dbase), (scoef, sbase) = dst, src
        lanes = 1 if env.BATCH == 1 else 2
        if len(loops) < lanes or extents[-1] != env.BLOCK_OUT or dcoef[-1] != 1 or scoef[-1] != 1:
            raise ScheduleError(
                f"{what}: the innermost loop must walk the {env.BLOCK_OUT} lanes of a tile with stride 1 "
                f"(got extents {extents!r}, destination strides {dcoef!r}, source strides {scoef!r})"
            )
        if env.BATCH > 1 and (extents[-2] != env.BATCH or dcoef[-2] != env.BLOCK_OUT or scoef[-2] != env.BLOCK_OUT):
            raise ScheduleError(
                f"{what}: the second innermost loop must walk the {env.BATCH} batch rows with stride {env.BLOCK_OUT}"
            )
        tiles = []
        for lp, e, d, s in zip(loops[:-lanes], extents[:-lanes], dcoef[:-lanes], scoef[:-lanes], strict=True):
            if d % block or s % block:
                raise ScheduleError(
                    f"{what}: loop {lp.loop_var.name!r} strides ({d}, {s}) are not whole tiles of {block}"
                )
            tiles.append([e, d // block, s // block])
        dst_idx = _tile_index(dbase, block, what)
        src_idx = _tile_index(sbase, block, what)
        merged: list[list[int]] = []
        for e, d, s in reversed(tiles):
            if e == 1:
                continue
            if merged and d == merged[-1][1] * merged[-1][0] and s == merged[-1][2] * merged[-1][0]:
                merged[-1][0] *= e
            else:
                merged.append([e, d, s])
        merged.reverse()
        # The two innermost loops become hardware loops; any outer ones stay host loops inside the
        # kernel-recording function, each iteration recording one more uop.
        hw, host = merged[-2:], merged[:-2]
        push: n.Stmt = uop_push(1, 0, dst_idx, src_idx, 0, opcode, use_imm, imm)
        if host:
            hvars = [n.Var(f"alu_h{k}") for k in range(len(host))]
            d_idx, s_idx = dst_idx, src_idx
            for v, (_, d, s_) in zip(hvars, host, strict=True):
                d_idx, s_idx = d_idx + v * d, s_idx + v * s_
            push = uop_push(1, 0, d_idx, s_idx, 0, opcode, use_imm, imm)
            for v, (e, _, _) in reversed(list(zip(hvars, host, strict=True))):
                push = n.For(v, n.IntImm(0), n.IntImm(e), n.ForKind.SERIAL, push)
        stmts = [n.Evaluate(call_extern("int32", "VTAUopLoopBegin", e, d, s_, 0)) for e, d, s_ in hw]
        stmts.append(push)
        stmts += [n.Evaluate(call_extern("int32", "VTAUopLoopEnd")) for _ in hw]
        return n.seq(*stmts)


def _same(a, b) -> bool:
    from ..tir.arith import structural_equal

    return a[0] == b[0] and structural_equal(a[1], b[1])


def _tile_index(base: n.PrimExpr, block: int, what: str) -> n.PrimExpr:
    from ..tir.transform.lower_device_storage_access_info import exact_div

    idx = exact_div(base, block)
    if idx is None:
        raise ScheduleError(f"{what}: element offset {base!r} is not a multiple of the {block}-scalar tile")
    return idx


def inject_alu_intrin(env: Environment) -> Pass:
    """The InjectALUIntrin pass for ``env`` (module docstring).

    Raises
    ------
    ScheduleError
        (when run) If an ALU stage is not an in-place elementwise operation VTA can execute.
    """
    return Pass("InjectALUIntrin", lambda f: f.with_body(_ALU(env).visit(f.body)))


def _replace(stmt: n.Stmt, old: n.Stmt, new: n.Stmt) -> n.Stmt:
    """``stmt`` with the statement object ``old`` replaced by ``new``."""

    class _R(StmtExprMutator):
        def visit(self, node):
            return new if node is old else super().visit(node)

    return _R().visit(stmt)
