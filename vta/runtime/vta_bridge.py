"""The bridge between the native VTA runtime and the Python devices (DESIGN contract 2).

The C runtime (``vta/runtime/native/runtime_*.c``) builds instruction streams but owns neither
memory nor a device. When a runtime library is loaded, :func:`_install` hands it:

* the DRAM arena of the process (:func:`vta.dram.global_dram`): its host base address and
  size, so that a device buffer handle (a host pointer into the arena) converts to a physical
  address by subtraction, plus callbacks to allocate and free arena memory;
* a ``run`` callback behind ``VTADeviceRun``: it executes the stream on the device of the
  library's configuration and the current ``TARGET``, found through the levels' registration
  (:mod:`vta.sim.targets`: ``sim`` is fsim, ``tsim`` the RTL, ``model`` the cycle model; this
  module imports no level itself). A Python exception raised there cannot unwind
  through C: it is stored with :func:`vta.runtime.packed.set_pending_exception`, the C side
  returns -1, and the packed-function call that entered native code re-raises it with its own
  type (a ``DeadlockError`` stays a ``DeadlockError``);
* while a :func:`vta.runtime.capture.capture` block is active, the ``run`` callback first
  records the stream and its uops (and, with ``execute=False``, stops there);
* callbacks that print the instruction stream (``VTA_DEBUG_DUMP_INSN``, through
  :func:`vta.isa.disassemble`) and lines of text (``VTA_DEBUG_DUMP_UOP``).

There is one device per (configuration, target) in the process, so SRAM contents and tokens
persist across calls as on hardware; :func:`device_for`, :func:`attach_device` and
:func:`close_devices` (re-exported from :mod:`vta.sim.targets`) reach that pool.

This module registers in the global registry the functions the levels offer (for example
``runtime.module.loadfile_vta-tsim``) and the upstream profiler functions
``vta.simulator.profiler_clear``, ``vta.simulator.profiler_status`` and
``vta.simulator.profiler_debug_mode``, which act on the device of the current configuration.
"""

from __future__ import annotations

import ctypes
import json
import numbers
import sys
import threading
from typing import Any

from .. import isa
from ..dram import global_dram
from ..env import Environment, get_env
from ..errors import AllocationError, TVMError
from ..sim import targets
from ..sim.targets import attach_device, close_devices, device_for
from . import capture, native_lib
from .packed import set_pending_exception
from .registry import register_func

__all__ = [
    "device_for", "attach_device", "close_devices", "runtime", "set_xfer_limit",
    "DEBUG_DUMP_INSN", "DEBUG_DUMP_UOP", "DEBUG_SKIP_READ_BARRIER", "DEBUG_SKIP_WRITE_BARRIER",
    "DEBUG_FORCE_SERIAL",
]

#: Debug flags of ``VTASetDebugMode`` (vta_runtime.h).
DEBUG_DUMP_INSN = 1 << 1
DEBUG_DUMP_UOP = 1 << 2
DEBUG_SKIP_READ_BARRIER = 1 << 3
DEBUG_SKIP_WRITE_BARRIER = 1 << 4
DEBUG_FORCE_SERIAL = 1 << 5

# C signatures of the callbacks (vta_rt_internal.h).
_AllocFn = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint32)
_FreeFn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint32)
_RunFn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint32,
                          ctypes.c_void_p, ctypes.c_uint32)
_DumpFn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.c_uint32)
_PrintFn = ctypes.CFUNCTYPE(None, ctypes.c_char_p)

_lock = threading.RLock()
_installed: dict[str, tuple] = {}  # library key -> callbacks kept alive


# ----------------------------------------------------------------------------- callbacks
def _write_message(buf: int | None, size: int, message: str) -> None:
    """Copy ``message`` (NUL-terminated, truncated to ``size``) into a C buffer."""
    if not buf or size <= 0:
        return
    data = message.encode("utf-8", errors="replace").replace(b"\0", b"?")[: size - 1] + b"\0"
    ctypes.memmove(buf, data, len(data))


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _check_arena(dram) -> None:
    """The arena the library was given must still be the process-wide one."""
    if global_dram() is not dram:
        raise AllocationError(
            "vta.dram.global_dram() was closed and replaced after the native runtime library "
            "was loaded; the runtime still points at the old arena (start a new process)"
        )


def _run_env(lib_env: Environment) -> Environment:
    """The configuration whose device runs a stream of the library built for ``lib_env``.

    Libraries are shared by configurations that differ only in ``TARGET``, so the current
    configuration picks the target when it describes the same hardware; otherwise the
    library's own configuration does.
    """
    current = get_env()
    return current if current.BITSTREAM == lib_env.BITSTREAM else lib_env


def _make_callbacks(env: Environment) -> tuple:
    dram = global_dram()

    def alloc(nbytes: int, err: int, err_len: int) -> int:
        try:
            _check_arena(dram)
            return dram.alloc(int(nbytes))
        except Exception as exc:  # reported to C as a message; C records it as the last error
            _write_message(err, err_len, _describe(exc))
            return 0

    def free(phys: int, err: int, err_len: int) -> int:
        try:
            dram.free(int(phys))
            return 0
        except Exception as exc:  # reported to C as a message; C records it as the last error
            _write_message(err, err_len, _describe(exc))
            return -1

    def run(insn_phys: int, insn_count: int, wait_cycles: int, err: int, err_len: int) -> int:
        dev = None
        try:
            _check_arena(dram)
            run_env = _run_env(env)
            cap = capture.active()
            if cap is not None:
                cap.record(run_env, dram, int(insn_phys), int(insn_count))
                if not cap.execute:
                    return 0
            dev = device_for(run_env)
            dev.run(int(insn_phys), int(insn_count), int(wait_cycles))
            return 0
        except BaseException as exc:  # noqa: BLE001 - cannot unwind through C; re-raised by PackedFunc
            set_pending_exception(exc)
            _write_message(err, err_len, _describe(exc))
            if dev is not None:
                # The runtime drops the failed window; a reset drops the device's half of it
                # (blocked instructions, tokens), as a board would be reset after a hang.
                try:
                    dev.reset()
                except Exception as reset_exc:  # kept as context of the run's exception
                    set_pending_exception(reset_exc)
            return -1

    def dump(insn_phys: int, insn_count: int) -> int:
        try:
            raw = dram.read(int(insn_phys), int(insn_count) * 16)
            sys.stdout.write(isa.disassemble(raw, env))
            sys.stdout.flush()
            return 0
        except Exception as exc:  # a failed dump must not stop the run; say why on stderr
            sys.stderr.write(f"VTA_DEBUG_DUMP_INSN: cannot print the stream: {_describe(exc)}\n")
            return -1

    def print_line(text: bytes) -> None:
        sys.stdout.write((text or b"").decode("utf-8", errors="replace") + "\n")
        sys.stdout.flush()

    return (_AllocFn(alloc), _FreeFn(free), _RunFn(run), _DumpFn(dump), _PrintFn(print_line))


def _install(lib: "native_lib.NativeLibrary", env: Environment) -> None:
    """``on_load`` hook: give a freshly loaded runtime library the arena and the callbacks."""
    dram = global_dram()
    callbacks = _make_callbacks(env)
    fn = lib.cdll.VTABridgeInstall
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_uint64, ctypes.c_uint64, _AllocFn, _FreeFn, _RunFn, _DumpFn, _PrintFn]
    if fn(dram.host_address, dram.capacity, *callbacks) != 0:
        raise TVMError(f"VTABridgeInstall failed: {lib.last_error()}")
    with _lock:
        _installed[lib.key] = callbacks  # the C side keeps pointers to these thunks


native_lib.on_load(_install)


# ----------------------------------------------------------------------------- direct access
def runtime(env: Environment | None = None) -> ctypes.CDLL:
    """The loaded native runtime library of a configuration, with the bridge installed.

    Raises
    ------
    BuildError
        If the library cannot be built or loaded.
    """
    return native_lib.runtime_library(env or get_env()).cdll


def set_xfer_limit(nbytes: int, env: Environment | None = None) -> int:
    """Lower the staging-buffer size after which the runtime synchronises by itself (tests).

    Parameters
    ----------
    nbytes : int
        The limit in bytes (at least 256; 0 restores the default of 32 MiB).

    Returns
    -------
    int
        The limit now in force.

    Raises
    ------
    ValueError
        If ``nbytes`` is negative or above 2**32 - 1.
    """
    if not 0 <= int(nbytes) < (1 << 32):
        raise ValueError(f"staging limit {nbytes!r} must be within 0..{(1 << 32) - 1}")
    fn = runtime(env).VTABridgeSetXferLimit
    fn.restype = ctypes.c_uint32
    fn.argtypes = [ctypes.c_uint32]
    return int(fn(int(nbytes)))


# ----------------------------------------------------------------------------- profiler
def _profiler_clear() -> None:
    device_for(get_env()).clear_stats()


def _profiler_status() -> str:
    return json.dumps({k: int(v) if isinstance(v, numbers.Integral) else v
                       for k, v in device_for(get_env()).stats().items()})


def _profiler_debug_mode(flag: int) -> None:
    dev = device_for(get_env())
    setter: Any = getattr(dev, "set_debug_mode", None)
    if setter is None:
        if flag != 0:
            raise TVMError(
                f"device {type(dev).__name__!r} has no debug modes; flag {flag!r} cannot be set "
                "(accepted: 0)"
            )
        return
    setter(flag)


register_func("vta.simulator.profiler_clear", _profiler_clear, override=True)
register_func("vta.simulator.profiler_status", _profiler_status, override=True)
register_func("vta.simulator.profiler_debug_mode", _profiler_debug_mode, override=True)

# The functions the simulation levels offer (vta.sim imported every level with vta.sim.targets).
for _name, _func in targets.global_functions().items():
    register_func(_name, _func, override=True)
