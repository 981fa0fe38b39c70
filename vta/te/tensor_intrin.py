"""Tensor intrinsics: a small compute declaration plus the statements that implement it.

``decl_tensor_intrin(op, fcompute)`` binds every input of ``op`` and its output to a symbolic
:class:`~vta.tir.nodes.Buffer` (``data`` and ``elem_offset`` are fresh variables) and calls
``fcompute(ins, outs)``, which returns the implementing statement, or a triple ``(body, reset,
update)`` when the intrinsic can also be used with the reduction split over outer loops.
Tensorize later binds those buffers to the matched regions of real buffers.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..tir import nodes as n
from .tensor import ComputeOp, Operation, PlaceholderOp, Tensor

__all__ = ["TensorIntrin", "decl_tensor_intrin", "decl_buffer"]


def decl_buffer(shape: Sequence[Any], dtype: str = "float32", name: str = "buffer", data: n.Var | None = None,
                strides: Sequence[Any] = (), elem_offset: Any = None, scope: str = "",
                data_alignment: int = -1, offset_factor: int = 0) -> n.Buffer:
    """A buffer declaration; with ``offset_factor`` > 0 the element offset is a fresh variable.

    Raises
    ------
    ValueError
        If ``offset_factor`` is negative.
    """
    if offset_factor < 0:
        raise ValueError(f"decl_buffer {name!r}: offset_factor must be >= 0, got {offset_factor!r}")
    if data is None:
        data = n.Var(name, "handle")
    if elem_offset is None:
        elem_offset = n.Var(f"{name}_elem_offset") if offset_factor else n.IntImm(0)
    return n.Buffer(
        data=data, dtype=dtype, shape=tuple(shape), name=name, strides=tuple(strides),
        elem_offset=n.convert(elem_offset), scope=scope or "global",
        data_alignment=data_alignment if data_alignment > 0 else 64,
        offset_factor=offset_factor if offset_factor > 0 else 1,
    )


class TensorIntrin:
    """A declared intrinsic: the compute it implements, its buffers and its bodies.

    Attributes
    ----------
    op : ComputeOp
        The computation the intrinsic performs.
    inputs : list of Tensor
        The placeholders ``op`` reads, in the order of ``buffers``.
    buffers : list of Buffer
        One buffer per input, then the output's.
    body, reset, update : Stmt
        The whole computation, the reduction initialisation and the accumulation step
        (``reset``/``update`` are ``None`` when ``fcompute`` returned one statement).
    """

    def __init__(self, name: str, op: ComputeOp, inputs: list[Tensor], buffers: list[n.Buffer],
                 body: n.Stmt, reset: n.Stmt | None, update: n.Stmt | None):
        self.name = name
        self.op = op
        self.inputs = inputs
        self.buffers = buffers
        self.body = body
        self.reset = reset
        self.update = update

    def __repr__(self) -> str:
        return f"TensorIntrin({self.name})"


def _as_stmt(x: Any, what: str) -> n.Stmt:
    if isinstance(x, n.Stmt):
        return x
    if isinstance(x, n.PrimExpr):
        return n.Evaluate(x)
    raise TypeError(f"decl_tensor_intrin: {what} must be a Stmt or an expression, got {x!r}")


def decl_tensor_intrin(op: Operation, fcompute: Callable[[list, list], Any], name: str = "tensor_intrin",
                       binds: Mapping[Tensor, n.Buffer] | None = None) -> TensorIntrin:
    """Declare a tensor intrinsic implementing ``op``.

    Parameters
    ----------
    op : ComputeOp
        The computation (its inputs must be placeholders).
    fcompute : callable
        ``fcompute(ins, outs)`` with the bound input and output buffers; returns a statement or
        ``(body, reset, update)``.
    name : str
        For messages.
    binds : mapping, optional
        A buffer for some tensors (default: compact buffers with a symbolic offset).

    Raises
    ------
    TypeError
        If ``op`` is not a compute operation or ``fcompute`` returns something else.
    ValueError
        If an input of ``op`` is not a placeholder.
    """
    if isinstance(op, Tensor):
        op = op.op
    if not isinstance(op, ComputeOp):
        raise TypeError(f"decl_tensor_intrin {name!r}: expected a compute operation, got {op!r}")
    binds = dict(binds or {})
    inputs = op.input_tensors
    for t in inputs:
        if not isinstance(t.op, PlaceholderOp):
            raise ValueError(f"decl_tensor_intrin {name!r}: input {t.name!r} must be a placeholder")
    buffers = []
    for t in inputs + [op.output(0)]:
        buf = binds.get(t)
        if buf is None:
            buf = decl_buffer(t.shape, t.dtype, t.name, offset_factor=1)
        buffers.append(buf)
    result = fcompute(buffers[:-1], buffers[-1:])
    if isinstance(result, (tuple, list)):
        if len(result) != 3:
            raise TypeError(f"decl_tensor_intrin {name!r}: fcompute must return a statement or (body, reset, update)")
        body, reset, update = (_as_stmt(x, w) for x, w in zip(result, ("body", "reset", "update"), strict=True))
    else:
        body, reset, update = _as_stmt(result, "body"), None, None
    return TensorIntrin(name, op, inputs, buffers, body, reset, update)
