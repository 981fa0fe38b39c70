"""``tvm.nd``: arrays on devices, backed by :mod:`vta.runtime.ndarray`.

``array(np_arr, dev)`` and ``empty(shape, dtype, device)`` take the device positionally or by
the keyword names TVM used over time (``device``, ``dev``, ``ctx``).
"""

from __future__ import annotations

from typing import Any

from ..runtime import ndarray as _nd
from ..runtime.devices import Device, cpu, device, ext_dev
from ..runtime.ndarray import NDArray
from ._missing import missing

__all__ = ["array", "empty", "NDArray", "Device", "cpu", "ext_dev", "device"]


def _pick_device(device: Any, dev: Any, ctx: Any, func: str) -> Any:
    """The one device given as ``device``, ``dev`` or ``ctx`` (None if none is)."""
    given = {k: v for k, v in (("device", device), ("dev", dev), ("ctx", ctx)) if v is not None}
    if len(given) > 1:
        raise TypeError(f"tvm.nd.{func}: give the device once, got it as {', '.join(given)}")
    return next(iter(given.values()), None)


def array(arr: Any, device: Any = None, *, dev: Any = None, ctx: Any = None, dtype: Any = None) -> NDArray:
    """Copy ``arr`` (NumPy array, list, or NDArray) to a new array on ``device`` (default cpu(0)).

    Raises
    ------
    TypeError
        If the device is given twice or is not a Device, or the dtype is unsupported.
    ValueError, AllocationError
        As :func:`vta.runtime.ndarray.array`.
    """
    target = _pick_device(device, dev, ctx, "array")
    return _nd.array(arr, target, dtype=dtype)


def empty(shape: Any, dtype: Any = "float32", device: Any = None, *, dev: Any = None, ctx: Any = None) -> NDArray:
    """An uninitialised array of ``shape`` and ``dtype`` on ``device`` (default cpu(0)).

    Raises
    ------
    TypeError
        If the device is given twice or is not a Device, or the dtype is unsupported.
    ValueError, AllocationError
        As :func:`vta.runtime.ndarray.empty`.
    """
    target = _pick_device(device, dev, ctx, "empty")
    return _nd.empty(shape, dtype, target)


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
