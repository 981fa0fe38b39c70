"""``tvm.topi``: operators as upstream VTA code spells them, a real package (``import tvm.topi.testing``).

- element-wise and broadcasting operators: :func:`add`, :func:`subtract`, :func:`multiply`,
  :func:`right_shift`, :func:`left_shift`, :func:`maximum`, :func:`minimum`, :func:`cast`;
- :mod:`tag` (``topi.tag.ELEMWISE`` ...), :mod:`utils` (``get_const_tuple``), :mod:`nn`
  (``pad``, ``dilate``, the plain NCHW convolutions), :mod:`testing` (NumPy references),
  :mod:`generic`, :mod:`arm_cpu` and :mod:`x86` (the host operators and default schedules of
  upstream's CPU benchmark variants);
- every other name is looked up in :mod:`vta.topi` (the packed layouts, ``conv2d_packed`` ...).
"""

from __future__ import annotations

from typing import Any

from ... import topi as _vta_topi
from .._missing import missing
from . import arm_cpu, generic, nn, tag, testing, utils, x86
from .broadcast import add, cast, left_shift, maximum, minimum, multiply, right_shift, subtract

__all__ = [
    "add", "subtract", "multiply", "right_shift", "left_shift", "maximum", "minimum", "cast",
    "tag", "utils", "nn", "testing", "generic", "arm_cpu", "x86",
]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    value = getattr(_vta_topi, name, None)
    if value is not None:
        return value
    raise missing(__name__, name, __all__ + [n for n in dir(_vta_topi) if not n.startswith("_")])
