"""NumPy reference operators (plain NumPy, independent of the compiler)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["conv2d_nchw_python", "dense_python", "requantize_python"]


def _pair(v: Any, what: str) -> tuple[int, int]:
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    v = tuple(int(x) for x in v)
    if len(v) == 2:
        return v
    if len(v) == 4 and v[0] == v[2] and v[1] == v[3]:
        return v[0], v[1]
    raise ValueError(f"conv2d_nchw_python: {what} must be an int or a pair, got {v!r}")


def conv2d_nchw_python(a: np.ndarray, w: np.ndarray, stride: Any, padding: Any) -> np.ndarray:
    """2-D convolution of ``a`` (N, C, H, W) with ``w`` (O, C, KH, KW), zero padding (int64 sums).

    Integer inputs are accumulated in int64 (exact); the result has the dtype of the
    accumulation (int64 for integers, float64 for floats).

    Parameters
    ----------
    a, w : ndarray
    stride : int or (int, int)
    padding : int or (int, int)
        Symmetric padding (rows, columns).

    Raises
    ------
    ValueError
        If the shapes are not 4-D, the channels disagree, or the padded input is smaller than the kernel.
    """
    a, w = np.asarray(a), np.asarray(w)
    if a.ndim != 4 or w.ndim != 4:
        raise ValueError(f"conv2d_nchw_python: expected 4-D data and kernel, got {a.shape!r} and {w.shape!r}")
    if a.shape[1] != w.shape[1]:
        raise ValueError(f"conv2d_nchw_python: data has {a.shape[1]!r} channels, kernel expects {w.shape[1]!r}")
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    acc = np.int64 if np.issubdtype(a.dtype, np.integer) else np.float64
    x = np.pad(a.astype(acc), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    k = w.astype(acc)
    n, _, h, wd = x.shape
    o, _, kh, kw = k.shape
    if h < kh or wd < kw:
        raise ValueError(f"conv2d_nchw_python: padded input {(h, wd)!r} is smaller than the kernel {(kh, kw)!r}")
    oh, ow = (h - kh) // sh + 1, (wd - kw) // sw + 1
    out = np.zeros((n, o, oh, ow), dtype=acc)
    for dy in range(kh):
        for dx in range(kw):
            win = x[:, :, dy:dy + sh * (oh - 1) + 1:sh, dx:dx + sw * (ow - 1) + 1:sw]
            out += np.einsum("nchw,oc->nohw", win, k[:, :, dy, dx], optimize=True)
    return out


def dense_python(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``a . w^T`` for ``a`` (N, I) and ``w`` (O, I), accumulated in int64 for integers.

    Raises
    ------
    ValueError
        If the inner dimensions disagree.
    """
    a, w = np.asarray(a), np.asarray(w)
    if a.ndim != 2 or w.ndim != 2 or a.shape[1] != w.shape[1]:
        raise ValueError(f"dense_python: expected (N, I) and (O, I), got {a.shape!r} and {w.shape!r}")
    acc = np.int64 if np.issubdtype(a.dtype, np.integer) else np.float64
    return a.astype(acc) @ w.astype(acc).T


def requantize_python(acc: np.ndarray, shift: int = 8, bias: np.ndarray | None = None, lo: int = 0,
                      hi: int = 127) -> np.ndarray:
    """The VTA epilogue on int32 accumulators: ``clip((acc >> shift) + bias, lo, hi)`` as int8.

    ``acc`` wraps to int32 first (the accumulator width); ``bias`` broadcasts against ``acc``.
    """
    r = np.asarray(acc).astype(np.int64).astype(np.int32) >> shift
    if bias is not None:
        r = r + np.asarray(bias, dtype=np.int32)
    return np.clip(r, lo, hi).astype(np.int8)
