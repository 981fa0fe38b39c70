"""ONNX operators of the QOperator form: QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger
and onnxruntime's com.microsoft QLinearAdd, QLinearAveragePool, QLinearGlobalAveragePool,
QLinearConcat and QGemm.
"""

from __future__ import annotations

import numpy as np

from .onnx_importer import Const, Dequant, Importer, Pending, Tensor, _attrs
from .onnx_qdq import _conv_attrs, _pool_attrs, _shape_of

__all__: list[str] = []


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
