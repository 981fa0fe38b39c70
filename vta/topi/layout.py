"""NumPy packing between plain NCHW / OIHW arrays and VTA's blocked layouts.

The accelerator reads activations as ``NCHWnc`` — ``(N/BATCH, C/BLOCK_IN, H, W, BATCH,
BLOCK_IN)`` — and convolution weights as ``OIHWoi`` — ``(O/BLOCK_OUT, I/BLOCK_IN, KH, KW,
BLOCK_OUT, BLOCK_IN)``. Dense operands use the same blocks without the spatial dimensions:
data ``(N/BATCH, I/BLOCK_IN, BATCH, BLOCK_IN)``, weights ``(O/BLOCK_OUT, I/BLOCK_IN,
BLOCK_OUT, BLOCK_IN)``. Block sizes left out are those of the active configuration
(:func:`vta.get_env`). Each function checks that the blocked dimensions divide.
"""

from __future__ import annotations

import numpy as np

from ..env import get_env

__all__ = [
    "pack_bias",
    "pack_nc",
    "pack_nchw",
    "pack_oihw",
    "pad_to_multiple",
    "unpack_nc",
    "unpack_nchw",
    "unpack_oihw",
]


def _blocks(size: int, block: int, what: str) -> int:
    if block <= 0 or size % block:
        raise ValueError(f"{what}: {size!r} is not a multiple of the block {block!r}; pad it first (pad_to_multiple)")
    return size // block


def _ndim(a: np.ndarray, ndim: int, what: str, names: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != ndim:
        raise ValueError(f"{what}: expected a {ndim}-D array ({names}), got shape {a.shape!r}")
    return a


def pack_nchw(a: np.ndarray, batch: int | None = None, block: int | None = None) -> np.ndarray:
    """``(N, C, H, W)`` -> ``(N/batch, C/block, H, W, batch, block)`` (default: BATCH, BLOCK_IN).

    Raises
    ------
    ValueError
        If ``a`` is not 4-D or N/C are not multiples of ``batch``/``block``.
    """
    a = _ndim(a, 4, "pack_nchw", "N, C, H, W")
    env = get_env()
    batch = env.BATCH if batch is None else batch
    block = env.BLOCK_IN if block is None else block
    nb, cb = _blocks(a.shape[0], batch, "pack_nchw N"), _blocks(a.shape[1], block, "pack_nchw C")
    return np.ascontiguousarray(a.reshape(nb, batch, cb, block, *a.shape[2:]).transpose(0, 2, 4, 5, 1, 3))


def unpack_nchw(a: np.ndarray) -> np.ndarray:
    """``(N/b, C/c, H, W, b, c)`` -> ``(N, C, H, W)`` (inverse of :func:`pack_nchw`).

    Raises
    ------
    ValueError
        If ``a`` is not 6-D.
    """
    a = _ndim(a, 6, "unpack_nchw", "N/b, C/c, H, W, b, c")
    nb, cb, h, w, b, c = a.shape
    return np.ascontiguousarray(a.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * c, h, w))


def pack_oihw(w: np.ndarray, block_out: int | None = None, block_in: int | None = None) -> np.ndarray:
    """``(O, I, KH, KW)`` -> ``(O/block_out, I/block_in, KH, KW, block_out, block_in)`` (default:
    BLOCK_OUT, BLOCK_IN).

    Raises
    ------
    ValueError
        If ``w`` is not 4-D or O/I are not multiples of the blocks.
    """
    w = _ndim(w, 4, "pack_oihw", "O, I, KH, KW")
    env = get_env()
    block_out = env.BLOCK_OUT if block_out is None else block_out
    block_in = env.BLOCK_IN if block_in is None else block_in
    ob, ib = _blocks(w.shape[0], block_out, "pack_oihw O"), _blocks(w.shape[1], block_in, "pack_oihw I")
    return np.ascontiguousarray(w.reshape(ob, block_out, ib, block_in, *w.shape[2:]).transpose(0, 2, 4, 5, 1, 3))


def unpack_oihw(w: np.ndarray) -> np.ndarray:
    """Inverse of :func:`pack_oihw`.

    Raises
    ------
    ValueError
        If ``w`` is not 6-D.
    """
    w = _ndim(w, 6, "unpack_oihw", "O/o, I/i, KH, KW, o, i")
    ob, ib, kh, kw, o, i = w.shape
    return np.ascontiguousarray(w.transpose(0, 4, 1, 5, 2, 3).reshape(ob * o, ib * i, kh, kw))


def pack_nc(a: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """``(R, C)`` -> ``(R/rows, C/cols, rows, cols)``: dense data (rows = BATCH, cols = BLOCK_IN)
    or dense weights (rows = BLOCK_OUT, cols = BLOCK_IN).

    Raises
    ------
    ValueError
        If ``a`` is not 2-D or its dimensions are not multiples of the blocks.
    """
    a = _ndim(a, 2, "pack_nc", "rows, columns")
    rb, cb = _blocks(a.shape[0], rows, "pack_nc rows"), _blocks(a.shape[1], cols, "pack_nc columns")
    return np.ascontiguousarray(a.reshape(rb, rows, cb, cols).transpose(0, 2, 1, 3))


def unpack_nc(a: np.ndarray) -> np.ndarray:
    """Inverse of :func:`pack_nc`.

    Raises
    ------
    ValueError
        If ``a`` is not 4-D.
    """
    a = _ndim(a, 4, "unpack_nc", "R/r, C/c, r, c")
    rb, cb, r, c = a.shape
    return np.ascontiguousarray(a.transpose(0, 2, 1, 3).reshape(rb * r, cb * c))


def pack_bias(bias: np.ndarray, batch: int | None = None, block_out: int | None = None) -> np.ndarray:
    """A per-channel bias ``(O,)`` as the broadcast tensor ``(1, O/block_out, 1, 1, batch, block_out)``
    the convolution epilogue adds (the value repeated over the ``batch`` rows; default: BATCH,
    BLOCK_OUT).

    Raises
    ------
    ValueError
        If ``bias`` is not 1-D or O is not a multiple of ``block_out``.
    """
    bias = _ndim(bias, 1, "pack_bias", "O")
    env = get_env()
    batch = env.BATCH if batch is None else batch
    block_out = env.BLOCK_OUT if block_out is None else block_out
    ob = _blocks(bias.shape[0], block_out, "pack_bias O")
    tile = bias.reshape(1, ob, 1, 1, 1, block_out)
    return np.ascontiguousarray(np.broadcast_to(tile, (1, ob, 1, 1, batch, block_out)))


def pad_to_multiple(a: np.ndarray, axis: int, multiple: int) -> np.ndarray:
    """``a`` zero-padded at the end of ``axis`` to a multiple of ``multiple`` (e.g. 1000 classes
    to 1008 for BLOCK_OUT = 16).

    Raises
    ------
    ValueError
        If ``multiple`` is not positive.
    """
    if multiple <= 0:
        raise ValueError(f"pad_to_multiple: multiple must be positive, got {multiple!r}")
    a = np.asarray(a)
    extra = (-a.shape[axis]) % multiple
    if not extra:
        return a
    widths = [(0, 0)] * a.ndim
    widths[axis] = (0, extra)
    return np.pad(a, widths)
