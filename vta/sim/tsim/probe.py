"""The profiler's probe of tsim: the records the shim writes while a run is traced.

The shim (``sim/vta_tsim.h``, "profiler's probe") samples, on every cycle the core counts, what
the core's own counters sample: each unit's state and instruction index, the queue fills, the
token counts, pushes and pops, and the memory beats. It records changes only, as 16-byte
records; :func:`take` moves them into a NumPy structured array of :data:`RECORD`. Turning the
probe off costs one untaken branch per cycle in the Verilated model.
"""

from __future__ import annotations

import ctypes

import numpy as np

__all__ = ["RECORD", "UNIT", "FILL", "TOKENS", "PUSH", "POP", "READ", "WRITE", "END", "take"]

#: One record: the cycle (the ECNT0 clock of the run), kind << 8 | detail, a value.
RECORD = np.dtype([("cycle", "<u8"), ("what", "<u4"), ("value", "<u4")])
UNIT, FILL, TOKENS, PUSH, POP, READ, WRITE, END = range(1, 9)
_CHUNK = 1 << 16


def take(lib, handle) -> np.ndarray:
    """Move every record the shim holds into one array (and out of the shim).

    Parameters
    ----------
    lib : ctypes.CDLL
        The loaded library (``Library.lib``).
    handle : ctypes.c_void_p
        The model.

    Returns
    -------
    ndarray of :data:`RECORD`
    """
    parts = []
    while True:
        n = int(lib.vta_tsim_probe_count(handle))
        if n == 0:
            break
        buf = np.empty(min(n, _CHUNK), dtype=RECORD)
        got = int(lib.vta_tsim_probe_take(handle, buf.ctypes.data_as(ctypes.c_void_p), buf.size))
        parts.append(buf[:got])
        if got == 0:
            break
    return np.concatenate(parts) if parts else np.empty(0, dtype=RECORD)
