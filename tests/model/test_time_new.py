"""The timing-only run's shortcut (:meth:`vta.sim.model.CycleModel._time_new`) against the general path.

The shortcut takes the common timing-only run (an aligned stream run from no outstanding token)
in one method. Oracles: the same device class with the shortcut refused (the general path:
fsim's ``run`` around :meth:`CycleModel._run`), and fsim itself for the errors and fsim's
counters. Valid random programs, streams that leave tokens and damaged streams run in one
sequence on each device, so the state a run leaves (tokens, work space, repeat) is compared too.
"""

from __future__ import annotations

import pytest

from vta.dram import DRAM
from vta.errors import SimulationError
from vta.sim.fsim import FunctionalSimulator
from vta.sim.model import CycleModel
from vta.sim.model import replay as rp
from vta.testing.malformed import KINDS, malformed_program
from vta.testing.programs import random_program

pytestmark = pytest.mark.skipif(rp.compiled() is None, reason="numba is not installed")


class _General(CycleModel):
    """The model with the shortcut refused: every timing-only run takes the general path."""

    def _time_new(self, insn_phys_addr, n):
        return False


def _outcome(dev, addr, count):
    """What one run gives: the error (type and message) or the last run's counters; then the tokens."""
    try:
        dev.run(addr, count)
    except SimulationError as exc:
        return type(exc).__name__, str(exc), list(dev.tokens)
    return dict(dev.last_run) if isinstance(dev, CycleModel) else None, list(dev.tokens)


def _streams(env, dram):
    """Valid programs, each run twice (the second a repeat), and damaged streams, in turn."""
    for seed in range(4):
        yield lambda seed=seed: random_program(env, dram, seed, length=24), 2
        kind = sorted(KINDS)[seed * 3 % len(KINDS)]
        yield lambda seed=seed, kind=kind: malformed_program(env, dram, seed, kind), 1
    for kind in sorted(KINDS):
        yield lambda kind=kind: malformed_program(env, dram, 7, kind), 1


def test_the_shortcut_gives_the_general_paths_counters_errors_and_tokens(env, dram, monkeypatch):
    taken = []
    real = CycleModel._time_new

    def spy(self, *args):
        done = real(self, *args)
        taken.append(done)
        return done

    monkeypatch.setattr(CycleModel, "_time_new", spy)
    with (CycleModel(env, dram, functional=False) as fast, _General(env, dram, functional=False) as general,
          FunctionalSimulator(env, dram) as fsim):
        for make, runs in _streams(env, dram):
            p = make()
            try:
                for _ in range(runs):
                    got = _outcome(fast, p.insn_addr, p.insn_count)
                    want = _outcome(general, p.insn_addr, p.insn_count)
                    assert got == want
                    ref = _outcome(fsim, p.insn_addr, p.insn_count)
                    if len(ref) == 3:  # fsim's error: the same one
                        assert got[:2] == ref[:2]
                    else:  # the tokens fsim leaves
                        assert got[-1] == ref[-1]
                    for dev in (fast, general, fsim):  # (a stream left tokens: start the next from none)
                        dev.tokens = [0, 0, 0, 0]
            finally:
                p.close()
        assert fast.stats() == general.stats()
        for key in ("insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish", "inp_load_nbytes",
                    "out_store_nbytes", "gemm_counter", "alu_counter", "runs_failed"):
            assert fast.stats()[key] == fsim.stats()[key], key
    assert True in taken  # (the shortcut was exercised)


def test_the_shortcut_checks_the_streams_range_as_the_general_path(env, dram):
    """The shortcut finds the stream's range in the live allocations itself (in the compiled run):
    a stream that runs past its allocation, one in no allocation and one at an address that is a
    multiple of 8 but not of 16 (the words a view of the arena from an odd int64) give the general
    path's and fsim's outcome."""
    with (CycleModel(env, dram, functional=False) as fast, _General(env, dram, functional=False) as general,
          FunctionalSimulator(env, dram) as fsim):
        p = random_program(env, dram, 3, length=24)
        q = random_program(env, dram, 5, length=24)
        try:
            n = p.insn_count
            words = dram.data[p.insn_addr:p.insn_addr + 16 * n].copy()
            # the same stream 8 bytes further in a buffer of its own (addr % 16 == 8)
            shifted = dram.alloc(16 * n + 8)
            dram.data[shifted + 8:shifted + 8 + 16 * n] = words
            cases = [(p.insn_addr, n), (p.insn_addr, n + 1), (p.insn_addr + 16, n), (shifted + 8, n),
                     (shifted + 8, n + 1), (shifted + 16, n), (1 << 27, 3), (q.insn_addr, q.insn_count)]
            for addr, count in cases * 2:
                got = _outcome(fast, addr, count)
                assert got == _outcome(general, addr, count)
                ref = _outcome(fsim, addr, count)
                if len(ref) == 3:
                    assert got[:2] == ref[:2]
                for dev in (fast, general, fsim):
                    dev.tokens = [0, 0, 0, 0]
            assert fast.stats() == general.stats()
            assert _outcome(fast, shifted + 8, n) == _outcome(fast, p.insn_addr, n)  # (same words, same cycles)
            dram.free(shifted)
        finally:
            p.close()
            q.close()


def test_the_live_bounds_are_the_allocations_in_address_order():
    """:attr:`DRAM.live_bounds` (what the shortcut's compiled run reads) against the allocations the
    arena lists, through allocations and frees that reuse freed space."""
    with DRAM(1 << 22) as dram:
        assert list(dram.live_bounds) == []
        addrs = [dram.alloc(size) for size in (100, 5000, 64, 9000, 1)]
        for addr in (addrs[1], addrs[3]):
            dram.free(addr)
        addrs += [dram.alloc(70), dram.alloc(4096)]
        want = [x for start, size in dram.allocations() for x in (start, start + size)]
        assert list(dram.live_bounds) == want
        assert want == sorted(want)
        assert dram.live_bounds.tolist() == dram.bounds().reshape(-1).tolist()


def test_a_stream_in_an_arena_without_allocations_or_after_others_changed(env):
    """The shortcut copies the live allocations at every first run: a stream freed (an arena with no
    allocation left), then a stream placed after others were made and freed, give the general
    path's and fsim's outcome."""
    with (DRAM(1 << 24) as dram, CycleModel(env, dram, functional=False) as fast,
          _General(env, dram, functional=False) as general, FunctionalSimulator(env, dram) as fsim):
        p = random_program(env, dram, 2, length=16)
        addr, count = p.insn_addr, p.insn_count
        assert _outcome(fast, addr, count) == _outcome(general, addr, count)
        p.close()  # (no allocation is left)
        assert list(dram.live_bounds) == []
        got = _outcome(fast, addr, count)
        assert got == _outcome(general, addr, count)
        assert got[:2] == _outcome(fsim, addr, count)[:2]
        assert got[0] == "DRAMAccessError"
        for dev in (fast, general, fsim):
            dev.tokens = [0, 0, 0, 0]
        spare = [dram.alloc(4096) for _ in range(3)]
        dram.free(spare[1])
        q = random_program(env, dram, 4, length=16)
        try:
            for _ in range(2):  # (the second a repeat)
                assert _outcome(fast, q.insn_addr, q.insn_count) == _outcome(general, q.insn_addr, q.insn_count)
            assert fast.stats() == general.stats()
        finally:
            q.close()
