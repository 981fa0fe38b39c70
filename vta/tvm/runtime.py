"""``tvm.runtime``: modules, packed functions, the global registry and devices (:mod:`vta.runtime`),
and parameter blobs in TVM's layout (``save_param_dict``/``load_param_dict``, :mod:`vta.graph.params`).

``load_module("net.so")`` of an exported network returns its executor factory
(:class:`vta.graph.factory.GraphExecutorFactoryModule`)."""

from __future__ import annotations

from typing import Any

from ..runtime import (Device, LibraryModule, Module, NDArray, PackedFunc, cpu, device, export_library, ext_dev,
                       get_global_func, list_global_func_names, load_module, register_func)
from ..runtime import ndarray
from ..graph.params import load_param_dict, save_param_dict
from ._missing import missing

__all__ = ["load_module", "Module", "LibraryModule", "PackedFunc", "NDArray", "Device", "cpu", "ext_dev",
           "device", "ndarray", "register_func", "get_global_func", "list_global_func_names",
           "export_library", "enabled", "save_param_dict", "load_param_dict"]

# Runtime features of this implementation (upstream tvm.runtime.enabled).
_FEATURES = frozenset({"cpu", "ext_dev", "rpc", "llvm", "c"})


def enabled(target: str) -> bool:
    """Whether a runtime feature or target kind is available: ``rpc``, ``cpu``, ``ext_dev``, ``llvm``, ``c``.

    Raises
    ------
    TypeError
        If ``target`` is not a str.
    """
    if not isinstance(target, str):
        raise TypeError(f"tvm.runtime.enabled takes a target name, got {target!r}")
    return target.split()[0] in _FEATURES if target.strip() else False


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
