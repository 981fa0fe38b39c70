"""``vta.top``: the accelerator's packed operators with upstream's signatures.

Upstream VTA code calls ``vta.top.conv2d_packed(data, kernel, strides, padding, dilation,
layout, out_dtype)`` and its siblings (the AutoTVM configuration argument of upstream is
supplied by AutoTVM there and does not exist here). Each function checks the upstream
arguments and hands the work to :mod:`vta.topi`, whose schedules choose their tilings from the
active configuration's SRAM sizes (the default schedules: there are no tuning logs).

- :func:`conv2d_packed` / :func:`schedule_conv2d_packed`
- :func:`dense_packed` / :func:`schedule_dense_packed`
- :func:`group_conv2d_packed` / :func:`schedule_group_conv2d_packed`
- :func:`conv2d_transpose_packed` / :func:`schedule_conv2d_transpose_packed`
"""

from .conv2d import conv2d_packed, schedule_conv2d_packed
from .conv2d_transpose import conv2d_transpose_packed, schedule_conv2d_transpose_packed
from .dense import dense_packed, schedule_dense_packed
from .group_conv2d import group_conv2d_packed, schedule_group_conv2d_packed

__all__ = [
    "conv2d_packed", "schedule_conv2d_packed",
    "dense_packed", "schedule_dense_packed",
    "group_conv2d_packed", "schedule_group_conv2d_packed",
    "conv2d_transpose_packed", "schedule_conv2d_transpose_packed",
]
