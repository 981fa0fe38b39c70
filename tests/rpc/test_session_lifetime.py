"""A closed session leaves nothing behind: no cyclic garbage, no loaded library, no loader entry.

What the soak benchmark's server does thousands of times, through the request handler. Oracles:
the number of unreachable objects ``gc.collect()`` finds (with the collector off while the session
runs), a weak reference to the handler, ``/proc/self/maps``, NumPy for the results.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from vta.rpc.handler import SessionHandler
from vta.runtime.loader import opened_libraries

pytestmark = pytest.mark.native


def _request(handler: SessionHandler, op: str, args: dict, payloads: list | None = None):
    reply, out = handler.handle({"id": 1, "op": op, "args": args}, payloads or [])
    assert reply["ok"], reply
    return reply["result"], out


def _session(parent, obj_bytes: bytes, rounds: int) -> weakref.ref:
    """One session as the soak runs it; returns a weak reference to its (closed) handler."""
    handler = SessionHandler(parent)
    _request(handler, "upload", {"name": "k.o", "data": {"bytes": 0}}, [obj_bytes])
    _request(handler, "load_module", {"name": "k.o"})  # links k.o.so
    x = np.arange(100, dtype=np.int32)
    y = np.full(100, 7, dtype=np.int32)
    for _ in range(rounds):
        mod, _ = _request(handler, "load_module", {"name": "k.o.so"})
        func, _ = _request(handler, "module_function", {"module": mod, "name": "axpy"})
        arrays = []
        for value in (x, y):
            arr, _ = _request(handler, "alloc_array", {"shape": [100], "dtype": "int32", "device_type": 12,
                                                       "device_id": 0})
            _request(handler, "array_copyfrom", {"array": arr, "data": {"ndarray": 0, "dtype": "<i4",
                                                                        "shape": [100]}}, [value.tobytes()])
            arrays.append(arr)
        n, _ = _request(handler, "call", {"func": func, "args": [arrays[0], arrays[1], 3]})
        assert n == 100
        _, out = _request(handler, "array_numpy", {"array": arrays[1]})
        np.testing.assert_array_equal(np.frombuffer(out[0], dtype=np.int32), y + 3 * x)
        for arr in arrays:
            _request(handler, "free", {"handle": arr})
    library = handler.workspace.path / "k.o.so"
    assert str(library.resolve()) in opened_libraries()
    handler.close()
    assert str(library.resolve()) not in opened_libraries()
    with open("/proc/self/maps") as fh:
        assert str(library) not in fh.read()
    return weakref.ref(handler)


def test_a_closed_session_is_freed_without_the_cycle_collector(tmp_path, kernels_obj):
    """Before, each session left its handler (a cycle through its table of bound methods), and
    every load, function lookup and array left ctypes objects in cycles, freed only by a full
    collection. What remains is the class ctypes makes for each library it opens (one per session
    here: 6 objects with CPython 3.11).

    Another module stays loaded meanwhile, as in a server with concurrent sessions: when the last
    module of a configuration closes, its runtime library is released and reloaded on next use,
    which is not per-session work and is left out here.
    """
    from vta.runtime import load_module

    data = kernels_obj.read_bytes()
    other = tmp_path / "other"
    other.mkdir()
    (other / "k.o").write_bytes(data)
    with load_module(other / "k.o"):
        _session(tmp_path, data, 1)  # first use: caches
        gc.collect()
        gc.disable()
        try:
            refs = [_session(tmp_path, data, 5) for _ in range(3)]
            assert all(ref() is None for ref in refs)  # freed by reference counting alone
            assert gc.collect() <= 3 * 10
        finally:
            gc.enable()
