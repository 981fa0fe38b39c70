"""``topi.arm_cpu``: the CPU operators of upstream's ``arm_cpu`` benchmark variants.

Upstream's spatial-pack convolution tiles the computation for ARM cores; here the same
result is computed by the plain NCHW operator of :mod:`.nn` under the default schedule, and
built for the host by ``tvm.build(s, args, env.target_vta_cpu)``. The functions take the
arguments upstream's callers pass (the tuning configuration is supplied by AutoTVM upstream
and does not exist here).
"""

from __future__ import annotations

from typing import Any

from .._missing import missing
from . import nn
from .generic import default_schedule

__all__ = ["conv2d_nchw_spatial_pack", "schedule_conv2d_nchw_spatial_pack", "conv2d_transpose_nchw",
           "schedule_conv2d_transpose_nchw"]


def conv2d_nchw_spatial_pack(data: Any, kernel: Any, strides: Any, padding: Any, dilation: Any,
                             out_dtype: str) -> Any:
    """NCHW convolution (see :func:`.nn.conv2d_nchw`).

    Raises
    ------
    ValueError
        As :func:`.nn.conv2d_nchw`.
    """
    return nn.conv2d_nchw(data, kernel, strides, padding, dilation, out_dtype)


def conv2d_transpose_nchw(data: Any, kernel: Any, strides: Any, padding: Any, out_dtype: str,
                          output_padding: Any = (0, 0)) -> Any:
    """Transposed NCHW convolution (see :func:`.nn.conv2d_transpose_nchw`).

    Raises
    ------
    ValueError
        As :func:`.nn.conv2d_transpose_nchw`.
    """
    return nn.conv2d_transpose_nchw(data, kernel, strides, padding, out_dtype, output_padding)


#: Default schedules (one loop nest per stage) for the host.
schedule_conv2d_nchw_spatial_pack = default_schedule
schedule_conv2d_transpose_nchw = default_schedule


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
