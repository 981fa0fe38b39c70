"""``vta.top.group_conv2d_packed`` / ``schedule_group_conv2d_packed`` with upstream's signatures.

The operator itself is :mod:`vta.topi.group_conv2d`.
"""

from __future__ import annotations

from typing import Any

from ..topi import group_conv2d as _op
from ._args import out_dtype_or_acc

__all__ = ["group_conv2d_packed", "schedule_group_conv2d_packed"]


def group_conv2d_packed(data: Any, kernel: Any, strides: Any, padding: Any, dilation: Any, group: int,
                        out_dtype: Any = None) -> Any:
    """The packed grouped convolution (tag ``"packed_group_conv2d"``): kernel
    ``(O/BLOCK_OUT, C/group/BLOCK_IN, KH, KW, BLOCK_OUT, BLOCK_IN)``.

    Parameters
    ----------
    data, kernel : Tensor
    strides, dilation : int or (int, int)
    padding : int, (pad_h, pad_w) or (top, left, bottom, right)
    group : int
    out_dtype : str, optional
        The accumulator type (``env.acc_dtype`` when None).

    Raises
    ------
    ValueError
        As :func:`vta.topi.group_conv2d.group_conv2d_packed`.
    """
    return _op.group_conv2d_packed(data, kernel, strides, padding, dilation, group, out_dtype_or_acc(out_dtype))


def schedule_group_conv2d_packed(outs: Any) -> Any:
    """The VTA schedule of a packed grouped convolution and its epilogue (default tiling).

    Raises
    ------
    ScheduleError
        As :func:`vta.topi.group_conv2d.schedule_group_conv2d_packed`.
    """
    return _op.schedule_group_conv2d_packed(outs)
