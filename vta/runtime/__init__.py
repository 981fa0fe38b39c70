"""The Python runtime: devices and arrays, packed functions, the global registry, modules.

Typical use::

    from vta import runtime
    mod = runtime.load_module("vadd.o")          # link against the VTA runtime, dlopen
    a = runtime.ndarray.array(np_a, runtime.ext_dev(0))
    mod(a, b, c)                                  # the entry function (__tvm_main__)
"""

from .devices import Device, cpu, device, ext_dev, set_device
from .ndarray import NDArray, array, empty
from .packed import PackedFunc, set_pending_exception, take_pending_exception
from .registry import get_global_func, list_global_func_names, register_func, remove_global_func
from .module import LibraryModule, Module, PyModule
from .loader import export_library, load_module
from .cmodule import CompiledCModule

# Generated host code calls __tvm_set_device through TVMBackendGetFuncFromEnv (reference 5.2).
register_func("__tvm_set_device", set_device, override=True)

# The bridge binds every runtime library loaded from now on to the DRAM arena and the devices
# (native_lib.on_load), so a loaded module runs without further set-up.
from . import vta_bridge  # noqa: E402,F401  (imported for its registration; needs the modules above)

__all__ = [
    "Device", "cpu", "device", "ext_dev",
    "NDArray", "array", "empty",
    "PackedFunc", "set_pending_exception", "take_pending_exception",
    "register_func", "get_global_func", "list_global_func_names", "remove_global_func",
    "Module", "LibraryModule", "CompiledCModule", "PyModule",
    "load_module", "export_library",
]
