"""NumPy oracles of the graph tests, written independently of the code under test.

Only the choice of the fixed-point multiplier and shift for a real scale comes from
``Requant.from_scale`` (it is the definition the contract fixes); the arithmetic is done here
with Python integers.
"""

from __future__ import annotations

import numpy as np

from vta.topi.qnn import Requant


def conv_int(x, w, zx, stride, pad, bias=None):
    """sum((x - zx) * w) over each window (+ bias per output channel), padded pixels equal to zx
    (int64, NCHW/OIHW)."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    pt, pl, pb, pr = pad
    xp = np.full((n, c, h + pt + pb, wd + pl + pr), zx, dtype=np.int64)
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    xp -= zx
    oh = (h + pt + pb - kh) // stride + 1
    ow = (wd + pl + pr - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(win, w.astype(np.int64), axes=([1, 2, 3], [1, 2, 3]))
    if bias is not None:
        out += np.asarray(bias, dtype=np.int64).reshape(1, -1, 1, 1)
    return out


def fixed_point(acc, scale, axis=1, acc_bits=None, mode=None):
    """round(acc * scale) in the accelerator's fixed point: (acc * m + 2^(s-1)) >> s, exact with a
    15-bit m (``fixed``) or the up to 24-bit m of ``wide`` (``requant_mode="wide"``), or
    ((acc >> p) * m + 2^(s-1)) >> s wrapping to int32 (``fixed8``, ``pow2``); ``fixed`` by default
    (the graph's default ``requant_mode``).

    ``acc_bits`` bounds |acc| (default: the bits of the largest value present)."""
    acc = np.asarray(acc, dtype=np.int64)
    if mode is None:
        mode = "fixed"
    if acc_bits is None:
        acc_bits = max(int(np.abs(acc).max(initial=0)).bit_length(), 1)
    rq = Requant.from_scale(np.asarray(scale, dtype=np.float64).reshape(-1), acc_bits=acc_bits, mode=mode)
    out = np.empty(acc.shape, dtype=np.int64)
    it = np.nditer(acc, flags=["multi_index"])
    for v in it:
        ch = it.multi_index[axis] if rq.multiplier.size > 1 else 0
        m, s = int(rq.multiplier[ch]), int(rq.shift[ch])
        if rq.mode == "fixed":
            # the exact product of a 15-bit multiplier; a shift <= 15 (M >= 1/2) clamps |acc| to 2^15 - 1
            a = int(v) if s > 15 else max(-32767, min(32767, int(v)))
            t = a * m
        elif rq.mode == "wide":
            t = int(v) * m  # the exact product
        else:
            t = (int(v) >> rq.pre_shift) * m
            t = (t + (1 << 31)) % (1 << 32) - (1 << 31)  # int32 wrap of the product
        out[it.multi_index] = (t + (1 << (s - 1))) >> s
    return out


def requant(acc, scale, zp, lo, hi, axis=1, acc_bits=None, mode=None):
    return np.clip(fixed_point(acc, scale, axis, acc_bits, mode) + zp, lo, hi)


def worst_bits(w, bias):
    """Bits of the largest |accumulator| of a layer: sum |w| * 255 + |bias| per output channel."""
    w = np.asarray(w, dtype=np.int64)
    worst = (np.abs(w).reshape(w.shape[0], -1).sum(axis=1) * 255 + np.abs(np.asarray(bias, np.int64))).max()
    return int(worst).bit_length()


def rounded_sum(terms, zp, lo, hi):
    """The quantized sum of int8 operands, rounded once: ``terms`` is a list of ``(x - z_x,
    s_x / s_out)``; with 15-bit multipliers ``(m_i, s_i)`` each term is rescaled to ``F = min(15,
    s_i...)`` fraction bits (``floor(c * m_i / 2^(s_i - F))``), the terms summed and the sum
    rounded half up."""
    parts = []
    for c, scale in terms:
        rq = Requant.from_scale(np.asarray([scale], dtype=np.float64))
        parts.append((np.asarray(c, dtype=np.int64), int(rq.multiplier[0]), int(rq.shift[0])))
    frac = min([15] + [s for _, _, s in parts])
    total = sum((c * m) >> (s - frac) for c, m, s in parts)
    return np.clip(((total + (1 << (frac - 1))) >> frac) + zp, lo, hi)


def qlinear_add_f32(a, lhs, b, rhs, out, lo, hi):
    """onnxruntime's QLinearAdd (the kernel of a QDQ ``Add``) in float32, as its source reads:
    ``r_x = float32(s_x / s_out)``, the zero points folded into one float32 constant
    ``K = float32(z_out - fma(r_a, z_a, float32(r_b * z_b)))``, then ``fma(b, r_b, fma(a, r_a,
    K))`` on the raw 8-bit values, rounded half to even and clipped. ``lhs``, ``rhs``, ``out``:
    ``(scale, zero_point)``. A fused multiply-add rounds once: float64 holds ``x * r + c`` of an
    8-bit ``x``, a float32 ``r`` and a float32 ``c`` exactly, so it is evaluated there and
    rounded to float32."""
    f32 = np.float32
    (sa, za), (sb, zb), (sc, zc) = lhs, rhs, out
    ra, rb = f32(f32(sa) / f32(sc)), f32(f32(sb) / f32(sc))
    inner = f32(np.float64(ra) * za + np.float64(f32(rb * f32(zb))))
    k = np.float64(f32(f32(zc) - inner))
    t = (np.asarray(a, np.float64) * np.float64(ra) + k).astype(f32).astype(np.float64)
    v = (np.asarray(b, np.float64) * np.float64(rb) + t).astype(f32)
    return np.clip(np.rint(v).astype(np.int64), lo, hi)
