"""DRAM arena: allocation, reuse, reservation at fixed addresses, checked access."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from vta.dram import DRAM, PAGE_BYTES
from vta.errors import AllocationError, DRAMAccessError


def test_alloc_is_page_aligned_and_never_zero(dram):
    addrs = [dram.alloc(n) for n in (1, 4096, 4097, 64)]
    assert all(a >= PAGE_BYTES and a % PAGE_BYTES == 0 for a in addrs)
    assert len(set(addrs)) == 4
    # Disjoint: each allocation's pages end before the next starts.
    spans = sorted((a, a + -(-n // PAGE_BYTES) * PAGE_BYTES) for a, n in zip(addrs, (1, 4096, 4097, 64), strict=True))
    assert all(e <= s for (_, e), (s, _) in itertools.pairwise(spans))


def test_free_reuses_splits_and_coalesces(dram):
    a = dram.alloc(3 * PAGE_BYTES)
    b = dram.alloc(PAGE_BYTES)
    c = dram.alloc(PAGE_BYTES)
    d = dram.alloc(PAGE_BYTES)
    dram.free(a)
    dram.free(c)
    assert dram.alloc(100) == c  # the one-page block fits best
    assert dram.alloc(PAGE_BYTES) == a  # split from the three-page block
    assert dram.alloc(2 * PAGE_BYTES) == a + PAGE_BYTES  # its remaining two pages
    dram.free(b)
    dram.free(c)  # b and c are neighbours: one two-page block
    assert dram.alloc(2 * PAGE_BYTES) == b
    top = dram.alloc(1)
    dram.free(top)
    dram.free(d)
    assert dram.alloc(2 * PAGE_BYTES) == d  # freed blocks at the top rejoin it
    with pytest.raises(AllocationError, match="not the start"):
        dram.free(a + 8)


def test_round_trip_and_bounds(dram):
    a = dram.alloc(40)
    x = np.arange(10, dtype=np.int32)
    dram.write(a, x)
    assert np.array_equal(dram.copy_out(a, (10,), np.int32), x)
    with pytest.raises(DRAMAccessError, match="past the end"):
        dram.read(a + 36, 8)
    with pytest.raises(DRAMAccessError, match="not inside any live allocation"):
        dram.read(0, 4)


def test_reserve_at_fixed_addresses():
    with DRAM(1 << 24) as dram:
        assert dram.reserve(5 * PAGE_BYTES, 100) == 5 * PAGE_BYTES
        # The gap below becomes allocatable, above the reservation the top moved.
        low = [dram.alloc(PAGE_BYTES) for _ in range(4)]
        assert sorted(low) == [PAGE_BYTES * k for k in range(1, 5)]
        assert dram.alloc(1) == 6 * PAGE_BYTES
        with pytest.raises(AllocationError, match="overlaps"):
            dram.reserve(5 * PAGE_BYTES, 1)
        dram.free(2 * PAGE_BYTES)
        dram.free(3 * PAGE_BYTES)
        assert dram.reserve(3 * PAGE_BYTES, 1) == 3 * PAGE_BYTES  # inside a freed run
        assert dram.alloc(1) == 2 * PAGE_BYTES
        with pytest.raises(AllocationError, match="multiple"):
            dram.reserve(PAGE_BYTES + 8, 1)
        with pytest.raises(AllocationError, match="leaves"):
            dram.reserve((1 << 24) - PAGE_BYTES, 2 * PAGE_BYTES)


def test_exhaustion_is_a_clear_error():
    with DRAM(4 * PAGE_BYTES) as dram:
        dram.alloc(3 * PAGE_BYTES)
        with pytest.raises(AllocationError, match="cannot hold"):
            dram.alloc(1)


def test_bounds_follow_the_live_allocations():
    """``bounds()`` after random allocs, reserves and frees; oracle: :meth:`DRAM.allocations`."""
    rng = np.random.default_rng(5)
    with DRAM(1 << 24) as dram:
        live = []
        for step in range(300):
            if live and rng.random() < 0.4:
                dram.free(live.pop(int(rng.integers(len(live)))))
            elif rng.random() < 0.1:
                try:
                    live.append(dram.reserve(int(rng.integers(1, 4000)) * PAGE_BYTES, int(rng.integers(1, 9000))))
                except AllocationError:  # (the range overlaps a live allocation)
                    pass
            else:
                live.append(dram.alloc(int(rng.integers(1, 3 * PAGE_BYTES))))
            got = dram.bounds()
            want = [(a, a + n) for a, n in dram.allocations()]
            assert got.dtype == np.int64 and got.shape == (len(want), 2), step
            assert got.tolist() == [list(w) for w in want], step
            assert dram.bounds() is got  # (made once per generation)
        for a in live:
            dram.free(a)
        assert dram.bounds().shape == (0, 2)
