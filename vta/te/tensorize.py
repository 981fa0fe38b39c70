"""Tensorize: replace the loop nest from one leaf axis inwards by a tensor intrinsic.

Matching (every failure is a :class:`~vta.errors.ScheduleError` naming stage and axis):

1. Each root axis of the stage covers, inside the tensorized loops, a contiguous range
   ``[base, base + E)``; the trailing data axes must have the extents of the intrinsic's output
   axes and the leading ones extent 1, likewise for the reduction axes.
2. The stage's body must have the intrinsic's structure (same combiner, operators, casts and
   constants); the loads are paired in order and each pairs an input of the stage with an input
   of the intrinsic.
3. Relative to its start, each load's index must be the intrinsic's index on the trailing
   dimensions and 0 on the leading ones.

Emission: each intrinsic buffer is bound to the matched region with
``AttrStmt((buffer, tensor), "buffer_bind_scope", tvm_tuple(min0, ext0, ...))`` (StorageFlatten
resolves it). When a reduction loop lies outside the tensorized region, the stage becomes a
``reset`` nest (the data-parallel loops of the reduction part) followed by the ``update`` nest,
as TVM does; otherwise the intrinsic's ``body`` is used.
"""

from __future__ import annotations

from ..errors import ScheduleError
from ..tir import nodes as n
from ..tir.arith import as_const_int, structural_equal
from ..tir.linear import detect_linear_equation
from ..tir.functor import substitute
from ..tir.simplify import simplify
from .tensor import ComputeOp, Reduce

__all__ = ["make_tensorize"]


def _fail(stage, iv, msg: str) -> ScheduleError:
    return ScheduleError(f"stage {stage.op.name!r}: tensorize at axis {iv.var.name!r}: {msg}")


def _region_extent(stage, tiv, root_iv, value: n.PrimExpr, region_vars: list, ranges: dict) -> tuple[n.PrimExpr, int]:
    """(base, E) with ``value`` sweeping ``[base, base + E)`` over the region variables."""
    base = simplify(substitute(value, {v: n.IntImm(0) for v in region_vars}))
    if not region_vars:
        return base, 1
    coefs = detect_linear_equation(value, region_vars)
    if coefs is None or any(as_const_int(c) is None for c in coefs[:-1]):
        raise _fail(stage, tiv, f"axis {root_iv.var.name!r} is not an affine function of the tensorized loops")
    terms = sorted((as_const_int(c), ranges[v]) for v, c in zip(region_vars, coefs[:-1], strict=True) if as_const_int(c) != 0)
    expect = 1
    for c, ext in terms:
        if c != expect:
            raise _fail(stage, tiv, f"axis {root_iv.var.name!r} is not covered contiguously by the tensorized loops")
        expect *= ext
    return base, expect


def _match(ours: n.PrimExpr, theirs: n.PrimExpr, pairs: list) -> bool:
    if type(ours) is not type(theirs):
        return False
    if isinstance(ours, n.ProducerLoad):
        pairs.append((ours, theirs))
        return True
    if isinstance(ours, (n.IntImm, n.FloatImm)):
        return ours.value == theirs.value and ours.dtype == theirs.dtype
    if isinstance(ours, n.Cast):
        return ours.dtype == theirs.dtype and _match(ours.value, theirs.value, pairs)
    if isinstance(ours, n.BinaryOp):
        return _match(ours.a, theirs.a, pairs) and _match(ours.b, theirs.b, pairs)
    if isinstance(ours, n.Call):
        return (ours.op == theirs.op and len(ours.args) == len(theirs.args)
                and all(_match(a, b, pairs) for a, b in zip(ours.args, theirs.args, strict=True)))
    if isinstance(ours, n.Select):
        return all(_match(getattr(ours, f), getattr(theirs, f), pairs) for f in ("condition", "true_value", "false_value"))
    return False


def _bind(buffer: n.Buffer, tensor, mins: list, exts: list, body: n.Stmt) -> n.Stmt:
    args = []
    for lo, ext in zip(mins, exts, strict=True):
        args += [lo, n.IntImm(ext)]
    return n.AttrStmt((buffer, tensor), "buffer_bind_scope", n.Call("handle", "tir.tvm_tuple", tuple(args)), body)


def _check_scope(builder, stage, tiv, tensor, buffer: n.Buffer) -> None:
    if buffer.scope in ("", "global"):
        return
    producer = builder.sch.stage_map.get(tensor.op)
    scope = (producer.scope or "global") if producer is not None else "global"
    if scope != buffer.scope:
        raise _fail(
            stage, tiv,
            f"intrinsic operand {buffer.name!r} must be in scope {buffer.scope!r}, but tensor {tensor.name!r} "
            f"is in scope {scope!r}; call s[{tensor.name}].set_scope({buffer.scope!r})",
        )


def make_tensorize(builder, stage, tloc: int) -> n.Stmt:
    """The statement of ``stage`` tensorized at leaf position ``tloc`` (see the module docstring).

    Raises
    ------
    ScheduleError
        If the region does not match the intrinsic or the schedule puts something inside it.
    """
    b = builder.bounds[stage]
    leaves = stage.leaf_iter_vars
    tiv = leaves[tloc]
    intrin = stage.iter_var_attrs[tiv].tensor_intrin
    op: ComputeOp = stage.op  # type: ignore[assignment]
    iop: ComputeOp = intrin.op
    region = leaves[tloc:]
    for iv in region:
        attr = stage.iter_var_attrs.get(iv)
        if attr is not None and (attr.bind_thread is not None or (attr.pragmas and iv is not tiv)):
            raise _fail(stage, tiv, f"axis {iv.var.name!r} inside the tensorized region has a pragma or thread binding")
        for s in builder.sch.stages:
            if s.attach_type == "scope" and s.attach_stage is stage and s.attach_ivar is iv:
                raise _fail(stage, tiv, f"stage {s.op.name!r} is computed at axis {iv.var.name!r} inside the tensorized region")
    if b.conditions:
        raise _fail(stage, tiv, "a split of this stage does not divide its axis evenly; tensorize needs exact tiles")
    region_vars = [b.leaf_value[iv] for iv in region if isinstance(b.leaf_value[iv], n.Var)]
    ranges = {b.leaf_value[iv]: b.extent[iv] for iv in region if isinstance(b.leaf_value[iv], n.Var)}

    # 1. Axis extents.
    vmap: dict = {}
    base: dict = {}

    def map_axes(ours, theirs, kind):
        if len(ours) < len(theirs):
            raise _fail(stage, tiv, f"the stage has {len(ours)} {kind} axes, the intrinsic {intrin.name!r} needs {len(theirs)}")
        lead = len(ours) - len(theirs)
        got = []
        for k, iv in enumerate(ours):
            lo, ext = _region_extent(stage, tiv, iv, b.root_value[iv], region_vars, ranges)
            base[iv] = lo
            got.append(ext)
            if k >= lead:
                vmap[iv.var] = simplify(lo + theirs[k - lead].var)
            else:
                vmap[iv.var] = lo
        want = [1] * lead + [as_const_int(t.dom.extent) for t in theirs]
        if got != want:
            raise _fail(
                stage, tiv,
                f"the tensorized loops cover {kind} extents {got!r} but intrinsic {intrin.name!r} computes {want!r}",
            )

    map_axes(op.axis, iop.axis, "data")
    map_axes(op.reduce_axis, iop.reduce_axis, "reduction")

    # 2. Body structure.
    ours, theirs = builder.bodies[op], iop.body
    pairs: list = []
    same = (isinstance(ours, Reduce) == isinstance(theirs, Reduce)) and (
        _match(ours.source, theirs.source, pairs) and ours.combiner == theirs.combiner
        if isinstance(ours, Reduce) else _match(ours, theirs, pairs)
    )
    if not same:
        raise _fail(stage, tiv, f"the stage computes {ours!r}, which does not have the form of intrinsic {intrin.name!r}")

    # 3. Operand regions.
    zero = {t.var: n.IntImm(0) for t in list(iop.axis) + list(iop.reduce_axis)}
    bound: dict = {}
    for mine, their in pairs:
        t = mine.producer
        if their.producer not in intrin.inputs:
            raise _fail(stage, tiv, f"intrinsic {intrin.name!r} reads {their.producer.name!r}, which is not one of its inputs")
        k = intrin.inputs.index(their.producer)
        idx = [simplify(substitute(e, vmap)) for e in mine.indices]
        mins = [simplify(substitute(e, zero)) for e in idx]
        lead = len(idx) - len(their.indices)
        if lead < 0:
            raise _fail(stage, tiv, f"tensor {t.name!r} has fewer dimensions than intrinsic input {their.producer.name!r}")
        for d, e in enumerate(idx):
            rel = simplify(e - mins[d])
            want = their.indices[d - lead] if d >= lead else n.IntImm(0)
            if not structural_equal(rel, simplify(want)):
                raise _fail(
                    stage, tiv,
                    f"the region of {t.name!r} does not match intrinsic input {their.producer.name!r} "
                    f"(dimension {d}: index {rel!r} relative to the tile start, the intrinsic expects {want!r})",
                )
        exts = [1] * lead + [as_const_int(s) for s in their.producer.shape]
        _check_scope(builder, stage, tiv, t, intrin.buffers[k])
        prev = bound.get(k)
        if prev is not None and (prev[0] is not t or not all(structural_equal(a, c) for a, c in zip(prev[1], mins, strict=True))):
            raise _fail(stage, tiv, f"intrinsic input {their.producer.name!r} matches two different regions")
        bound[k] = (t, mins, exts)
    if len(bound) != len(intrin.inputs):
        raise _fail(stage, tiv, f"the stage reads {len(bound)} tensors; intrinsic {intrin.name!r} has {len(intrin.inputs)} inputs")
    out = op.output(0)
    _check_scope(builder, stage, tiv, out, intrin.buffers[-1])
    out_lead = len(op.axis) - len(iop.axis)
    out_mins = [base[iv] for iv in op.axis]
    out_exts = [1] * out_lead + [as_const_int(s) for s in iop.output(0).shape]
    out_buf = intrin.buffers[-1]

    def bind_out(stmt: n.Stmt) -> n.Stmt:
        return _bind(out_buf, out, out_mins, out_exts, stmt)

    def bind_all(stmt: n.Stmt) -> n.Stmt:
        stmt = bind_out(stmt)
        for k in sorted(bound, reverse=True):
            t, mins, exts = bound[k]
            stmt = _bind(intrin.buffers[k], t, mins, exts, stmt)
        return stmt

    # 4. Emission.
    begin = next((p for p, iv in enumerate(leaves) if builder.is_reduce_leaf(iv)), len(leaves))
    if begin >= tloc:
        return builder.loops(stage, range(tloc), bind_all(intrin.body))
    if intrin.reset is None or intrin.update is None:
        raise _fail(
            stage, tiv,
            f"reduction axis {leaves[begin].var.name!r} lies outside the tensorized loops, so intrinsic "
            f"{intrin.name!r} must provide (body, reset, update)",
        )
    init_pos = [p for p in range(begin, tloc) if not builder.is_reduce_leaf(leaves[p])]
    init = builder.loops(stage, init_pos, bind_out(intrin.reset), init=True)
    update = builder.loops(stage, range(begin, tloc), bind_all(intrin.update))
    return builder.loops(stage, range(begin), n.seq(init, update))
