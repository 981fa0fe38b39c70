"""``tvm.topi``: operators as upstream VTA code spells them, a real package (``import tvm.topi.testing``).

- element-wise and broadcasting operators: :func:`add`, :func:`subtract`, :func:`multiply`,
  :func:`right_shift`, :func:`left_shift`, :func:`maximum`, :func:`minimum`, :func:`cast`;
- :mod:`tag` (``topi.tag.ELEMWISE`` ...), :mod:`utils` (``get_const_tuple``), :mod:`nn`
  (``pad``, ``dilate``, the plain NCHW convolutions), :mod:`testing` (NumPy references),
  :mod:`generic`, :mod:`arm_cpu` and :mod:`x86` (the host operators and default schedules of
  upstream's CPU benchmark variants);
- every other name is looked up in :mod:`vta.topi` (the packed layouts, ``conv2d_packed`` ...).

The sub-modules that need :mod:`vta.topi` (``nn``, ``testing``, ``arm_cpu``, ``x86``) and
:mod:`vta.topi` itself are imported on first use, so ``from vta import tvm`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from .._missing import missing
from . import generic, tag, utils
from .broadcast import add, cast, left_shift, maximum, minimum, multiply, right_shift, subtract

_LAZY = ("nn", "testing", "arm_cpu", "x86")

__all__ = [
    "add", "subtract", "multiply", "right_shift", "left_shift", "maximum", "minimum", "cast",
    "tag", "utils", "nn", "testing", "generic", "arm_cpu", "x86",
]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    _vta_topi = importlib.import_module("vta.topi")
    value = getattr(_vta_topi, name, None)
    if value is not None:
        return value
    raise missing(__name__, name, __all__ + [n for n in dir(_vta_topi) if not n.startswith("_")])
