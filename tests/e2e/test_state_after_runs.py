"""State after a run on tsim (device contract): bad then good programs on one Verilated core.

The issue this answers (17, item 4): on one tsim device, a valid program that followed a
malformed one deadlocked or computed a wrong answer silently, because instructions queued
after FINISH ran during the next run and surplus tokens left over let the next run's consumers
start before their producers. Each sequence here runs on tsim and on fsim; the damaged stream must
end the same way on both, leave the same reported state, and the valid program that follows
must compute what a fresh fsim computes.
"""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.errors import SRAMIndexError
from vta.sim.fsim import FunctionalSimulator
from vta.testing.malformed import KINDS, run_bad_then_good
from vta.testing.programs import ProgramBuilder

pytestmark = pytest.mark.verilator

TOKENS = ("tokens_l2g", "tokens_g2l", "tokens_s2g", "tokens_g2s")
STATE = TOKENS + ("runs_failed", "runs_with_tokens_left", "runs_with_surplus_tokens")
SEEDS = range(3)


def _compare(env, dram, tsim, fsim, kind, check_state=True):
    for seed in SEEDS:
        t = run_bad_then_good(tsim, env, dram, seed, kind)
        f = run_bad_then_good(fsim, env, dram, seed, kind)
        assert t["good"] == "correct", (kind, seed, t)
        assert f["good"] == "correct", (kind, seed, f)
        if check_state:
            assert t["outcome"] == f["outcome"], (kind, seed, t["outcome"], f["outcome"])
            assert {k: t["stats"][k] for k in STATE} == {k: f["stats"][k] for k in STATE}, (kind, seed)
        else:  # a stream with several faults may be stopped by another one first, but by one
            assert (t["outcome"] == "ran") == (f["outcome"] == "ran"), (kind, seed, t["outcome"], f["outcome"])


@pytest.mark.parametrize("kind", list(KINDS))
def test_bad_then_good(tsim_setup, kind):
    env, dram, tsim = tsim_setup
    tsim.reset()  # the device is shared by the module: start from the state of a fresh fsim
    with FunctionalSimulator(env, dram) as fsim:
        _compare(env, dram, tsim, fsim, kind)


@pytest.mark.parametrize("kind", ["finish_mid", "extra_push", "drop_pop", "extra_pop", "token_overflow",
                                  "sram_index", "bit_flip", "random_insn"])
def test_bad_then_good_found_by_the_rtl(tsim_library, kind):
    """Without the stream check the RTL finds the errors itself; the next program is still right."""
    from tests.conftest import make_env
    from vta.dram import DRAM
    from vta.sim.tsim import TSim

    env = make_env()
    with env, DRAM(1 << 28) as dram, TSim(env, dram, library=tsim_library(), check_streams=False) as tsim, \
            FunctionalSimulator(env, dram) as fsim:  # noqa: E127
        _compare(env, dram, tsim, fsim, kind, check_state=False)


def _store_row(env, dram, dev, row: int) -> bytes:
    """Run a program storing accumulator row ``row`` (nothing loaded first); return its bytes."""
    with ProgramBuilder(env, dram) as p:
        out = p.buffer(nbytes=env.OUT_ELEM_BYTES)
        p.nop(isa.STAGE_COMPUTE, push_next_dep=1)
        p.store(row, out, 1, 1, pop_prev_dep=1, push_prev_dep=1)
        p.finish(pop_next_dep=1)
        dev.run(*p.build())
        return dram.read(out, env.OUT_ELEM_BYTES)


def test_scratchpads_after_success_failure_and_reset(tsim_setup):
    """SRAM persists across successful runs and is zero after a failed run or a reset, as on fsim."""
    env, dram, tsim = tsim_setup
    with FunctionalSimulator(env, dram) as fsim, ProgramBuilder(env, dram) as fill, \
            ProgramBuilder(env, dram) as fail:  # noqa: E127
        src = fill.buffer(np.arange(1, 1 + env.BATCH * env.BLOCK_OUT, dtype="<i4"))
        fill.load(isa.MEM_ACC, 5, src, 1, 1)
        fill.finish()
        filled = fill.build()
        fail.append(isa.GemmInsn(uop_bgn=0, uop_end=env.UOP_BUFF_DEPTH + 1, iter_out=1, iter_in=1))
        fail.finish()
        failing = fail.build()
        loaded = np.arange(1, 1 + env.BATCH * env.BLOCK_OUT, dtype="<i4").astype(np.int8).tobytes()
        for dev in (fsim, tsim):
            dev.run(*filled)
            assert _store_row(env, dram, dev, 5) == loaded
            with pytest.raises(SRAMIndexError):
                dev.run(*failing)
            assert _store_row(env, dram, dev, 5) == bytes(env.OUT_ELEM_BYTES)
            dev.run(*filled)
            dev.reset()
            assert _store_row(env, dram, dev, 5) == bytes(env.OUT_ELEM_BYTES)
            assert not any(dev.stats()[k] for k in TOKENS)


def test_carried_tokens_lent_and_held_back(tsim_setup):
    """A token the next stream pops is lent to it; one it has no use for is held back and kept."""
    env, dram, tsim = tsim_setup
    tsim.reset()
    with FunctionalSimulator(env, dram) as fsim, ProgramBuilder(env, dram) as first, \
            ProgramBuilder(env, dram) as second:  # noqa: E127
        first.nop(isa.STAGE_COMPUTE, push_prev_dep=1)  # g2l, for the next stream's load
        first.nop(isa.STAGE_LOAD, push_next_dep=1)     # l2g, which the next stream does not pop
        first.finish()
        second.nop(isa.STAGE_LOAD, pop_next_dep=1)
        second.finish()
        a, b = first.build(), second.build()
        for dev in (fsim, tsim):
            dev.clear_stats()
            dev.run(*a)
            assert [dev.stats()[k] for k in ("tokens_l2g", "tokens_g2l")] == [1, 1]
            dev.run(*b)
            st = dev.stats()
            assert [st[k] for k in TOKENS] == [1, 0, 0, 0]
            assert st["runs_with_surplus_tokens"] == 1 and st["runs_with_tokens_left"] == 2
