"""The translation of ONNX operators into the graph IR (used by :func:`vta.frontend.from_onnx`).

Every ONNX tensor is tracked as one of four *entries* while the nodes are visited in order:

``Const``
    a constant array (an initializer or a ``Constant`` node);
``Tensor``
    a value of the graph being built: float, int8/uint8 carrying its scale and zero point, or
    an int32 accumulator;
``Dequant``
    the float tensor ``(src - zero_point) * scale`` of a DequantizeLinear, kept symbolic: a
    quantized consumer reads the integers, a float consumer gets a ``qnn.dequantize``;
``Pending``
    a float operator whose inputs are dequantized (Conv, Gemm, Add, pooling, ...), kept until
    its consumer decides: a QuantizeLinear turns it into the integer operator with that output
    scale; any other consumer gets the exact float result (int32 accumulator dequantized).

Operators that do not change values (MaxPool, Flatten, Reshape, Transpose, Relu/Clip as a
clamp) are applied to the integers under a Dequant, so ``Q(MaxPool(DQ(q)))`` with the same
scale is a max pool of ``q`` and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import FrontendError, GraphError
from ..graph import GraphBuilder, Node, Value
from ..graph.infer import normalise_attrs

__all__ = ["Importer", "SUPPORTED_OPS", "QUANTIZE_HINT"]

#: What a user with a float model should do.
QUANTIZE_HINT = ("quantize it first with onnxruntime's static quantizer, e.g. "
                 "vta.models.quantize(model, calibration_data) (QDQ, per-channel int8 weights)")

_QRANGE = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-(2 ** 31), 2 ** 31 - 1)}


@dataclass(frozen=True)
class Const:
    data: np.ndarray
    name: str


@dataclass(frozen=True)
class Tensor:
    value: Value


@dataclass(frozen=True)
class Dequant:
    src: Const | Tensor
    scale: np.ndarray          # float32, shape () or (C,)
    zero_point: np.ndarray     # int, same shape as scale
    axis: int | None


@dataclass
class Pending:
    kind: str                  # conv, dense, add, avgpool, gap, concat
    node: Any                  # the ONNX NodeProto
    name: str
    inputs: list
    attrs: dict = field(default_factory=dict)
    lo: float | None = None    # fused activation bounds in the real domain
    hi: float | None = None


def _attrs(node) -> dict[str, Any]:
    from onnx import helper

    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


def _scalar(a: np.ndarray) -> bool:
    return np.size(a) == 1


def _per(a: np.ndarray) -> Any:
    """A scale or zero point as the graph IR takes it: a Python scalar or a 1-D array."""
    a = np.asarray(a)
    if a.size == 1:
        return a.reshape(-1)[0].item()
    return a.reshape(-1)


class Importer:
    """Visits the nodes of a checked, quantized ModelProto and builds the graph.

    Parameters
    ----------
    proto : onnx.ModelProto
    opset : int
        The model's ai.onnx opset.
    shapes : dict of str to tuple
        Static shape of every graph input.
    """

    def __init__(self, proto, opset: int, shapes: dict[str, tuple[int, ...]]):
        self.proto = proto
        self.opset = opset
        self.shapes = shapes
        self.b = GraphBuilder()
        self.env: dict[str, Any] = {}
        self._float_cache: dict[int, Value] = {}
        self._params: dict[tuple, Value] = {}
        self._node = None

    # ------------------------------------------------------------------ driver
    def run(self):
        """Build the graph.

        Raises
        ------
        FrontendError
            As :func:`vta.frontend.from_onnx`.
        """
        from onnx import helper, numpy_helper

        for t in self.proto.graph.initializer:
            self.env[t.name] = Const(numpy_helper.to_array(t), t.name)
        for inp in self.proto.graph.input:
            if inp.name in self.env:
                continue
            elem = inp.type.tensor_type.elem_type
            dtype = str(helper.tensor_dtype_to_np_dtype(elem))
            if dtype not in ("float32", "int8", "uint8"):
                raise FrontendError(f"input {inp.name!r} has element type {dtype}; accepted: float32, int8, uint8")
            self.env[inp.name] = Tensor(self.b.input(inp.name, self.shapes[inp.name], dtype))
        for index, node in enumerate(self.proto.graph.node):
            self._node = node
            name = node.name or f"{node.op_type}_{index}"
            conv = SUPPORTED_OPS.get((node.domain or "", node.op_type))
            if conv is None:
                domain = node.domain or "ai.onnx"
                version = next((i.version for i in self.proto.opset_import if (i.domain or "ai.onnx") == domain), "?")
                raise FrontendError(
                    f"node {name!r}: operator {node.op_type!r} of domain {domain!r} (opset {version}) is not "
                    f"supported by the ONNX importer; supported: {', '.join(sorted(o for _, o in SUPPORTED_OPS))}",
                    node=name, op_type=node.op_type)
            try:
                outs = conv(self, node, name, [self._get(i) for i in node.input])
            except GraphError as exc:
                raise FrontendError(f"node {name!r} ({node.op_type}, opset {self.opset}): {exc}",
                                    node=name, op_type=node.op_type) from exc
            if not isinstance(outs, (list, tuple)):
                outs = [outs]
            for out_name, entry in zip(node.output, outs):
                if out_name:
                    self.env[out_name] = entry
        self._node = None
        outputs = []
        for out in self.proto.graph.output:
            entry = self.env.get(out.name)
            if entry is None:
                raise FrontendError(f"graph output {out.name!r} is produced by no node")
            if isinstance(entry, Const):
                raise FrontendError(f"graph output {out.name!r} is a constant; nothing to run")
            outputs.append(self.as_float(entry) if not (isinstance(entry, Tensor)) else entry.value)
        return self.b.finish(outputs)

    def _get(self, name: str):
        if not name:
            return None
        if name not in self.env:
            raise FrontendError(f"tensor {name!r} is used before it is defined")
        return self.env[name]

    def fail(self, name: str, what: str) -> FrontendError:
        node = self._node
        return FrontendError(f"node {name!r} ({node.op_type}, opset {self.opset}): {what}",
                             node=name, op_type=node.op_type)

    def unique(self, base: str) -> str:
        return base if base not in self.b._names else self.b.fresh_name(base)

    # ------------------------------------------------------------------ constants
    def const(self, name: str, data: np.ndarray, key: Any = None, **qparams) -> Value:
        """A graph constant (cached per ``key``)."""
        key = (name, key)
        if key not in self._params:
            self._params[key] = self.b.const(self.unique(name), data, **qparams)
        return self._params[key]

    def const_data(self, entry, name: str, what: str) -> np.ndarray:
        if not isinstance(entry, Const):
            raise self.fail(name, f"{what} must be a constant (an initializer)")
        return entry.data

    # ------------------------------------------------------------------ entry conversions
    def as_float(self, entry, name: str | None = None) -> Value:
        """A float32 graph value for ``entry`` (dequantizing or finishing a pending op)."""
        if isinstance(entry, Tensor):
            if entry.value.type.is_float:
                return entry.value
            t = entry.value.type
            if t.scale is None:
                raise self.fail(name or "?", f"integer tensor {entry.value.name!r} has no scale to dequantize with")
            return self.b.qnn.dequantize(entry.value)
        if isinstance(entry, Const):
            return self.const(entry.name, entry.data.astype(np.float32), "float")
        if isinstance(entry, Dequant):
            key = id(entry)
            if key not in self._float_cache:
                if isinstance(entry.src, Const):
                    data = (entry.src.data.astype(np.float64) - self._bcast(entry, entry.zero_point)) \
                        * self._bcast(entry, entry.scale)
                    self._float_cache[key] = self.const(entry.src.name, data.astype(np.float32), "dequantized")
                else:
                    self._float_cache[key] = self.b.qnn.dequantize(
                        entry.src.value, scale=_per(entry.scale), zero_point=_per(entry.zero_point),
                        axis=None if _scalar(entry.scale) else entry.axis,
                        name=self.unique(f"{entry.src.value.name}/dequantize"))
            return self._float_cache[key]
        if isinstance(entry, Pending):
            return self.finish_float(entry)
        raise FrontendError(f"cannot use {entry!r} as a float tensor")

    @staticmethod
    def _bcast(entry: Dequant, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, np.float64)
        if a.size == 1:
            return a.reshape(())
        nd = entry.src.data.ndim
        shape = [1] * nd
        shape[(entry.axis if entry.axis is not None else 1) % nd] = a.size
        return a.reshape(shape)

    def as_quant(self, entry, name: str, what: str) -> tuple[Value, np.ndarray, np.ndarray]:
        """(integer value, scale, zero point) of a dequantized activation or constant."""
        if isinstance(entry, Dequant):
            if isinstance(entry.src, Tensor):
                return entry.src.value, entry.scale, entry.zero_point
            data = entry.src.data
            if data.dtype not in (np.int8, np.uint8):
                raise self.fail(name, f"{what} {entry.src.name!r} is quantized to {data.dtype}; int8/uint8 expected")
            v = self.const(entry.src.name, data, "q", scale=_per(entry.scale), zero_point=_per(entry.zero_point),
                           axis=None if _scalar(entry.scale) else entry.axis)
            return v, entry.scale, entry.zero_point
        if isinstance(entry, Tensor) and entry.value.type.is_quantized and not entry.value.type.is_float:
            t = entry.value.type
            return entry.value, np.asarray(t.scale, np.float32), np.asarray(t.zero_point or 0)
        if isinstance(entry, Const) and np.issubdtype(entry.data.dtype, np.floating):
            raise self.fail(name, f"{what} {entry.name!r} is a float constant, not quantized; the model is not "
                                  f"fully quantized: {_hint()}")
        raise self.fail(name, f"{what} is not quantized (expected the output of a DequantizeLinear); "
                              f"float activations reach an integer operator: {_hint()}")

    def requant(self, v: Value, s_in, z_in, s_out, z_out, dtype: str, name: str) -> Value:
        """``v`` (integers in scale ``s_in``, zero point ``z_in``) in another scale/zero point/type."""
        if (np.allclose(s_in, s_out, rtol=1e-7, atol=0) and int(np.asarray(z_in).reshape(-1)[0])
                == int(np.asarray(z_out).reshape(-1)[0]) and v.type.dtype == dtype):
            return v
        acc = self.b.cast(v, "int32", name=self.unique(f"{name}/cast"))
        return self.b.qnn.requantize(acc, input_scale=_per(s_in), input_zero_point=int(np.asarray(z_in).reshape(-1)[0]),
                                     output_scale=_per(s_out), output_zero_point=int(np.asarray(z_out).reshape(-1)[0]),
                                     out_dtype=dtype, name=self.unique(f"{name}/requantize"))

    # ------------------------------------------------------------------ pending operators
    def emit_quantized(self, p: Pending, s_y, z_y, dtype: str, name: str) -> Value:
        """The integer form of pending ``p`` with output scale ``s_y``, zero point ``z_y``."""
        s_y = float(np.asarray(s_y).reshape(-1)[0])
        z_y = int(np.asarray(z_y).reshape(-1)[0])
        b = self.b
        if p.kind in ("conv", "dense"):
            acc, s_acc = self.accumulate(p)
            y = b.qnn.requantize(acc, input_scale=_per(s_acc), input_zero_point=0, output_scale=s_y,
                                 output_zero_point=z_y, out_dtype=dtype, axis=1,
                                 name=self.unique(f"{p.name}/requantize"))
        elif p.kind == "add":
            (a, sa, za), (c, sc, zc) = (self.as_quant(e, p.name, "an input") for e in p.inputs)
            for s in (sa, sc):
                if not _scalar(s):
                    raise self.fail(p.name, "Add of per-channel quantized tensors is not supported")
            y = b.qnn.add(a, c, output_scale=s_y, output_zero_point=z_y, lhs_scale=_per(sa),
                          lhs_zero_point=int(_per(za)), rhs_scale=_per(sc), rhs_zero_point=int(_per(zc)),
                          out_dtype=dtype, name=self.unique(p.name))
        elif p.kind in ("avgpool", "gap"):
            x, sx, zx = self.as_quant(p.inputs[0], p.name, "the input")
            if not _scalar(sx):
                raise self.fail(p.name, "pooling a per-channel quantized tensor is not supported")
            q = dict(input_scale=_per(sx), input_zero_point=int(_per(zx)), output_scale=s_y,
                     output_zero_point=z_y, out_dtype=dtype)
            if p.kind == "gap":
                y = b.op("qnn.global_avg_pool2d", [x], q, self.unique(p.name))
                if not p.attrs.get("keepdims", True):
                    y = b.reshape(y, y.type.shape[:2], name=self.unique(f"{p.name}/squeeze"))
            else:
                y = b.op("qnn.avg_pool2d", [x], {**p.attrs, **q}, self.unique(p.name))
        elif p.kind == "concat":
            parts = []
            for i, e in enumerate(p.inputs):
                v, s, z = self.as_quant(e, p.name, f"input {i}")
                parts.append(self.requant(v, s, z, s_y, z_y, dtype, f"{p.name}/in{i}"))
            y = b.concatenate(parts, axis=p.attrs["axis"], name=self.unique(p.name))
        else:  # pragma: no cover - every kind above
            raise self.fail(p.name, f"internal: pending kind {p.kind!r}")
        lo, hi = _QRANGE[dtype]
        if p.lo is not None:
            lo = max(lo, z_y + int(np.rint(p.lo / s_y)))
        if p.hi is not None:
            hi = min(hi, z_y + int(np.rint(p.hi / s_y)))
        if (lo, hi) != _QRANGE[dtype]:
            y = b.clip(y, lo, hi, name=self.unique(f"{p.name}/clip"))
        return y

    def retype(self, x: Value, scale, zp, name: str) -> Value:
        """``x`` labelled with the scale and zero point a DequantizeLinear gave it (a reshape to
        its own shape that carries the new type)."""
        t = x.type.with_(scale=_per(scale), zero_point=int(_per(zp)), axis=None)
        attrs = normalise_attrs("reshape", {"newshape": x.type.shape})
        return self.b.add_node(Node("reshape", (x,), attrs, self.unique(f"{name}/qparams"), t))

    def accumulate(self, p: Pending) -> tuple[Value, np.ndarray]:
        """int32 accumulator (bias added) of a pending conv/dense and its real scale."""
        b = self.b
        x, sx, zx = self.as_quant(p.inputs[0], p.name, "the data input")
        if not _scalar(sx) or not _scalar(zx):
            raise self.fail(p.name, "per-channel quantized activations are not supported")
        w_entry = p.inputs[1]
        if not isinstance(w_entry, Dequant) or not isinstance(w_entry.src, Const):
            if isinstance(w_entry, Const) and np.issubdtype(w_entry.data.dtype, np.floating):
                raise self.fail(p.name, f"weight {w_entry.name!r} is float: {_hint()}")
            raise self.fail(p.name, "the weight must be a quantized constant (DequantizeLinear of an initializer)")
        wq = w_entry.src.data
        sw = np.asarray(w_entry.scale, np.float64).reshape(-1)
        zw = np.asarray(w_entry.zero_point).astype(np.int64).reshape(-1)
        w_axis = (w_entry.axis if w_entry.axis is not None else 1) % wq.ndim if sw.size > 1 else None
        if p.kind == "dense":
            wq, w_axis = self.dense_weight(p, wq, w_axis)
        elif sw.size > 1 and w_axis != 0:
            raise self.fail(p.name, f"per-channel weight scales on axis {w_axis}; output channels (axis 0) expected")
        if wq.dtype == np.uint8:  # the accelerator holds int8: v - 128 with zero point - 128
            wq = (wq.astype(np.int16) - 128).astype(np.int8)
            zw = zw - 128
        if wq.dtype != np.int8:
            raise self.fail(p.name, f"weights quantized to {wq.dtype}; int8 or uint8 expected")
        if len(set(zw.tolist())) != 1:
            raise self.fail(p.name, "per-channel weight zero points that differ are not supported")
        cout = wq.shape[0]
        w = self.const(w_entry.src.name, wq, ("w", p.kind), scale=_per(sw), zero_point=int(zw[0]),
                       axis=0 if sw.size > 1 else None)
        s_acc = np.asarray(sx, np.float64).reshape(()) * sw
        if p.kind == "conv":
            acc = b.qnn.conv2d(x, w, input_zero_point=int(_per(zx)), kernel_zero_point=int(zw[0]),
                               name=self.unique(p.name), **p.attrs)
        else:
            if x.type.ndim != 2:
                raise self.fail(p.name, f"dense input of rank {x.type.ndim} {x.type.shape}; rank 2 expected")
            acc = b.qnn.dense(x, w, input_zero_point=int(_per(zx)), kernel_zero_point=int(zw[0]),
                              name=self.unique(p.name))
        bias = self.bias(p, s_acc, cout)
        acc = b.nn.bias_add(acc, bias, axis=1, name=self.unique(f"{p.name}/bias_add"))
        return acc, s_acc

    def dense_weight(self, p: Pending, wq: np.ndarray, w_axis):
        """The (out, in) weight of a Gemm/MatMul and the axis of its per-channel scales."""
        if wq.ndim != 2:
            raise self.fail(p.name, f"weight of rank {wq.ndim}; a 2-D constant is expected")
        if p.attrs.get("_trans_b", False):
            return wq, w_axis
        # MatMul / Gemm transB=0: (in, out) -> (out, in)
        return np.ascontiguousarray(wq.T), (None if w_axis is None else 1 - w_axis)

    def bias(self, p: Pending, s_acc: np.ndarray, cout: int) -> Value:
        b_entry = p.inputs[2] if len(p.inputs) > 2 else None
        name = f"{p.name}.bias"
        beta = p.attrs.get("_beta", 1.0)
        if b_entry is None:
            return self.const(name, np.zeros(cout, np.int32), "zero")
        if isinstance(b_entry, Dequant) and isinstance(b_entry.src, Const):
            data = b_entry.src.data
            real = (data.astype(np.float64) - self._bcast(b_entry, b_entry.zero_point)) * self._bcast(b_entry, b_entry.scale)
            exact = (data.dtype == np.int32 and np.all(np.asarray(b_entry.zero_point) == 0) and beta == 1.0
                     and np.allclose(np.asarray(b_entry.scale, np.float64) * np.ones(cout), s_acc * np.ones(cout),
                                     rtol=1e-6, atol=0))
            name = b_entry.src.name
            if exact:
                return self.const(name, data.reshape(-1).astype(np.int32), "bias")
        elif isinstance(b_entry, Const) and np.issubdtype(b_entry.data.dtype, np.floating):
            real, name = b_entry.data.astype(np.float64), b_entry.name
        else:
            raise self.fail(p.name, "the bias must be a constant (an initializer, quantized or float)")
        real = np.broadcast_to(np.asarray(real, np.float64).reshape(-1) * beta, (cout,))
        q = np.rint(real / (s_acc * np.ones(cout)))
        return self.const(name, np.clip(q, -(2 ** 31), 2 ** 31 - 1).astype(np.int32), ("bias", p.name))

    def finish_float(self, p: Pending) -> Value:
        """The float result of a pending operator that no QuantizeLinear consumes."""
        key = id(p)
        if key in self._float_cache:
            return self._float_cache[key]
        b = self.b
        if p.kind in ("conv", "dense"):
            acc, s_acc = self.accumulate(p)
            y = b.qnn.dequantize(acc, scale=_per(s_acc), zero_point=0, axis=1 if np.size(s_acc) > 1 else None,
                                 name=self.unique(f"{p.name}/dequantize"))
        elif p.kind == "add":
            y = b.add(self.as_float(p.inputs[0]), self.as_float(p.inputs[1]), name=self.unique(p.name))
        elif p.kind == "gap":
            y = b.nn.global_avg_pool2d(self.as_float(p.inputs[0]), name=self.unique(p.name))
            if not p.attrs.get("keepdims", True):
                y = b.reshape(y, y.type.shape[:2], name=self.unique(f"{p.name}/squeeze"))
        elif p.kind == "avgpool":
            y = b.nn.avg_pool2d(self.as_float(p.inputs[0]), name=self.unique(p.name), **p.attrs)
        elif p.kind == "concat":
            y = b.concatenate([self.as_float(e) for e in p.inputs], axis=p.attrs["axis"], name=self.unique(p.name))
        else:  # pragma: no cover
            raise self.fail(p.name, f"internal: pending kind {p.kind!r}")
        if p.lo is not None or p.hi is not None:
            lo = -np.inf if p.lo is None else p.lo
            hi = np.inf if p.hi is None else p.hi
            y = b.nn.relu(y, name=self.unique(f"{p.name}/relu")) if (lo, hi) == (0.0, np.inf) else \
                b.clip(y, float(lo), float(hi), name=self.unique(f"{p.name}/clip"))
        self._float_cache[key] = y
        return y


def _hint() -> str:
    return QUANTIZE_HINT


# ====================================================================== operator converters
# Each takes (importer, node, name, input entries) and returns the output entry (or a list).

def _quantize_linear(im: Importer, node, name, ins):
    x, s, z = (ins + [None, None])[:3]
    attrs = _attrs(node)
    if attrs.get("block_size", 0):
        raise im.fail(name, "blocked quantization (block_size) is not supported")
    scale = np.asarray(im.const_data(s, name, "the scale"), np.float32)
    zp = np.asarray(im.const_data(z, name, "the zero point")) if z is not None else np.zeros((), np.uint8)
    dtype = str(zp.dtype)
    if dtype not in ("int8", "uint8"):
        raise im.fail(name, f"quantizes to {dtype}; int8 and uint8 are supported")
    axis = attrs.get("axis", 1)
    if isinstance(x, Const):
        data = x.data.astype(np.float32)
        if scale.size > 1:
            shape = [1] * data.ndim
            shape[axis % data.ndim] = scale.size
            sc, zc = scale.reshape(shape), zp.astype(np.int64).reshape(shape)
        else:
            sc, zc = scale.reshape(()), zp.astype(np.int64).reshape(())
        lo, hi = _QRANGE[dtype]
        return Const(np.clip(np.rint(data / sc) + zc, lo, hi).astype(dtype), x.name + "_q")
    if scale.size > 1:
        raise im.fail(name, "per-channel quantization of an activation is not supported")
    if isinstance(x, Pending):
        return Tensor(im.emit_quantized(x, scale, zp, dtype, name))
    if isinstance(x, Dequant) and isinstance(x.src, Tensor):
        if not _scalar(x.scale):
            raise im.fail(name, "requantizing a per-channel tensor is not supported")
        v = im.requant(x.src.value, x.scale, x.zero_point, scale, zp, dtype, name)
        if v is x.src.value and (v.type.scale is None or not np.isclose(v.type.scale, float(scale.reshape(-1)[0]))):
            v = im.retype(v, scale, zp, name)
        return Tensor(v)
    if isinstance(x, Tensor) and x.value.type.is_float:
        return Tensor(im.b.qnn.quantize(x.value, scale=_per(scale), zero_point=int(_per(zp)), out_dtype=dtype,
                                        name=im.unique(name)))
    raise im.fail(name, "the input is neither a float tensor nor a dequantized one")


def _dequantize_linear(im: Importer, node, name, ins):
    x, s, z = (ins + [None, None])[:3]
    attrs = _attrs(node)
    if attrs.get("block_size", 0):
        raise im.fail(name, "blocked quantization (block_size) is not supported")
    scale = np.asarray(im.const_data(s, name, "the scale"), np.float32)
    zp = np.asarray(im.const_data(z, name, "the zero point")) if z is not None else np.zeros(scale.shape, np.int64)
    if isinstance(x, Const):
        return Dequant(x, scale, zp, attrs.get("axis", 1))
    if isinstance(x, Tensor) and not x.value.type.is_float:
        return Dequant(x, scale, zp, attrs.get("axis", 1))
    if isinstance(x, Dequant):
        raise im.fail(name, "dequantizes a tensor that is already float")
    if isinstance(x, Tensor):
        raise im.fail(name, f"the input {x.value.name!r} is float, not an integer tensor")
    raise im.fail(name, "the input is not an integer tensor")


def _conv_attrs(im: Importer, node, name, x_shape, w_shape) -> dict:
    a = _attrs(node)
    if len(w_shape) != 4:
        raise im.fail(name, f"only 2-D convolutions (4-D weights) are supported, the weight has shape {w_shape}")
    kh, kw = w_shape[2], w_shape[3]
    strides = tuple(a.get("strides", (1, 1)))
    dil = tuple(a.get("dilations", (1, 1)))
    pads = _pads(im, name, a, x_shape[2:], (kh, kw), strides, dil)
    return dict(strides=strides, padding=pads, dilation=dil, groups=int(a.get("group", 1)))


def _pads(im, name, a, spatial, kernel, strides, dil=(1, 1)) -> tuple[int, int, int, int]:
    auto = a.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", "VALID"):
        p = list(a.get("pads", (0, 0, 0, 0))) if auto == "NOTSET" else [0, 0, 0, 0]
        if len(p) != 4:
            raise im.fail(name, f"pads {p} are not 2-D")
        return (p[0], p[1], p[2], p[3])  # ONNX: h_begin, w_begin, h_end, w_end
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for size, k, s, d in zip(spatial, kernel, strides, dil):
            total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
            small, big = total // 2, total - total // 2
            out.append((small, big) if auto == "SAME_UPPER" else (big, small))
        return (out[0][0], out[1][0], out[0][1], out[1][1])
    raise im.fail(name, f"auto_pad {auto!r} is not supported")


def _shape_of(entry) -> tuple[int, ...]:
    if isinstance(entry, Tensor):
        return entry.value.type.shape
    if isinstance(entry, Const):
        return entry.data.shape
    if isinstance(entry, Dequant):
        return _shape_of(entry.src)
    raise ValueError(entry)


def _conv(im: Importer, node, name, ins):
    if len(ins) < 2 or ins[1] is None:
        raise im.fail(name, "needs a weight")
    x, w = ins[0], ins[1]
    if isinstance(w, Const):
        raise im.fail(name, f"weight {w.name!r} is a float constant: the model is not quantized; {_hint()}")
    if isinstance(x, Pending):
        raise im.fail(name, "the data input is a float result that was not quantized")
    attrs = _conv_attrs(im, node, name, _shape_of(x) if not isinstance(x, Pending) else None, _shape_of(w))
    if isinstance(x, Tensor) and x.value.type.is_float:
        raise im.fail(name, f"the data input {x.value.name!r} is float: the model is not quantized; {_hint()}")
    return Pending("conv", node, name, [x, w] + ([ins[2]] if len(ins) > 2 and ins[2] is not None else []), attrs)


def _gemm(im: Importer, node, name, ins):
    a = _attrs(node)
    if a.get("transA", 0):
        raise im.fail(name, "transA=1 is not supported")
    if isinstance(ins[1], Const):
        raise im.fail(name, f"weight {ins[1].name!r} is a float constant: the model is not quantized; {_hint()}")
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    if alpha != 1.0:
        raise im.fail(name, f"alpha={alpha} is not supported (1.0 expected)")
    return Pending("dense", node, name, [e for e in ins if e is not None],
                   {"_trans_b": bool(a.get("transB", 0)), "_beta": beta})


def _matmul(im: Importer, node, name, ins):
    if isinstance(ins[1], Const):
        raise im.fail(name, f"weight {ins[1].name!r} is a float constant: the model is not quantized; {_hint()}")
    if not (isinstance(ins[1], Dequant) and isinstance(ins[1].src, Const)):
        raise im.fail(name, "MatMul of two activations is not supported; the second input must be a constant")
    return Pending("dense", node, name, list(ins), {"_trans_b": False})


def _add(im: Importer, node, name, ins):
    a, c = ins
    if all(isinstance(e, (Dequant, Tensor)) and not (isinstance(e, Tensor) and e.value.type.is_float) for e in ins):
        return Pending("add", node, name, [a, c])
    if isinstance(a, Pending) and a.kind == "dense" and len(a.inputs) == 2 and a.lo is None \
            and isinstance(c, (Const, Dequant)) and (isinstance(c, Const) or isinstance(c.src, Const)):
        # MatMul + Add(bias constant): fold the bias into the dense layer
        return Pending("dense", a.node, a.name, a.inputs + [c], dict(a.attrs))
    return Tensor(im.b.add(im.as_float(a), im.as_float(c), name=im.unique(name)))


def _binary_float(op: str):
    def conv(im: Importer, node, name, ins):
        a, c = ins
        return Tensor(im.b.op(op, [im.as_float(a), im.as_float(c)], {}, im.unique(name)))
    return conv


def _push(im: Importer, entry, name: str, fn: Callable[[Value], Value]):
    """Apply a value-preserving op to the integers under a Dequant (or to a plain tensor)."""
    if isinstance(entry, Dequant) and isinstance(entry.src, Tensor):
        return Dequant(Tensor(fn(entry.src.value)), entry.scale, entry.zero_point, entry.axis)
    if isinstance(entry, Dequant) and isinstance(entry.src, Const):
        return Dequant(Tensor(fn(im.as_quant(entry, name, "the input")[0])), entry.scale, entry.zero_point, entry.axis)
    if isinstance(entry, Tensor):
        return Tensor(fn(entry.value))
    if isinstance(entry, Pending):
        return Tensor(fn(im.as_float(entry)))
    if isinstance(entry, Const):
        return Tensor(fn(im.as_float(entry)))
    raise im.fail(name, f"cannot apply to {entry!r}")


def _relu(im: Importer, node, name, ins):
    return _clamp(im, name, ins[0], 0.0, None)


def _clip(im: Importer, node, name, ins):
    a = _attrs(node)
    lo, hi = a.get("min"), a.get("max")
    if len(ins) > 1 and ins[1] is not None:
        lo = float(np.asarray(im.const_data(ins[1], name, "min")).reshape(-1)[0])
    if len(ins) > 2 and ins[2] is not None:
        hi = float(np.asarray(im.const_data(ins[2], name, "max")).reshape(-1)[0])
    return _clamp(im, name, ins[0], lo, hi)


def _clamp(im: Importer, name: str, x, lo, hi):
    if isinstance(x, Pending) and x.kind in ("conv", "dense", "add", "avgpool", "gap"):
        nlo = lo if x.lo is None else (x.lo if lo is None else max(x.lo, lo))
        nhi = hi if x.hi is None else (x.hi if hi is None else min(x.hi, hi))
        return Pending(x.kind, x.node, x.name, x.inputs, dict(x.attrs), nlo, nhi)
    if isinstance(x, Dequant) and isinstance(x.src, Tensor):
        v = x.src.value
        if not _scalar(x.scale):
            raise im.fail(name, "clamping a per-channel quantized tensor is not supported")
        s, z = float(x.scale.reshape(-1)[0]), int(np.asarray(x.zero_point).reshape(-1)[0])
        qlo, qhi = _QRANGE[v.type.dtype]
        ilo = qlo if lo is None else max(qlo, z + int(np.rint(lo / s)))
        ihi = qhi if hi is None else min(qhi, z + int(np.rint(hi / s)))
        if (ilo, ihi) == (qlo, qhi):
            return x
        y = im.b.clip(v, ilo, ihi, name=im.unique(name))  # a quantized ReLU is a clip at the zero point
        return Dequant(Tensor(y), x.scale, x.zero_point, x.axis)
    v = im.as_float(x)
    if lo == 0.0 and hi is None:
        return Tensor(im.b.nn.relu(v, name=im.unique(name)))
    return Tensor(im.b.clip(v, -np.inf if lo is None else lo, np.inf if hi is None else hi, name=im.unique(name)))


def _pool_attrs(im: Importer, node, name, shape) -> dict:
    a = _attrs(node)
    k = tuple(a["kernel_shape"])
    if len(k) != 2:
        raise im.fail(name, f"only 2-D pooling is supported, kernel_shape is {k}")
    strides = tuple(a.get("strides", (1, 1)))
    if any(d != 1 for d in a.get("dilations", (1, 1))):
        raise im.fail(name, "dilated pooling is not supported")
    return dict(pool_size=k, strides=strides, padding=_pads(im, name, a, shape[2:], k, strides),
                ceil_mode=bool(a.get("ceil_mode", 0)))


def _maxpool(im: Importer, node, name, ins):
    if len(node.output) > 1 and node.output[1]:
        raise im.fail(name, "the Indices output of MaxPool is not supported")
    x = ins[0]
    attrs = _pool_attrs(im, node, name, _shape_of(x) if not isinstance(x, Pending) else im.as_float(x).type.shape)
    return _push(im, x, name, lambda v: im.b.nn.max_pool2d(v, name=im.unique(name), **attrs))


def _avgpool(im: Importer, node, name, ins):
    x = ins[0]
    attrs = _pool_attrs(im, node, name, _shape_of(x) if not isinstance(x, Pending) else im.as_float(x).type.shape)
    attrs["count_include_pad"] = bool(_attrs(node).get("count_include_pad", 0))
    if isinstance(x, Dequant):
        return Pending("avgpool", node, name, [x], attrs)
    return Tensor(im.b.nn.avg_pool2d(im.as_float(x), name=im.unique(name), **attrs))


def _gap(im: Importer, node, name, ins):
    x = ins[0]
    if isinstance(x, Dequant):
        return Pending("gap", node, name, [x], {"keepdims": True})
    return Tensor(im.b.nn.global_avg_pool2d(im.as_float(x), name=im.unique(name)))


def _reduce_mean(im: Importer, node, name, ins):
    a = _attrs(node)
    x = ins[0]
    axes = a.get("axes")
    if len(ins) > 1 and ins[1] is not None:
        axes = im.const_data(ins[1], name, "axes").tolist()
    shape = _shape_of(x) if not isinstance(x, Pending) else im.as_float(x).type.shape
    if axes is None or len(shape) != 4 or sorted(int(v) % 4 for v in axes) != [2, 3]:
        raise im.fail(name, f"ReduceMean over axes {axes} of a rank-{len(shape)} tensor; only the spatial axes "
                            "(2, 3) of an NCHW tensor (a global average pool) are supported")
    keep = bool(a.get("keepdims", 1))
    if isinstance(x, Dequant):
        return Pending("gap", node, name, [x], {"keepdims": keep})
    y = im.b.nn.global_avg_pool2d(im.as_float(x), name=im.unique(name))
    if not keep:
        y = im.b.reshape(y, y.type.shape[:2], name=im.unique(f"{name}/squeeze"))
    return Tensor(y)


def _flatten(im: Importer, node, name, ins):
    axis = int(_attrs(node).get("axis", 1))
    x = ins[0]
    shape = _shape_of(x) if not isinstance(x, Pending) else im.as_float(x).type.shape
    axis %= max(len(shape), 1)
    if axis == 1:
        return _push(im, x, name, lambda v: im.b.nn.batch_flatten(v, name=im.unique(name)))
    new = (int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis:], dtype=np.int64)))
    return _push(im, x, name, lambda v: im.b.reshape(v, new, name=im.unique(name)))


def _reshape(im: Importer, node, name, ins):
    x, s = ins
    target = [int(d) for d in im.const_data(s, name, "the shape")]
    if not _attrs(node).get("allowzero", 0):
        shape = _shape_of(x) if not isinstance(x, Pending) else im.as_float(x).type.shape
        target = [shape[i] if d == 0 and i < len(shape) else d for i, d in enumerate(target)]
    if isinstance(x, Const):
        return Const(x.data.reshape(target), x.name)
    return _push(im, x, name, lambda v: im.b.reshape(v, target, name=im.unique(name)))


def _squeeze_like(unsqueeze: bool):
    def conv(im: Importer, node, name, ins):
        x = ins[0]
        axes = _attrs(node).get("axes")
        if len(ins) > 1 and ins[1] is not None:
            axes = im.const_data(ins[1], name, "axes").tolist()
        shape = list(_shape_of(x) if not isinstance(x, Pending) else im.as_float(x).type.shape)
        if unsqueeze:
            rank = len(shape) + len(axes)
            for ax in sorted(int(a) % rank for a in axes):
                shape.insert(ax, 1)
        else:
            drop = {int(a) % len(shape) for a in axes} if axes is not None else {i for i, d in enumerate(shape) if d == 1}
            shape = [d for i, d in enumerate(shape) if i not in drop]
        if isinstance(x, Const):
            return Const(x.data.reshape(shape), x.name)
        return _push(im, x, name, lambda v: im.b.reshape(v, shape, name=im.unique(name)))
    return conv


def _transpose(im: Importer, node, name, ins):
    perm = _attrs(node).get("perm")
    if isinstance(ins[0], Dequant) and not _scalar(ins[0].scale):
        raise im.fail(name, "transposing a per-channel quantized tensor is not supported")
    return _push(im, ins[0], name, lambda v: im.b.transpose(v, perm, name=im.unique(name)))


def _concat(im: Importer, node, name, ins):
    axis = int(_attrs(node)["axis"])
    if all(isinstance(e, Dequant) and isinstance(e.src, Tensor) for e in ins):
        first = ins[0]
        same = all(_scalar(e.scale) and np.allclose(e.scale, first.scale, rtol=1e-7, atol=0)
                   and int(np.asarray(e.zero_point).reshape(-1)[0]) == int(np.asarray(first.zero_point).reshape(-1)[0])
                   and e.src.value.type.dtype == first.src.value.type.dtype for e in ins)
        if same:
            y = im.b.concatenate([e.src.value for e in ins], axis=axis, name=im.unique(name))
            return Dequant(Tensor(y), first.scale, first.zero_point, first.axis)
        return Pending("concat", node, name, list(ins), {"axis": axis})
    if all(isinstance(e, Tensor) and not e.value.type.is_float for e in ins):
        return Tensor(im.b.concatenate([e.value for e in ins], axis=axis, name=im.unique(name)))
    return Tensor(im.b.concatenate([im.as_float(e) for e in ins], axis=axis, name=im.unique(name)))


def _softmax(im: Importer, node, name, ins):
    axis = int(_attrs(node).get("axis", -1))
    return Tensor(im.b.nn.softmax(im.as_float(ins[0]), axis=axis, name=im.unique(name)))


def _identity(im: Importer, node, name, ins):
    return ins[0]


def _constant(im: Importer, node, name, ins):
    from onnx import numpy_helper

    a = node.attribute[0] if node.attribute else None
    if a is None or a.name != "value":
        raise im.fail(name, "only Constant nodes with a 'value' tensor are supported")
    return Const(numpy_helper.to_array(a.t), node.output[0])


def _cast(im: Importer, node, name, ins):
    from onnx import helper

    to = str(helper.tensor_dtype_to_np_dtype(_attrs(node)["to"]))
    x = ins[0]
    if isinstance(x, Const):
        return Const(x.data.astype(to), x.name)
    if isinstance(x, Tensor):
        return Tensor(im.b.cast(x.value, to, name=im.unique(name)))
    return Tensor(im.b.cast(im.as_float(x), to, name=im.unique(name)))


# ---------------------------------------------------------------------- QOperator form

def _dq(im, name, x, s, z, what, axis=1):
    scale = np.asarray(im.const_data(s, name, f"the scale of {what}"), np.float32)
    zp = np.asarray(im.const_data(z, name, f"the zero point of {what}")) if z is not None else np.zeros((), np.uint8)
    if isinstance(x, Const):
        return Dequant(x, scale, zp, axis)
    if isinstance(x, Tensor) and not x.value.type.is_float:
        return Dequant(x, scale, zp, axis)
    raise im.fail(name, f"{what} must be an integer tensor")


def _out_q(im, name, s, z):
    scale = np.asarray(im.const_data(s, name, "the output scale"), np.float32)
    zp = np.asarray(im.const_data(z, name, "the output zero point")) if z is not None else np.zeros((), np.uint8)
    return scale, zp, str(zp.dtype)


def _qlinear_conv(im: Importer, node, name, ins):
    x, xs, xz, w, ws, wz, ys, yz = ins[:8]
    bias = ins[8] if len(ins) > 8 else None
    xd, wd = _dq(im, name, x, xs, xz, "x"), _dq(im, name, w, ws, wz, "w", axis=0)
    attrs = _conv_attrs(im, node, name, _shape_of(x), _shape_of(w))
    inputs = [xd, wd]
    if bias is not None:
        s_b = np.asarray(xd.scale, np.float64) * np.asarray(wd.scale, np.float64)
        inputs.append(Dequant(bias, s_b.astype(np.float32), np.zeros(s_b.shape, np.int32), 0))
    p = Pending("conv", node, name, inputs, attrs)
    scale, zp, dtype = _out_q(im, name, ys, yz)
    return Tensor(im.emit_quantized(p, scale, zp, dtype, name))


def _qlinear_matmul(im: Importer, node, name, ins):
    a, as_, az, b, bs, bz, ys, yz = ins[:8]
    if not isinstance(b, Const):
        raise im.fail(name, "QLinearMatMul of two activations is not supported; B must be a constant")
    p = Pending("dense", node, name, [_dq(im, name, a, as_, az, "A"), _dq(im, name, b, bs, bz, "B", axis=1)],
                {"_trans_b": False})
    scale, zp, dtype = _out_q(im, name, ys, yz)
    return Tensor(im.emit_quantized(p, scale, zp, dtype, name))


def _qgemm(im: Importer, node, name, ins):
    a_, as_, az, b, bs, bz = ins[:6]
    c = ins[6] if len(ins) > 6 else None
    ys = ins[7] if len(ins) > 7 else None
    yz = ins[8] if len(ins) > 8 else None
    at = _attrs(node)
    if at.get("transA", 0) or float(at.get("alpha", 1.0)) != 1.0:
        raise im.fail(name, "transA=1 or alpha != 1 is not supported")
    trans_b = bool(at.get("transB", 0))
    ad = _dq(im, name, a_, as_, az, "A")
    bd = _dq(im, name, b, bs, bz, "B", axis=0 if trans_b else 1)
    inputs = [ad, bd]
    if c is not None:
        s_b = np.asarray(ad.scale, np.float64) * np.asarray(bd.scale, np.float64)
        inputs.append(Dequant(c, s_b.astype(np.float32), np.zeros(s_b.shape, np.int32), 0))
    p = Pending("dense", node, name, inputs, {"_trans_b": trans_b})
    if ys is None:
        return p
    scale, zp, dtype = _out_q(im, name, ys, yz)
    return Tensor(im.emit_quantized(p, scale, zp, dtype, name))


def _qlinear_add(im: Importer, node, name, ins):
    a, as_, az, b, bs, bz, cs, cz = ins[:8]
    p = Pending("add", node, name, [_dq(im, name, a, as_, az, "A"), _dq(im, name, b, bs, bz, "B")])
    scale, zp, dtype = _out_q(im, name, cs, cz)
    return Tensor(im.emit_quantized(p, scale, zp, dtype, name))


def _qlinear_gap(im: Importer, node, name, ins):
    x, xs, xz, ys, yz = ins[:5]
    if _attrs(node).get("channels_last", 0):
        raise im.fail(name, "channels_last=1 is not supported (NCHW expected)")
    p = Pending("gap", node, name, [_dq(im, name, x, xs, xz, "X")], {"keepdims": True})
    scale, zp, dtype = _out_q(im, name, ys, yz)
    return Tensor(im.emit_quantized(p, scale, zp, dtype, name))


def _qlinear_avgpool(im: Importer, node, name, ins):
    x, xs, xz, ys, yz = ins[:5]
    if _attrs(node).get("channels_last", 0):
        raise im.fail(name, "channels_last=1 is not supported (NCHW expected)")
    attrs = _pool_attrs(im, node, name, _shape_of(x))
    attrs["count_include_pad"] = bool(_attrs(node).get("count_include_pad", 0))
    p = Pending("avgpool", node, name, [_dq(im, name, x, xs, xz, "X")], attrs)
    scale, zp, dtype = _out_q(im, name, ys, yz)
    return Tensor(im.emit_quantized(p, scale, zp, dtype, name))


def _qlinear_concat(im: Importer, node, name, ins):
    ys, yz = ins[0], ins[1]
    rest = ins[2:]
    if len(rest) % 3:
        raise im.fail(name, "inputs must come in (tensor, scale, zero point) triples")
    parts = [_dq(im, name, rest[i], rest[i + 1], rest[i + 2], f"input {i // 3}") for i in range(0, len(rest), 3)]
    p = Pending("concat", node, name, parts, {"axis": int(_attrs(node)["axis"])})
    scale, zp, dtype = _out_q(im, name, ys, yz)
    return Tensor(im.emit_quantized(p, scale, zp, dtype, name))


def _conv_integer(im: Importer, node, name, ins):
    x, w = ins[0], ins[1]
    xz = ins[2] if len(ins) > 2 else None
    wz = ins[3] if len(ins) > 3 else None
    if not isinstance(w, Const):
        raise im.fail(name, "the weight must be a constant")
    if not isinstance(x, Tensor) or x.value.type.is_float:
        raise im.fail(name, "the data input must be an integer tensor")
    zx = int(np.asarray(im.const_data(xz, name, "x_zero_point")).reshape(-1)[0]) if xz is not None else 0
    zw = np.asarray(im.const_data(wz, name, "w_zero_point")).reshape(-1) if wz is not None else np.zeros(1, np.int64)
    if len(set(zw.tolist())) != 1:
        raise im.fail(name, "per-channel weight zero points that differ are not supported")
    wq, zw0 = w.data, int(zw[0])
    if wq.dtype == np.uint8:
        wq, zw0 = (wq.astype(np.int16) - 128).astype(np.int8), zw0 - 128
    attrs = _conv_attrs(im, node, name, x.value.type.shape, wq.shape)
    wv = im.const(w.name, wq, "int8")
    return Tensor(im.b.qnn.conv2d(x.value, wv, input_zero_point=zx, kernel_zero_point=zw0,
                                  name=im.unique(name), **attrs))


def _matmul_integer(im: Importer, node, name, ins):
    a, b = ins[0], ins[1]
    az = ins[2] if len(ins) > 2 else None
    bz = ins[3] if len(ins) > 3 else None
    if not isinstance(b, Const) or b.data.ndim != 2:
        raise im.fail(name, "B must be a 2-D constant")
    if not isinstance(a, Tensor) or a.value.type.is_float or a.value.type.ndim != 2:
        raise im.fail(name, "A must be a 2-D integer tensor")
    za = int(np.asarray(im.const_data(az, name, "a_zero_point")).reshape(-1)[0]) if az is not None else 0
    zb = np.asarray(im.const_data(bz, name, "b_zero_point")).reshape(-1) if bz is not None else np.zeros(1, np.int64)
    if len(set(zb.tolist())) != 1:
        raise im.fail(name, "per-column zero points of B that differ are not supported")
    wq, zb0 = np.ascontiguousarray(b.data.T), int(zb[0])
    if wq.dtype == np.uint8:
        wq, zb0 = (wq.astype(np.int16) - 128).astype(np.int8), zb0 - 128
    wv = im.const(b.name, wq, "int8T")
    return Tensor(im.b.qnn.dense(a.value, wv, input_zero_point=za, kernel_zero_point=zb0, name=im.unique(name)))


#: (domain, op_type) -> converter.
SUPPORTED_OPS: dict[tuple[str, str], Callable] = {
    ("", "QuantizeLinear"): _quantize_linear,
    ("", "DequantizeLinear"): _dequantize_linear,
    ("", "Conv"): _conv,
    ("", "Gemm"): _gemm,
    ("", "MatMul"): _matmul,
    ("", "Add"): _add,
    ("", "Sub"): _binary_float("subtract"),
    ("", "Mul"): _binary_float("multiply"),
    ("", "Relu"): _relu,
    ("", "Clip"): _clip,
    ("", "MaxPool"): _maxpool,
    ("", "AveragePool"): _avgpool,
    ("", "GlobalAveragePool"): _gap,
    ("", "ReduceMean"): _reduce_mean,
    ("", "Flatten"): _flatten,
    ("", "Reshape"): _reshape,
    ("", "Squeeze"): _squeeze_like(False),
    ("", "Unsqueeze"): _squeeze_like(True),
    ("", "Transpose"): _transpose,
    ("", "Concat"): _concat,
    ("", "Softmax"): _softmax,
    ("", "Identity"): _identity,
    ("", "Constant"): _constant,
    ("", "Cast"): _cast,
    ("", "QLinearConv"): _qlinear_conv,
    ("", "QLinearMatMul"): _qlinear_matmul,
    ("", "ConvInteger"): _conv_integer,
    ("", "MatMulInteger"): _matmul_integer,
    ("com.microsoft", "QLinearAdd"): _qlinear_add,
    ("com.microsoft", "QLinearGlobalAveragePool"): _qlinear_gap,
    ("com.microsoft", "QLinearAveragePool"): _qlinear_avgpool,
    ("com.microsoft", "QLinearConcat"): _qlinear_concat,
    ("com.microsoft", "QGemm"): _qgemm,
}
for _domain, _op in list(SUPPORTED_OPS):
    if _domain == "":
        SUPPORTED_OPS[("ai.onnx", _op)] = SUPPORTED_OPS[(_domain, _op)]
