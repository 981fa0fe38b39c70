"""The ctypes binding of the tsim shim's C API (``sim/vta_tsim.h``).

One :class:`Library` per loaded hardware library file; :func:`load_library` loads each file once
per process (a Verilated library is never unloaded).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from ..errors import ModuleLoadError

__all__ = ["Library", "load_library", "PROGRESS_FN", "OK", "HW_ERROR", "DRAM_ERROR", "TIMEOUT", "STOPPED", "PROTOCOL_ERROR",
           "ASSERTION", "BAD_HANDLE", "BAD_ARG"]

# Status codes of vta_tsim.h.
OK, HW_ERROR, DRAM_ERROR, TIMEOUT, STOPPED, PROTOCOL_ERROR, ASSERTION = 0, 1, 2, 3, 4, 5, 6
BAD_HANDLE, BAD_ARG = -1, -2

#: ``int progress(void* user, uint64_t cycles, uint64_t retired)``; non-zero stops the run.
PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)


class Library:
    """A loaded tsim hardware library (the ctypes binding of ``sim/vta_tsim.h``).

    Parameters
    ----------
    path : str or Path
        The shared library built by :func:`vta.sim.tsim_build.build`.

    Raises
    ------
    ModuleLoadError
        If the file is missing or does not export the tsim C API.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if not self.path.is_file():
            raise ModuleLoadError(f"tsim hardware library {str(self.path)!r} does not exist")
        try:
            lib = ctypes.CDLL(str(self.path))
        except OSError as exc:
            raise ModuleLoadError(f"cannot load tsim hardware library {str(self.path)!r}: {exc}") from exc
        u32, u64, vp, i = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int
        sigs = {
            "vta_tsim_create": (vp, [vp, u64, ctypes.c_char_p, ctypes.c_char_p, u64]),
            "vta_tsim_destroy": (None, [vp]),
            "vta_tsim_reset": (i, [vp]),
            "vta_tsim_reg_write": (i, [vp, u32, u32]),
            "vta_tsim_reg_read": (i, [vp, u32, ctypes.POINTER(u32)]),
            "vta_tsim_set_progress": (i, [vp, PROGRESS_FN, vp, u64, ctypes.POINTER(u32), i]),
            "vta_tsim_run": (i, [vp, u32, u32, u64]),
            "vta_tsim_step": (i, [vp, u64]),
            "vta_tsim_cycles": (u64, [vp]),
            "vta_tsim_run_cycles": (u64, [vp]),
            "vta_tsim_dram_error": (i, [vp, ctypes.POINTER(u64), ctypes.POINTER(u32), ctypes.POINTER(i)]),
            "vta_tsim_trace_kind": (i, []),
            "vta_tsim_last_error": (ctypes.c_char_p, []),
            "vta_tsim_assertions": (u32, [vp, ctypes.POINTER(u64)]),
        }
        for name, (res, args) in sigs.items():
            try:
                fn = getattr(lib, name)
            except AttributeError as exc:
                raise ModuleLoadError(f"{str(self.path)!r} is not a tsim hardware library: it does not export {name}") from exc
            fn.restype, fn.argtypes = res, args
        self.lib = lib
        #: 0 no waveform support, 1 VCD, 2 FST.
        self.trace_kind = lib.vta_tsim_trace_kind()

    def last_error(self) -> str:
        """The shim's explanation of its last failure on this thread."""
        return (self.lib.vta_tsim_last_error() or b"").decode(errors="replace")


_LIBRARIES: dict[Path, Library] = {}


def load_library(path: str | os.PathLike) -> Library:
    """Load (once per process) the tsim hardware library at ``path``.

    Raises
    ------
    ModuleLoadError
        If the file is missing or not a tsim library.
    """
    key = Path(path).resolve()
    if key not in _LIBRARIES:
        _LIBRARIES[key] = Library(key)
    return _LIBRARIES[key]
