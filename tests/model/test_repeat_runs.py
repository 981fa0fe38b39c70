"""A stream run again on a timing-only device: the repeat through the compiled entry alone.

A timing-only run that was clean and left no tokens can be repeated by the compiled run alone
(:attr:`vta.sim.model.CycleModel._repeat`) while nothing it depends on changes. Oracle: the full
model (fsim's execution, then the timing replay; it never takes that path) on the same streams,
with the same changes made to both devices between runs.
"""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.dram import DRAM
from vta.errors import DRAMAccessError, TokenOverflowError
from vta.sim.debug import DEBUG_DUMP_INSN
from vta.sim.model import CycleModel, Timing
from vta.sim.model import replay as rp
from vta.testing.malformed import malformed_program
from vta.testing.programs import ProgramBuilder, random_program

pytestmark = pytest.mark.skipif(rp.compiled() is None, reason="numba is not installed")


def _both(env, dram):
    return CycleModel(env, dram), CycleModel(env, dram, functional=False)


def test_a_stream_run_again_repeats_with_the_counters_of_the_full_model(env, dram):
    full, fast = _both(env, dram)
    with full, fast:
        for seed in range(6):
            p = random_program(env, dram, seed, length=40)
            try:
                for k in range(4):
                    full.run(p.insn_addr, p.insn_count)
                    fast.run(p.insn_addr, p.insn_count)
                    assert fast.last_run == full.last_run, (seed, k)
                    if k and not any(full.tokens):  # (a stream that leaves tokens is never repeated)
                        assert fast._repeat is not None and fast._io[rp.IO_REUSED] == 1
            finally:
                p.close()
        assert fast.stats() == full.stats()


def test_a_repeat_runs_neither_the_python_checks_nor_the_dispatcher(env, dram, monkeypatch):
    b, addr, count, _ = _gemm_stream(env, dram)
    slow = []
    real = CycleModel._run
    monkeypatch.setattr(CycleModel, "_run", lambda self, *a: slow.append(1) or real(self, *a))
    new = CycleModel._time_new  # (the general path's shortcut: a run it takes is not a repeat either)
    monkeypatch.setattr(CycleModel, "_time_new", lambda self, *a: new(self, *a) and (slow.append(1) or True))
    with b, CycleModel(env, dram, functional=False) as fast, CycleModel(env, dram) as full:
        for _ in range(5):
            fast.run(addr, count)
            full.run(addr, count)
            assert fast.last_run == full.last_run
        assert len(slow) == 1 + 5  # the first timing-only run, and every run of the full model
        assert fast.stats() == full.stats()


def _gemm_stream(env, dram, iters=3):
    b = ProgramBuilder(env, dram)
    b.uops([(0, 0, 0)], sram_base=0)
    gemm = b.append(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=iters, iter_in=5))
    b.finish()
    addr, count = b.build()
    return b, addr, count, gemm


def _change_timing(devices, dram, addr, count, gemm):
    for dev in devices:
        dev.timing = Timing(pipe_fill=7)


def _rewrite_gemm(devices, dram, addr, count, gemm):
    words = isa.encode_words(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=30, iter_in=5), devices[0].env)
    dram.write(addr + 16 * gemm, np.array(words, dtype="<u8").tobytes())


def _allocate(devices, dram, addr, count, gemm):
    dram.alloc(4096)


def _lend_tokens(devices, dram, addr, count, gemm):
    for dev in devices:
        dev.tokens = [0, 2, 0, 1]


def _dump(devices, dram, addr, count, gemm):
    for dev in devices:
        dev.set_debug_mode(DEBUG_DUMP_INSN)


CHANGES = {"timing": _change_timing, "words": _rewrite_gemm, "allocation": _allocate, "tokens": _lend_tokens,
           "debug dump": _dump}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_each_input_of_a_run_ends_its_repeat(env, dram, capsys, change):
    b, addr, count, gemm = _gemm_stream(env, dram)
    full, fast = _both(env, dram)
    with b, full, fast:
        for dev in (full, fast):
            dev.run(addr, count)
            dev.run(addr, count)
        assert fast._repeat is not None
        CHANGES[change]((full, fast), dram, addr, count, gemm)
        capsys.readouterr()
        full.run(addr, count)
        dumped = capsys.readouterr().out
        fast.run(addr, count)
        assert capsys.readouterr().out == dumped
        assert fast.last_run == full.last_run
        assert fast.stats() == full.stats()
        assert fast.tokens == full.tokens


def test_the_repeat_keeps_the_argument_checks(env, dram):
    b, addr, count, _ = _gemm_stream(env, dram)
    with b, CycleModel(env, dram, functional=False) as fast:
        fast.run(addr, count)
        fast.run(addr, count)
        assert fast._repeat is not None
        for bad in ((addr, float(count)), (addr, count, -1), (addr, count, 0.0)):
            with pytest.raises(ValueError, match="must be a non-negative integer"):
                fast.run(*bad)
        fast.run(addr, np.int64(count))  # (an integer of another type is accepted)
        fast.run(addr, count)
        assert fast.stats()["insn_finish"] == 4


def test_last_run_stays_that_of_the_last_successful_run(env, dram):
    b, addr, count, _ = _gemm_stream(env, dram)
    with b, CycleModel(env, dram, functional=False) as fast, CycleModel(env, dram) as full:
        for dev in (fast, full):
            dev.run(addr, count)
            dev.run(addr, count)
        want = dict(full.last_run)
        assert fast.last_run == want
        for seed, kind, error in ((1, "dram_address", DRAMAccessError), (2, "token_overflow", TokenOverflowError)):
            bad = malformed_program(env, dram, seed, kind)
            try:
                with pytest.raises(error):
                    fast.run(bad.insn_addr, bad.insn_count)
            finally:
                bad.close()
            assert fast.last_run == want


def test_a_device_switched_between_functional_and_timing_only_counts_each_run_once(env, dram):
    p = random_program(env, dram, 4, length=40)
    try:
        with CycleModel(env, dram) as oracle, CycleModel(env, dram) as dev:
            for functional in (True, False, False, True, True, False, False):
                dev.functional = functional
                oracle.run(p.insn_addr, p.insn_count)
                dev.run(p.insn_addr, p.insn_count)
                assert dev.last_run == oracle.last_run
            assert dev.stats() == oracle.stats()
    finally:
        p.close()


def test_a_repeat_ends_when_the_device_is_given_another_dram(env):
    with DRAM(1 << 24) as one, DRAM(1 << 24) as two:
        b1, addr, count, _ = _gemm_stream(env, one, iters=3)
        b2, addr2, count2, _ = _gemm_stream(env, two, iters=30)
        assert (addr2, count2, two.generation) == (addr, count, one.generation)  # (only the DRAM differs)
        with b1, b2, CycleModel(env, one, functional=False) as fast, CycleModel(env, two) as oracle:
            fast.run(addr, count)
            fast.run(addr, count)
            assert fast._repeat is not None
            oracle.run(addr, count)
            fast.dram = two
            fast.run(addr, count)
            assert fast.last_run == oracle.last_run


def test_close_drops_the_views_of_the_arena(env, dram):
    b, addr, count, _ = _gemm_stream(env, dram)
    with b:
        dev = CycleModel(env, dram, functional=False)
        dev.run(addr, count)
        dev.run(addr, count)
        dev.close()
        assert dev._repeat is None and dev._stream_words is None and dev._view_entry == (None, None)
        with CycleModel(env, dram) as full:  # (a closed device still runs: the contract of fsim's close)
            dev.run(addr, count)
            full.run(addr, count)
            assert dev.last_run == full.last_run
