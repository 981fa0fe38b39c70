"""The table of handles given to native code (:class:`vta.runtime.packed.HandleTable`)."""

from __future__ import annotations

import gc
import threading

import pytest

from vta.errors import TVMError
from vta.runtime.packed import HandleTable


class _Cyclic:
    """An object that only the cycle collector frees (it refers to itself)."""

    def __init__(self) -> None:
        self.me = self


def test_weak_handle_dies_with_its_object_and_strong_one_lives_until_released():
    table = HandleTable()
    obj, kept = _Cyclic(), object()
    weak, strong = table.acquire_weak(obj), table.acquire(kept)
    assert table.get(weak) is obj and table.get(strong) is kept
    del obj
    gc.collect()
    with pytest.raises(TVMError, match="does not name a live"):
        table.get(weak)
    table.release(strong)
    with pytest.raises(TVMError, match="does not name a live"):
        table.get(strong)


def test_a_collection_under_the_lock_that_drops_a_weakly_held_object_does_not_deadlock():
    # Any allocation made while the table holds its lock can start a collection; when that frees
    # an object with a weak handle, the handle's callback takes the lock again in the same thread.
    table = HandleTable()
    was_enabled = gc.isenabled()
    gc.disable()                       # so that only the collection below frees it
    table.acquire_weak(_Cyclic())      # garbage at once, freed only by the cycle collector
    done = threading.Event()

    def collect_under_lock() -> None:
        with table._lock:
            gc.collect()
        done.set()

    worker = threading.Thread(target=collect_under_lock, daemon=True)
    try:
        worker.start()
        worker.join(timeout=10)
    finally:
        if was_enabled:
            gc.enable()
    assert done.is_set(), "the weak handle's callback blocked on the table's own lock"
    assert not table._weak
