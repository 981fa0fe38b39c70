"""``topi.testing``: NumPy reference operators (``tvm.topi.testing.conv2d_nchw_python`` ...).

Plain NumPy, written for clarity: the oracles the benchmarks compare the accelerator with.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._missing import missing
from .nn import get_pad_tuple

__all__ = ["conv2d_nchw_python", "conv2d_transpose_nchw_python", "dense_python"]


def _pair(v: Any) -> tuple[int, int]:
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    a, b = v
    return int(a), int(b)


def _conv_one_group(a: np.ndarray, w: np.ndarray, stride: tuple[int, int],
                    sides: tuple[int, int, int, int]) -> np.ndarray:
    top, left, bottom, right = sides
    sh, sw = stride
    ap = np.pad(a, ((0, 0), (0, 0), (top, bottom), (left, right)))
    kh, kw = w.shape[2:]
    oh = (ap.shape[2] - kh) // sh + 1
    ow = (ap.shape[3] - kw) // sw + 1
    out = np.zeros((a.shape[0], w.shape[0], oh, ow), dtype=np.result_type(a.dtype, w.dtype))
    for dy in range(kh):
        for dx in range(kw):
            window = ap[:, :, dy:dy + sh * (oh - 1) + 1:sh, dx:dx + sw * (ow - 1) + 1:sw]  # (N, C, OH, OW)
            out += np.einsum("nchw,fc->nfhw", window, w[:, :, dy, dx])
    return out


def conv2d_nchw_python(a_np: np.ndarray, w_np: np.ndarray, stride: Any, padding: Any, groups: int = 1) -> np.ndarray:
    """Convolution of NCHW ``a_np`` with OIHW ``w_np`` (``I = C / groups``), in their common dtype.

    Parameters
    ----------
    a_np, w_np : numpy.ndarray
    stride : int or (int, int)
    padding : int, (pad_h, pad_w), (top, left, bottom, right), "SAME" or "VALID"
    groups : int

    Raises
    ------
    ValueError
        If the channels do not split into ``groups``.
    """
    n, c = a_np.shape[:2]
    f, per_in = w_np.shape[:2]
    if groups < 1 or c % groups or f % groups or c // groups != per_in:
        raise ValueError(f"conv2d_nchw_python: data {a_np.shape} and kernel {w_np.shape} do not split into "
                         f"{groups} groups")
    sides = get_pad_tuple(padding, w_np.shape[2:])
    per_out = f // groups
    parts = [
        _conv_one_group(a_np[:, g * per_in:(g + 1) * per_in], w_np[g * per_out:(g + 1) * per_out], _pair(stride), sides)
        for g in range(groups)
    ]
    return np.concatenate(parts, axis=1)


def conv2d_transpose_nchw_python(a_np: np.ndarray, w_np: np.ndarray, stride: Any, padding: Any,
                                 output_padding: Any = (0, 0)) -> np.ndarray:
    """Transposed convolution of NCHW ``a_np`` with IOHW ``w_np`` ``(C_in, C_out, KH, KW)``.

    Every input element scatters ``a[n, c, i, j] * w[c, :, :, :]`` to rows ``i * sh + (0..KH-1)``
    and columns ``j * sw + (0..KW-1)`` of the full result, which is then cropped by the padding
    (top/left) to ``(H - 1) * sh - top - bottom + KH + oph`` rows (and as many columns likewise).
    """
    n, c, h, w = a_np.shape
    _, f, kh, kw = w_np.shape
    sh, sw = _pair(stride)
    oph, opw = _pair(output_padding)
    top, left, bottom, right = get_pad_tuple(padding, (kh, kw))
    dtype = np.result_type(a_np.dtype, w_np.dtype)
    full = np.zeros((n, f, (h - 1) * sh + kh + oph, (w - 1) * sw + kw + opw), dtype=dtype)
    for i in range(h):
        for j in range(w):
            contrib = np.einsum("nc,cfyx->nfyx", a_np[:, :, i, j].astype(dtype), w_np.astype(dtype))
            full[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw] += contrib
    oh = (h - 1) * sh - top - bottom + kh + oph
    ow = (w - 1) * sw - left - right + kw + opw
    return full[:, :, top:top + oh, left:left + ow]


def dense_python(a_np: np.ndarray, w_np: np.ndarray) -> np.ndarray:
    """``a_np @ w_np.T`` (data ``(N, K)``, weight ``(M, K)``) in their common dtype."""
    return a_np @ w_np.T


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
