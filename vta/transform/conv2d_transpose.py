"""InjectConv2DTransposeSkip: GEMM micro-ops for ``pragma_conv2d_transpose_gemm`` regions.

Upstream's conv2d_transpose schedule marks the tensor axis of its reduction stage with this
pragma instead of tensorizing it, so that iterations reading inserted (dilation) zeros can be
skipped (reference tvm-vta-software.md 2.4). This pass works on the flat form (it runs first in
phase 1, after StorageFlatten): under each pragma it expects a perfect loop nest over one tile
around one store into the accumulator buffer, and emits in its place, in a compute-queue GEMM
uop scope,

* for the reduction's init nest (the stored value is 0): a reset uop
  ``uop_push(0, 1, out_tile, 0, 0, ...)``;
* for the update nest ``out[o] = out[o] + int32(inp[i]) * int32(wgt[w])``: an accumulate uop
  ``uop_push(0, 0, out_tile, inp_tile, wgt_tile, ...)``. When the input operand (or the whole
  product) is guarded, ``if_then_else(cond, ..., 0)`` with ``cond`` independent of the tile,
  the uop is pushed only ``if cond``: the skipped iterations.

The tile loops must be exactly those of one GEMM tile: the output-channel loop (BLOCK_OUT,
strides out 1, wgt BLOCK_IN), the reduction loop (BLOCK_IN, strides inp 1, wgt 1) and, when
BATCH > 1, the batch loop (BATCH, strides out BLOCK_OUT, inp BLOCK_IN). Anything else raises a
:class:`~vta.errors.ScheduleError` naming the buffer and the axis.
"""

from __future__ import annotations

from ..env import Environment
from ..errors import ScheduleError
from ..tir import nodes as n
from ..tir.arith import as_const_int, structural_equal, uses_var
from ..tir.linear import detect_linear_equation
from ..tir.functor import StmtExprMutator, post_order_visit
from ._util import Pass, allocation_scopes, coproc_scope, find_coproc_axis, uop_push

__all__ = ["inject_conv2d_transpose_skip"]


def _guarded(expr: n.PrimExpr):
    """(condition or None, value) of ``if_then_else(cond, value, 0)`` / ``Select``."""
    if isinstance(expr, n.Call) and expr.op == "tir.if_then_else" and as_const_int(expr.args[2]) == 0:
        return expr.args[0], expr.args[1]
    if isinstance(expr, n.Select) and as_const_int(expr.false_value) == 0:
        return expr.condition, expr.true_value
    return None, expr


def _load_of(expr: n.PrimExpr) -> n.Load | None:
    while isinstance(expr, n.Cast):
        expr = expr.value
    return expr if isinstance(expr, n.Load) else None


def _gemm_push_value(func_body: n.Stmt):
    """The uop-scope value the GEMM intrinsic already uses (one shared object), if any."""
    found = []

    def visit(x):
        if (isinstance(x, n.AttrStmt) and x.attr_key == "coproc_uop_scope" and isinstance(x.value, n.StringImm)
                and x.value.value == "VTAPushGEMMOp" and not found):
            found.append(x.value)

    post_order_visit(func_body, visit)
    return found[0] if found else n.StringImm("VTAPushGEMMOp")


class _Inject(StmtExprMutator):
    def __init__(self, env: Environment, scopes: dict, axis, push_value):
        self.env = env
        self.scopes = scopes
        self.axis = axis
        self.push_value = push_value

    def visit_AttrStmt(self, op: n.AttrStmt):
        if op.attr_key != "pragma_conv2d_transpose_gemm":
            return self.generic_visit(op)
        axis = getattr(getattr(op.node, "var", op.node), "name", repr(op.node))
        body, loops = op.body, []
        while isinstance(body, n.For):
            loops.append(body)
            body = body.body
        if not isinstance(body, n.Store):
            raise ScheduleError(
                f"conv2d_transpose_gemm at axis {axis!r}: expected a perfect loop nest around one store, "
                f"found {type(body).__name__}"
            )
        what = f"conv2d_transpose_gemm of buffer {body.buffer_var.name!r} at axis {axis!r}"
        if self.scopes.get(body.buffer_var) != self.env.acc_scope:
            raise ScheduleError(f"{what}: the result must be in {self.env.acc_scope!r}")
        for lp in loops:
            if as_const_int(lp.min) != 0 or as_const_int(lp.extent) is None:
                raise ScheduleError(f"{what}: loop {lp.loop_var.name!r} must run from 0 over a constant extent")
        loop_vars = [lp.loop_var for lp in loops]
        if as_const_int(body.value) == 0:
            out = self._base(body.index, loop_vars, what, "result")
            self._check_tile(what, loops, {"out": self._coefs(body.index, loop_vars, what)}, reset=True)
            push = uop_push(0, 1, self._ptr(body.buffer_var, out), 0, 0, 0, 0, 0)
            return self._scope(push)
        return self._update(what, body, loops, loop_vars)

    # ------------------------------------------------------------------ helpers
    def _coefs(self, index, loop_vars, what):
        c = detect_linear_equation(index, loop_vars)
        if c is None:
            raise ScheduleError(f"{what}: index {index!r} is not linear in the tile loops")
        out = [as_const_int(x) for x in c[:-1]]
        if any(x is None for x in out):
            raise ScheduleError(f"{what}: index {index!r} has a non-constant stride")
        return out

    def _base(self, index, loop_vars, what, side):
        c = detect_linear_equation(index, loop_vars)
        if c is None:
            raise ScheduleError(f"{what}: the {side} index {index!r} is not linear in the tile loops")
        return c[-1]

    def _ptr(self, var: n.Var, base: n.PrimExpr) -> n.Call:
        return n.Call("handle", "tir.tvm_access_ptr", (
            n.Call("int32", "tir.type_annotation", ()), var, base, n.IntImm(1), n.IntImm(3)))

    def _scope(self, stmt: n.Stmt) -> n.Stmt:
        uop = n.AttrStmt(self.axis, "coproc_uop_scope", self.push_value, stmt)
        return coproc_scope(self.axis, self.env.dev.QID_COMPUTE, uop)

    def _check_tile(self, what, loops, coefs: dict, reset: bool):
        env = self.env
        if reset:
            expect = {"out": [(env.BLOCK_OUT, 1)] + ([(env.BATCH, env.BLOCK_OUT)] if env.BATCH > 1 else [])}
            got = sorted((as_const_int(lp.extent), c) for lp, c in zip(loops, coefs["out"], strict=True) if as_const_int(lp.extent) != 1)
            want = sorted(expect["out"])
            if got != want:
                raise ScheduleError(
                    f"{what}: the init loops must cover one accumulator tile ({want!r} as (extent, stride)), got {got!r}"
                )
            return
        roles = {
            "batch": (env.BATCH, (env.BLOCK_OUT, env.BLOCK_IN, 0)),
            "out channel": (env.BLOCK_OUT, (1, 0, env.BLOCK_IN)),
            "reduction": (env.BLOCK_IN, (0, 1, 1)),
        }
        needed = {k for k, (e, _) in roles.items() if e != 1}
        seen = set()
        for k, lp in enumerate(loops):
            ext = as_const_int(lp.extent)
            if ext == 1:
                continue
            sig = (ext, (coefs["out"][k], coefs["inp"][k], coefs["wgt"][k]))
            role = next((r for r, v in roles.items() if v == sig and r not in seen), None)
            if role is None:
                raise ScheduleError(
                    f"{what}: loop {lp.loop_var.name!r} (extent {ext}, strides out/inp/wgt {sig[1]!r}) is not a loop "
                    "of one GEMM tile; put the pragma on the tensor batch axis of a (batch, out channel, reduction) tile"
                )
            seen.add(role)
        if seen != needed:
            raise ScheduleError(f"{what}: the tile loops {sorted(needed - seen)!r} are missing under the pragma")

    def _update(self, what, body: n.Store, loops, loop_vars) -> n.Stmt:
        value = body.value
        if not isinstance(value, n.Add):
            raise ScheduleError(f"{what}: expected out = out + inp * wgt, got {type(value).__name__}")
        acc, term = (value.a, value.b) if _load_of(value.a) is not None and _load_of(value.a).buffer_var is body.buffer_var else (value.b, value.a)
        acc_load = _load_of(acc)
        if acc_load is None or acc_load.buffer_var is not body.buffer_var or not structural_equal(acc_load.index, body.index):
            raise ScheduleError(f"{what}: expected the accumulator {body.buffer_var.name}[{body.index!r}] on one side of the sum")
        cond, term = _guarded(term)
        if not isinstance(term, n.Mul):
            raise ScheduleError(f"{what}: expected a product of an input and a weight, got {type(term).__name__}")
        operands = {}
        for side in (term.a, term.b):
            c, side = _guarded(side)
            if c is not None:
                if cond is not None:
                    raise ScheduleError(f"{what}: at most one guard (if_then_else) on the product is supported")
                cond = c
            load = _load_of(side)
            scope = self.scopes.get(load.buffer_var) if load is not None else None
            role = {self.env.inp_scope: "inp", self.env.wgt_scope: "wgt"}.get(scope)
            if role is None or role in operands:
                raise ScheduleError(
                    f"{what}: the product must read one {self.env.inp_scope!r} and one {self.env.wgt_scope!r} buffer, "
                    f"got {side!r}"
                )
            operands[role] = load
        if cond is not None and uses_var(cond, loop_vars):
            raise ScheduleError(f"{what}: the guard {cond!r} depends on the tile loops; it must select whole tiles")
        coefs = {"out": self._coefs(body.index, loop_vars, what),
                 "inp": self._coefs(operands["inp"].index, loop_vars, what),
                 "wgt": self._coefs(operands["wgt"].index, loop_vars, what)}
        self._check_tile(what, loops, coefs, reset=False)
        push = uop_push(0, 0,
                        self._ptr(body.buffer_var, self._base(body.index, loop_vars, what, "result")),
                        self._ptr(operands["inp"].buffer_var, self._base(operands["inp"].index, loop_vars, what, "input")),
                        self._ptr(operands["wgt"].buffer_var, self._base(operands["wgt"].index, loop_vars, what, "weight")),
                        0, 0, 0)
        return self._scope(push if cond is None else n.IfThenElse(cond, push, None))


def inject_conv2d_transpose_skip(env: Environment) -> Pass:
    """The InjectConv2DTransposeSkip pass for ``env`` (module docstring).

    Raises
    ------
    ScheduleError
        (when run) If a pragma'd region is not one GEMM tile's init or update nest.
    """

    def run(func: n.PrimFunc) -> n.PrimFunc:
        found = []
        post_order_visit(func.body, lambda x: found.append(x) if isinstance(x, n.AttrStmt)
                         and x.attr_key == "pragma_conv2d_transpose_gemm" else None)
        if not found:
            return func
        inj = _Inject(env, allocation_scopes(func.body), find_coproc_axis(func.body), _gemm_push_value(func.body))
        return func.with_body(inj.visit(func.body))

    return Pass("InjectConv2DTransposeSkip", run)
