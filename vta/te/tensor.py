"""Tensor-expression objects: iteration variables, tensors, operations and the reduction node.

A :class:`Tensor` is the single output of an :class:`Operation`: a :class:`PlaceholderOp`
(an input) or a :class:`ComputeOp` (``out[axis] = body``, ``body`` possibly a :class:`Reduce`).
Indexing a tensor (``A[i, j]`` or ``A(i, j)``) builds a
:class:`~vta.tir.nodes.ProducerLoad` expression.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..tir import nodes as n
from ..tir.functor import post_order_visit

__all__ = [
    "IterVar", "Tensor", "Operation", "PlaceholderOp", "ComputeOp", "Reduce",
    "DATA_PAR", "COMM_REDUCE", "THREAD_INDEX",
]

#: Iteration variable kinds (TVM's ``IterVarType`` names, as strings).
DATA_PAR = "data_par"
COMM_REDUCE = "comm_reduce"
THREAD_INDEX = "thread_index"


@dataclass(frozen=True, eq=False)
class IterVar:
    """An iteration variable: a :class:`~vta.tir.nodes.Var` with a domain and a kind.

    ``dom`` is ``None`` for variables created by schedule relations (split, fuse) and thread
    axes, whose extents bound inference decides. ``thread_tag`` names a thread axis
    (``"cthread"``, ``"vthread"``, ``"vta"``).
    """

    dom: n.Range | None
    var: n.Var
    iter_type: str = DATA_PAR
    thread_tag: str = ""

    @property
    def name(self) -> str:
        return self.var.name

    def __repr__(self) -> str:
        return f"IterVar({self.var.name})"

    # Arithmetic on an IterVar means arithmetic on its variable (``A[ko * 16 + ki]``).
    def __add__(self, o):
        return self.var + _unwrap(o)

    def __radd__(self, o):
        return _unwrap(o) + self.var

    def __sub__(self, o):
        return self.var - _unwrap(o)

    def __rsub__(self, o):
        return n.convert(_unwrap(o)) - self.var

    def __mul__(self, o):
        return self.var * _unwrap(o)

    def __rmul__(self, o):
        return n.convert(_unwrap(o)) * self.var

    def __floordiv__(self, o):
        return self.var // _unwrap(o)

    def __mod__(self, o):
        return self.var % _unwrap(o)

    def __rfloordiv__(self, o):
        return n.convert(_unwrap(o)) // self.var

    def __rmod__(self, o):
        return n.convert(_unwrap(o)) % self.var

    def __truediv__(self, o):
        return self.var / _unwrap(o)

    def __neg__(self):
        return -self.var

    def __rshift__(self, o):
        return self.var >> _unwrap(o)

    def __lshift__(self, o):
        return self.var << _unwrap(o)

    def __and__(self, o):
        return self.var & _unwrap(o)

    def __rand__(self, o):
        return n.convert(_unwrap(o)) & self.var

    def __or__(self, o):
        return self.var | _unwrap(o)

    def __ror__(self, o):
        return n.convert(_unwrap(o)) | self.var

    def __xor__(self, o):
        return self.var ^ _unwrap(o)

    def __invert__(self):
        return ~self.var

    # Comparisons build conditions on the variable (``==`` keeps identity: IterVars are keys).
    def __lt__(self, o):
        return self.var < _unwrap(o)

    def __le__(self, o):
        return self.var <= _unwrap(o)

    def __gt__(self, o):
        return self.var > _unwrap(o)

    def __ge__(self, o):
        return self.var >= _unwrap(o)

    def equal(self, o):
        """An ``EQ`` node on the variable."""
        return self.var.equal(_unwrap(o))


def _unwrap(x: Any) -> Any:
    return x.var if isinstance(x, IterVar) else x


@dataclass(frozen=True, eq=False)
class Reduce(n.PrimExpr):
    """A commutative reduction ``combiner`` of ``source`` over the ``axis`` IterVars.

    Only meaningful as the whole body of a :class:`ComputeOp`; lowering splits it into an
    initialisation (``identity``) and an update (``combine(out, source)``).
    """

    combiner: str  # "sum", "max" or "min"
    source: n.PrimExpr
    axis: tuple

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.source.dtype

    def identity(self) -> n.PrimExpr:
        """The neutral element of the combiner in the source dtype."""
        dtype = self.dtype
        if self.combiner == "sum":
            return n.const(0, dtype)
        if dtype.startswith("float"):
            return n.FloatImm(float("-inf") if self.combiner == "max" else float("inf"), dtype)
        bits = n.dtype_bits(dtype)
        signed = dtype.startswith("int")
        lo = -(1 << (bits - 1)) if signed else 0
        hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
        return n.IntImm(lo if self.combiner == "max" else hi, dtype)

    def combine(self, acc: n.PrimExpr, value: n.PrimExpr) -> n.PrimExpr:
        """``acc (+|max|min) value``."""
        if self.combiner == "sum":
            return n.Add(acc, value)
        return n.Max(acc, value) if self.combiner == "max" else n.Min(acc, value)


class Operation:
    """Base class of tensor-producing operations; ``output(0)`` is the tensor."""

    name: str
    tag: str = ""

    def output(self, index: int = 0) -> "Tensor":
        if index != 0:
            raise IndexError(f"operation {self.name!r} has a single output; got index {index!r}")
        return self._output

    @property
    def input_tensors(self) -> list["Tensor"]:
        return []

    @property
    def num_outputs(self) -> int:
        return 1

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class PlaceholderOp(Operation):
    """An input tensor of the given shape and dtype."""

    def __init__(self, name: str, shape: tuple, dtype: str):
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.axis: list[IterVar] = []
        self.reduce_axis: list[IterVar] = []
        self._output = Tensor(self, shape, dtype, name)


class ComputeOp(Operation):
    """``output[axis] = body`` over the data-parallel ``axis`` (and ``reduce_axis`` if any)."""

    def __init__(self, name: str, tag: str, axis: list[IterVar], body: n.PrimExpr, attrs: dict | None = None):
        self.name = name
        self.tag = tag
        self.axis = list(axis)
        self.body = body
        self.reduce_axis = list(body.axis) if isinstance(body, Reduce) else []
        self.attrs = dict(attrs or {})
        shape = tuple(iv.dom.extent for iv in self.axis)
        self._output = Tensor(self, shape, body.dtype, name)

    def with_body(self, body: n.PrimExpr) -> "ComputeOp":
        """A new operation with the same axes, name and tag, and a new body."""
        return ComputeOp(self.name, self.tag, self.axis, body, self.attrs)

    @property
    def input_tensors(self) -> list["Tensor"]:
        # Remembered for the body it was computed from (schedules ask for it many times).
        cached = self.__dict__.get("_input_tensors")
        if cached is not None and cached[0] is self.body:
            return list(cached[1])
        seen: list[Tensor] = []

        def visit(x: Any) -> None:
            if isinstance(x, n.ProducerLoad) and not any(x.producer is t for t in seen):
                seen.append(x.producer)

        post_order_visit(self.body, visit)
        self.__dict__["_input_tensors"] = (self.body, tuple(seen))
        return seen


class Tensor:
    """The output of an operation; index it to read an element."""

    def __init__(self, op: Operation, shape: tuple, dtype: str, name: str):
        self.op = op
        self.shape = tuple(n.convert(s) for s in shape)
        self.dtype = dtype
        self.name = name
        self.value_index = 0

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __call__(self, *indices: Any) -> n.ProducerLoad:
        if len(indices) == 1 and isinstance(indices[0], (tuple, list)):
            indices = tuple(indices[0])
        if len(indices) != self.ndim:
            raise ValueError(
                f"tensor {self.name!r} has {self.ndim} dimensions but was indexed with {len(indices)}: {indices!r}"
            )
        return n.ProducerLoad(self, tuple(i.var if isinstance(i, IterVar) else n.convert(i) for i in indices))

    def __getitem__(self, indices: Any) -> n.ProducerLoad:
        if not isinstance(indices, tuple):
            indices = (indices,)
        return self(*indices)

    def __repr__(self) -> str:
        return (
            f"Tensor({self.name}, shape={[int(s) if isinstance(s, n.IntImm) else s for s in self.shape]}, {self.dtype})"
        )

    __hash__ = object.__hash__
