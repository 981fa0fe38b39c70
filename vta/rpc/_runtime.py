"""The runtime entry points the RPC layer uses, imported lazily (the runtime imports nothing from here)."""

from __future__ import annotations

from typing import Any

from ..errors import RPCError

__all__ = ["load_module", "get_global_func", "make_device", "nd_empty", "is_ndarray", "is_module", "is_packed_func"]


def load_module(path: str) -> Any:
    """``vta.runtime.load_module(path)``.

    Raises
    ------
    RPCError
        If this build's runtime has no module loader.
    """
    from .. import runtime

    loader = getattr(runtime, "load_module", None)
    if loader is None:
        raise RPCError("vta.runtime.load_module is not available in this build")
    return loader(path)


def get_global_func(name: str) -> Any:
    """The global function ``name``.

    Raises
    ------
    RPCError
        If no function of that name is registered.
    """
    from ..runtime.registry import get_global_func as lookup

    func = lookup(name, allow_missing=True)
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
    from ..runtime.devices import Device, device

    local = device(dev_type, dev_id)
    return local if session is None else Device(local.device_type, local.device_id, session=session)


def nd_empty(shape: Any, dtype: str, dev_type: int, dev_id: int) -> Any:
    """A new local array (``vta.runtime.ndarray.empty``)."""
    from ..runtime.ndarray import empty

    return empty(shape, dtype, make_device(int(dev_type), int(dev_id)))


def is_ndarray(value: Any) -> bool:
    from ..runtime.ndarray import NDArray

    return isinstance(value, NDArray)


def is_packed_func(value: Any) -> bool:
    from ..runtime.packed import PackedFunc

    return isinstance(value, PackedFunc)


def is_module(value: Any) -> bool:
    from .. import runtime

    module_cls = getattr(runtime, "Module", None)
    return module_cls is not None and isinstance(value, module_cls)
