"""Element-wise and broadcasting operators (``topi.add``, ``topi.right_shift``, ``topi.cast`` ...).

Each operator is one compute stage. Two tensors broadcast as in NumPy: shapes are aligned at
their last dimension, and a dimension of extent 1 is read at index 0 (``bias`` of shape
``(1, C, 1, 1)`` added to ``(N, C, H, W)``). A Python number or a scalar expression broadcasts
everywhere and takes the tensor's dtype. A stage between two tensors is tagged
:data:`~.tag.BROADCAST`, one with a scalar operand :data:`~.tag.ELEMWISE`, as TVM does.
"""

from __future__ import annotations

from typing import Any, Callable

from ... import te as _te
from ...tir import nodes as _n
from . import tag as _tag
from .utils import get_const_int

__all__ = ["add", "subtract", "multiply", "right_shift", "left_shift", "maximum", "minimum", "cast",
           "broadcast_shape"]


def broadcast_shape(a: tuple, b: tuple) -> tuple[int, ...]:
    """The NumPy broadcast of two constant shapes.

    Raises
    ------
    ValueError
        If a pair of aligned extents differs and neither is 1.
    """
    nd = max(len(a), len(b))
    pa = (1,) * (nd - len(a)) + tuple(a)
    pb = (1,) * (nd - len(b)) + tuple(b)
    out = []
    for x, y in zip(pa, pb, strict=True):
        if x != y and 1 not in (x, y):
            raise ValueError(f"shapes {tuple(a)!r} and {tuple(b)!r} do not broadcast (extents {x} and {y})")
        out.append(max(x, y))
    return tuple(out)


def _shape(t: _te.Tensor) -> tuple[int, ...]:
    return tuple(get_const_int(s) for s in t.shape)


def _reader(t: _te.Tensor, out_ndim: int) -> Callable[..., Any]:
    """A function of the output indices reading ``t`` with broadcasting."""
    shape = _shape(t)
    skip = out_ndim - len(shape)

    def read(*idx: Any) -> Any:
        own = idx[skip:]
        return t(*[0 if extent == 1 else i for i, extent in zip(own, shape, strict=True)])

    return read


def _scalar(value: Any, dtype: str) -> _n.PrimExpr:
    if isinstance(value, _n.PrimExpr):
        return value if value.dtype == dtype else value.astype(dtype)
    if isinstance(value, (bool, int, float)):
        return _n.const(value, dtype)
    raise TypeError(f"expected a Tensor, a number or an expression, got {type(value).__name__}: {value!r}")


def _binary(lhs: Any, rhs: Any, op: Callable[[Any, Any], Any], name: str) -> Any:
    lt, rt = isinstance(lhs, _te.Tensor), isinstance(rhs, _te.Tensor)
    if lt and rt:
        if lhs.dtype != rhs.dtype:
            raise TypeError(f"{name}: operands have different dtypes {lhs.dtype} and {rhs.dtype}; cast one first")
        shape = broadcast_shape(_shape(lhs), _shape(rhs))
        ra, rb = _reader(lhs, len(shape)), _reader(rhs, len(shape))
        return _te.compute(shape, lambda *i: op(ra(*i), rb(*i)), name=f"T_{name}", tag=_tag.BROADCAST)
    if lt or rt:
        tensor = lhs if lt else rhs
        other = _scalar(rhs if lt else lhs, tensor.dtype)
        if lt:
            return _te.compute(_shape(tensor), lambda *i: op(tensor(*i), other), name=f"T_{name}", tag=_tag.ELEMWISE)
        return _te.compute(_shape(tensor), lambda *i: op(other, tensor(*i)), name=f"T_{name}", tag=_tag.ELEMWISE)
    return op(lhs, rhs)


def add(lhs: Any, rhs: Any) -> Any:
    """``lhs + rhs`` with broadcasting (tensors, numbers or expressions).

    Raises
    ------
    ValueError
        If two tensors' shapes do not broadcast.
    TypeError
        If two tensors have different dtypes or an operand is of another type.
    """
    return _binary(lhs, rhs, lambda a, b: a + b, "add")


def subtract(lhs: Any, rhs: Any) -> Any:
    """``lhs - rhs`` with broadcasting (see :func:`add` for the errors)."""
    return _binary(lhs, rhs, lambda a, b: a - b, "subtract")


def multiply(lhs: Any, rhs: Any) -> Any:
    """``lhs * rhs`` with broadcasting (see :func:`add` for the errors)."""
    return _binary(lhs, rhs, lambda a, b: a * b, "multiply")


def right_shift(lhs: Any, rhs: Any) -> Any:
    """``lhs >> rhs`` (arithmetic for signed integers) with broadcasting (see :func:`add`)."""
    return _binary(lhs, rhs, lambda a, b: a >> b, "right_shift")


def left_shift(lhs: Any, rhs: Any) -> Any:
    """``lhs << rhs`` with broadcasting (see :func:`add` for the errors)."""
    return _binary(lhs, rhs, lambda a, b: a << b, "left_shift")


def maximum(lhs: Any, rhs: Any) -> Any:
    """The element-wise maximum with broadcasting (see :func:`add` for the errors)."""
    return _binary(lhs, rhs, lambda a, b: _te.max(a, b), "maximum")


def minimum(lhs: Any, rhs: Any) -> Any:
    """The element-wise minimum with broadcasting (see :func:`add` for the errors)."""
    return _binary(lhs, rhs, lambda a, b: _te.min(a, b), "minimum")


def cast(x: Any, dtype: str) -> Any:
    """``x`` converted to ``dtype``: a tensor (one element-wise stage) or a scalar expression.

    Raises
    ------
    TypeError
        If ``x`` is neither a tensor, a number nor an expression.
    """
    if isinstance(x, _te.Tensor):
        return _te.compute(_shape(x), lambda *i: x(*i).astype(dtype), name="T_cast", tag=_tag.ELEMWISE)
    return _scalar(x, dtype) if not isinstance(x, _n.PrimExpr) else x.astype(dtype)
