"""Schedules and stage primitives.

A :class:`Schedule` holds one :class:`Stage` per operation reachable from the outputs, in
topological order. A stage records *what the user asked* (leaf loop order, split/fuse relations,
attach point, storage scope, pragmas, thread bindings, tensorize); bound inference
(:mod:`vta.te.bound`) and ScheduleOps (:mod:`vta.te.schedule_ops`) turn that into loops.

Every primitive validates its arguments at once and raises :class:`vta.errors.ScheduleError`
naming the stage and the axis when the request is illegal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import ScheduleError
from ..tir import nodes as n
from ..tir.functor import StmtExprMutator
from .tensor import COMM_REDUCE, DATA_PAR, THREAD_INDEX, ComputeOp, IterVar, Operation, PlaceholderOp, Tensor

__all__ = ["Schedule", "Stage", "Split", "Fuse", "create_schedule"]


@dataclass(eq=False)
class Split:
    """``parent = outer * factor + inner`` (``factor`` or ``nparts`` given)."""

    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int | None
    nparts: int | None


@dataclass(eq=False)
class Fuse:
    """``fused = outer * extent(inner) + inner``."""

    outer: IterVar
    inner: IterVar
    fused: IterVar


@dataclass(eq=False)
class IterVarAttr:
    """Per-axis requests: pragmas (in order), a thread binding, a tensor intrinsic."""

    pragmas: list = field(default_factory=list)
    bind_thread: IterVar | None = None
    tensor_intrin: Any = None


def _axis_name(iv: Any) -> str:
    return iv.var.name if isinstance(iv, IterVar) else repr(iv)


class Stage:
    """The schedule of one operation."""

    def __init__(self, op: Operation, schedule: "Schedule"):
        self.op = op
        self.origin_op = op
        self.schedule = schedule
        self.all_iter_vars: list[IterVar] = list(op.axis) + list(op.reduce_axis)
        self.leaf_iter_vars: list[IterVar] = list(self.all_iter_vars)
        self.relations: list[Split | Fuse] = []
        self.attach_type = "root"  # "root", "scope" or "inline"
        self.attach_stage: Stage | None = None
        self.attach_ivar: IterVar | None = None
        self.scope = ""
        self.is_output = False
        self.iter_var_attrs: dict[IterVar, IterVarAttr] = {}

    # ---------------------------------------------------------------- helpers
    @property
    def name(self) -> str:
        return self.op.name

    def __repr__(self) -> str:
        return f"Stage({self.op.name})"

    def _fail(self, msg: str) -> ScheduleError:
        return ScheduleError(f"stage {self.op.name!r}: {msg}")

    def _attr(self, iv: IterVar) -> IterVarAttr:
        return self.iter_var_attrs.setdefault(iv, IterVarAttr())

    def _check_compute(self, what: str) -> None:
        if not isinstance(self.op, ComputeOp):
            raise self._fail(f"{what} needs a compute stage; {self.op.name!r} is a placeholder (an input)")

    def _leaf(self, iv: Any, what: str) -> IterVar:
        """``iv`` as a current leaf axis of this stage, or a ScheduleError saying why not."""
        if not isinstance(iv, IterVar):
            raise self._fail(f"{what}: expected an IterVar of this stage, got {iv!r}")
        if iv in self.leaf_iter_vars:
            return iv
        if iv in self.all_iter_vars:
            raise self._fail(
                f"{what}: axis {iv.var.name!r} was already split or fused; use the axes that relation returned"
            )
        owner = self.schedule._owner_of(iv)
        where = f"it belongs to stage {owner.op.name!r}" if owner is not None else "it belongs to no stage"
        raise self._fail(f"{what}: axis {iv.var.name!r} is not an axis of this stage ({where})")

    def _own(self, iv: Any, what: str) -> IterVar:
        if isinstance(iv, IterVar) and iv in self.all_iter_vars:
            return iv
        return self._leaf(iv, what)

    # ---------------------------------------------------------------- primitives
    def set_scope(self, scope: str) -> "Stage":
        """Storage scope of the stage's buffer (``global``, ``local.acc_buffer`` ...).

        Raises
        ------
        ScheduleError
            If ``scope`` is not a string or the stage is a placeholder.
        """
        if not isinstance(scope, str):
            raise self._fail(f"set_scope expects a string, got {scope!r}")
        self._check_compute("set_scope")
        self.scope = scope
        return self

    def split(self, parent: IterVar, factor: Any = None, nparts: Any = None) -> tuple[IterVar, IterVar]:
        """Split ``parent`` into ``(outer, inner)`` by ``factor`` (inner extent) or ``nparts`` (outer extent).

        Raises
        ------
        ScheduleError
            If ``parent`` is not a leaf axis of this stage (e.g. it was split already), or not
            exactly one of a positive integer ``factor``/``nparts`` is given.
        """
        self._check_compute("split")
        parent = self._leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise self._fail(f"split of axis {parent.var.name!r}: give exactly one of factor= or nparts=")
        amount = factor if factor is not None else nparts
        value = amount.value if isinstance(amount, n.IntImm) else amount
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            kw = "factor" if factor is not None else "nparts"
            raise self._fail(f"split of axis {parent.var.name!r}: {kw} must be a positive integer, got {amount!r}")
        kind = parent.iter_type
        outer = IterVar(None, n.Var(parent.var.name + ".outer"), kind)
        inner = IterVar(None, n.Var(parent.var.name + ".inner"), kind)
        rel = Split(parent, outer, inner, value if factor is not None else None, value if nparts is not None else None)
        self.relations.append(rel)
        pos = self.leaf_iter_vars.index(parent)
        self.leaf_iter_vars[pos:pos + 1] = [outer, inner]
        self.all_iter_vars += [outer, inner]
        return outer, inner

    def fuse(self, *axes: IterVar) -> IterVar:
        """Fuse consecutive leaf axes (outer first) into one.

        Raises
        ------
        ScheduleError
            If an axis is not a leaf of this stage or the axes are not adjacent in loop order.
        """
        self._check_compute("fuse")
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = tuple(axes[0])
        if len(axes) < 2:
            if len(axes) == 1:
                return self._leaf(axes[0], "fuse")
            raise self._fail("fuse needs at least one axis")
        fused = self._leaf(axes[0], "fuse")
        for inner in axes[1:]:
            inner = self._leaf(inner, "fuse")
            p_out, p_in = self.leaf_iter_vars.index(fused), self.leaf_iter_vars.index(inner)
            if p_in != p_out + 1:
                raise self._fail(
                    f"fuse: axes {fused.var.name!r} and {inner.var.name!r} are not adjacent in the loop "
                    f"order {[iv.var.name for iv in self.leaf_iter_vars]!r}; reorder them first"
                )
            if (fused.iter_type == COMM_REDUCE) != (inner.iter_type == COMM_REDUCE):
                raise self._fail(
                    f"fuse: cannot fuse data-parallel and reduction axes ({fused.var.name!r}, {inner.var.name!r})"
                )
            new = IterVar(None, n.Var(f"{fused.var.name}.{inner.var.name}.fused"), fused.iter_type)
            self.relations.append(Fuse(fused, inner, new))
            self.leaf_iter_vars[p_out:p_in + 1] = [new]
            self.all_iter_vars.append(new)
            fused = new
        return fused

    def reorder(self, *axes: IterVar) -> "Stage":
        """Put the given leaf axes in this order (the other leaves keep their positions).

        Raises
        ------
        ScheduleError
            If an axis is foreign, not a leaf any more, or repeated.
        """
        self._check_compute("reorder")
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = tuple(axes[0])
        leaves = [self._leaf(a, "reorder") for a in axes]
        if len(set(map(id, leaves))) != len(leaves):
            raise self._fail(f"reorder: an axis is repeated in {[a.var.name for a in leaves]!r}")
        positions = sorted(self.leaf_iter_vars.index(a) for a in leaves)
        for pos, iv in zip(positions, leaves, strict=True):
            self.leaf_iter_vars[pos] = iv
        return self

    def tile(self, x_parent: IterVar, y_parent: IterVar, x_factor: Any, y_factor: Any):
        """Split two axes and reorder to ``(x_outer, y_outer, x_inner, y_inner)``.

        Raises
        ------
        ScheduleError
            As :meth:`split` and :meth:`reorder`.
        """
        xo, xi = self.split(x_parent, factor=x_factor)
        yo, yi = self.split(y_parent, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def compute_at(self, parent: "Stage", scope: IterVar) -> "Stage":
        """Compute this stage inside the loop ``scope`` of the consumer stage ``parent``.

        Raises
        ------
        ScheduleError
            If ``parent`` does not (transitively) consume this stage, ``scope`` is not an axis
            of ``parent``, or this stage is an output or a placeholder.
        """
        self._check_compute("compute_at")
        if not isinstance(parent, Stage):
            raise self._fail(f"compute_at expects a Stage (s[tensor]), got {parent!r}")
        if parent is self:
            raise self._fail("compute_at onto itself")
        if self.is_output:
            raise self._fail("an output stage cannot be computed at another stage")
        if not self.schedule._depends_on(parent.op, self.op):
            raise self._fail(
                f"compute_at onto stage {parent.op.name!r}, which does not read this stage's output "
                f"(directly or through other stages); attach a producer to one of its consumers"
            )
        if not isinstance(scope, IterVar) or scope not in parent.all_iter_vars:
            raise self._fail(
                f"compute_at: axis {_axis_name(scope)!r} is not an axis of stage {parent.op.name!r}"
            )
        self.attach_type, self.attach_stage, self.attach_ivar = "scope", parent, scope
        return self

    def compute_root(self) -> "Stage":
        """Compute this stage at the top level (undo ``compute_at``/``compute_inline``)."""
        self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None
        return self

    def compute_inline(self) -> "Stage":
        """Substitute this stage's expression into its consumers.

        Raises
        ------
        ScheduleError
            If the stage is an output, a placeholder or a reduction.
        """
        self._check_compute("compute_inline")
        if self.is_output:
            raise self._fail("an output stage cannot be inlined")
        if self.op.reduce_axis:
            raise self._fail("a reduction cannot be inlined")
        self.attach_type, self.attach_stage, self.attach_ivar = "inline", None, None
        return self

    def pragma(self, var: IterVar, pragma_type: str, pragma_value: Any = None) -> "Stage":
        """Annotate the loop of ``var`` with ``pragma_<pragma_type>`` (value 1 unless given).

        The attribute is emitted around the loop even when the axis has extent 1 (no loop).

        Raises
        ------
        ScheduleError
            If ``var`` is not an axis of this stage or the name is empty. A pragma on an axis
            that is split or fused afterwards is reported when the schedule is lowered.
        """
        self._check_compute("pragma")
        iv = self._own(var, "pragma")
        if not isinstance(pragma_type, str) or not pragma_type:
            raise self._fail(f"pragma on axis {iv.var.name!r}: the name must be a non-empty string, got {pragma_type!r}")
        value = n.convert(1 if pragma_value is None else pragma_value)
        self._attr(iv).pragmas.append((pragma_type, value))
        return self

    def bind(self, ivar: IterVar, thread_ivar: IterVar) -> "Stage":
        """Bind a leaf axis to a virtual thread axis (``te.thread_axis("cthread")``).

        Raises
        ------
        ScheduleError
            If ``ivar`` is not a data-parallel leaf axis or ``thread_ivar`` is not a thread axis.
        """
        self._check_compute("bind")
        iv = self._leaf(ivar, "bind")
        if not isinstance(thread_ivar, IterVar) or thread_ivar.iter_type != THREAD_INDEX:
            raise self._fail(f"bind of axis {iv.var.name!r}: {thread_ivar!r} is not a thread_axis")
        if thread_ivar.thread_tag not in ("cthread", "vthread"):
            raise self._fail(
                f"bind of axis {iv.var.name!r}: thread tag {thread_ivar.thread_tag!r} cannot run on VTA; "
                f"only virtual threads (cthread, vthread) are supported"
            )
        if iv.iter_type == COMM_REDUCE:
            raise self._fail(f"bind: reduction axis {iv.var.name!r} cannot be bound to a thread")
        self._attr(iv).bind_thread = thread_ivar
        return self

    def tensorize(self, var: IterVar, tensor_intrin: Any) -> "Stage":
        """Replace the loop nest from leaf axis ``var`` inwards by ``tensor_intrin``.

        The match against the intrinsic is checked when the schedule is lowered.

        Raises
        ------
        ScheduleError
            If ``var`` is not a leaf axis of this stage, ``tensor_intrin`` is not a
            :class:`~vta.te.TensorIntrin`, or another axis is already tensorized.
        """
        self._check_compute("tensorize")
        iv = self._leaf(var, "tensorize")
        from .tensor_intrin import TensorIntrin

        if not isinstance(tensor_intrin, TensorIntrin):
            raise self._fail(f"tensorize at axis {iv.var.name!r}: expected a TensorIntrin, got {tensor_intrin!r}")
        for other, attr in self.iter_var_attrs.items():
            if attr.tensor_intrin is not None and other is not iv:
                raise self._fail(f"tensorize: axis {other.var.name!r} is already tensorized; one per stage")
        self._attr(iv).tensor_intrin = tensor_intrin
        return self

    def vectorize(self, var: IterVar) -> "Stage":
        """Not supported by VTA (there is no vector unit on the host path).

        Raises
        ------
        ScheduleError
            Always.
        """
        raise self._fail(f"vectorize of axis {_axis_name(var)!r} is not supported by the VTA flow")

    unroll = parallel = vectorize


class Schedule:
    """The stages of every operation reachable from the outputs, in topological order."""

    def __init__(self, outputs: Sequence[Operation]):
        self.outputs = list(outputs)
        self.stages: list[Stage] = []
        self.stage_map: dict[Operation, Stage] = {}
        for op in _topo_order(self.outputs):
            stage = Stage(op, self)
            self.stages.append(stage)
            self.stage_map[op] = stage
        for op in self.outputs:
            self.stage_map[op].is_output = True

    def __getitem__(self, key: Tensor | Operation) -> Stage:
        op = key.op if isinstance(key, Tensor) else key
        if op not in self.stage_map:
            name = getattr(op, "name", repr(op))
            raise ScheduleError(f"{name!r} is not part of this schedule (not reachable from its outputs)")
        return self.stage_map[op]

    # ---------------------------------------------------------------- queries
    def _owner_of(self, iv: IterVar) -> Stage | None:
        for st in self.stages:
            if iv in st.all_iter_vars:
                return st
        return None

    def _depends_on(self, consumer: Operation, producer: Operation) -> bool:
        """Whether ``consumer`` reads ``producer``'s output, directly or through other ops."""
        todo, seen = [consumer], set()
        while todo:
            op = todo.pop()
            for t in op.input_tensors:
                if t.op is producer:
                    return True
                if id(t.op) not in seen:
                    seen.add(id(t.op))
                    todo.append(t.op)
        return False

    def consumers(self, stage: Stage) -> list[Stage]:
        """The stages whose operation reads ``stage``'s output directly."""
        return [s for s in self.stages if any(t.op is stage.op for t in s.op.input_tensors)]

    # ---------------------------------------------------------------- caching stages
    def _replace_dataflow(self, readers: Sequence[Stage] | None, old: Tensor, new: Tensor) -> None:
        """Make ``readers`` (None: every stage) read ``new`` instead of ``old``, and every stage downstream read the
        rebuilt operations (as TVM's ReplaceDataFlow).

        A reader's operation is rebuilt with a new body, so its output tensor changes too; every
        stage that reads a rebuilt tensor is rebuilt in turn (in topological order), whatever
        primitives were applied to it before. Axes, relations and attach points are kept: the
        rebuilt operation has the same IterVars. ``stage_map`` keeps the old operations as keys
        so tensors declared before the call still find their stage.
        """
        direct = None if readers is None else {id(st) for st in readers}
        remap: dict[int, Tensor] = {}

        class _R(StmtExprMutator):
            def __init__(self, mapping: dict):
                self.mapping = mapping

            def visit_ProducerLoad(self, node):
                idx = tuple(self.visit(i) for i in node.indices)
                return n.ProducerLoad(self.mapping.get(id(node.producer), node.producer), idx)

        for st in self.stages:
            if not isinstance(st.op, ComputeOp):
                continue
            mapping = dict(remap)
            if direct is None or id(st) in direct:
                mapping[id(old)] = new
            if not any(id(t) in mapping for t in st.op.input_tensors):
                continue
            before = st.op
            new_op = before.with_body(_R(mapping).visit(before.body))
            self.stage_map[new_op] = st
            st.op = new_op
            remap[id(before.output(0))] = new_op.output(0)
            if before in self.outputs:
                self.outputs[self.outputs.index(before)] = new_op

    def _insert_stage(self, op: ComputeOp, before: Stage) -> Stage:
        stage = Stage(op, self)
        self.stages.insert(self.stages.index(before), stage)
        self.stage_map[op] = stage
        return stage

    def cache_read(self, tensor: Tensor, scope: str, readers: Sequence[Any]) -> Tensor:
        """A copy of ``tensor`` in ``scope`` that ``readers`` read instead of ``tensor``.

        Raises
        ------
        ScheduleError
            If a reader does not read ``tensor``.
        """
        if not isinstance(readers, (list, tuple)):
            readers = [readers]
        reader_stages = [self[r] for r in readers]
        if not isinstance(tensor.op, PlaceholderOp) and tensor.op in self.stage_map:
            tensor = self[tensor].op.output(0)  # the current version of a rebuilt stage's output
        for st in reader_stages:
            if not any(t is tensor for t in st.op.input_tensors):
                raise ScheduleError(f"cache_read: stage {st.op.name!r} does not read tensor {tensor.name!r}")
        from .operation import compute

        cache = compute(tensor.shape, lambda *i: tensor(*i), name=f"{tensor.name}.{scope}")
        first = min(reader_stages, key=self.stages.index)
        self._insert_stage(cache.op, first).set_scope(scope)
        self._replace_dataflow(reader_stages, tensor, cache)
        return cache

    def cache_write(self, tensor: Tensor, scope: str) -> Tensor:
        """Compute ``tensor`` into a new stage in ``scope``; the original stage becomes a copy.

        Raises
        ------
        ScheduleError
            If the tensor's stage was already scheduled (split, reordered, attached ...).
        """
        stage = self[tensor]
        stage._check_compute("cache_write")
        if stage.relations or stage.attach_type != "root" or stage.iter_var_attrs:
            raise stage._fail("cache_write must be applied before any other primitive on the stage")
        op: ComputeOp = stage.op  # type: ignore[assignment]
        axis = [IterVar(iv.dom, n.Var(iv.var.name + ".c"), DATA_PAR) for iv in op.axis]
        from ..tir.functor import substitute

        body = substitute(op.body, {old.var: new.var for old, new in zip(op.axis, axis, strict=True)})
        cache_op = ComputeOp(f"{op.name}.{scope}", op.tag, axis, body, op.attrs)
        cache_stage = self._insert_stage(cache_op, stage)
        cache_stage.set_scope(scope)
        cache = cache_op.output(0)
        copy_op = op.with_body(cache(*[iv.var for iv in op.axis]))
        self.stage_map[copy_op] = stage
        stage.op = copy_op
        stage.all_iter_vars = list(copy_op.axis)
        stage.leaf_iter_vars = list(copy_op.axis)
        if op in self.outputs:
            self.outputs[self.outputs.index(op)] = copy_op
        consumers = [st for st in self.stages if st is not stage and st is not cache_stage]
        self._replace_dataflow(consumers, op.output(0), copy_op.output(0))
        return cache

    def normalize(self) -> "Schedule":
        """Kept for API compatibility: loops are always generated from zero."""
        return self


def _topo_order(outputs: Sequence[Operation]) -> list[Operation]:
    order: list[Operation] = []
    seen: set[int] = set()

    def visit(op: Operation) -> None:
        if id(op) in seen:
            return
        seen.add(id(op))
        for t in op.input_tensors:
            visit(t.op)
        order.append(op)

    for op in outputs:
        visit(op)
    return order


def create_schedule(ops: Any) -> Schedule:
    """A schedule for the given output operation(s) (or tensors).

    Raises
    ------
    TypeError
        If an element is neither an operation nor a tensor.
    """
    if not isinstance(ops, (list, tuple)):
        ops = [ops]
    out = []
    for op in ops:
        if isinstance(op, Tensor):
            op = op.op
        if not isinstance(op, Operation):
            raise TypeError(f"create_schedule expects operations or tensors, got {op!r}")
        out.append(op)
    return Schedule(out)
