"""ScheduleOps: turn a schedule and its bounds into a TE-level statement.

The result uses ``ProducerRealize`` (with the stage's storage scope), ``ProducerStore`` and
``ProducerLoad``. For each stage, its leaf axes become (outermost first):

* ``AttrStmt(iv, "pragma_<name>", value)`` for each pragma of the axis, around
* ``AttrStmt(thread_iv, "virtual_thread", extent)`` for an axis bound to a virtual thread, or a
  serial ``For`` over ``[0, extent)``, or nothing for an extent-1 axis (whose value is 0),

and inside the loop of axis ``iv`` come the stages attached there with ``compute_at``, each
realized around its producing nest and everything after it. A reduction is split into an
initialisation nest and an update nest at the first loop that depends on a reduction axis.
Tensorized stages are handled by :mod:`vta.te.tensorize`.
"""

from __future__ import annotations

from typing import Any

from ..errors import ScheduleError
from ..tir import nodes as n
from ..tir.arith import uses_var
from ..tir.functor import substitute
from ..tir.simplify import simplify
from .bound import StageBounds, infer_bound
from .schedule import Schedule, Stage
from .tensor import COMM_REDUCE, ComputeOp, PlaceholderOp, Reduce

__all__ = ["schedule_ops", "OpsBuilder"]


class OpsBuilder:
    """Builds the statement of a schedule; ``extern`` tensors (the arguments) are not realized."""

    def __init__(self, sch: Schedule, extern: set):
        self.sch = sch
        self.extern = extern
        self.bounds, self.bodies = infer_bound(sch)

    # ---------------------------------------------------------------- top level
    def build(self) -> n.Stmt:
        body: n.Stmt | None = None
        for stage in reversed(self.sch.stages):
            if isinstance(stage.op, PlaceholderOp) or stage.attach_type != "root":
                continue
            produce = self.make_nest(stage)
            body = produce if body is None else n.seq(produce, body)
            body = self.realize(stage, body)
        return body if body is not None else n.Evaluate(n.IntImm(0))

    def realize(self, stage: Stage, body: n.Stmt) -> n.Stmt:
        tensor = stage.op.output(0)
        if tensor in self.extern:
            return body
        b = self.bounds[stage]
        bounds = tuple(n.Range(b.root_min[iv], n.IntImm(b.extent[iv])) for iv in stage.op.axis)
        return n.ProducerRealize(tensor, bounds, n.IntImm(1, "bool"), body, stage.scope or "global")

    # ---------------------------------------------------------------- one stage
    def is_reduce_leaf(self, iv) -> bool:
        return iv.iter_type == COMM_REDUCE

    def make_nest(self, stage: Stage) -> n.Stmt:
        b = self.bounds[stage]
        leaves = stage.leaf_iter_vars
        for iv, attr in stage.iter_var_attrs.items():
            if iv not in leaves and (attr.pragmas or attr.bind_thread is not None):
                what = "pragma " + attr.pragmas[0][0] if attr.pragmas else "thread binding"
                raise ScheduleError(
                    f"stage {stage.op.name!r}: {what} is on axis {iv.var.name!r}, which was split or fused "
                    f"afterwards and has no loop; annotate one of the resulting axes"
                )
        for pos, iv in enumerate(leaves):
            attr = stage.iter_var_attrs.get(iv)
            if attr is not None and attr.tensor_intrin is not None:
                from .tensorize import make_tensorize

                return make_tensorize(self, stage, pos)
        op: ComputeOp = stage.op  # type: ignore[assignment]
        tensor = op.output(0)
        vmap = {iv.var: b.root_value[iv] for iv in b.root_value}
        idx = tuple(b.root_value[iv] for iv in op.axis)
        body = self.bodies[op]
        if isinstance(body, Reduce):
            begin = next((p for p, iv in enumerate(leaves) if self.is_reduce_leaf(iv)), len(leaves))
            reduce_vars = [b.leaf_value[iv] for iv in leaves if self.is_reduce_leaf(iv)]
            init = n.ProducerStore(tensor, body.identity(), idx)
            update = n.ProducerStore(
                tensor, body.combine(n.ProducerLoad(tensor, idx), simplify(substitute(body.source, vmap))), idx
            )
            init_pos = [p for p in range(begin, len(leaves)) if not self.is_reduce_leaf(leaves[p])]
            init_conds = [c for c in b.conditions if not uses_var(c, [v for v in reduce_vars if isinstance(v, n.Var)])]
            init_nest = self.loops(stage, init_pos, _guard(init, init_conds), init=True)
            update_nest = self.loops(stage, range(begin, len(leaves)), _guard(update, b.conditions))
            return self.loops(stage, range(begin), n.seq(init_nest, update_nest))
        store = n.ProducerStore(tensor, simplify(substitute(body, vmap)), idx)
        return self.loops(stage, range(len(leaves)), _guard(store, b.conditions))

    def loops(self, stage: Stage, positions: Any, inner: n.Stmt, init: bool = False) -> n.Stmt:
        """Wrap ``inner`` in the loops of the leaf axes at ``positions`` (outermost first).

        ``init=True`` builds the initialisation copy of a reduction's loops: no attached stages,
        and fresh loop variables (every loop binds its own variable, as in TVM).
        """
        body = inner
        b: StageBounds = self.bounds[stage]
        for p in reversed(list(positions)):
            iv = stage.leaf_iter_vars[p]
            var = None
            if init:
                old = b.leaf_value[iv]
                if isinstance(old, n.Var) and old is iv.var:
                    var = n.Var(old.name, old.dtype)
                    body = substitute(body, {old: var})
            else:
                body = self.attach_at(stage, iv, body)
            body = self.loop(stage, iv, body, var)
        return body

    def loop(self, stage: Stage, iv, body: n.Stmt, var: n.Var | None = None) -> n.Stmt:
        b: StageBounds = self.bounds[stage]
        ext = b.extent[iv]
        attr = stage.iter_var_attrs.get(iv)
        if attr is not None and attr.bind_thread is not None:
            stmt: n.Stmt = n.AttrStmt(attr.bind_thread, "virtual_thread", n.IntImm(ext), body)
        elif ext == 1:
            stmt = body
        else:
            stmt = n.For(var if var is not None else iv.var, n.IntImm(0), n.IntImm(ext), n.ForKind.SERIAL, body)
        if attr is not None:
            for key, value in reversed(attr.pragmas):
                stmt = n.AttrStmt(iv, "pragma_" + key, value, stmt)
        return stmt

    def attach_at(self, stage: Stage, iv, body: n.Stmt) -> n.Stmt:
        attached = [s for s in self.sch.stages
                    if s.attach_type == "scope" and s.attach_stage is stage and s.attach_ivar is iv]
        for p in reversed(attached):
            body = self.realize(p, n.seq(self.make_nest(p), body))
        return body


def _guard(stmt: n.Stmt, conditions: list) -> n.Stmt:
    if not conditions:
        return stmt
    cond = conditions[0]
    for c in conditions[1:]:
        cond = n.And(cond, c)
    return n.IfThenElse(n.Call("bool", "tir.likely", (cond,)), stmt)


def schedule_ops(sch: Schedule, extern: set | None = None) -> n.Stmt:
    """The TE-level statement of ``sch`` (see the module docstring).

    Raises
    ------
    vta.errors.ScheduleError
        If the schedule cannot be lowered (invalid attach point, tensorize mismatch, ...).
    """
    return OpsBuilder(sch, set(extern or ())).build()
