"""Operators for VTA: padding, packed layouts, NumPy references, packed conv2d/dense and their
schedules (the ``vta.top`` / ``topi`` subset the tutorials and ResNet-18 use).

``vta.topi.nn.pad`` and ``vta.topi.testing.conv2d_nchw_python`` give the upstream spellings.
"""

from . import nn, testing
from .layout import pack_bias, pack_nc, pack_nchw, pack_oihw, pad_to_multiple, unpack_nc, unpack_nchw, unpack_oihw
from .pad import PAD_TAG, pad
from .reference import conv2d_nchw_python, dense_python, requantize_python

__all__ = [
    "nn", "testing", "pad", "PAD_TAG", "pack_nchw", "unpack_nchw", "pack_oihw", "unpack_oihw", "pack_nc",
    "unpack_nc", "pack_bias", "pad_to_multiple", "conv2d_nchw_python", "dense_python", "requantize_python",
]
