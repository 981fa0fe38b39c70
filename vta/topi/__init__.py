"""Operators for VTA: padding, packed layouts, NumPy references, packed conv2d (dilated, grouped,
transposed) and dense with their schedules (the ``vta.top`` / ``topi`` subset the tutorials,
upstream's integration tests and ResNet-18 use).

``vta.topi.nn.pad`` and ``vta.topi.testing.conv2d_nchw_python`` give the upstream spellings.
"""

from . import dispatch, nn, qnn, testing
from .conv2d import CONV2D_TAG, conv2d_packed, schedule_conv2d_packed
from .conv2d_transpose import conv2d_transpose_packed, schedule_conv2d_transpose_packed
from .dense import DENSE_TAG, dense_packed, schedule_dense_packed
from .epilogue import requantize
from .group_conv2d import group_conv2d_packed, schedule_group_conv2d_packed
from .layout import (
    pack_bias,
    pack_nc,
    pack_nchw,
    pack_oihw,
    pad_to_multiple,
    unpack_nc,
    unpack_nchw,
    unpack_oihw,
)
from .pad import PAD_TAG, pad
from .reference import conv2d_nchw_python, dense_python, requantize_python
from .tiling import Conv2DTiling, DenseTiling, choose_conv2d_tiling, choose_dense_tiling

__all__ = [
    "CONV2D_TAG",
    "DENSE_TAG",
    "PAD_TAG",
    "Conv2DTiling",
    "DenseTiling",
    "choose_conv2d_tiling",
    "choose_dense_tiling",
    "conv2d_nchw_python",
    "conv2d_packed",
    "conv2d_transpose_packed",
    "dense_packed",
    "dense_python",
    "dispatch",
    "group_conv2d_packed",
    "nn",
    "pack_bias",
    "pack_nc",
    "pack_nchw",
    "pack_oihw",
    "pad",
    "pad_to_multiple",
    "qnn",
    "requantize",
    "requantize_python",
    "schedule_conv2d_packed",
    "schedule_conv2d_transpose_packed",
    "schedule_dense_packed",
    "schedule_group_conv2d_packed",
    "testing",
    "unpack_nc",
    "unpack_nchw",
    "unpack_oihw",
]
