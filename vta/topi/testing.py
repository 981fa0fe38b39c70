"""Upstream spelling ``topi.testing.conv2d_nchw_python`` / ``dense``-style references."""

from .reference import conv2d_nchw_python, dense_python

__all__ = ["conv2d_nchw_python", "dense_python"]
