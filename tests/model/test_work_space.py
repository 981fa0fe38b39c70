"""The work space of the compiled replay: large ones are mapped apart (:func:`replay._work_space`).

Oracle: the full model (fsim's execution, then the replay) on the same streams, with a device
whose work space is a mapping (the size from which one is mapped lowered for the test).
"""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from vta.sim.model import CycleModel
from vta.sim.model import replay as rp
from vta.testing.programs import random_program

pytestmark = pytest.mark.skipif(rp.compiled() is None, reason="numba is not installed")


@pytest.mark.parametrize("count", [1, 1000, 1 << 20])
def test_a_work_space_is_a_writable_contiguous_int64_array_of_the_size_asked(count, monkeypatch):
    monkeypatch.setattr(rp, "_MAPPED_BYTES", 4096)
    space = rp._work_space(count)
    assert space.dtype == np.int64 and space.shape == (count,)
    assert space.flags.c_contiguous and space.flags.aligned and space.flags.writeable
    space[:] = np.arange(count)
    assert int(space[-1]) == count - 1


def test_a_mapped_work_space_times_as_the_full_model(env, dram, monkeypatch):
    monkeypatch.setattr(rp, "_MAPPED_BYTES", 4096)  # (every work space but the smallest is mapped)
    with CycleModel(env, dram) as full, CycleModel(env, dram, functional=False) as fast:
        for seed in range(4):
            p = random_program(env, dram, seed, length=60)
            try:
                for _ in range(2):
                    full.run(p.insn_addr, p.insn_count)
                    fast.run(p.insn_addr, p.insn_count)
                    assert fast.last_run == full.last_run
            finally:
                p.close()
        assert isinstance(fast._scratch.flat.base.obj, mmap.mmap)  # (the path under test was taken)
        assert fast.stats() == full.stats()


def test_a_scratch_fits_every_stream_up_to_the_longest_it_was_sized_for():
    scratch = rp.Scratch()
    assert scratch.fits == -1
    for n, longest in ((5, 5), (300, 300), (40, 300), (301, 301), (1, 301)):
        flat = scratch.flat_for(n)
        assert scratch.fits == longest
        for k in (1, n, longest):  # (the work space of _timing_run, then the suspects: about 29 k + the state)
            assert flat.size >= rp.suspects_at(k) + k
    scratch.take(5000)  # (the replay's arrays grow the work space: what fitted still fits)
    assert scratch.fits == 301 and scratch.flat.size >= rp.suspects_at(301) + 301
