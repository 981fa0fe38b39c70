"""Tensor expressions and schedules (the ``tvm.te`` subset the VTA flow uses).

Declare tensors with :func:`placeholder` and :func:`compute`, schedule them with
:func:`create_schedule` and the :class:`Stage` primitives, and lower with
:func:`vta.te.lower.schedule_to_primfunc` (or ``vta.lower``/``vta.build``).

An :class:`IterVar` can index tensors directly (``A[bo, ko, bi, ki]``) and supports arithmetic
when it is the left operand (``ko * 16 + i``); inside a larger expression whose left side is
already an expression, use its variable (``i + dy.var``).
"""

from .operation import compute, const, if_then_else, max, min, placeholder, reduce_axis, size_var, sum, thread_axis, var
from .schedule import Schedule, Stage, create_schedule
from .tensor import ComputeOp, IterVar, Operation, PlaceholderOp, Reduce, Tensor
from .tensor_intrin import TensorIntrin, decl_buffer, decl_tensor_intrin

__all__ = [
    "compute", "const", "if_then_else", "max", "min", "placeholder", "reduce_axis", "size_var", "sum",
    "thread_axis", "var", "Schedule", "Stage", "create_schedule", "ComputeOp", "IterVar", "Operation",
    "PlaceholderOp", "Reduce", "Tensor", "TensorIntrin", "decl_buffer", "decl_tensor_intrin",
]
