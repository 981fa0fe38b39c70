"""State after a run (device contract): bad then good programs on one fsim / cycle-model device.

Each damaged stream of :data:`vta.testing.malformed.KINDS` runs on a device that is then handed
a valid program; the valid program must compute what it computes on a fresh fsim, and fsim (in
order and interleaved at random) and the cycle model must agree on what the damaged stream
did and on the state it left. The same sequences on tsim are in ``tests/e2e``.
"""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.errors import SRAMIndexError
from vta.sim.fsim import FunctionalSimulator, check_stream
from vta.sim.model import CycleModel
from vta.testing.malformed import KINDS, malformed_program, run_bad_then_good
from vta.testing.programs import ProgramBuilder

TOKENS = ("tokens_l2g", "tokens_g2l", "tokens_s2g", "tokens_g2s")
STATE = TOKENS + ("runs_failed", "runs_with_tokens_left", "runs_with_surplus_tokens")
SEEDS = range(3)


@pytest.mark.parametrize("kind", list(KINDS))
def test_bad_then_good_on_every_level(env, dram, kind):
    levels = {"fsim": FunctionalSimulator(env, dram), "fsim_rnd": FunctionalSimulator(env, dram, seed=7),
              "model": CycleModel(env, dram)}
    try:
        for seed in SEEDS:
            seen = {name: run_bad_then_good(dev, env, dram, seed, kind) for name, dev in levels.items()}
            for name, rec in seen.items():
                assert rec["good"] == "correct", (kind, seed, name, rec)
            ref = seen["fsim"]
            for name, rec in seen.items():
                assert rec["outcome"] == ref["outcome"], (kind, seed, name, rec["outcome"], ref["outcome"])
                assert {k: rec["stats"][k] for k in STATE} == {k: ref["stats"][k] for k in STATE}, (kind, seed, name)
            if ref["outcome"] != "ran":
                assert ref["stats"]["runs_failed"] == 1 and not any(ref["stats"][k] for k in TOKENS)
    finally:
        for dev in levels.values():
            dev.close()


@pytest.mark.parametrize("kind", ["extra_push", "drop_pop", "finish_mid", "zero_extent"])
def test_tokens_outstanding_are_those_check_stream_predicts(env, dram, kind):
    """Tokens carry over; a stream is lent what it needs and the rest is held back, then returned."""
    with FunctionalSimulator(env, dram) as dev:
        for seed in range(6):
            bad = malformed_program(env, dram, seed, kind)
            try:
                words = np.frombuffer(dram.read(bad.insn_addr, 16 * bad.insn_count), "<i8").reshape(-1, 2)
                before = [dev.stats()[k] for k in TOKENS]
                lent, left = check_stream(env, words, dram, before)
                dev.clear_stats()
                dev.run(bad.insn_addr, bad.insn_count)
            finally:
                bad.close()
            st = dev.stats()
            # check_stream counts in channel order l2g, g2l, s2g, g2s, as the statistics keys
            assert [st[k] for k in TOKENS] == [a + b - c for a, b, c in zip(left, before, lent, strict=True)]
            assert st["runs_with_surplus_tokens"] == int(lent != before)


def test_runtime_style_carry_over_is_kept(env, dram):
    """A pop in one run of a token pushed by the previous one (the runtime's pending pop) works."""
    with FunctionalSimulator(env, dram) as dev, ProgramBuilder(env, dram) as first, \
            ProgramBuilder(env, dram) as second:  # noqa: E127
        first.nop(isa.STAGE_COMPUTE, push_prev_dep=1)  # g2l, for the next window's load
        first.nop(isa.STAGE_LOAD, push_next_dep=1)     # l2g, nobody needs it
        first.finish()
        second.nop(isa.STAGE_LOAD, pop_next_dep=1)
        second.finish()
        dev.run(*first.build())
        assert [dev.stats()[k] for k in TOKENS] == [1, 1, 0, 0]
        dev.clear_stats()
        dev.run(*second.build())
        st = dev.stats()
        assert [st[k] for k in TOKENS] == [1, 0, 0, 0]  # g2l consumed, l2g held back and kept
        assert st["runs_with_surplus_tokens"] == 1


def test_failed_run_zeroes_the_scratchpads_and_drops_tokens(env, dram):
    for cls in (FunctionalSimulator, CycleModel):
        with cls(env, dram) as dev, ProgramBuilder(env, dram) as p:
            src = p.buffer(np.arange(16 * env.BATCH, dtype="<i4"))
            p.load(isa.MEM_ACC, 0, src, 1, 1, push_next_dep=1)       # executes, leaves a token
            p.uops([(env.ACC_BUFF_DEPTH - 1, 0, 0)])
            p.append(isa.AluInsn(uop_bgn=0, uop_end=1, iter_in=2, dst_factor_in=1, use_imm=1, imm=1))
            p.finish()
            dev.clear_stats()
            with pytest.raises(SRAMIndexError):
                dev.run(*p.build())
            st = dev.stats()
            assert st["runs_failed"] == 1 and not any(st[k] for k in TOKENS)
            assert not dev.sram.acc.any() and not dev.sram.uop_dst.any()
