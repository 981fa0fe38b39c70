"""Operators for VTA: padding, packed layouts, NumPy references, packed conv2d/dense and their
schedules (the ``vta.top`` / ``topi`` subset the tutorials and ResNet-18 use).

``vta.topi.nn.pad`` and ``vta.topi.testing.conv2d_nchw_python`` give the upstream spellings.
"""

from . import nn, testing
from .conv2d import CONV2D_TAG, conv2d_packed, schedule_conv2d_packed
from .dense import DENSE_TAG, dense_packed, schedule_dense_packed
from .epilogue import requantize
from .layout import pack_bias, pack_nc, pack_nchw, pack_oihw, pad_to_multiple, unpack_nc, unpack_nchw, unpack_oihw
from .pad import PAD_TAG, pad
from .reference import conv2d_nchw_python, dense_python, requantize_python
from .tiling import Conv2DTiling, DenseTiling, choose_conv2d_tiling, choose_dense_tiling

__all__ = [
    "nn", "testing", "pad", "PAD_TAG", "pack_nchw", "unpack_nchw", "pack_oihw", "unpack_oihw", "pack_nc",
    "unpack_nc", "pack_bias", "pad_to_multiple", "conv2d_nchw_python", "dense_python", "requantize_python",
    "conv2d_packed", "schedule_conv2d_packed", "CONV2D_TAG", "dense_packed", "schedule_dense_packed", "DENSE_TAG",
    "requantize", "Conv2DTiling", "DenseTiling", "choose_conv2d_tiling", "choose_dense_tiling",
]
