"""Bounds of the replay loop's work arrays, checked against the rules they follow.

The loop writes one row of ``bursts`` per fetch burst and keeps the cycle of every token push in
one flat array (channel after channel); both are sized from the stream's length alone, so the
bounds must hold for every length and every stream address.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.model import streams as s
from vta import isa
from vta.sim.model import costs as mc
from vta.sim.model import loop
from vta.sim.model import replay as rp


def _bursts(insn_addr: int, n: int) -> int:
    """Fetch bursts of ``n`` instructions at ``insn_addr``, from the rule alone: a burst takes the
    instructions up to the next 128-byte boundary (at most 8), at least one."""
    first = 0
    count = 0
    while first < n:
        at = insn_addr + 16 * first
        first += max(1, min(8, (128 - at % 128) // 16, n - first))
        count += 1
    return count


def test_burst_rows_bound_every_length_and_offset():
    for n in range(1, 300):
        for off in range(0, 128, 4):
            assert _bursts(4096 + off, n) <= loop.burst_rows(n), (n, off)


def test_push_cycles_fit_two_per_instruction(env):
    """An instruction pushes at most two tokens (to its previous and next stages): the decode's
    push masks never have more than two bits, so the flat array of push cycles needs ``2 n``."""
    insns = [s.mem(isa.OPCODE_LOAD, isa.MEM_INP, 1, 4, push_next_dep=1),
             s.gemm(2, pop_prev_dep=1, push_prev_dep=1, push_next_dep=1),
             s.mem(isa.OPCODE_STORE, isa.MEM_OUT, 1, 4, pop_prev_dep=1, push_prev_dep=1),
             s.gemm(1, pop_next_dep=1, push_prev_dep=1),
             s.mem(isa.OPCODE_LOAD, isa.MEM_INP, 1, 4, pop_next_dep=1, push_next_dep=1),
             s.gemm(1, pop_prev_dep=1)]
    pushes = rp.prepare(env, s.words(insns, env), mc.DEFAULT_TIMING)["pushes"].tolist()
    assert [bin(m).count("1") for m in pushes] == [1, 2, 1, 1, 1, 0]
    assert loop.work_size(10) - loop.work_size(9) == 7  # (queue, qpos, fready, 2 push cycles, dcyc, qend)


@pytest.mark.parametrize("offset", [0, 8, 16, 72, 120])
def test_unaligned_streams_time_alike_in_both_engines(env, offset):
    """A stream at an address that is not 128-byte aligned has the most bursts per instruction;
    the compiled loop (whose arrays are sized by the bounds) and the plain one agree."""
    insns = [s.alu(4, 1) for _ in range(300)] + [s.alu(4, 1, push_next_dep=1),
                                                 s.mem(isa.OPCODE_STORE, isa.MEM_OUT, 1, 4, pop_prev_dep=1)]
    words = s.words(insns, env)
    out = []
    for engine in ("auto", "python"):
        counters, arrays = rp.replay(env, words, [0] * 4, 4096 + offset, mc.DEFAULT_TIMING, engine=engine)
        out.append((counters, np.array(arrays["bursts"]).tolist(), np.array(arrays["dispatch"]).tolist()))
    assert out[0] == out[1]
    assert counters["fetch_retired"] == len(insns)
    assert len(out[0][1]) == _bursts(4096 + offset, len(insns))


def test_a_replay_between_timing_only_runs_keeps_them_right(env, dram):
    """The timing-only run keeps the words it scanned in two rows of the replay's arrays; a replay
    with the probe on writes those rows, and the runs after it are timed as the full model's."""
    from vta.sim.model import CycleModel
    from vta.testing.programs import random_program

    with CycleModel(env, dram) as full, CycleModel(env, dram, functional=False) as fast:
        progs = [random_program(env, dram, seed, length=80) for seed in (3, 4)]
        try:
            for probe in (False, True, False, False):
                fast.set_probe(probe)
                for p in progs + progs[:1]:
                    full.run(p.insn_addr, p.insn_count)
                    fast.run(p.insn_addr, p.insn_count)
                    assert fast.last_run == full.last_run
            assert fast.stats() == full.stats()
        finally:
            for p in progs:
                p.close()
