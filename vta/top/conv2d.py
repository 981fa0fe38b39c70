"""``vta.top.conv2d_packed`` / ``schedule_conv2d_packed`` with upstream's signatures."""

from __future__ import annotations

from typing import Any

from ..topi import conv2d as _conv2d
from ._args import check_packed_layout, out_dtype_or_acc, pair

__all__ = ["conv2d_packed", "schedule_conv2d_packed"]


def conv2d_packed(data: Any, kernel: Any, strides: Any, padding: Any, dilation: Any, layout: str,
                  out_dtype: Any = None) -> Any:
    """The packed convolution (tag ``"conv2d_dense"``) of ``NCHWnc`` data and ``OIHWoi`` kernel.

    Parameters
    ----------
    data, kernel : Tensor
        ``(N/BATCH, C/BLOCK_IN, H, W, BATCH, BLOCK_IN)`` and
        ``(O/BLOCK_OUT, C/BLOCK_IN, KH, KW, BLOCK_OUT, BLOCK_IN)``.
    strides : int or (int, int)
    padding : int, (pad_h, pad_w) or (top, left, bottom, right)
        What ``relay.nn.get_pad_tuple2d`` returns is accepted as is.
    dilation : int or (int, int)
    layout : str
        ``"NCHW%dn%dc" % (env.BATCH, env.BLOCK_IN)``.
    out_dtype : str, optional
        The accumulator type (``env.acc_dtype`` when None).

    Returns
    -------
    Tensor
        ``(N/BATCH, O/BLOCK_OUT, OH, OW, BATCH, BLOCK_OUT)``.

    Raises
    ------
    ValueError
        If the layout is not the configuration's packed layout, or the operands, strides,
        padding or dilation are invalid (as :func:`vta.topi.conv2d_packed`).
    """
    check_packed_layout(layout, "conv2d_packed")
    dil = pair(dilation, "dilation", "conv2d_packed")
    return _conv2d.conv2d_packed(data, kernel, strides, padding, out_dtype_or_acc(out_dtype), dilation=dil)


def schedule_conv2d_packed(outs: Any) -> Any:
    """The VTA schedule of a packed convolution and its element-wise epilogue (default tiling).

    Raises
    ------
    ScheduleError
        As :func:`vta.topi.schedule_conv2d_packed`.
    """
    return _conv2d.schedule_conv2d_packed(outs)
