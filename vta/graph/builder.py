"""``GraphBuilder``: create a graph node by node, with types inferred as each node is added.

Methods are named after the operators, grouped as in TVM's Relay (``b.qnn.conv2d``,
``b.nn.relu``, ``b.reshape``, ``b.vta.conv2d``)::

    b = GraphBuilder()
    x = b.input("x", (1, 16, 14, 14), "int8", scale=0.05, zero_point=0)
    w = b.const("w", weights, scale=0.01)
    acc = b.qnn.conv2d(x, w, padding=(1, 1, 1, 1))
    ...
    graph = b.finish([y])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import GraphError
from .opdefs import infer_type, normalise_attrs
from .ir import INPUT, PARAM, Graph, Node, TensorType, Value

__all__ = ["GraphBuilder"]


class _Namespace:
    """``b.qnn`` / ``b.nn`` / ``b.vta``: the builder's operators with that prefix."""

    def __init__(self, builder: GraphBuilder, prefix: str):
        self._b = builder
        self._prefix = prefix


class _QNN(_Namespace):
    def quantize(self, x: Value, scale: Any, zero_point: Any = 0, out_dtype: str = "int8", axis: int | None = None,
                 name: str | None = None) -> Value:
        """``qnn.quantize``: float -> int8/uint8."""
        return self._b.op("qnn.quantize", [x], dict(scale=scale, zero_point=zero_point, out_dtype=out_dtype,
                                                    axis=axis), name)

    def dequantize(self, x: Value, scale: Any = None, zero_point: Any = None, axis: int | None = None,
                   name: str | None = None) -> Value:
        """``qnn.dequantize``: int -> float32 (scale and zero point default to the input type's)."""
        scale = x.type.scale if scale is None else scale
        zero_point = (x.type.zero_point or 0) if zero_point is None else zero_point
        axis = x.type.axis if axis is None else axis
        return self._b.op("qnn.dequantize", [x], dict(scale=scale, zero_point=zero_point, axis=axis), name)

    def conv2d(self, x: Value, w: Value, input_zero_point: int | None = None, kernel_zero_point: int | None = None,
               strides: Any = (1, 1), padding: Any = (0, 0, 0, 0), dilation: Any = (1, 1), groups: int = 1,
               out_dtype: str = "int32", name: str | None = None) -> Value:
        """``qnn.conv2d``: int8/uint8 NCHW x OIHW -> int32 (zero points default to the types')."""
        return self._b.op("qnn.conv2d", [x, w], dict(
            input_zero_point=_zp(x, input_zero_point), kernel_zero_point=_zp(w, kernel_zero_point),
            strides=strides, padding=padding, dilation=dilation, groups=groups, out_dtype=out_dtype), name)

    def dense(self, x: Value, w: Value, input_zero_point: int | None = None, kernel_zero_point: int | None = None,
              out_dtype: str = "int32", name: str | None = None) -> Value:
        """``qnn.dense``: (N, I) x (O, I) -> int32 (N, O)."""
        return self._b.op("qnn.dense", [x, w], dict(
            input_zero_point=_zp(x, input_zero_point), kernel_zero_point=_zp(w, kernel_zero_point),
            out_dtype=out_dtype), name)

    def requantize(self, acc: Value, input_scale: Any = None, input_zero_point: int = 0, output_scale: Any = None,
                   output_zero_point: int = 0, out_dtype: str = "int8", axis: int = 1,
                   name: str | None = None) -> Value:
        """``qnn.requantize``: int32 -> int8/uint8 (``input_scale`` defaults to the input type's)."""
        input_scale = acc.type.scale if input_scale is None else input_scale
        return self._b.op("qnn.requantize", [acc], dict(
            input_scale=input_scale, input_zero_point=input_zero_point, output_scale=output_scale,
            output_zero_point=output_zero_point, out_dtype=out_dtype, axis=axis), name)

    def add(self, a: Value, b: Value, output_scale: Any, output_zero_point: int = 0, lhs_scale: Any = None,
            lhs_zero_point: int | None = None, rhs_scale: Any = None, rhs_zero_point: int | None = None,
            out_dtype: str | None = None, name: str | None = None) -> Value:
        """``qnn.add`` of two quantized tensors (input scales and zero points default to the types')."""
        return self._b.op("qnn.add", [a, b], dict(
            lhs_scale=a.type.scale if lhs_scale is None else lhs_scale, lhs_zero_point=_zp(a, lhs_zero_point),
            rhs_scale=b.type.scale if rhs_scale is None else rhs_scale, rhs_zero_point=_zp(b, rhs_zero_point),
            output_scale=output_scale, output_zero_point=output_zero_point, out_dtype=out_dtype), name)

    def avg_pool2d(self, x: Value, pool_size: Any, strides: Any = (1, 1), padding: Any = (0, 0, 0, 0),
                   ceil_mode: bool = False, count_include_pad: bool = False, output_scale: Any = None,
                   output_zero_point: int | None = None, out_dtype: str | None = None,
                   name: str | None = None) -> Value:
        """``qnn.avg_pool2d`` (output scale/zero point default to the input's)."""
        return self._b.op("qnn.avg_pool2d", [x], dict(
            pool_size=pool_size, strides=strides, padding=padding, ceil_mode=ceil_mode,
            count_include_pad=count_include_pad, **_qpool(x, output_scale, output_zero_point, out_dtype)), name)

    def global_avg_pool2d(self, x: Value, output_scale: Any = None, output_zero_point: int | None = None,
                          out_dtype: str | None = None, name: str | None = None) -> Value:
        """``qnn.global_avg_pool2d`` (output scale/zero point default to the input's)."""
        return self._b.op("qnn.global_avg_pool2d", [x], _qpool(x, output_scale, output_zero_point, out_dtype), name)


class _NN(_Namespace):
    def bias_add(self, acc: Value, bias: Value, axis: int = 1, name: str | None = None) -> Value:
        """``nn.bias_add``."""
        return self._b.op("nn.bias_add", [acc, bias], dict(axis=axis), name)

    def relu(self, x: Value, name: str | None = None) -> Value:
        """``nn.relu``; on a quantized tensor ``max(x, zero_point)`` (the real ReLU)."""
        return self._b.op("nn.relu", [x], {}, name)

    def upsampling(self, x: Value, scale_h: int, scale_w: int, name: str | None = None) -> Value:
        """``nn.upsampling`` (NCHW, nearest neighbour, integer factors)."""
        return self._b.op("nn.upsampling", [x], dict(scale_h=int(scale_h), scale_w=int(scale_w),
                                                     method="nearest_neighbor"), name)

    def max_pool2d(self, x: Value, pool_size: Any, strides: Any = (1, 1), padding: Any = (0, 0, 0, 0),
                   ceil_mode: bool = False, name: str | None = None) -> Value:
        """``nn.max_pool2d`` (NCHW)."""
        return self._b.op("nn.max_pool2d", [x], dict(pool_size=pool_size, strides=strides, padding=padding,
                                                     ceil_mode=ceil_mode), name)

    def avg_pool2d(self, x: Value, pool_size: Any, strides: Any = (1, 1), padding: Any = (0, 0, 0, 0),
                   ceil_mode: bool = False, count_include_pad: bool = False, name: str | None = None) -> Value:
        """``nn.avg_pool2d`` (NCHW)."""
        return self._b.op("nn.avg_pool2d", [x], dict(pool_size=pool_size, strides=strides, padding=padding,
                                                     ceil_mode=ceil_mode, count_include_pad=count_include_pad), name)

    def global_avg_pool2d(self, x: Value, name: str | None = None) -> Value:
        """``nn.global_avg_pool2d``."""
        return self._b.op("nn.global_avg_pool2d", [x], {}, name)

    def batch_flatten(self, x: Value, name: str | None = None) -> Value:
        """``nn.batch_flatten``: (N, ...) -> (N, prod(...))."""
        return self._b.op("nn.batch_flatten", [x], {}, name)

    def softmax(self, x: Value, axis: int = -1, name: str | None = None) -> Value:
        """``nn.softmax`` of a float tensor."""
        return self._b.op("nn.softmax", [x], dict(axis=axis), name)

    def conv2d(self, x: Value, w: Value, strides: Any = (1, 1), padding: Any = (0, 0, 0, 0), dilation: Any = (1, 1),
               groups: int = 1, name: str | None = None) -> Value:
        """``nn.conv2d`` (float, on the host)."""
        return self._b.op("nn.conv2d", [x, w], dict(strides=strides, padding=padding, dilation=dilation,
                                                    groups=groups), name)

    def dense(self, x: Value, w: Value, name: str | None = None) -> Value:
        """``nn.dense`` (float, on the host)."""
        return self._b.op("nn.dense", [x, w], {}, name)


class _VTA(_Namespace):
    def _fused(self, op: str, inputs: Sequence[Value], spec: Any, out_scale: Any, out_zero_point: Any,
               name: str | None, **attrs: Any) -> Value:
        return self._b.op(op, list(inputs), dict(spec=spec, out_scale=out_scale, out_zero_point=out_zero_point,
                                                 **attrs), name)

    def conv2d(self, x: Value, w: Value, bias: Value, residual: Value | None = None, *, spec: Any,
               out_scale: Any = None, out_zero_point: Any = None, layout: str = "NCHW",
               name: str | None = None) -> Value:
        """``vta.conv2d``: the fused accelerator convolution described by ``spec`` (a QConv2DSpec)."""
        ins = [x, w, bias] + ([residual] if residual is not None else [])
        return self._fused("vta.conv2d", ins, spec, out_scale, out_zero_point, name, layout=layout)

    def dense(self, x: Value, w: Value, bias: Value, residual: Value | None = None, *, spec: Any,
              out_scale: Any = None, out_zero_point: Any = None, layout: str = "NC",
              name: str | None = None) -> Value:
        """``vta.dense``: the fused accelerator dense layer described by ``spec`` (a QDenseSpec)."""
        ins = [x, w, bias] + ([residual] if residual is not None else [])
        return self._fused("vta.dense", ins, spec, out_scale, out_zero_point, name, layout=layout)

    def add(self, a: Value, b: Value, *, spec: Any, out_scale: Any = None, out_zero_point: Any = None,
            layout: str = "NCHW", name: str | None = None) -> Value:
        """``vta.add``: the accelerator's rescaling add of two int8 tensors (a QAddSpec)."""
        return self._fused("vta.add", [a, b], spec, out_scale, out_zero_point, name, layout=layout)

    def max_pool2d(self, x: Value, *, spec: Any, pool_size: Any, strides: Any = (1, 1), padding: Any = (0, 0, 0, 0),
                   out_scale: Any = None, out_zero_point: Any = None, layout: str = "NCHW",
                   name: str | None = None) -> Value:
        """``vta.max_pool2d``: max pooling on the ALU (a MaxPoolSpec)."""
        return self._fused("vta.max_pool2d", [x], spec, out_scale, out_zero_point, name, layout=layout,
                           pool_size=pool_size, strides=strides, padding=padding)

    def to_int8(self, x: Value, name: str | None = None) -> Value:
        """``vta.to_int8``: a uint8 tensor as int8 ``v - 128`` (zero point - 128)."""
        return self._b.op("vta.to_int8", [x], {}, name)

    def to_uint8(self, x: Value, name: str | None = None) -> Value:
        """``vta.to_uint8``: an int8 tensor back to uint8 ``v + 128`` (zero point + 128)."""
        return self._b.op("vta.to_uint8", [x], {}, name)


def _zp(v: Value, given: int | None) -> int:
    if given is not None:
        return int(given)
    zp = v.type.zero_point
    if isinstance(zp, tuple):
        if len(set(zp)) != 1:
            raise GraphError(f"{v.name!r} has per-channel zero points {zp}; give the zero point explicitly")
        return zp[0]
    return 0 if zp is None else int(zp)


def _qpool(x: Value, scale: Any, zp: int | None, out_dtype: str | None) -> dict[str, Any]:
    return dict(input_scale=x.type.scale, input_zero_point=_zp(x, None),
                output_scale=x.type.scale if scale is None else scale,
                output_zero_point=_zp(x, None) if zp is None else zp, out_dtype=out_dtype)


class GraphBuilder:
    """Builds a :class:`~vta.graph.ir.Graph`; each method adds one node and returns its output value.

    Node names default to ``<op>_<n>`` (``conv2d_0``); pass ``name=`` to choose one.
    """

    def __init__(self) -> None:
        self._inputs: list[Value] = []
        self._nodes: list[Node] = []
        self._params: dict[str, np.ndarray] = {}
        self._names: set[str] = set()
        self._counter: dict[str, int] = {}
        self.qnn = _QNN(self, "qnn")
        self.nn = _NN(self, "nn")
        self.vta = _VTA(self, "vta")

    # ---------------------------------------------------------------- leaves
    def _claim(self, name: str) -> str:
        if not isinstance(name, str) or not name:
            raise GraphError(f"a name must be a non-empty str, got {name!r}")
        if name in self._names:
            raise GraphError(f"the name {name!r} is already used in this graph")
        self._names.add(name)
        return name

    def input(self, name: str, shape: Sequence[int], dtype: str = "float32", scale: Any = None,
              zero_point: Any = None, axis: int | None = None) -> Value:
        """A graph input.

        Raises
        ------
        GraphError
            If the name is taken or the type is malformed.
        """
        v = Value(self._claim(name), TensorType(tuple(shape), dtype, scale, zero_point, axis), INPUT)
        self._inputs.append(v)
        return v

    def const(self, name: str, data: Any, scale: Any = None, zero_point: Any = None, axis: int | None = None) -> Value:
        """A constant (a parameter of the graph) holding a copy of ``data``.

        Raises
        ------
        GraphError
            If the name is taken or the dtype is not supported.
        """
        arr = np.array(data, copy=True)
        arr.setflags(write=False)
        v = Value(self._claim(name), TensorType(arr.shape, str(arr.dtype), scale, zero_point, axis), PARAM)
        self._params[name] = arr
        return v

    param = const

    def add_node(self, node: Node) -> Value:
        """Append an existing node (its inputs must be defined).

        Raises
        ------
        GraphError
            If the node's name is taken.
        """
        self._claim(node.name)
        self._nodes.append(node)
        return node.output

    def fresh_name(self, base: str) -> str:
        """A name not used yet, ``<base>_<n>``."""
        while True:
            n = self._counter.get(base, 0)
            self._counter[base] = n + 1
            name = f"{base}_{n}"
            if name not in self._names:
                return name

    # ---------------------------------------------------------------- generic node
    def op(self, op: str, inputs: Sequence[Value], attrs: Mapping[str, Any] | None = None,
           name: str | None = None) -> Value:
        """Add a node applying ``op``; its output type is inferred.

        Raises
        ------
        UnsupportedOperatorError
            If ``op`` is not an operator of the IR.
        GraphError
            If an input is not a Value of this builder, attributes are unknown, or the inputs'
            shapes or dtypes are inconsistent (the message names the tensors).
        """
        name = name or self.fresh_name(op.split(".")[-1])
        attrs = normalise_attrs(op, attrs, name)
        for v in inputs:
            if not isinstance(v, Value):
                raise GraphError(f"node {name!r} ({op}): inputs must be Values, got {v!r}")
        out = infer_type(op, list(inputs), attrs, name)
        return self.add_node(Node(op, tuple(inputs), attrs, name, out))

    # ---------------------------------------------------------------- operators without a prefix
    def clip(self, x: Value, a_min: float, a_max: float, name: str | None = None) -> Value:
        """``clip`` (bounds in the integer domain of a quantized tensor)."""
        return self.op("clip", [x], dict(a_min=a_min, a_max=a_max), name)

    def reshape(self, x: Value, newshape: Sequence[int], name: str | None = None) -> Value:
        """``reshape`` (``0`` copies a dimension, one ``-1`` is inferred)."""
        return self.op("reshape", [x], dict(newshape=tuple(newshape)), name)

    def transpose(self, x: Value, axes: Sequence[int] | None = None, name: str | None = None) -> Value:
        """``transpose``."""
        return self.op("transpose", [x], dict(axes=None if axes is None else tuple(axes)), name)

    def concatenate(self, xs: Sequence[Value], axis: int = 0, name: str | None = None) -> Value:
        """``concatenate``."""
        return self.op("concatenate", list(xs), dict(axis=axis), name)

    def cast(self, x: Value, dtype: str, name: str | None = None) -> Value:
        """``cast``."""
        return self.op("cast", [x], dict(dtype=dtype), name)

    def layout_transform(self, x: Value, src_layout: str, dst_layout: str, channels: int | None = None,
                         name: str | None = None) -> Value:
        """``layout_transform`` between NCHW/NC and NCHW{b}n{c}c/NC{b}n{c}c (``channels``: crop when unpacking)."""
        return self.op("layout_transform", [x], dict(src_layout=src_layout, dst_layout=dst_layout,
                                                     channels=channels), name)

    def add(self, a: Value, b: Value, name: str | None = None) -> Value:
        """``add`` (float or plain integer, on the host)."""
        return self.op("add", [a, b], {}, name)

    def subtract(self, a: Value, b: Value, name: str | None = None) -> Value:
        """``subtract``."""
        return self.op("subtract", [a, b], {}, name)

    def multiply(self, a: Value, b: Value, name: str | None = None) -> Value:
        """``multiply``."""
        return self.op("multiply", [a, b], {}, name)

    # ---------------------------------------------------------------- result
    def finish(self, outputs: Value | Sequence[Value]) -> Graph:
        """The graph returning ``outputs``.

        Raises
        ------
        GraphError
            If an output is not a value of this builder.
        """
        outs = [outputs] if isinstance(outputs, Value) else list(outputs)
        return Graph(self._inputs, outs, self._nodes, self._params)

    build = finish
