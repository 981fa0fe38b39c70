"""ONNX operators of the QDQ form and float operators (QuantizeLinear, DequantizeLinear, Conv,
Gemm, MatMul, Add, Relu, Clip, pooling, shape operators, Softmax, ...).

Each converter takes ``(importer, node, name, input entries)`` and returns the output entry.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..graph import Value
from .onnx_importer import (_QRANGE, Const, Dequant, Importer, OpsetConverter, Pending, Tensor, _attrs, _hint, _per,
                            _scalar)

__all__: list[str] = []


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
        for size, k, s, d in zip(spatial, kernel, strides, dil, strict=True):
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
    if isinstance(x, Pending) and x.kind in ("conv", "dense", "add", "mul", "max", "min", "avgpool", "gap"):
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


class ReduceMean(OpsetConverter):
    """ReduceMean over the spatial axes (a global average pool): ``axes`` is an attribute up to
    opset 17 and an optional input from opset 18 (where no axes reduces all of them, unless
    ``noop_with_empty_axes``)."""

    @staticmethod
    def _impl_v13(im: Importer, node, name, ins):
        return _reduce_mean(im, node, name, ins[0], _attrs(node).get("axes"))

    @staticmethod
    def _impl_v18(im: Importer, node, name, ins):
        axes = im.const_data(ins[1], name, "axes").tolist() if len(ins) > 1 and ins[1] is not None else None
        if axes is None and _attrs(node).get("noop_with_empty_axes", 0):
            raise im.fail(name, "ReduceMean without axes and noop_with_empty_axes=1 is an identity; not converted")
        return _reduce_mean(im, node, name, ins[0], axes)


def _reduce_mean(im: Importer, node, name, x, axes):
    a = _attrs(node)
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
            if axes is not None:
                drop = {int(a) % len(shape) for a in axes}
            else:
                drop = {i for i, d in enumerate(shape) if d == 1}
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
