"""The tests' own integer oracle: plain NumPy / Python integers, written from the contract's
definition (not from ``vta.topi.qnn``)::

    y = clip((((acc >> p) * m) + 2**(s - 1)) >> s) + z_out, lo, hi)

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
    """Requantise ``acc`` with the multipliers and shifts of ``rq`` (no zero point, no clip)."""
    m, s = np.asarray(rq.multiplier), np.asarray(rq.shift)
    if m.size > 1:
        shape = [1] * acc.ndim
        shape[channel_axis] = m.size
        m, s = m.reshape(shape), s.reshape(shape)
    else:
        m, s = m[0], s[0]
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
