"""``vta.top.conv2d_transpose_packed`` / ``schedule_conv2d_transpose_packed`` with upstream's signatures.

The operator itself is :mod:`vta.topi.conv2d_transpose`.
"""

from __future__ import annotations

from typing import Any

from ..topi import conv2d_transpose as _op
from ._args import out_dtype_or_acc

__all__ = ["conv2d_transpose_packed", "schedule_conv2d_transpose_packed"]


def conv2d_transpose_packed(data: Any, kernel: Any, strides: Any, padding: Any, out_dtype: Any = None,
                            output_padding: Any = (0, 0)) -> Any:
    """The packed transposed convolution (tag ``"packed_conv2d_transpose"``).

    Parameters
    ----------
    data : Tensor
        ``(N/BATCH, C/BLOCK_IN, H, W, BATCH, BLOCK_IN)``.
    kernel : Tensor
        ``(O/BLOCK_OUT, C/BLOCK_IN, KH, KW, BLOCK_OUT, BLOCK_IN)``, already flipped spatially
        (as upstream's benchmark packs it).
    strides : int or (int, int)
    padding : int, (pad_h, pad_w) or (top, left, bottom, right)
    out_dtype : str, optional
        The accumulator type (``env.acc_dtype`` when None).
    output_padding : (int, int)

    Raises
    ------
    ValueError
        As :func:`vta.topi.conv2d_transpose.conv2d_transpose_packed`.
    """
    return _op.conv2d_transpose_packed(data, kernel, strides, padding, out_dtype_or_acc(out_dtype), output_padding)


def schedule_conv2d_transpose_packed(outs: Any) -> Any:
    """The VTA schedule of a packed transposed convolution and its epilogue (default tiling).

    Raises
    ------
    ScheduleError
        As :func:`vta.topi.conv2d_transpose.schedule_conv2d_transpose_packed`.
    """
    return _op.schedule_conv2d_transpose_packed(outs)
