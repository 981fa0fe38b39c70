"""From a schedule to a PrimFunc: ScheduleOps, buffer binding, StorageFlatten, Simplify.

``schedule_to_primfunc(sch, args, name)`` is the front half of ``vta.lower``: it returns the
flat function (``Allocate``/``Load``/``Store``, argument buffers in ``buffer_map``) that the
phase-1 passes start from. ``schedule_to_buffer_func`` stops before StorageFlatten
(``BufferRealize``/``BufferStore``/``BufferLoad`` form), for passes that need the
multi-dimensional view.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import ScheduleError
from ..tir import nodes as n
from ..tir.functor import StmtExprMutator
from ..tir.simplify import simplify
from ..tir.transform.storage_flatten import storage_flatten
from .schedule import Schedule
from .schedule_ops import schedule_ops
from .tensor import PlaceholderOp, Tensor

__all__ = ["schedule_to_primfunc", "schedule_to_buffer_func"]


class _ToBuffers(StmtExprMutator):
    """ProducerRealize/Store/Load -> BufferRealize/Store/Load over one Buffer per tensor."""

    def __init__(self, buffers: dict):
        self.buffers = buffers

    def buffer(self, tensor: Tensor, scope: str = "global") -> n.Buffer:
        buf = self.buffers.get(tensor)
        if buf is None:
            buf = n.Buffer(n.Var(tensor.name, "handle"), tensor.dtype, tensor.shape, tensor.name, scope=scope)
            self.buffers[tensor] = buf
        return buf

    def _known(self, tensor: Tensor) -> n.Buffer:
        buf = self.buffers.get(tensor)
        if buf is None:
            kind = "an input" if isinstance(tensor.op, PlaceholderOp) else "a tensor"
            raise ScheduleError(
                f"{kind} {tensor.name!r} is used by the schedule but is neither in the argument list nor "
                f"computed by a stage; add it to args"
            )
        return buf

    def visit_ProducerRealize(self, node: n.ProducerRealize) -> n.Stmt:
        buf = self.buffer(node.producer, node.storage_scope or "global")
        return n.BufferRealize(buf, node.bounds, node.condition, self.visit(node.body))

    def visit_ProducerStore(self, node: n.ProducerStore) -> n.Stmt:
        buf = self._known(node.producer)
        return n.BufferStore(buf, self.visit(node.value), tuple(self.visit(i) for i in node.indices))

    def visit_ProducerLoad(self, node: n.ProducerLoad) -> n.PrimExpr:
        buf = self._known(node.producer)
        return n.BufferLoad(buf, tuple(self.visit(i) for i in node.indices))

    def visit_AttrStmt(self, node: n.AttrStmt) -> n.Stmt:
        if node.attr_key == "buffer_bind_scope":
            view, tensor = node.node
            return n.AttrStmt((view, self._known(tensor)), node.attr_key, self.visit(node.value), self.visit(node.body))
        return self.generic_visit(node)


def _arg_tensors(sch: Schedule, args: Sequence[Any]) -> list[Tensor]:
    out = []
    for a in args:
        if not isinstance(a, Tensor):
            raise TypeError(f"lower: arguments must be tensors, got {a!r}")
        if not isinstance(a.op, PlaceholderOp):
            a = sch[a].op.output(0)  # follows cache_read/cache_write replacements
        if any(a is b for b in out):
            raise ScheduleError(f"tensor {a.name!r} appears twice in the argument list")
        out.append(a)
    return out


def schedule_to_buffer_func(sch: Schedule, args: Sequence[Any], name: str = "default_function") -> n.PrimFunc:
    """The function of ``sch`` before StorageFlatten (Buffer* form).

    Raises
    ------
    vta.errors.ScheduleError
        If the schedule cannot be lowered; the message names stage and axis.
    TypeError
        If an argument is not a tensor.
    """
    if not isinstance(sch, Schedule):
        raise TypeError(f"lower: expected a Schedule, got {sch!r}")
    tensors = _arg_tensors(sch, args)
    stmt = schedule_ops(sch, set(tensors))
    buffers: dict = {}
    params = []
    buffer_map = {}
    for t in tensors:
        buf = n.Buffer(n.Var(t.name, "handle"), t.dtype, t.shape, t.name)
        buffers[t] = buf
        param = n.Var(t.name, "handle")
        params.append(param)
        buffer_map[param] = buf
    body = _ToBuffers(buffers).visit(stmt)
    attrs = {"global_symbol": name, "from_legacy_te_schedule": True, "tir.noalias": True}
    return n.PrimFunc(tuple(params), body, buffer_map, attrs)


def schedule_to_primfunc(sch: Schedule, args: Sequence[Any], name: str = "default_function") -> n.PrimFunc:
    """Lower ``sch`` to a flat PrimFunc: ScheduleOps, StorageFlatten, Simplify.

    Parameters
    ----------
    sch : Schedule
    args : sequence of Tensor
        The function's parameters, in order (inputs and outputs).
    name : str
        The ``global_symbol`` attribute.

    Raises
    ------
    vta.errors.ScheduleError
        If the schedule cannot be lowered; the message names stage and axis.
    TypeError
        If an argument is not a tensor.
    """
    func = schedule_to_buffer_func(sch, args, name)
    func = storage_flatten(func)
    return simplify(func)
