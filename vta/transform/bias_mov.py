"""InjectBiasMov: the accumulator starts from the bias (hardware option ``ALU_MOV``).

A fused convolution or dense layer resets its accumulator tile (a pass of GEMM reset micro-ops,
the reduction's initialisation), accumulates the products into it, and then adds the bias on
the ALU. Integer addition wraps alike in any order, so the tile may as well *start* from the
bias: on a configuration with ``ALU_MOV`` this pass replaces the reset by one ALU MOV of the
bias rows into the tile (``acc[dst] = bias``, a tensor MOV whose source is broadcast over the
rows, or a full map: the border-corrected bias of a padded convolution with an input zero
point) and drops the bias ADD. One pass over the tile instead of two.

It runs in phase 1 on the flat form, after AnnotateALUCoProcScope and before the lifting and
the dependency tokens. Inside the allocation of an accumulator tile ``R`` it looks for this
sequence (allocations of accumulator buffers in between are part of the sequence):

1. the reset nest of ``R`` (GEMM micro-ops with the reset flag writing only ``R``);
2. the reduction: statements touching ``R`` only as the destination of GEMM micro-ops;
3. the statements computing the bias operand ``B``: loads into the accumulator and ALU stages
   that touch neither ``R`` nor ``Y``;
4. the ALU stage ``Y[i] = R[i] + B[j]`` over the whole tile (``Y`` the size of ``R``).

It emits 3 (the bias's LOAD and the ALU stages building ``B``, now ahead of the MOV, on the
compute queue as before), then the stage ``R[i] = mov(B[j])`` (InjectALUIntrin lowers the call
``tir.vta.mov`` to MOV) where the reset was, then 2, then what followed 4 with ``Y`` renamed
``R``. The dependency tokens are inserted afterwards, from the new order. When ``B`` is a full
map, SRAM allocation usually puts ``R`` onto it (``B`` dies at the MOV): the MOV is then the
identity, InjectALUIntrin emits nothing, and the map's LOAD alone initialises the accumulator.

Fall-backs (the code stays as it was): a configuration without ``ALU_MOV``; a tile whose first
ALU stage after the reduction is not that ADD (an epilogue that shifts first, such as
:func:`vta.topi.requantize`); a tile without a GEMM reset (the ALU-only operators); anything
between the reduction and the ADD other than accumulator loads and ALU stages, or that touches
the tile; an ADD covering less than the whole tile.
"""

from __future__ import annotations

import dataclasses
from math import prod

from ..env import Environment
from ..tir import nodes as n
from ..tir.arith import as_const_int, structural_equal, uses_var
from ..tir.functor import post_order_visit, stmt_map, substitute
from ._util import Pass
from .alu import MOV_OP

__all__ = ["inject_bias_mov"]

_ACC_SCOPE_SUFFIX = "acc_buffer"
_NOP = n.Evaluate(n.IntImm(0))


def inject_bias_mov(env: Environment) -> Pass:
    """The InjectBiasMov pass (module docstring); it changes nothing on a configuration without
    the hardware option ``ALU_MOV``."""

    def run(func: n.PrimFunc) -> n.PrimFunc:
        if not env.ALU_MOV:
            return func
        return func.with_body(stmt_map(func.body, _rewrite))

    return Pass("InjectBiasMov", run)


def _is_acc_alloc(s) -> bool:
    return isinstance(s, n.Allocate) and s.scope.endswith(_ACC_SCOPE_SUFFIX)


def _flatten(stmt: n.Stmt) -> list:
    """The statements of ``stmt`` in order, an accumulator allocation standing for itself (with
    an empty body) followed by the statements of its body."""
    if isinstance(stmt, n.SeqStmt):
        return [x for s in stmt.seq for x in _flatten(s)]
    if _is_acc_alloc(stmt):
        return [dataclasses.replace(stmt, body=_NOP)] + _flatten(stmt.body)
    return [stmt]


def _rebuild(items: list) -> n.Stmt:
    """Inverse of :func:`_flatten`: each allocation encloses every statement after it."""
    body: n.Stmt | None = None
    for it in reversed(items):
        if _is_acc_alloc(it):
            body = dataclasses.replace(it, body=body if body is not None else _NOP)
        else:
            body = it if body is None else n.seq(it, body)
    return body if body is not None else _NOP


def _uop_pushes(stmt: n.Stmt) -> tuple[list[n.Call], bool]:
    """The ``tir.vta.uop_push`` calls in ``stmt``, and whether ``stmt`` holds anything but loops,
    co-processor scopes and those calls (other statements or calls)."""
    pushes: list[n.Call] = []
    other = [False]

    def visit(x):
        if isinstance(x, n.Call):
            if x.op == "tir.vta.uop_push":
                pushes.append(x)
            elif x.op not in ("tir.tvm_access_ptr", "tir.type_annotation"):
                other[0] = True
        elif isinstance(x, (n.Store, n.Allocate, n.IfThenElse, n.LetStmt)):
            other[0] = True
        elif isinstance(x, n.AttrStmt) and x.attr_key not in ("coproc_scope", "coproc_uop_scope"):
            other[0] = True

    post_order_visit(stmt, visit)
    return pushes, other[0]


def _dst_buffer(push: n.Call):
    ptr = push.args[2]
    if isinstance(ptr, n.Call) and ptr.op == "tir.tvm_access_ptr":
        return ptr.args[1]
    return None


def _is_reset(stmt: n.Stmt, buf: n.Var) -> bool:
    """Whether ``stmt`` is only GEMM micro-ops with the reset flag, each writing ``buf``."""
    pushes, other = _uop_pushes(stmt)
    return bool(pushes) and not other and all(
        as_const_int(p.args[0]) == 0 and as_const_int(p.args[1]) == 1 and _dst_buffer(p) is buf
        and not uses_var(p.args[3:], buf) for p in pushes)


def _accumulates_only(stmt: n.Stmt, buf: n.Var) -> bool:
    """Whether ``stmt`` mentions ``buf`` only as the destination of GEMM micro-ops that
    accumulate (a step of the reduction, its loads of inputs and weights included)."""
    mentions, as_dst = [0], [0]

    def count(x, box):
        if isinstance(x, n.Var) and x is buf:
            box[0] += 1

    def visit(x):
        count(x, mentions)
        if (isinstance(x, n.Call) and x.op == "tir.vta.uop_push" and as_const_int(x.args[0]) == 0
                and as_const_int(x.args[1]) == 0 and _dst_buffer(x) is buf):
            post_order_visit(x.args[2], lambda y: count(y, as_dst))

    post_order_visit(stmt, visit)
    return mentions[0] > 0 and mentions[0] == as_dst[0]


def _attr_chain(stmt: n.Stmt, keys: tuple) -> n.Stmt | None:
    """The body under the attributes ``keys`` (outermost first), or None."""
    for key in keys:
        if not (isinstance(stmt, n.AttrStmt) and stmt.attr_key == key):
            return None
        stmt = stmt.body
    return stmt


_ALU_KEYS = ("coproc_scope", "coproc_uop_scope", "pragma_alu")


def _is_mover(stmt: n.Stmt) -> bool:
    """An accumulator allocation, a load on the compute queue or an ALU stage."""
    if _is_acc_alloc(stmt):
        return True
    if not (isinstance(stmt, n.AttrStmt) and stmt.attr_key == "coproc_scope" and as_const_int(stmt.value) == 2):
        return False
    if _attr_chain(stmt, _ALU_KEYS) is not None:
        return True
    calls: list = []
    post_order_visit(stmt, lambda x: calls.append(x) if isinstance(x, n.Call) and x.op == "tir.call_extern" else None)
    return bool(calls) and all(isinstance(c.args[0], n.StringImm) and c.args[0].value == "VTALoadBuffer2D"
                               for c in calls)


def _bias_add(stmt: n.Stmt, buf: n.Var, size: int):
    """``(Y, i, B[j])`` when ``stmt`` is the ALU stage ``Y[i] = buf[i] + B[j]`` (either operand
    order) over ``size`` elements, else None."""
    body = _attr_chain(stmt, _ALU_KEYS)
    loops = []
    while isinstance(body, n.For):
        loops.append(body)
        body = body.body
    if not isinstance(body, n.Store) or not isinstance(body.value, n.Add):
        return None
    extents = [as_const_int(lp.extent) for lp in loops]
    if None in extents or prod(extents) != size:
        return None
    a, b = body.value.a, body.value.b
    if isinstance(b, n.Load) and b.buffer_var is buf:
        a, b = b, a
    if not (isinstance(a, n.Load) and a.buffer_var is buf and structural_equal(a.index, body.index)):
        return None
    if not isinstance(b, n.Load) or b.buffer_var in (buf, body.buffer_var):
        return None
    return body.buffer_var, body.index, b


def _with_store(stmt: n.Stmt, store: n.Store) -> n.Stmt:
    """``stmt`` (attributes and loops around one store) with that store replaced."""
    if isinstance(stmt, n.Store):
        return store
    return dataclasses.replace(stmt, body=_with_store(stmt.body, store))


def _rewrite(stmt: n.Stmt) -> n.Stmt:
    if not _is_acc_alloc(stmt):
        return stmt
    acc = stmt.buffer_var
    sizes = [as_const_int(e) for e in stmt.extents]
    if None in sizes:
        return stmt
    size = prod(sizes)
    items = _flatten(stmt.body)
    k_reset = next((k for k, it in enumerate(items) if _is_reset(it, acc)), None)
    if k_reset is None or any(uses_var(it, acc) for it in items[:k_reset]):
        return stmt
    reduction, movers = [], []
    for k in range(k_reset + 1, len(items)):
        it = items[k]
        if not uses_var(it, acc):
            if not _is_mover(it):
                return stmt
            movers.append(it)
            continue
        if _accumulates_only(it, acc):
            reduction.append(it)
            continue
        found = _bias_add(it, acc, size)
        if found is None:
            return stmt
        y, index, operand = found
        y_alloc = next((m for m in movers if isinstance(m, n.Allocate) and m.buffer_var is y), None)
        if (y_alloc is None or y_alloc.dtype != stmt.dtype or y_alloc.scope != stmt.scope
                or [as_const_int(e) for e in y_alloc.extents] != sizes
                or any(uses_var(m, y) for m in movers if m is not y_alloc)):
            return stmt
        mov = _with_store(it, n.Store(acc, n.Call(stmt.dtype, MOV_OP, (operand,)), index))
        rest = [substitute(x, {y: acc}) for x in items[k + 1:]]
        new = (items[:k_reset] + [m for m in movers if m is not y_alloc] + [mov] + reduction + rest)
        return dataclasses.replace(stmt, body=_rebuild(new))
    return stmt
