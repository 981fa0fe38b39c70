"""Bound inference: the range of every iteration variable of every stage.

Stages are visited from the outputs back to the inputs. A stage computed at the root covers its
whole tensor. A stage attached with ``compute_at(C, iv)`` covers the region its consumers read
during one iteration of ``iv``: in each consumer, the loops that run inside that iteration are
relaxed over their ranges, the loops around it stay symbolic. The region's extents must be
constants (VTA buffers are static); the minimums may depend on the enclosing loop variables.

For each stage the result holds the root ranges, the extent of every (root, split, fused) axis,
the value of each leaf axis in the generated code (its loop variable, ``0`` for an extent-1 axis,
the thread variable of a bound axis) and each root axis's value as an expression of those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ScheduleError
from ..tir import nodes as n
from ..tir.arith import as_const_int, const_bounds, structural_equal, to_linear
from ..tir.functor import StmtExprMutator, post_order_visit, substitute
from ..tir.simplify import simplify
from .schedule import Schedule, Split, Stage
from .tensor import ComputeOp, IterVar, PlaceholderOp

__all__ = ["StageBounds", "infer_bound", "inline_bodies"]


@dataclass(eq=False)
class StageBounds:
    """What bound inference knows about one stage (see the module docstring)."""

    root_min: dict = field(default_factory=dict)       # root IterVar -> PrimExpr
    extent: dict = field(default_factory=dict)         # any IterVar of the stage -> int
    leaf_value: dict = field(default_factory=dict)     # leaf IterVar -> PrimExpr used in code
    root_value: dict = field(default_factory=dict)     # root IterVar -> PrimExpr
    conditions: list = field(default_factory=list)     # guards of non-divisible splits
    enclosing: list = field(default_factory=list)      # Vars of the loops around the stage
    ranges: dict = field(default_factory=dict)         # Var -> (0, extent) of those and own loops


def inline_bodies(sch: Schedule) -> dict[Any, n.PrimExpr]:
    """Operation -> body with every inlined stage's expression substituted."""
    bodies: dict[Any, n.PrimExpr] = {}
    inline_ops = {st.op for st in sch.stages if st.attach_type == "inline"}

    class _Inline(StmtExprMutator):
        def visit_ProducerLoad(self, node):
            idx = tuple(self.visit(i) for i in node.indices)
            op = node.producer.op
            if op in inline_ops:
                vmap = {iv.var: e for iv, e in zip(op.axis, idx, strict=True)}
                return substitute(bodies[op], vmap)
            if all(a is b for a, b in zip(idx, node.indices, strict=True)):
                return node
            return n.ProducerLoad(node.producer, idx)

    for st in sch.stages:
        if isinstance(st.op, ComputeOp):
            bodies[st.op] = _Inline().visit(st.op.body)
    return bodies


def _loads_by_producer(body: n.PrimExpr) -> dict[Any, list[tuple]]:
    """Producer operation -> the index tuples of ``body``'s reads of it, in visiting order."""
    out: dict[Any, list[tuple]] = {}

    def visit(x: Any) -> None:
        if isinstance(x, n.ProducerLoad):
            out.setdefault(x.producer.op, []).append(x.indices)

    post_order_visit(body, visit)
    return out


def _loads_of(body: n.PrimExpr, op: Any, reads: dict | None = None) -> list[tuple]:
    """The index tuples of ``body``'s reads of ``op`` (``reads``: a cache of
    :func:`_loads_by_producer` by body)."""
    if reads is None:
        return _loads_by_producer(body).get(op, [])
    by_op = reads.get(id(body))
    if by_op is None or by_op[0] is not body:
        by_op = reads[id(body)] = (body, _loads_by_producer(body))
    return by_op[1].get(op, [])


def _leaf_var(b: StageBounds, iv: IterVar) -> n.Var | None:
    v = b.leaf_value.get(iv)
    return v if isinstance(v, n.Var) else None


def _attach_path(stage: Stage) -> list[tuple[Stage, int]]:
    """(stage, leaf position) pairs from the root down to ``stage``'s attach point."""
    path: list[tuple[Stage, int]] = []
    cur = stage
    guard = 0
    while cur.attach_type == "scope":
        parent = cur.attach_stage
        if cur.attach_ivar not in parent.leaf_iter_vars:
            raise ScheduleError(
                f"stage {cur.op.name!r}: compute_at axis {cur.attach_ivar.var.name!r} of stage "
                f"{parent.op.name!r} is no longer a loop (it was split or fused afterwards); attach to a leaf axis"
            )
        if parent.attach_type == "inline":
            raise ScheduleError(f"stage {cur.op.name!r}: computed at stage {parent.op.name!r}, which is inlined")
        path.insert(0, (parent, parent.leaf_iter_vars.index(cur.attach_ivar)))
        cur = parent
        guard += 1
        if guard > 1000:
            raise ScheduleError(f"stage {stage.op.name!r}: compute_at forms a cycle")
    return path


def _inside(consumer: Stage, producer: Stage) -> bool:
    """Whether every execution of ``consumer`` happens inside ``producer``'s attach scope."""
    ppath = _attach_path(producer)
    if not ppath:
        return True
    cpath = _attach_path(consumer) + [(consumer, len(consumer.leaf_iter_vars))]
    if len(cpath) < len(ppath):
        return False
    for (ps, pi), (cs, ci) in zip(ppath[:-1], cpath[:len(ppath) - 1], strict=True):
        if ps is not cs or pi != ci:
            return False
    ps, pi = ppath[-1]
    cs, ci = cpath[len(ppath) - 1]
    return ps is cs and ci >= pi


def _relaxed_range(idx: n.PrimExpr, relax: list[n.Var], ranges: dict, where: str):
    """(lo, hi) expressions of ``idx`` when the ``relax`` vars sweep their ranges."""
    relax_ids = {id(v) for v in relax}
    result = _sym_range(simplify(idx), relax_ids, ranges)
    if result is None:
        raise ScheduleError(f"{where}: cannot infer the range of index {idx!r}")
    return simplify(result[0]), simplify(result[1])


def _sym_range(e: n.PrimExpr, relax_ids: set, ranges: dict):
    """Symbolic inclusive bounds of ``e`` over the relaxed variables (None if unknown).

    Sums are split into terms; a term free of relaxed variables is its own bound; a relaxed
    variable sweeps ``[0, extent)``; ``floordiv``/``min``/``max`` are monotonic and
    ``floormod`` by a constant ``c`` lies in ``[0, c)``.
    """
    lin = to_linear(e)
    lo: n.PrimExpr = n.IntImm(lin.const)
    hi: n.PrimExpr = n.IntImm(lin.const)
    for atom, coef in lin.terms.values():
        if not any(id(v) in relax_ids for v in _free_vars(atom)):
            alo = ahi = atom
        elif isinstance(atom, n.Var):
            alo, ahi = n.IntImm(0), n.IntImm(ranges[atom][1] - 1)
        elif isinstance(atom, n.FloorDiv) and (as_const_int(atom.b) or 0) > 0:
            r = _sym_range(atom.a, relax_ids, ranges)
            if r is None:
                return None
            alo, ahi = simplify(n.FloorDiv(r[0], atom.b)), simplify(n.FloorDiv(r[1], atom.b))
        elif isinstance(atom, n.FloorMod) and (as_const_int(atom.b) or 0) > 0:
            alo, ahi = n.IntImm(0), n.IntImm(as_const_int(atom.b) - 1)
        elif isinstance(atom, (n.Min, n.Max)):
            ra, rb = _sym_range(atom.a, relax_ids, ranges), _sym_range(atom.b, relax_ids, ranges)
            if ra is None or rb is None:
                return None
            op = type(atom)
            alo, ahi = simplify(op(ra[0], rb[0])), simplify(op(ra[1], rb[1]))
        else:
            return None
        if coef < 0:
            alo, ahi = ahi, alo
        lo = lo + alo * coef if coef != 1 else lo + alo
        hi = hi + ahi * coef if coef != 1 else hi + ahi
    return lo, hi


def _free_vars(e: Any) -> list[n.Var]:
    out: list[n.Var] = []

    def visit(x: Any) -> None:
        if isinstance(x, n.Var) and x not in out:
            out.append(x)

    post_order_visit(e, visit)
    return out


def infer_bound(sch: Schedule) -> tuple[dict[Stage, StageBounds], dict]:
    """Bounds of every non-inline compute stage, and the inlined bodies.

    Raises
    ------
    ScheduleError
        If an attach point is invalid, a consumer runs outside its producer's attach scope, or
        a region has a non-constant extent.
    """
    bodies = inline_bodies(sch)
    reads: dict = {}
    result: dict[Stage, StageBounds] = {}
    for stage in reversed(sch.stages):
        if isinstance(stage.op, PlaceholderOp) or stage.attach_type == "inline":
            continue
        b = StageBounds()
        path = _attach_path(stage)
        for ps, pi in path:
            pb = result[ps]
            for iv in ps.leaf_iter_vars[:pi + 1]:
                v = _leaf_var(pb, iv)
                if v is not None and v not in b.enclosing:
                    b.enclosing.append(v)
                    b.ranges[v] = (0, pb.extent[iv])
        _root_ranges(sch, stage, b, bodies, result, reads)
        _pass_down(stage, b)
        over = _may_overcompute(sch, stage, bodies)
        _pass_up(stage, b, over, _zero_padded_reductions(sch, stage, bodies) if over else set())
        result[stage] = b
    return result, bodies


def _root_ranges(sch: Schedule, stage: Stage, b: StageBounds, bodies: dict, result: dict, reads: dict) -> None:
    op: ComputeOp = stage.op  # type: ignore[assignment]
    for iv in op.reduce_axis:
        b.root_min[iv] = iv.dom.min
        b.extent[iv] = _const_extent(stage, iv, iv.dom.extent)
    if stage.attach_type != "scope":
        for iv in op.axis:
            b.root_min[iv] = iv.dom.min
            b.extent[iv] = _const_extent(stage, iv, iv.dom.extent)
        return
    consumers = [c for c in sch.stages
                 if c in result and c.op in bodies and _loads_of(bodies[c.op], op, reads)]
    fixed = set(b.enclosing)
    lows: list[Any] = [None] * len(op.axis)
    highs: list[Any] = [None] * len(op.axis)
    for c in consumers:
        if not _inside(c, stage):
            raise ScheduleError(
                f"stage {op.name!r}: computed at axis {stage.attach_ivar.var.name!r} of stage "
                f"{stage.attach_stage.op.name!r}, but its consumer {c.op.name!r} runs outside that loop"
            )
        cb = result[c]
        ranges = {}
        relax = []
        for iv, val in cb.leaf_value.items():
            if isinstance(val, n.Var) and val not in fixed and val not in ranges:
                ranges[val] = (0, cb.extent[iv])
                relax.append(val)
        vmap = {iv.var: cb.root_value[iv] for iv in cb.root_value}
        for idx in _loads_of(bodies[c.op], op, reads):
            for d, e in enumerate(idx):
                where = f"stage {op.name!r} (read by {c.op.name!r}), dimension {d}"
                lo, hi = _relaxed_range(substitute(e, vmap), relax, ranges, where)
                lows[d] = lo if lows[d] is None else _pick(lows[d], lo, min, where)
                highs[d] = hi if highs[d] is None else _pick(highs[d], hi, max, where)
    for d, iv in enumerate(op.axis):
        if lows[d] is None:  # never read: the whole axis
            b.root_min[iv] = iv.dom.min
            b.extent[iv] = _const_extent(stage, iv, iv.dom.extent)
            continue
        lo, hi = lows[d], highs[d]
        shape = as_const_int(iv.dom.extent)
        if as_const_int(lo) is not None and as_const_int(lo) < 0:
            lo = n.IntImm(0)
        if shape is not None and as_const_int(hi) is not None and as_const_int(hi) > shape - 1:
            hi = n.IntImm(shape - 1)
        b.root_min[iv] = lo
        extent = simplify(hi - lo + 1, b.ranges)
        if as_const_int(extent) is None:
            # Not provably constant: use the largest extent over the enclosing loops.
            _, most = const_bounds(extent, b.ranges)
            if most is not None:
                extent = n.IntImm(most)
        b.extent[iv] = _const_extent(stage, iv, extent)


def _pick(a: n.PrimExpr, b: n.PrimExpr, fn, where: str) -> n.PrimExpr:
    d = as_const_int(simplify(a - b))
    if d is None:
        raise ScheduleError(f"{where}: the consumers read regions whose bounds {a!r} and {b!r} cannot be merged")
    return a if fn(d, 0) == d else b


def _const_extent(stage: Stage, iv: IterVar, extent: n.PrimExpr) -> int:
    value = as_const_int(simplify(extent))
    if value is None:
        raise ScheduleError(
            f"stage {stage.op.name!r}: axis {iv.var.name!r} has the non-constant extent {extent!r}; "
            f"VTA needs static loop bounds"
        )
    return value


def _pass_down(stage: Stage, b: StageBounds) -> None:
    for rel in stage.relations:
        if isinstance(rel, Split):
            ext = b.extent[rel.parent]
            if rel.factor is not None:
                b.extent[rel.inner] = min(rel.factor, ext) if ext > 0 else rel.factor
                b.extent[rel.outer] = -(-ext // b.extent[rel.inner])
            else:
                b.extent[rel.outer] = min(rel.nparts, ext)
                b.extent[rel.inner] = -(-ext // b.extent[rel.outer])
        else:
            b.extent[rel.fused] = b.extent[rel.outer] * b.extent[rel.inner]
    for iv in stage.leaf_iter_vars:
        attr = stage.iter_var_attrs.get(iv)
        if attr is not None and attr.bind_thread is not None:
            b.leaf_value[iv] = attr.bind_thread.var
        elif b.extent[iv] == 1:
            b.leaf_value[iv] = n.IntImm(0)
        else:
            b.leaf_value[iv] = iv.var


def _may_overcompute(sch: Schedule, stage: Stage, bodies: dict) -> bool:
    """Whether ``stage`` may compute past its tensor's shape without a guard: it is realized in
    an on-chip (non-global) scope and reads only tensors realized on chip and attached with
    ``compute_at`` (whose regions bound inference derives from these reads), so the extra
    elements (a consumer's partial last tile) land in its own buffer and read only elements
    computed for them. Stages reading DRAM tensors keep their guards."""
    if stage.scope in ("", "global"):
        return False
    for op in _loads_by_producer(bodies[stage.op]):
        producer = sch.stage_map.get(op)
        if (producer is None or isinstance(op, PlaceholderOp) or producer.scope in ("", "global")
                or producer.attach_type != "scope"):
            return False
    return True


def _zero_padded_reductions(sch: Schedule, stage: Stage, bodies: dict) -> set:
    """Ids of the reduction axes of ``stage`` whose steps past their extent (a ragged reduction
    chunk) add zero: every producer ``stage`` reads is an on-chip copy of DRAM tensors (a load,
    maybe padded), and one of them is indexed by the axis itself along a dimension of the
    axis's extent, so those steps read its elements past the tensor's shape: guarded reads,
    which the DMA fills with zeros (the schedule may let the other operands' overhang be
    cropped, never this one's)."""
    loads = _loads_by_producer(bodies[stage.op])
    for op in loads:
        if sch.stage_map.get(op) is None or op not in bodies:
            return set()
        for src in _loads_by_producer(bodies[op]):
            src_stage = sch.stage_map.get(src)
            if not (isinstance(src, PlaceholderOp) or (src_stage is not None and src_stage.scope in ("", "global"))):
                return set()
    out = set()
    for iv in stage.op.reduce_axis:
        extent = as_const_int(iv.dom.extent)
        for op, idx_list in loads.items():
            shape = [as_const_int(e) for e in op.output(0).shape]
            if any(i is iv.var and shape[d] == extent for idx in idx_list for d, i in enumerate(idx)):
                out.add(id(iv))
    return out


def _reduction_root(stage: Stage, iv: IterVar) -> IterVar | None:
    """The reduction axis of ``stage`` ``iv`` (a split's parent) is or derives from, else None."""
    reduce_ids = {id(r) for r in stage.op.reduce_axis}
    while id(iv) not in reduce_ids:
        for rel in stage.relations:
            if isinstance(rel, Split) and iv in (rel.outer, rel.inner):
                iv = rel.parent
                break
        else:
            return None
    return iv


def _pass_up(stage: Stage, b: StageBounds, overcompute: bool = False, zero_padded: set | None = None) -> None:
    for iv in stage.leaf_iter_vars:
        v = b.leaf_value[iv]
        if isinstance(v, n.Var):
            b.ranges[v] = (0, b.extent[iv])

    def simp(e: n.PrimExpr) -> n.PrimExpr:
        return simplify(e, b.ranges)

    offset: dict[IterVar, n.PrimExpr] = dict(b.leaf_value)
    splits = []
    op: ComputeOp = stage.op  # type: ignore[assignment]
    for rel in reversed(stage.relations):
        if isinstance(rel, Split):
            offset[rel.parent] = simp(offset[rel.outer] * b.extent[rel.inner] + offset[rel.inner])
            if b.extent[rel.outer] * b.extent[rel.inner] != b.extent[rel.parent]:
                root = _reduction_root(stage, rel.parent) if zero_padded else None
                if root is not None and id(root) in zero_padded:
                    # a ragged reduction chunk of an on-chip stage: its extra steps read the
                    # zero-filled overhang of an operand (a padded load), adding zero
                    continue
                splits.append((offset[rel.parent], b.extent[rel.parent]))
        else:
            inner_ext = b.extent[rel.inner]
            offset[rel.outer] = simp(n.FloorDiv(offset[rel.fused], n.IntImm(inner_ext)))
            offset[rel.inner] = simp(n.FloorMod(offset[rel.fused], n.IntImm(inner_ext)))
    for iv in list(op.axis) + list(op.reduce_axis):
        b.root_value[iv] = simp(b.root_min[iv] + offset[iv])
    # Guards of non-divisible splits, in terms of the leaf values.
    for off, ext in splits:
        _add_condition(b, simp(n.LT(off, n.IntImm(ext))))
    # Guards keeping a region that overhangs the tensor (a consumer's non-divisible split)
    # inside the tensor's shape (not needed for an on-chip stage reading on-chip tensors).
    for iv in ([] if overcompute else op.axis):
        shape = as_const_int(iv.dom.extent)
        lo, hi = const_bounds(b.root_value[iv], b.ranges)
        if shape is not None and (hi is None or hi > shape - 1):
            _add_condition(b, simp(n.LT(b.root_value[iv], n.IntImm(shape))))
        if lo is None or lo < 0:
            _add_condition(b, simp(n.GE(b.root_value[iv], n.IntImm(0))))


def _add_condition(b: StageBounds, cond: n.PrimExpr) -> None:
    if as_const_int(cond) == 1 or any(structural_equal(cond, c) for c in b.conditions):
        return
    b.conditions.append(cond)
