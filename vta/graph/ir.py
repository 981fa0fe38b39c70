"""The graph IR: typed tensors, values, operator nodes and graphs, all immutable.

A :class:`Graph` is a data-flow graph in topological order. Every tensor is a :class:`Value`
with a name and a :class:`TensorType`; a value is a graph input, a constant (``params``), or the
single output of a :class:`Node`, which then has the node's name. Passes never mutate a graph:
they build a new one (:meth:`Graph.replace`, :class:`vta.graph.builder.GraphBuilder`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import GraphError
from .printer import astext

__all__ = ["TensorType", "Value", "Node", "Graph", "INPUT", "PARAM", "NODE"]

#: Kinds of value.
INPUT, PARAM, NODE = "input", "param", "node"

#: Element types a tensor may have.
DTYPES = ("int8", "uint8", "int16", "int32", "int64", "float32", "float64")


def _norm_scale(scale: Any) -> float | tuple[float, ...] | None:
    if scale is None:
        return None
    arr = np.asarray(scale, dtype=np.float64)
    if arr.ndim == 0 or arr.size == 1:
        return float(arr.reshape(-1)[0])
    if arr.ndim != 1:
        raise GraphError(f"a scale must be a scalar or a 1-D array, got shape {arr.shape!r}")
    return tuple(float(v) for v in arr)


def _norm_zero_point(zp: Any) -> int | tuple[int, ...] | None:
    if zp is None:
        return None
    arr = np.asarray(zp)
    if not np.issubdtype(arr.dtype, np.integer) and not np.all(arr == np.round(arr)):
        raise GraphError(f"a zero point must be integer, got {zp!r}")
    arr = arr.astype(np.int64)
    if arr.ndim == 0 or arr.size == 1:
        return int(arr.reshape(-1)[0])
    if arr.ndim != 1:
        raise GraphError(f"a zero point must be a scalar or a 1-D array, got shape {arr.shape!r}")
    return tuple(int(v) for v in arr)


@dataclass(frozen=True)
class TensorType:
    """Shape, element type and (for quantized tensors) scale, zero point and channel axis.

    Parameters
    ----------
    shape : tuple of int
    dtype : str
        One of ``int8``, ``uint8``, ``int16``, ``int32``, ``int64``, ``float32``, ``float64``.
    scale : float or tuple of float, optional
        ``real = scale * (q - zero_point)``; a tuple is per channel along ``axis``.
    zero_point : int or tuple of int, optional
    axis : int, optional
        The channel axis of per-channel parameters.

    Raises
    ------
    GraphError
        If the shape has a negative or non-integer dimension, the dtype is unknown, or the
        quantisation parameters are malformed.
    """

    shape: tuple[int, ...]
    dtype: str
    scale: float | tuple[float, ...] | None = None
    zero_point: int | tuple[int, ...] | None = None
    axis: int | None = None

    def __post_init__(self) -> None:
        try:
            shape = tuple(int(d) for d in self.shape)
        except (TypeError, ValueError) as exc:
            raise GraphError(f"a tensor shape must be a sequence of ints, got {self.shape!r}") from exc
        if any(d < 0 for d in shape):
            raise GraphError(f"a tensor shape must have non-negative dimensions, got {shape!r}")
        dtype = str(np.dtype(self.dtype)) if self.dtype not in DTYPES else self.dtype
        if dtype not in DTYPES:
            raise GraphError(f"dtype {self.dtype!r} is not supported; accepted: {', '.join(DTYPES)}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "scale", _norm_scale(self.scale))
        object.__setattr__(self, "zero_point", _norm_zero_point(self.zero_point))
        if self.axis is not None:
            object.__setattr__(self, "axis", int(self.axis))

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def is_quantized(self) -> bool:
        """True when the type carries a scale."""
        return self.scale is not None

    @property
    def is_float(self) -> bool:
        """True for float32/float64."""
        return self.dtype.startswith("float")

    def with_(self, **changes: Any) -> "TensorType":
        """A copy with some fields replaced."""
        fields = {"shape": self.shape, "dtype": self.dtype, "scale": self.scale,
                  "zero_point": self.zero_point, "axis": self.axis}
        fields.update(changes)
        return TensorType(**fields)

    def __str__(self) -> str:
        text = f"{self.dtype}[{', '.join(map(str, self.shape))}]"
        if self.scale is not None:
            scale = f"{self.scale:.6g}" if isinstance(self.scale, float) else f"<{len(self.scale)} scales>"
            zp = self.zero_point if not isinstance(self.zero_point, tuple) else "<per-channel>"
            text += f" q(scale={scale}, zp={zp}{'' if self.axis is None else f', axis={self.axis}'})"
        return text


@dataclass(frozen=True)
class Value:
    """A tensor of the graph: a graph input, a constant, or a node's output.

    Parameters
    ----------
    name : str
        Unique in its graph; the producing node's name for node outputs.
    type : TensorType
    kind : str
        ``"input"``, ``"param"`` or ``"node"``.
    """

    name: str
    type: TensorType
    kind: str = NODE

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise GraphError(f"a value name must be a non-empty str, got {self.name!r}")
        if self.kind not in (INPUT, PARAM, NODE):
            raise GraphError(f"value kind must be 'input', 'param' or 'node', got {self.kind!r}")
        if not isinstance(self.type, TensorType):
            raise GraphError(f"value {self.name!r}: type must be a TensorType, got {self.type!r}")

    def __str__(self) -> str:
        return f"%{self.name}"


def _freeze(attrs: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(attrs or {}))


@dataclass(frozen=True, eq=False)
class Node:
    """One operator application with a single output (nodes compare by identity).

    Parameters
    ----------
    op : str
        The operator name (``"qnn.conv2d"``, ``"vta.conv2d"``, ...).
    inputs : tuple of Value
    attrs : mapping
        Operator attributes (read-only once the node exists).
    name : str
        Unique in the graph; also the name of the output value.
    output : TensorType
        The inferred type of the output.
    """

    op: str
    inputs: tuple[Value, ...]
    attrs: Mapping[str, Any]
    name: str
    output_type: TensorType = field(compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "attrs", _freeze(self.attrs))
        if not isinstance(self.name, str) or not self.name:
            raise GraphError(f"a node name must be a non-empty str, got {self.name!r}")
        for v in self.inputs:
            if not isinstance(v, Value):
                raise GraphError(f"node {self.name!r} ({self.op}): inputs must be Values, got {v!r}")

    @property
    def output(self) -> Value:
        """The node's output value."""
        return Value(self.name, self.output_type, NODE)

    def with_(self, **changes: Any) -> "Node":
        """A copy with some fields replaced (``op``, ``inputs``, ``attrs``, ``name``, ``output_type``)."""
        fields = {"op": self.op, "inputs": self.inputs, "attrs": self.attrs, "name": self.name,
                  "output_type": self.output_type}
        fields.update(changes)
        return Node(**fields)


class Graph:
    """An immutable data-flow graph.

    Parameters
    ----------
    inputs : sequence of Value
        The graph inputs (kind ``"input"``), in order.
    outputs : sequence of Value
        The values the graph returns.
    nodes : sequence of Node
        Every node, in topological order.
    params : mapping of str to ndarray
        The constants; each constant value's name is a key.

    Raises
    ------
    GraphError
        If a name is used twice, a node uses a value defined later or nowhere, a constant has
        no data or data of another shape/dtype than its type, or an output is unknown.
    """

    __slots__ = ("inputs", "outputs", "nodes", "params", "_values", "_producer")

    def __init__(self, inputs: Iterable[Value], outputs: Iterable[Value], nodes: Iterable[Node],
                 params: Mapping[str, np.ndarray] | None = None):
        inputs, outputs, nodes = tuple(inputs), tuple(outputs), tuple(nodes)
        params = dict(params or {})
        values: dict[str, Value] = {}
        producer: dict[str, Node] = {}
        for v in inputs:
            if v.kind != INPUT:
                raise GraphError(f"graph input {v.name!r} has kind {v.kind!r}, expected 'input'")
            if v.name in values:
                raise GraphError(f"the name {v.name!r} is used by two graph inputs")
            values[v.name] = v

        def define_param(v: Value) -> None:
            if v.name not in params:
                raise GraphError(f"constant {v.name!r} has no data in params")
            data = params[v.name]
            if tuple(data.shape) != v.type.shape or str(data.dtype) != v.type.dtype:
                raise GraphError(
                    f"constant {v.name!r} is typed {v.type} but its data is {data.dtype}{list(data.shape)}")
            values[v.name] = v

        for node in nodes:
            for v in node.inputs:
                known = values.get(v.name)
                if known is None and v.kind == PARAM:
                    define_param(v)
                    known = v
                if known is None:
                    raise GraphError(
                        f"node {node.name!r} ({node.op}) uses {v.name!r}, which is not defined before it")
                if known.kind != v.kind or known.type != v.type:
                    raise GraphError(
                        f"node {node.name!r} ({node.op}) uses {v.name!r} as {v.kind} {v.type}, but it is "
                        f"defined as {known.kind} {known.type}")
            if node.name in values:
                raise GraphError(f"the name {node.name!r} of node ({node.op}) is already used")
            values[node.name] = node.output
            producer[node.name] = node
        for v in outputs:
            if v.kind == PARAM and v.name not in values:
                define_param(v)
            if v.name not in values:
                raise GraphError(f"graph output {v.name!r} is not a value of the graph")
        used = {n for n, v in values.items() if v.kind == PARAM}
        self.inputs, self.outputs, self.nodes = inputs, outputs, nodes
        self.params = MappingProxyType({k: params[k] for k in params if k in used})
        self._values = values
        self._producer = producer

    # ---------------------------------------------------------------- queries
    def value(self, name: str) -> Value:
        """The value called ``name``.

        Raises
        ------
        GraphError
            If there is none.
        """
        try:
            return self._values[name]
        except KeyError:
            raise GraphError(f"graph has no value {name!r}") from None

    def producer(self, value: Value | str) -> Node | None:
        """The node whose output ``value`` is (None for inputs and constants)."""
        return self._producer.get(value if isinstance(value, str) else value.name)

    def node(self, name: str) -> Node:
        """The node called ``name``.

        Raises
        ------
        GraphError
            If there is none.
        """
        node = self._producer.get(name)
        if node is None:
            raise GraphError(f"graph has no node {name!r}")
        return node

    def consumers(self) -> dict[str, list[Node]]:
        """For every value name, the nodes that read it (in order)."""
        out: dict[str, list[Node]] = {name: [] for name in self._values}
        for node in self.nodes:
            for name in dict.fromkeys(v.name for v in node.inputs):
                out[name].append(node)
        return out

    @property
    def values(self) -> Mapping[str, Value]:
        """Every value by name."""
        return MappingProxyType(self._values)

    # ---------------------------------------------------------------- building new graphs
    def replace(self, *, inputs: Iterable[Value] | None = None, outputs: Iterable[Value] | None = None,
                nodes: Iterable[Node] | None = None, params: Mapping[str, np.ndarray] | None = None) -> "Graph":
        """A new graph with some parts replaced (constants no longer used are dropped).

        Raises
        ------
        GraphError
            As the constructor.
        """
        return Graph(self.inputs if inputs is None else inputs, self.outputs if outputs is None else outputs,
                     self.nodes if nodes is None else nodes, self.params if params is None else params)

    def __str__(self) -> str:
        return astext(self)

    def __repr__(self) -> str:
        return f"<Graph {len(self.inputs)} inputs, {len(self.nodes)} nodes, {len(self.outputs)} outputs>"
