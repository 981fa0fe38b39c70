"""The tests' own integer oracle: plain NumPy / Python integers, written from the contract's
definition (not from ``vta.topi.qnn``)::

    y = clip((((acc >> p) * m) + 2**(s - 1)) >> s) + z_out, lo, hi)    # exact integers

(``fixed`` mode: ``p = 0``, 15-bit ``m``, exact product; ``fixed8``: 8-bit ``m``), a model of the
ALU's steps of the split product (:func:`alu_split_product`, every step checked to stay inside
int32), and a float32 model of onnxruntime's requantisation (:func:`ort_requant`),

with padded input pixels equal to the input zero point, a residual ``r`` contributing
``round((r - z_r) * m_r / 2**s_r)`` (same rounding), and max pooling ignoring padded pixels.
"""

from __future__ import annotations

import numpy as np


def round_shift(t, m, s, p=0):
    """``floor(((t >> p) * m + 2**(s-1)) / 2**s)`` element-wise with Python integers."""
    t = np.asarray(t, dtype=object)
    m = np.broadcast_to(np.asarray(m, dtype=object), t.shape)
    s = np.broadcast_to(np.asarray(s, dtype=object), t.shape)
    out = np.empty(t.shape, dtype=object)
    for idx in np.ndindex(t.shape):
        a = int(t[idx]) >> p
        si = int(s[idx])
        v = a * int(m[idx])
        out[idx] = (v + (1 << (si - 1))) >> si if si > 0 else v
    return out.astype(np.int64)


def _i32(v: int) -> int:
    assert -(1 << 31) <= v < (1 << 31), f"{v} leaves int32"
    return v


def _wrap32(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def alu_split_product(acc, m):
    """``(acc * m) >> 15`` the way the accelerator computes it, one ALU step at a time with
    Python integers::

        hi = ((acc >> 1) + 8192) >> 14;  lo = (acc << 17) >> 17   (shifts of a 32-bit register)
        t = hi * m + ((lo * m) >> 15)

    The left shift drops the bits above 32 like the ALU; every other step is asserted to fit
    int32."""
    acc = np.asarray(acc, dtype=object)
    m = np.broadcast_to(np.asarray(m, dtype=object), acc.shape)
    out = np.empty(acc.shape, dtype=object)
    for idx in np.ndindex(acc.shape):
        a, mm = _i32(int(acc[idx])), int(m[idx])
        hi = _i32(_i32(_i32(a >> 1) + 8192) >> 14)
        lo = _wrap32(a << 17) >> 17
        assert -(1 << 14) <= lo < 1 << 14
        lo = _i32(_i32(lo * mm) >> 15)
        out[idx] = _i32(_i32(hi * mm) + lo)
    return out.astype(np.int64)


def alu_multiplier_split(acc, m):
    """``(acc * m) >> 8`` the way the accelerator computes it for ``|acc| < 2**23``: ``m`` in two
    bytes ``mh = m >> 8``, ``ml = m & 255``, then ``acc * mh + ((acc * ml) >> 8)``, each step
    asserted to fit int32."""
    acc = np.asarray(acc, dtype=object)
    m = np.broadcast_to(np.asarray(m, dtype=object), acc.shape)
    out = np.empty(acc.shape, dtype=object)
    for idx in np.ndindex(acc.shape):
        a, mm = _i32(int(acc[idx])), int(m[idx])
        low = _i32(_i32(a * (mm & 255)) >> 8)
        out[idx] = _i32(_i32(a * (mm >> 8)) + low)
    return out.astype(np.int64)


def ort_requant(acc, scale, zero_point=0, lo=-128, hi=127):
    """onnxruntime's requantisation: ``clip(rint(float32(acc) * float32(M)) + z)``, ties to even."""
    y = np.rint(np.asarray(acc).astype(np.float32) * np.asarray(scale, dtype=np.float32))
    return np.clip(y.astype(np.float64) + zero_point, lo, hi).astype(np.int64)


def rounded_sum(operands, requants, z_out, clip):
    """A quantized add in the fixed mode: every int8 operand ``x`` (zero point already
    subtracted) becomes ``floor(x * m / 2**(s - F))`` with ``F = min(15, every s)`` fraction bits,
    and the sum is rounded once, half up: ``clip(floor((sum + 2**(F-1)) / 2**F) + z_out)``."""
    f = min([15] + [int(rq.shift[0]) for rq in requants])
    total = 0
    for x, rq in zip(operands, requants, strict=True):
        total = total + (np.asarray(x, dtype=np.int64) * int(rq.multiplier[0]) >> (int(rq.shift[0]) - f))
    y = (total + (1 << (f - 1))) >> f
    return np.clip(y + z_out, clip[0], clip[1]).astype(np.int8)


def conv_acc(x, w, bias, strides, padding, zero_point):
    """int64 ``conv(x padded with zero_point, w) + bias`` by explicit loops over the kernel."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    pt, pl, pb, pr = padding
    xp = np.full((n, c, h + pt + pb, wd + pl + pr), zero_point, dtype=np.int64)
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    sh, sw = strides
    oh, ow = (h + pt + pb - kh) // sh + 1, (wd + pl + pr - kw) // sw + 1
    acc = np.zeros((n, o, oh, ow), dtype=np.int64)
    wl = w.astype(np.int64)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]  # (n, c, kh, kw)
            acc[:, :, i, j] = np.tensordot(win, wl, axes=([1, 2, 3], [1, 2, 3]))
    return acc + np.asarray(bias, dtype=np.int64).reshape(1, -1, 1, 1)


def requant(acc, rq, channel_axis=1):
    """Requantise ``acc`` with the multipliers and shifts of ``rq`` (no zero point, no clip); the
    fixed mode clamps ``acc`` to +-32767 where the shift is at most 15 (multipliers >= 1/2)."""
    m, s = np.asarray(rq.multiplier), np.asarray(rq.shift)
    if m.size > 1:
        shape = [1] * acc.ndim
        shape[channel_axis] = m.size
        m, s = m.reshape(shape), s.reshape(shape)
    else:
        m, s = m[0], s[0]
    if rq.mode == "fixed":
        acc = np.where(np.asarray(s) <= 15, np.clip(acc, -32767, 32767), acc)
    return round_shift(acc, m, s, rq.pre_shift)


def finish(y, z_out, clip, residual=None, res_spec=None):
    if residual is not None:
        d = residual.astype(np.int64) - res_spec.zero_point
        y = y + round_shift(d, int(res_spec.requant.multiplier[0]), int(res_spec.requant.shift[0]))
    return np.clip(y + z_out, clip[0], clip[1]).astype(np.int8)


def maxpool(x, pool, strides, padding):
    n, c, h, w = x.shape
    pt, pl, pb, pr = padding
    oh, ow = (h + pt + pb - pool[0]) // strides[0] + 1, (w + pl + pr - pool[1]) // strides[1] + 1
    out = np.zeros((n, c, oh, ow), dtype=np.int8)
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * strides[0] - pt, j * strides[1] - pl
            ys, xs = max(y0, 0), max(x0, 0)
            ye, xe = min(y0 + pool[0], h), min(x0 + pool[1], w)
            out[:, :, i, j] = x[:, :, ys:ye, xs:xe].max(axis=(2, 3))
    return out
