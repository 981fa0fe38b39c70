"""NumPy oracles of the upstream-style tests: direct loops, written for clarity, int64 inside."""

from __future__ import annotations

import numpy as np

__all__ = ["conv2d", "conv2d_transpose", "epilogue"]


def conv2d(a: np.ndarray, w: np.ndarray, stride, pad, groups: int = 1, dilation: int = 1) -> np.ndarray:
    """Grouped, dilated convolution of NCHW ``a`` with OIHW ``w``; ``pad`` is (top, left, bottom, right); int32."""
    if dilation > 1:  # the dilated kernel: zeros between the taps
        f, cg, kh, kw = w.shape
        wd = np.zeros((f, cg, (kh - 1) * dilation + 1, (kw - 1) * dilation + 1), w.dtype)
        wd[:, :, ::dilation, ::dilation] = w
        w = wd
    f, cg, kh, kw = w.shape
    ap = np.pad(a.astype(np.int64), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh = (ap.shape[2] - kh) // stride[0] + 1
    ow = (ap.shape[3] - kw) // stride[1] + 1
    out = np.zeros((a.shape[0], f, oh, ow), np.int64)
    fg = f // groups
    for o in range(f):
        g = o // fg
        for y in range(oh):
            for x in range(ow):
                win = ap[:, g * cg:(g + 1) * cg, y * stride[0]:y * stride[0] + kh, x * stride[1]:x * stride[1] + kw]
                out[:, o, y, x] = (win * w[o].astype(np.int64)).sum(axis=(1, 2, 3))
    return out.astype(np.int32)


def conv2d_transpose(a: np.ndarray, w: np.ndarray, stride, pad, out_pad=(0, 0)) -> np.ndarray:
    """Transposed convolution by its scatter definition (NCHW data, IOHW kernel, symmetric ``pad``); int32."""
    n, c, h, wd = a.shape
    _, f, kh, kw = w.shape
    oh = (h - 1) * stride[0] - 2 * pad[0] + kh + out_pad[0]
    ow = (wd - 1) * stride[1] - 2 * pad[1] + kw + out_pad[1]
    out = np.zeros((n, f, oh, ow), np.int64)
    for i in range(h):
        for j in range(wd):
            for dy in range(kh):
                for dx in range(kw):
                    y, x = i * stride[0] + dy - pad[0], j * stride[1] + dx - pad[1]
                    if 0 <= y < oh and 0 <= x < ow:
                        out[:, :, y, x] += a[:, :, i, j].astype(np.int64) @ w[:, :, dy, dx].astype(np.int64)
    return out.astype(np.int32)


def epilogue(acc: np.ndarray, shift: int, bias, out_bits: int) -> np.ndarray:
    """``clip((acc >> shift) + bias, 0, 2**(out_bits-1) - 1)`` as int8."""
    r = (acc.astype(np.int64) >> shift) + (0 if bias is None else bias)
    return np.clip(r, 0, (1 << (out_bits - 1)) - 1).astype(np.int8)
