"""Host (CPU) kernels: a NumPy implementation of every operator the graph runs on the CPU.

Integer operators are exact: accumulation in int64 then wrapped to int32 as the accelerator's
accumulator, and every requantisation goes through :func:`vta.topi.qnn.requantize_np` (the
definition the accelerator implements), so a node gives the same bits on either device.
``run_kernel(name, attrs, inputs)`` runs one kernel; :data:`KERNELS` lists them by name (the
operator names of :mod:`vta.graph.infer`).

Conventions: ``nn.relu`` is ``max(x, 0)`` in the integer domain (as TVM); a quantized ReLU is a
``clip`` at the zero point. Layouts are NCHW (and the packed ``NCHW{b}n{c}c`` of
``layout_transform``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import GraphError, UnsupportedOperatorError
from .infer import parse_layout, pool_output_size
from .onnx_region import run_region

__all__ = ["KERNELS", "conv2d_nchw", "dtype_range", "evaluate", "layout_pack", "layout_unpack", "requantize",
           "run_kernel"]

Kernel = Callable[[Mapping[str, Any], Sequence[np.ndarray]], np.ndarray]


def dtype_range(dtype: str) -> tuple[int, int]:
    """The smallest and largest value of an integer dtype."""
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


def _wrap32(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.int64).astype(np.int32)


def _pair(v: Any) -> tuple[int, int]:
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    a, b = (int(x) for x in v)
    return a, b


def _pad4(v: Any) -> tuple[int, int, int, int]:
    if isinstance(v, (int, np.integer)):
        return (int(v),) * 4
    t = tuple(int(x) for x in v)
    return t if len(t) == 4 else (t[0], t[1], t[0], t[1])


def _vec(v: Any) -> np.ndarray:
    return np.asarray(v, dtype=np.float64).reshape(-1)


def requantize(acc: np.ndarray, scale: Any, out_zero_point: int, lo: int, hi: int, axis: int = 1,
               mode: str = "fixed", acc_bits: int | None = None) -> np.ndarray:
    """``clip(round(acc * scale) + out_zero_point, lo, hi)`` in the accelerator's fixed point.

    ``scale`` is a real multiplier (a scalar or one per channel along ``axis``), converted by
    ``vta.topi.qnn.Requant.from_scale`` in ``mode`` (``wide``: up to the 24 bits of the float32
    multiplier for a bounded accumulator, what the graph's ``requant_mode="wide"`` uses after a
    convolution or dense layer) with ``acc_bits`` a bound on
    ``|acc|`` (given: the layer's worst case, as the accelerator uses; else the bits of the
    largest ``|acc|`` present); a pre-shift (``fixed8``, ``pow2``) only when it exceeds 23 bits,
    so that ``acc * m`` never wraps. Returns int32.
    """
    from ..topi.qnn import Requant, requantize_np

    acc = _wrap32(acc)
    # a pre-shift only when the values at hand need it (|acc| >= 2**23), so smaller ones stay exact
    if acc_bits is None:
        acc_bits = int(np.abs(acc.astype(np.int64)).max(initial=0)).bit_length()
    rq = Requant.from_scale(_vec(scale), mode=mode, acc_bits=max(int(acc_bits), 1))
    return np.asarray(requantize_np(_wrap32(acc), rq, axis, int(out_zero_point), int(lo), int(hi)), dtype=np.int32)


def _out_range(attrs: Mapping[str, Any], fallback: str) -> tuple[str, int, int]:
    dtype = attrs.get("out_dtype") or fallback
    lo, hi = dtype_range(dtype)
    return dtype, lo, hi


# ----------------------------------------------------------------------------- quantisation
def _quantize(attrs, ins):
    (x,) = ins
    dtype, lo, hi = _out_range(attrs, "int8")
    scale, zp = _bcast(attrs["scale"], x, attrs.get("axis")), _bcast(attrs["zero_point"], x, attrs.get("axis"))
    q = np.rint(x.astype(np.float32) / scale.astype(np.float32)) + zp
    return np.clip(q, lo, hi).astype(dtype)


def _dequantize(attrs, ins):
    (x,) = ins
    scale, zp = _bcast(attrs["scale"], x, attrs.get("axis")), _bcast(attrs["zero_point"], x, attrs.get("axis"))
    return ((x.astype(np.int64) - zp).astype(np.float32) * scale.astype(np.float32)).astype(np.float32)


def _bcast(v: Any, x: np.ndarray, axis: int | None) -> np.ndarray:
    arr = np.asarray(v)
    if arr.size <= 1:
        return arr.reshape(())
    axis = 1 if axis is None else int(axis) % x.ndim
    shape = [1] * x.ndim
    shape[axis] = arr.size
    return arr.reshape(shape)


def _requantize(attrs, ins):
    (acc,) = ins
    dtype, lo, hi = _out_range(attrs, "int8")
    scale = _vec(attrs["input_scale"]) / _vec(attrs["output_scale"])
    acc = _wrap32(acc.astype(np.int64) - int(attrs.get("input_zero_point", 0)))
    # the accelerator's form of the same node (the graph's requant_mode, annotated with the bound)
    mode = attrs.get("requant_mode", "fixed")
    return requantize(acc, scale, attrs["output_zero_point"], lo, hi, attrs.get("axis", 1), mode=mode,
                      acc_bits=attrs.get("acc_bits")).astype(dtype)


def _qnn_add(attrs, ins):
    """The quantized sum as onnxruntime computes it: with a single-valued operand, the integer
    requantisation fitted to its outputs (:func:`_scalar_add`); of two 8-bit tensors, its outputs
    over every input pair looked up (:func:`_pair_add`; the accelerator takes only the sums on
    which its own form agrees with them on every pair). Without onnxruntime, and for other
    dtypes, the accelerator's form (:func:`vta.topi.qnn.add_np`): both operands rescaled to the
    output scale in fixed point and the sum rounded once."""
    from ..topi.qnn import Requant, add_np

    a, b = ins
    dtype, lo, hi = _out_range(attrs, str(a.dtype))
    exact = _scalar_add(attrs, a, b, dtype)
    if exact is None:
        exact = _pair_add(attrs, a, b, dtype)
    if exact is not None:
        return np.clip(exact, lo, hi).astype(dtype)
    out_scale = _vec(attrs["output_scale"])
    operands = [(x, int(attrs[f"{side}_zero_point"]), Requant.from_scale(_vec(attrs[f"{side}_scale"]) / out_scale))
                for x, side in ((a, "lhs"), (b, "rhs"))]
    return add_np(operands, int(attrs["output_zero_point"]), lo, hi).astype(dtype)


def _scalar_add(attrs, a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray | None:
    """A sum with one single-valued operand (``x + 3`` of a hard-swish) as onnxruntime computes it:
    the integer requantisation fitted to its outputs over every 8-bit input
    (:func:`vta.graph.ort_tables.scalar_add_fit`); None when it does not apply or no fit exists."""
    from .ort_tables import scalar_add_fit

    if a.size == 1 and b.size != 1:
        x, v, xs, vs, value_first = b, a, "rhs", "lhs", True
    elif b.size == 1:
        x, v, xs, vs, value_first = a, b, "lhs", "rhs", False
    else:
        return None
    if str(x.dtype) not in ("uint8", "int8") or str(v.dtype) != str(x.dtype) or dtype not in ("uint8", "int8"):
        return None
    fit = scalar_add_fit(str(x.dtype), float(_vec(attrs[f"{xs}_scale"])[0]), int(attrs[f"{xs}_zero_point"]),
                         int(np.asarray(v).reshape(-1)[0]), float(_vec(attrs[f"{vs}_scale"])[0]),
                         int(attrs[f"{vs}_zero_point"]), float(_vec(attrs["output_scale"])[0]),
                         int(attrs["output_zero_point"]), dtype, value_first)
    if fit is None:
        return None
    lo, hi = dtype_range(dtype)
    return np.broadcast_to(fit.apply(x, lo, hi), np.broadcast_shapes(a.shape, b.shape))


def _pair_add(attrs, a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray | None:
    """A sum of two 8-bit tensors as onnxruntime computes it: each output looked up in its table
    over every input pair (:func:`vta.graph.ort_tables.pair_add_table`); None without onnxruntime,
    for a single-valued operand, or for another dtype."""
    from .ort_tables import available, pair_add_table

    dts = (str(a.dtype), str(b.dtype), dtype)
    if a.size == 1 or b.size == 1 or not available() or any(dt not in ("uint8", "int8") for dt in dts):
        return None
    sides = [(dt, float(_vec(attrs[f"{side}_scale"])[0]), int(attrs[f"{side}_zero_point"]))
             for dt, side in zip(dts[:2], ("lhs", "rhs"), strict=True)]
    table = pair_add_table(*sides, (dtype, float(_vec(attrs["output_scale"])[0]), int(attrs["output_zero_point"])))
    ia, ib = (x.astype(np.int64) - int(np.iinfo(x.dtype).min) for x in np.broadcast_arrays(a, b))
    return table[ia, ib]


def _qnn_mul(attrs, ins):
    """The quantized product as the accelerator computes it (:func:`vta.topi.qnn_mul.mul_np`):
    the exact centred product requantised once in fixed point."""
    from ..topi.qnn_mul import mul_np, mul_requant

    a, b = ins
    dtype, lo, hi = _out_range(attrs, str(a.dtype))
    scale = float(_vec(attrs["lhs_scale"])[0] * _vec(attrs["rhs_scale"])[0] / _vec(attrs["output_scale"])[0])
    return mul_np(a, int(attrs["lhs_zero_point"]), b, int(attrs["rhs_zero_point"]),
                  mul_requant(scale, attrs.get("requant_mode", "fixed")),
                  int(attrs["output_zero_point"]), lo, hi).astype(dtype)


def _qnn_minmax(op: str) -> Kernel:
    def kernel(attrs, ins):
        """The quantized maximum/minimum as the accelerator computes it
        (:func:`vta.topi.qnn_minmax.minmax_np`): each operand requantised to the output scale."""
        from ..topi.qnn_minmax import minmax_np, minmax_requant

        a, b = ins
        dtype, lo, hi = _out_range(attrs, str(a.dtype))
        s_out = float(_vec(attrs["output_scale"])[0])
        rq = [minmax_requant(float(_vec(attrs[f"{side}_scale"])[0]) / s_out) for side in ("lhs", "rhs")]
        return minmax_np(op, a, int(attrs["lhs_zero_point"]), rq[0], b, int(attrs["rhs_zero_point"]), rq[1],
                         int(attrs["output_zero_point"]), lo, hi).astype(dtype)
    return kernel


def _offset(delta: int, dtype: str) -> Kernel:
    def kernel(attrs, ins):
        (x,) = ins
        return (x.astype(np.int16) + delta).astype(dtype)
    return kernel


# ----------------------------------------------------------------------------- convolution and dense
def conv2d_nchw(x: np.ndarray, w: np.ndarray, strides: Any, padding: Any, dilation: Any = (1, 1),
                groups: int = 1, pad_value: Any = 0) -> np.ndarray:
    """Grouped, dilated 2-D convolution (exact int64 sums for integers, float64 for floats)."""
    sh, sw = _pair(strides)
    dh, dw = _pair(dilation)
    pt, pl, pb, pr = _pad4(padding)
    integer = np.issubdtype(x.dtype, np.integer)
    # Integer sums below 2**53 are exact in float64, where the products go through BLAS.
    bound = (int(np.abs(x).max(initial=0)) + abs(int(pad_value))) * int(np.abs(w).max(initial=0)) * w[0].size
    calc_t = np.float64 if (not integer or bound < 2 ** 53) else np.int64
    xp = np.pad(x.astype(calc_t), ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=pad_value)
    k = w.astype(calc_t)
    acc_t = calc_t
    n, c, h, wd = xp.shape
    o, ci, kh, kw = k.shape
    oh = (h - (kh - 1) * dh - 1) // sh + 1
    ow = (wd - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), dtype=acc_t)
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * ci:(g + 1) * ci]
        # im2col: (N, OH, OW, CI*KH*KW) patches times the (O, CI*KH*KW) kernel, one matrix product
        taps = [xs[:, :, dy * dh:dy * dh + sh * (oh - 1) + 1:sh, dx * dw:dx * dw + sw * (ow - 1) + 1:sw]
                for dy in range(kh) for dx in range(kw)]
        cols = np.stack(taps, axis=-1).transpose(0, 2, 3, 1, 4).reshape(n * oh * ow, ci * kh * kw)
        ks = k[g * og:(g + 1) * og].reshape(og, ci * kh * kw)
        out[:, g * og:(g + 1) * og] = (cols @ ks.T).reshape(n, oh, ow, og).transpose(0, 3, 1, 2)
    if integer:
        return np.rint(out).astype(np.int64) if calc_t is np.float64 else out
    return out


def _qnn_conv2d(attrs, ins):
    x, w = ins
    zx, zw = int(attrs["input_zero_point"]), int(attrs["kernel_zero_point"])
    acc = conv2d_nchw(x.astype(np.int64) - zx, w.astype(np.int64) - zw, attrs["strides"], attrs["padding"],
                      attrs["dilation"], int(attrs["groups"]))
    return _wrap32(acc)


def _conv2d(attrs, ins):
    x, w = ins
    out = conv2d_nchw(x, w, attrs["strides"], attrs["padding"], attrs["dilation"], int(attrs["groups"]))
    return out.astype(x.dtype) if not np.issubdtype(x.dtype, np.integer) else _wrap32(out)


def _int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of int64 matrices, exact (through float64 BLAS while the sums stay below 2**53)."""
    bound = int(np.abs(a).max(initial=0)) * int(np.abs(b).max(initial=0)) * max(a.shape[-1], 1)
    if bound < 2 ** 53:
        return np.rint(a.astype(np.float64) @ b.astype(np.float64)).astype(np.int64)
    return a @ b


def _qnn_dense(attrs, ins):
    x, w = ins
    zx, zw = int(attrs["input_zero_point"]), int(attrs["kernel_zero_point"])
    return _wrap32(_int_matmul(x.astype(np.int64) - zx, (w.astype(np.int64) - zw).T))


def _dense(attrs, ins):
    x, w = ins
    if np.issubdtype(x.dtype, np.integer):
        return _wrap32(_int_matmul(x.astype(np.int64), w.astype(np.int64).T))
    return (x.astype(np.float64) @ w.astype(np.float64).T).astype(x.dtype)


def _bias_add(attrs, ins):
    acc, bias = ins
    axis = int(attrs.get("axis", 1)) % acc.ndim
    shape = [1] * acc.ndim
    shape[axis] = bias.shape[0]
    total = acc.astype(np.int64 if np.issubdtype(acc.dtype, np.integer) else np.float64) + bias.reshape(shape)
    return _wrap32(total) if acc.dtype == np.int32 else total.astype(acc.dtype)


# ----------------------------------------------------------------------------- element-wise
def _relu(attrs, ins):
    (x,) = ins
    return np.maximum(x, np.zeros((), dtype=x.dtype))


def _clip(attrs, ins):
    (x,) = ins
    return np.clip(x, attrs["a_min"], attrs["a_max"]).astype(x.dtype)


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    def kernel(attrs, ins):
        a, b = ins
        if np.issubdtype(a.dtype, np.integer):
            out = fn(a.astype(np.int64), b.astype(np.int64))
            return _wrap32(out).astype(a.dtype) if a.dtype != np.int64 else out
        return fn(a, b).astype(a.dtype)
    return kernel


def _cast(attrs, ins):
    (x,) = ins
    return x.astype(attrs["dtype"])


# ----------------------------------------------------------------------------- pooling
def _windows(x: np.ndarray, attrs, fill: Any):
    """Yield (window slice as array of shape (N, C, OH, OW)) for every kernel offset, plus a mask of valid positions."""
    kh, kw = _pair(attrs["pool_size"])
    sh, sw = _pair(attrs["strides"])
    pt, pl, pb, pr = _pad4(attrs["padding"])
    ceil = bool(attrs.get("ceil_mode", False))
    n, c, h, w = x.shape
    oh = pool_output_size(h, kh, sh, pt, pb, ceil)
    ow = pool_output_size(w, kw, sw, pl, pr, ceil)
    # pad generously so ceil-mode windows stay in range
    extra_h = max(0, (oh - 1) * sh + kh - (h + pt + pb))
    extra_w = max(0, (ow - 1) * sw + kw - (w + pl + pr))
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb + extra_h), (pl, pr + extra_w)), constant_values=fill)
    valid = np.pad(np.ones((h, w), dtype=np.int64), ((pt, pb + extra_h), (pl, pr + extra_w)))
    inside_pad = np.pad(np.ones((h + pt + pb, w + pl + pr), dtype=np.int64), ((0, extra_h), (0, extra_w)))
    for dy in range(kh):
        for dx in range(kw):
            sl = (slice(dy, dy + sh * (oh - 1) + 1, sh), slice(dx, dx + sw * (ow - 1) + 1, sw))
            yield xp[:, :, sl[0], sl[1]], valid[sl], inside_pad[sl]


def _max_pool(attrs, ins):
    (x,) = ins
    fill = dtype_range(str(x.dtype))[0] if np.issubdtype(x.dtype, np.integer) else -np.inf
    out = None
    for win, _, _ in _windows(x, attrs, fill):
        out = win.copy() if out is None else np.maximum(out, win)
    return out.astype(x.dtype)


def _upsampling(attrs, ins):
    (x,) = ins
    return np.repeat(np.repeat(x, int(attrs["scale_h"]), axis=2), int(attrs["scale_w"]), axis=3)


def _pool_sums(x: np.ndarray, attrs) -> tuple[np.ndarray, np.ndarray]:
    """Window sums (int64 or float64) and the element count of each window (per position)."""
    acc_t = np.int64 if np.issubdtype(x.dtype, np.integer) else np.float64
    total, count_valid, count_pad = None, None, None
    for win, valid, inside in _windows(x.astype(acc_t), attrs, 0):
        total = win.copy() if total is None else total + win
        count_valid = valid.copy() if count_valid is None else count_valid + valid
        count_pad = inside.copy() if count_pad is None else count_pad + inside
    count = count_pad if attrs.get("count_include_pad", False) else count_valid
    return total, count


def _avg_pool(attrs, ins):
    (x,) = ins
    total, count = _pool_sums(x, attrs)
    if np.issubdtype(x.dtype, np.integer):
        # round half away from zero, as integer division with rounding
        q = np.sign(total) * ((np.abs(total) * 2 + count) // (2 * count))
        return q.astype(x.dtype)
    return (total / count).astype(x.dtype)


def _q_pool_requant(total: np.ndarray, count: np.ndarray, attrs, in_dtype: str) -> np.ndarray:
    """``clip(rq((total - count*z_in), s_in / (s_out*count)) + z_out)`` per distinct window count."""
    dtype, lo, hi = _out_range(attrs, in_dtype)
    s_in, s_out = _vec(attrs["input_scale"]), _vec(attrs["output_scale"])
    if s_in.size != 1 or s_out.size != 1:
        raise GraphError("quantized average pooling takes per-tensor scales only")
    z_in = int(attrs["input_zero_point"])
    counts = np.broadcast_to(count, total.shape)
    centred = total - counts * z_in
    out = np.empty(total.shape, dtype=np.int32)
    for k in np.unique(counts):
        sel = counts == k
        out[sel] = requantize(centred[sel], s_in / (s_out * k), attrs["output_zero_point"], lo, hi, axis=0)
    return out.astype(dtype)


def _qnn_avg_pool(attrs, ins):
    (x,) = ins
    total, count = _pool_sums(x, attrs)
    return _q_pool_requant(total, count, attrs, str(x.dtype))


def _global_avg_pool(attrs, ins):
    (x,) = ins
    h, w = x.shape[2:]
    return _avg_pool({"pool_size": (h, w), "strides": (1, 1), "padding": (0, 0, 0, 0)}, ins)


def _qnn_global_avg_pool(attrs, ins):
    (x,) = ins
    h, w = x.shape[2:]
    total = x.astype(np.int64).sum(axis=(2, 3), keepdims=True)
    return _q_pool_requant(total, np.asarray(h * w), attrs, str(x.dtype))


# ----------------------------------------------------------------------------- shapes
def _reshape(attrs, ins):
    (x,) = ins
    new = [x.shape[i] if int(d) == 0 else int(d) for i, d in enumerate(attrs["newshape"])]
    return x.reshape(new)


def _batch_flatten(attrs, ins):
    (x,) = ins
    return x.reshape(x.shape[0], -1)


def _transpose(attrs, ins):
    (x,) = ins
    axes = attrs.get("axes")
    return np.ascontiguousarray(np.transpose(x, None if axes is None else [int(a) for a in axes]))


def _concatenate(attrs, ins):
    return np.concatenate(list(ins), axis=int(attrs["axis"]))


def _softmax(attrs, ins):
    (x,) = ins
    axis = int(attrs.get("axis", -1))
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(x.dtype)


def layout_pack(x: np.ndarray, layout: str) -> np.ndarray:
    """NCHW (or NC) -> ``layout`` (``NCHW{b}n{c}c``/``NC{b}n{c}c``), batch and channels zero-padded
    to the blocks."""
    base, b, c = parse_layout(layout)
    n, ch = x.shape[:2]
    nb, cb = -(-n // b), -(-ch // c)
    xp = np.pad(x, [(0, nb * b - n), (0, cb * c - ch)] + [(0, 0)] * (x.ndim - 2))
    rest = x.shape[2:]
    blocked = xp.reshape(nb, b, cb, c, *rest)
    order = (0, 2, *range(4, 4 + len(rest)), 1, 3)
    return np.ascontiguousarray(blocked.transpose(order))


def layout_unpack(x: np.ndarray, layout: str, channels: int, batch: int | None = None) -> np.ndarray:
    """``layout`` -> NCHW (or NC), cropping the channels to ``channels`` (and the batch to ``batch``)."""
    base, b, c = parse_layout(layout)
    nb, cb = x.shape[:2]
    rest = x.shape[2:-2]
    k = len(rest)
    order = (0, 2 + k, 1, 3 + k, *range(2, 2 + k))
    plain = x.transpose(order).reshape(nb * b, cb * c, *rest)
    return np.ascontiguousarray(plain[:batch, :channels])


def _layout_transform(attrs, ins):
    (x,) = ins
    src, dst = attrs["src_layout"], attrs["dst_layout"]
    if parse_layout(src)[1] == 0:
        return layout_pack(x, dst)
    batch = attrs.get("batch")
    return layout_unpack(x, src, int(attrs["channels"]), None if batch is None else int(batch))


def _fold_width(attrs, ins):
    """``out[n, c*KW + dx, h, j] = xpad[n, c, h, j*sw + dx]``, ``xpad`` padded on all sides with the
    zero point: the input of a convolution whose kernel columns are folded into its channels."""
    (x,) = ins
    kw, sw = int(attrs["kernel_w"]), int(attrs["stride_w"])
    pt, pl, pb, pr = _pad4(attrs["padding"])
    n, c, h, w = x.shape
    ow = (w + pl + pr - kw) // sw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=int(attrs["zero_point"]))
    out = np.empty((n, c, kw, h + pt + pb, ow), dtype=x.dtype)
    for dx in range(kw):
        out[:, :, dx] = xp[:, :, :, dx:dx + sw * (ow - 1) + 1:sw]
    return out.reshape(n, c * kw, h + pt + pb, ow)


#: The host kernels by operator name.
KERNELS: dict[str, Kernel] = {
    "qnn.quantize": _quantize,
    "qnn.dequantize": _dequantize,
    "qnn.conv2d": _qnn_conv2d,
    "qnn.dense": _qnn_dense,
    "nn.bias_add": _bias_add,
    "qnn.requantize": _requantize,
    "qnn.add": _qnn_add,
    "qnn.mul": _qnn_mul,
    "qnn.maximum": _qnn_minmax("max"),
    "qnn.minimum": _qnn_minmax("min"),
    "clip": _clip,
    "nn.relu": _relu,
    "nn.max_pool2d": _max_pool,
    "nn.upsampling": _upsampling,
    "nn.avg_pool2d": _avg_pool,
    "qnn.avg_pool2d": _qnn_avg_pool,
    "nn.global_avg_pool2d": _global_avg_pool,
    "qnn.global_avg_pool2d": _qnn_global_avg_pool,
    "reshape": _reshape,
    "nn.batch_flatten": _batch_flatten,
    "transpose": _transpose,
    "concatenate": _concatenate,
    "nn.softmax": _softmax,
    "cast": _cast,
    "layout_transform": _layout_transform,
    "nn.conv2d": _conv2d,
    "nn.dense": _dense,
    "add": _binary(np.add),
    "subtract": _binary(np.subtract),
    "multiply": _binary(np.multiply),
    "maximum": _binary(np.maximum),
    "minimum": _binary(np.minimum),
    "vta.to_int8": _offset(-128, "int8"),
    "vta.to_uint8": _offset(128, "uint8"),
    "vta.fold_width": _fold_width,
    "onnx.region": run_region,
}


def run_kernel(name: str, attrs: Mapping[str, Any], inputs: Sequence[np.ndarray],
               run_token: Any = None) -> np.ndarray:
    """Run the host kernel ``name`` on NumPy ``inputs``.

    Parameters
    ----------
    name : str
        A key of :data:`KERNELS` (an operator name).
    attrs : mapping
        The node's attributes (as in the graph, or decoded from the ``host_attrs`` JSON).
    inputs : sequence of ndarray
    run_token : hashable, optional
        The graph run this call belongs to (the executor's token, new for every run), passed to
        ``onnx.region`` (:func:`~vta.graph.onnx_region.run_region`), whose output nodes share
        one onnxruntime run per graph run.

    Returns
    -------
    ndarray

    Raises
    ------
    UnsupportedOperatorError
        If there is no host kernel ``name``.
    GraphError
        If a required attribute is missing or the inputs do not fit the kernel.
    """
    kernel = KERNELS.get(name)
    if kernel is None:
        raise UnsupportedOperatorError(
            f"no host kernel {name!r}; host kernels: {', '.join(sorted(KERNELS))}")
    try:
        if kernel is run_region:
            return run_region(attrs, [np.asarray(a) for a in inputs], run_token)
        return kernel(attrs, [np.asarray(a) for a in inputs])
    except KeyError as exc:
        raise GraphError(f"host kernel {name!r}: missing attribute {exc.args[0]!r} in {dict(attrs)!r}") from exc
    except ValueError as exc:
        shapes = [f"{a.dtype}{list(a.shape)}" for a in map(np.asarray, inputs)]
        raise GraphError(f"host kernel {name!r} on inputs {shapes}: {exc}") from exc


def evaluate(graph: Any, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Run every node of ``graph`` with the host kernels (a reference executor, no accelerator).

    Parameters
    ----------
    graph : vta.graph.Graph
        A graph of operators with host kernels (before fusion).
    inputs : mapping of str to ndarray
        A value for every graph input.

    Returns
    -------
    list of ndarray
        The graph's outputs.

    Raises
    ------
    GraphError
        If an input is missing.
    UnsupportedOperatorError
        If a node has no host kernel (fused ``vta.*`` operators have none).
    """
    values: dict[str, np.ndarray] = dict(graph.params)
    for v in graph.inputs:
        if v.name not in inputs:
            raise GraphError(f"evaluate: no value for the graph input {v.name!r}")
        values[v.name] = np.asarray(inputs[v.name])
    token = object()   # this evaluation: a region's output nodes share one onnxruntime run
    for node in graph.nodes:
        values[node.name] = run_kernel(node.op, node.attrs, [values[v.name] for v in node.inputs], run_token=token)
    return [values[v.name] for v in graph.outputs]
