"""The replay loop's start rule for fixed-cost instructions, restated from its outputs.

A unit starts its queue head once the unit is free (its previous instruction's end), the head has
been dispatched (the cycle after its dispatch) and every token it pops has been pushed (the j-th
pop on a channel takes the j-th push, made at its producer's end); a GEMM, ALU, STORE, no-op or
FINISH ends ``cost`` cycles later. The loop may start such an instruction as soon as these are
known, ahead of other events; this test checks the rule with a scalar pass over the outputs (it
knows nothing of the loop's order of events), on long streams whose compute queue fills.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.fsim_throughput import conv_stream
from vta.env import Environment
from vta.sim.model import costs as mc
from vta.sim.model import replay as rp
from vta.testing.programs import random_program

MEMORIES = [{}, {"DRAM": "ddr4"}, {"DRAM_LATENCY": 12, "DRAM_BYTES_PER_CYCLE": 3, "DRAM_MAX_OUTSTANDING": 2}]


def _check_start_rule(words, cost, a):
    """Assert the rule for every fixed-cost instruction; return how many were checked."""
    unit, pops, pushes = a["unit"].tolist(), a["pops"].tolist(), a["pushes"].tolist()
    start, end, dispatch, ready = a["start"].tolist(), a["end"].tolist(), a["dispatch"].tolist(), a["ready"].tolist()
    pushed = [[], [], [], []]  # per channel, the end of each push's producer, in program order
    for i in range(len(unit)):
        for c in range(4):
            if pushes[i] >> c & 1:
                pushed[c].append(end[i])
    taken = [0, 0, 0, 0]
    last_end = [0, 0, 0]
    checked = 0
    for i in range(len(unit)):
        u = unit[i]
        t = max(last_end[u], dispatch[i] + 1)
        free = t
        for c in range(4):
            if pops[i] >> c & 1:
                t = max(t, pushed[c][taken[c]])
                taken[c] += 1
        if cost[i] >= 0:
            assert start[i] == t, (i, start[i], t)
            assert end[i] == start[i] + cost[i], (i, end[i], start[i], cost[i])
            assert ready[i] == free, (i, ready[i], free)
            checked += 1
        last_end[u] = end[i]
    return checked


def _replay(env, words, insn_addr, engine):
    _, arrays = rp.replay(env, words, [0] * 4, insn_addr, mc.DEFAULT_TIMING, engine=engine)
    return {k: np.array(v) for k, v in arrays.items() if k != "tokens"}


@pytest.mark.parametrize("memory", range(len(MEMORIES)))
@pytest.mark.parametrize("buffered", [True, False])
def test_conv_like_stream(env, dram, monkeypatch, memory, buffered):
    monkeypatch.setattr(mc, "FETCH_BUFFER_INSNS", 16 if buffered else 0)
    e = Environment({**env.cfg_dict, **MEMORIES[memory]})
    prog = conv_stream(e, dram, 200)  # 1,802 instructions: the compute queue (512) fills
    try:
        addr, count = prog.build()
        words = dram.data[addr:addr + 16 * count].copy().view("<i8").reshape(-1, 2)
    finally:
        prog.close()
    cost = rp.prepare(e, words, mc.DEFAULT_TIMING)["cost"].tolist()
    checked = _check_start_rule(words, cost, _replay(e, words, addr, "auto"))
    assert checked > 0.8 * count


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("memory", range(len(MEMORIES)))
def test_random_programs(env, dram, memory, seed):
    e = Environment({**env.cfg_dict, **MEMORIES[memory]})
    p = random_program(e, dram, seed, length=120)
    try:
        words = dram.data[p.insn_addr:p.insn_addr + 16 * p.insn_count].copy().view("<i8").reshape(-1, 2)
        addr = p.insn_addr
    finally:
        p.close()
    cost = rp.prepare(e, words, mc.DEFAULT_TIMING)["cost"].tolist()
    for engine in ("auto", "python"):
        assert _check_start_rule(words, cost, _replay(e, words, addr, engine)) > 0
