"""The runtime entry points the RPC layer uses (the runtime itself never imports vta.rpc)."""

from __future__ import annotations

from typing import Any

from .. import runtime
from ..errors import RPCError

__all__ = ["load_module", "get_global_func", "make_device", "nd_empty", "is_ndarray", "is_module", "is_packed_func",
           "packed", "register"]


def load_module(path: str) -> Any:
    """``vta.runtime.load_module(path)``.

    Raises
    ------
    ModuleLoadError
        If the file cannot be loaded.
    """
    return runtime.load_module(path)


def get_global_func(name: str) -> Any:
    """The global function ``name``.

    Raises
    ------
    RPCError
        If no function of that name is registered.
    """
    func = runtime.get_global_func(name, allow_missing=True)
    if func is None:
        raise RPCError(f"no global function {name!r} is registered in the session's process")
    return func


def make_device(dev_type: int | str, dev_id: int = 0, session: Any = None) -> Any:
    """A :class:`vta.runtime.Device` from a type code or name, tagged with ``session``.

    Raises
    ------
    ValueError
        If the type name or code is unknown or the id is negative.
    """
    local = runtime.device(dev_type, dev_id)
    return local if session is None else runtime.Device(local.device_type, local.device_id, session=session)


def nd_empty(shape: Any, dtype: str, dev_type: int, dev_id: int) -> Any:
    """A new local array (``vta.runtime.empty``)."""
    return runtime.empty(shape, dtype, make_device(int(dev_type), int(dev_id)))


def is_ndarray(value: Any) -> bool:
    return isinstance(value, runtime.NDArray)


def is_packed_func(value: Any) -> bool:
    return isinstance(value, runtime.PackedFunc)


def is_module(value: Any) -> bool:
    return isinstance(value, runtime.Module)


def packed(func: Any, name: str) -> Any:
    """``func`` as a :class:`vta.runtime.PackedFunc` (so a session can hand it out as a handle)."""
    return runtime.PackedFunc(func, name=name)


def register(name: str, func: Any) -> None:
    """Register ``func`` as the global function ``name`` (replacing an earlier registration)."""
    runtime.register_func(name, func, override=True)
