"""``topi.nn``: padding, dilation and the plain NCHW convolutions and dense layer.

The convolutions here are the host (CPU) operators of upstream's ``arm_cpu`` benchmark
variants: plain compute definitions whose default schedule (one loop nest per stage) is built
for ``llvm``/``c`` by :func:`vta.build.build_host`. The accelerator's packed operators are in
:mod:`vta.top`.
"""

from __future__ import annotations

from typing import Any

from ... import te as _te
from ...tir import nodes as _n
from ...tir.op import floordiv, floormod, if_then_else
from ...topi.pad import pad
from .._missing import missing
from .utils import get_const_int, get_const_tuple

__all__ = ["pad", "dilate", "get_pad_tuple", "conv2d_nchw", "group_conv2d_nchw", "conv2d_transpose_nchw", "dense"]


def _pair(v: Any, what: str) -> tuple[int, int]:
    if isinstance(v, int) and not isinstance(v, bool):
        return v, v
    try:
        a, b = (int(x) for x in v)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be an int or a pair of ints, got {v!r}") from exc
    return a, b


def get_pad_tuple(padding: Any, kernel: Any) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` of a padding given as an int, ``(pad_h, pad_w)``, the four
    sides, or the strings ``"VALID"`` / ``"SAME"`` (which need the kernel's ``(kh, kw)``).

    Raises
    ------
    ValueError
        If the padding has another form or a negative side.
    """
    if isinstance(padding, str):
        kh, kw = _pair(kernel, "kernel")
        if padding == "VALID":
            return 0, 0, 0, 0
        if padding == "SAME":
            return (kh - 1) // 2, (kw - 1) // 2, kh - 1 - (kh - 1) // 2, kw - 1 - (kw - 1) // 2
        raise ValueError(f"padding string must be 'VALID' or 'SAME', got {padding!r}")
    if isinstance(padding, (tuple, list)) and len(padding) == 4:
        sides = tuple(get_const_int(p) for p in padding)
    else:
        ph, pw = _pair(padding, "padding")
        sides = (ph, pw, ph, pw)
    if min(sides) < 0:
        raise ValueError(f"padding must be non-negative, got {padding!r}")
    return sides  # type: ignore[return-value]


def dilate(data: _te.Tensor, strides: Any, dilation_value: Any = 0, name: str = "DilatedInput") -> _te.Tensor:
    """``data`` with ``strides[i] - 1`` elements of ``dilation_value`` between neighbours along
    dimension ``i`` (the input of a transposed convolution).

    Raises
    ------
    ValueError
        If ``strides`` does not have one positive entry per dimension.
    """
    shape = get_const_tuple(data.shape)
    strides = [int(s) for s in strides]
    if len(strides) != len(shape) or min(strides) < 1:
        raise ValueError(f"dilate: need one positive stride per dimension of {shape!r}, got {strides!r}")
    out_shape = tuple((e - 1) * s + 1 for e, s in zip(shape, strides, strict=True))
    fill = _n.const(dilation_value, data.dtype)

    def body(*idx: Any) -> Any:
        src, conds = [], []
        for i, s in zip(idx, strides, strict=True):
            if s == 1:
                src.append(i)
            else:
                src.append(floordiv(i, s))
                conds.append(floormod(i, s) == 0)
        if not conds:
            return data(*src)
        cond = conds[0]
        for c in conds[1:]:
            cond = _n.And(cond, c)
        return if_then_else(cond, data(*src), fill)

    return _te.compute(out_shape, body, name=name, tag="injective,dilate")


def _padded(data: _te.Tensor, sides: tuple[int, int, int, int], name: str) -> _te.Tensor:
    top, left, bottom, right = sides
    if not any(sides):
        return data
    return pad(data, [0, 0, top, left], [0, 0, bottom, right], name=name)


def group_conv2d_nchw(data: _te.Tensor, kernel: _te.Tensor, stride: Any, padding: Any, dilation: Any, groups: int,
                      out_dtype: str | None = None) -> _te.Tensor:
    """Grouped 2-D convolution, NCHW data and OIHW kernel of ``I = C / groups`` input channels.

    ``out[n, f, y, x] = sum(pad(data)[n, g*I + c, y*sh + ky*dh, x*sw + kx*dw] * kernel[f, c, ky, kx])``
    with ``g = f // (F / groups)``, accumulated in ``out_dtype`` (the data's dtype by default).

    Raises
    ------
    ValueError
        If the operands are not 4-D, the channels do not split into ``groups``, or the padded
        (dilated) input is smaller than the kernel.
    """
    ds, ks = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(ds) != 4 or len(ks) != 4:
        raise ValueError(f"group_conv2d_nchw: expected 4-D NCHW data and OIHW kernel, got {ds!r} and {ks!r}")
    groups = int(groups)
    if groups < 1 or ds[1] % groups or ks[0] % groups or ds[1] // groups != ks[1]:
        raise ValueError(f"group_conv2d_nchw: data {ds!r} and kernel {ks!r} do not split into {groups} groups")
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    sides = get_pad_tuple(padding, ks[2:])
    ekh, ekw = (ks[2] - 1) * dh + 1, (ks[3] - 1) * dw + 1
    ph, pw = ds[2] + sides[0] + sides[2], ds[3] + sides[1] + sides[3]
    if ph < ekh or pw < ekw or min(sh, sw, dh, dw) < 1:
        raise ValueError(f"group_conv2d_nchw: padded input {(ph, pw)!r} smaller than the kernel {(ekh, ekw)!r}, "
                         f"or a stride/dilation below 1")
    out_dtype = out_dtype or data.dtype
    oh, ow = (ph - ekh) // sh + 1, (pw - ekw) // sw + 1
    data_pad = _padded(data, sides, "pad_temp")
    per_in, per_out = ks[1], ks[0] // groups
    rc = _te.reduce_axis((0, per_in), name="rc")
    ry = _te.reduce_axis((0, ks[2]), name="ry")
    rx = _te.reduce_axis((0, ks[3]), name="rx")
    return _te.compute(
        (ds[0], ks[0], oh, ow),
        lambda nn, ff, yy, xx: _te.sum(
            data_pad[nn, floordiv(ff, per_out) * per_in + rc.var, yy * sh + ry.var * dh, xx * sw + rx.var * dw]
            .astype(out_dtype) * kernel[ff, rc, ry, rx].astype(out_dtype),
            axis=[rc, ry, rx]),
        name="group_conv2d_nchw", tag="group_conv2d_nchw")


def conv2d_nchw(data: _te.Tensor, kernel: _te.Tensor, stride: Any, padding: Any, dilation: Any = 1,
                out_dtype: str | None = None) -> _te.Tensor:
    """2-D convolution, NCHW data and OIHW kernel (:func:`group_conv2d_nchw` with one group).

    Raises
    ------
    ValueError
        As :func:`group_conv2d_nchw`.
    """
    out = group_conv2d_nchw(data, kernel, stride, padding, dilation, 1, out_dtype)
    return out


def conv2d_transpose_nchw(data: _te.Tensor, kernel: _te.Tensor, strides: Any, padding: Any, out_dtype: str,
                          output_padding: Any = (0, 0)) -> _te.Tensor:
    """Transposed 2-D convolution: NCHW data, IOHW kernel ``(C_in, C_out, KH, KW)``.

    The input is dilated by the strides, padded by ``K - 1 - pad`` on each side (plus the output
    padding at the bottom and right), and convolved with the spatially flipped kernel:
    ``out = ((H - 1) * sh - top - bottom + KH + oph)`` rows.

    Raises
    ------
    ValueError
        If the operands are not 4-D, disagree on the input channels, a padding exceeds the kernel,
        or the output padding is not smaller than the stride.
    """
    ds, ks = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(ds) != 4 or len(ks) != 4 or ds[1] != ks[0]:
        raise ValueError(f"conv2d_transpose_nchw: expected NCHW data and IOHW kernel with equal input channels, "
                         f"got {ds!r} and {ks!r}")
    sh, sw = _pair(strides, "strides")
    oph, opw = _pair(output_padding, "output_padding")
    top, left, bottom, right = get_pad_tuple(padding, ks[2:])
    kh, kw = ks[2], ks[3]
    if max(top, bottom) > kh - 1 or max(left, right) > kw - 1 or not (0 <= oph < sh and 0 <= opw < sw):
        raise ValueError(f"conv2d_transpose_nchw: padding {padding!r} must not exceed the kernel {(kh, kw)!r} less one "
                         f"and output_padding {(oph, opw)!r} must be below the strides {(sh, sw)!r}")
    dilated = dilate(data, [1, 1, sh, sw], name="data_dilate") if (sh, sw) != (1, 1) else data
    data_pad = _padded(dilated, (kh - 1 - top, kw - 1 - left, kh - 1 - bottom + oph, kw - 1 - right + opw), "data_pad")
    oh = (ds[2] - 1) * sh - top - bottom + kh + oph
    ow = (ds[3] - 1) * sw - left - right + kw + opw
    dc = _te.reduce_axis((0, ds[1]), name="dc")
    dh = _te.reduce_axis((0, kh), name="dh")
    dw = _te.reduce_axis((0, kw), name="dw")
    return _te.compute(
        (ds[0], ks[1], oh, ow),
        lambda b, c, h, w: _te.sum(
            data_pad[b, dc, h + dh.var, w + dw.var].astype(out_dtype)
            * kernel[dc, c, kh - 1 - dh.var, kw - 1 - dw.var].astype(out_dtype),
            axis=[dc, dh, dw]),
        name="conv2d_transpose_nchw", tag="conv2d_transpose_nchw")


def dense(data: _te.Tensor, weight: _te.Tensor, bias: _te.Tensor | None = None,
          out_dtype: str | None = None) -> _te.Tensor:
    """``out[i, j] = sum(data[i, k] * weight[j, k]) (+ bias[j])`` in ``out_dtype``.

    Raises
    ------
    ValueError
        If the operands are not 2-D, disagree on the input features, or the bias is not 1-D of
        the output features.
    """
    ds, ws = get_const_tuple(data.shape), get_const_tuple(weight.shape)
    if len(ds) != 2 or len(ws) != 2 or ds[1] != ws[1]:
        raise ValueError(f"dense: expected 2-D data and weight with equal input features, got {ds!r} and {ws!r}")
    if bias is not None and get_const_tuple(bias.shape) != (ws[0],):
        raise ValueError(f"dense: bias must have shape {(ws[0],)!r}, got {get_const_tuple(bias.shape)!r}")
    out_dtype = out_dtype or data.dtype
    k = _te.reduce_axis((0, ds[1]), name="k")
    res = _te.compute((ds[0], ws[0]), lambda i, j: _te.sum(
        data[i, k].astype(out_dtype) * weight[j, k].astype(out_dtype), axis=k), name="T_dense", tag="dense")
    if bias is None:
        return res
    return _te.compute((ds[0], ws[0]), lambda i, j: res[i, j] + bias[j].astype(out_dtype), name="T_add",
                       tag="broadcast")


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
