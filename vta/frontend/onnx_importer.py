"""The ONNX importer's core: tensor entries, the node visitor and the integer emission.

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

A node without a converter, one whose converter declines it (raises ``FrontendError``), and
one whose result would only be a float computation go to onnxruntime instead: they join the
open region of :class:`~vta.frontend.onnx_partition.RegionBuilder` (nodes left behind by a
declining converter are dropped at the end, as nothing reads them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import FrontendError, GraphError
from ..graph import GraphBuilder, Node, Value
from ..graph.opdefs import normalise_attrs
from ..graph.ir import DTYPES
from .onnx_entries import Const, Dequant, Pending, Tensor, _scalar

__all__ = ["Importer", "Const", "Tensor", "Dequant", "Pending", "QUANTIZE_HINT", "OpsetConverter"]

#: What a user with a float model should do.
QUANTIZE_HINT = ("quantize it first with onnxruntime's static quantizer, e.g. "
                 "vta.models.quantize(model, calibration_data) (QDQ, per-channel int8 weights)")

_QRANGE = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-(2 ** 31), 2 ** 31 - 1)}


class OpsetConverter:
    """A converter for an operator whose meaning changed between opsets (TVM's ``_impl_vN``).

    Subclasses define ``_impl_v<N>(importer, node, name, inputs)`` methods, one per opset where
    the operator changed; the importer uses the one with the largest ``N`` not above the
    model's opset. A table entry may be such a class or a plain function (any opset).
    """

    @classmethod
    def get_converter(cls, opset: int):
        """The ``_impl_vN`` for ``opset``, or None when the model's opset is older than all."""
        versions = sorted(int(k[len("_impl_v"):]) for k in dir(cls) if k.startswith("_impl_v"))
        usable = [v for v in versions if v <= opset]
        return getattr(cls, f"_impl_v{usable[-1]}") if usable else None


def _attrs(node) -> dict[str, Any]:
    from onnx import helper

    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


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
    ops : dict
        ``(domain, op_type) -> converter`` (:data:`vta.frontend.onnx_ops.SUPPORTED_OPS`).
    """

    def __init__(self, proto, opset: int, shapes: dict[str, tuple[int, ...]], ops: dict[tuple[str, str], Any]):
        self.proto = proto
        self.ops = ops
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

        from .onnx_partition import RegionBuilder

        for t in self.proto.graph.initializer:
            self.env[t.name] = Const(numpy_helper.to_array(t), t.name)
        for inp in self.proto.graph.input:
            if inp.name in self.env:
                continue
            elem = inp.type.tensor_type.elem_type
            dtype = str(np.dtype(helper.tensor_dtype_to_np_dtype(elem)))
            if dtype not in DTYPES:
                raise FrontendError(f"input {inp.name!r} has element type {dtype}; accepted: {', '.join(DTYPES)}")
            self.env[inp.name] = Tensor(self.b.input(inp.name, self.shapes[inp.name], dtype))
        self.regions = regions = RegionBuilder(self)
        for index, node in enumerate(self.proto.graph.node):
            self._node = node
            name = node.name or f"{node.op_type}_{index}"
            from_region = regions.reads_open(node)
            if from_region and not regions.takes_back(from_region):
                regions.add(index, "")  # float or shape tensors of the region: onnxruntime goes on
                continue
            if from_region:
                regions.close()   # int8/uint8 tensors: back to the integer path
            outs, reason = self._convert(node, name)
            if outs is None:
                regions.add(index, reason)
                continue
            # a converter gives the outputs it produces; optional trailing ones (e.g. MaxPool's
            # Indices) stay unset
            for out_name, entry in zip(node.output, outs, strict=False):
                if out_name:
                    self.env[out_name] = entry
        regions.close()
        self._node = None
        outputs = []
        for out in self.proto.graph.output:
            entry = self.env.get(out.name)
            if entry is None:
                raise FrontendError(f"graph output {out.name!r} is produced by no node")
            if isinstance(entry, Const):
                raise FrontendError(f"graph output {out.name!r} is a constant; nothing to run")
            outputs.append(self.as_float(entry) if not (isinstance(entry, Tensor)) else entry.value)
        return _live(self.b.finish(outputs))

    def _convert(self, node, name: str):
        """``(output entries, "")`` of a node the importer converts, or ``(None, reason)`` when it
        leaves the node to onnxruntime: no converter, the converter declines the pattern, or the
        result would be a float computation (float operators belong to onnxruntime)."""
        conv = self.ops.get((node.domain or "", node.op_type))
        if isinstance(conv, type) and issubclass(conv, OpsetConverter):
            conv = conv.get_converter(self.opset)
        if conv is None:
            return None, ""
        ins = [self._get(i) for i in node.input]
        try:
            outs = conv(self, node, name, ins)
        except (FrontendError, GraphError) as exc:
            return None, f"{node.op_type} {name!r}: {str(exc).split(': ', 1)[-1]}"
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        for entry in outs:
            if isinstance(entry, Tensor) and entry.value.type.is_float and not any(entry is e for e in ins):
                return None, ""
        return outs, ""

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
        elif p.kind == "mul":
            from .onnx_accel import emit_mul

            y = emit_mul(self, p, s_y, z_y, dtype)
        elif p.kind in ("max", "min"):
            from .onnx_accel import emit_minmax

            y = emit_minmax(self, p, s_y, z_y, dtype)
        elif p.kind in ("avgpool", "gap"):
            x, sx, zx = self.as_quant(p.inputs[0], p.name, "the input")
            if not _scalar(sx):
                raise self.fail(p.name, "pooling a per-channel quantized tensor is not supported")
            q = dict(input_scale=_per(sx), input_zero_point=int(_per(zx)), output_scale=s_y,
                     output_zero_point=z_y, out_dtype=dtype)
            tie = _pool_tie(float(_per(sx)), float(s_y), _pool_counts(p, x.type.shape))
            if tie is not None:
                raise self.fail(p.name, tie)
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
        # in float32, as onnxruntime's QLinearConv forms its multiplier (x_scale * w_scale[c]) / y_scale
        s_acc = (np.asarray(sx, np.float32).reshape(()) * sw.astype(np.float32)).astype(np.float64)
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
            real = ((data.astype(np.float64) - self._bcast(b_entry, b_entry.zero_point))
                    * self._bcast(b_entry, b_entry.scale))
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
        elif p.kind == "mul":
            from .onnx_accel import finish_mul_float

            y = finish_mul_float(self, p)
        elif p.kind in ("max", "min"):
            from .onnx_accel import finish_minmax_float

            y = finish_minmax_float(self, p)
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


def _pool_counts(p: Pending, shape) -> list[int]:
    """The pixel counts a pending average pool divides by (every count up to the window's when
    padded pixels are not counted)."""
    if p.kind == "gap":
        return [int(shape[2]) * int(shape[3])]
    kh, kw = p.attrs["pool_size"]
    if any(p.attrs.get("padding", (0, 0, 0, 0))) and not p.attrs.get("count_include_pad", False):
        return list(range(1, int(kh) * int(kw) + 1))
    return [int(kh) * int(kw)]


def _pool_tie(s_in: float, s_out: float, counts: list[int]) -> str | None:
    """Why an average pool is left to onnxruntime, or None.

    onnxruntime averages dequantized values in float32 and rounds ``sum * s_in / (count * s_out)``
    half to even; the integer pool (host kernel and ALU alike) rounds half up. They differ
    wherever a window sum lands exactly on a half, which happens for some integer sum ``S``
    (``|S| <= 255 * count``) exactly when the reduced denominator ``q`` of the multiplier
    ``s_in / (s_out * count)`` is even and ``q / 2 <= 255 * count`` (then ``S = q / 2`` gives a
    half): e.g. equal scales and an even window (a 3x2 pool of a recogniser: 7% of its outputs).
    Float scales in general give denominators of 20 bits and more, and no ties.
    """
    from fractions import Fraction

    ratio = Fraction(float(np.float32(s_in))) / Fraction(float(np.float32(s_out)))
    for count in counts:
        q = (ratio / count).denominator
        if q % 2 == 0 and q // 2 <= 255 * count:
            return (f"the average of {count} pixels with scale ratio {float(ratio):.6g} falls on exact halves, "
                    "which onnxruntime rounds to even and the integer pool rounds up: left to onnxruntime")
    return None


def _hint() -> str:
    return QUANTIZE_HINT


def _live(graph):
    """``graph`` without the nodes no output depends on (left by converters that declined)."""
    live: set[str] = {v.name for v in graph.outputs}
    keep = []
    for node in reversed(graph.nodes):
        if node.name in live:
            keep.append(node)
            live.update(v.name for v in node.inputs)
    return graph.replace(nodes=reversed(keep))
