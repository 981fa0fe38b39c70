"""The compiled replay loop and the plain Python one give the same cycles, on every memory."""

from __future__ import annotations

import pytest

from vta.env import Environment
from vta.sim.model import costs as mc
from vta.sim.model import replay as rp
from vta.testing.programs import random_program

MEMORIES = [{}, {"DRAM": "ddr4"}, {"DRAM_LATENCY": 12, "DRAM_BYTES_PER_CYCLE": 3, "DRAM_MAX_OUTSTANDING": 2}]


@pytest.mark.skipif(rp.compiled() is None, reason="numba is not installed")
@pytest.mark.parametrize("memory", range(len(MEMORIES)))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numba_and_python_agree(env, dram, memory, seed):
    e = Environment({**env.cfg_dict, **MEMORIES[memory]})
    p = random_program(e, dram, seed, length=60)
    try:
        words = dram.data[p.insn_addr:p.insn_addr + 16 * p.insn_count].copy().view("<i8").reshape(-1, 2)
        fast, fa = rp.replay(e, words, [0] * 4, p.insn_addr, mc.DEFAULT_TIMING, engine="numba")
        slow, sa = rp.replay(e, words, [0] * 4, p.insn_addr, mc.DEFAULT_TIMING, engine="python")
    finally:
        p.close()
    assert fast == slow
    for key in ("start", "end", "dispatch"):
        assert fa[key].tolist() == sa[key].tolist()


def test_slower_memory_never_speeds_up_a_stream(env, dram):
    p = random_program(env, dram, 5, length=60)
    try:
        words = dram.data[p.insn_addr:p.insn_addr + 16 * p.insn_count].copy().view("<i8").reshape(-1, 2)
        cycles = [rp.replay(Environment({**env.cfg_dict, **m}), words, [0] * 4, p.insn_addr,
                            mc.DEFAULT_TIMING)[0]["cycle_count"]
                  for m in ({}, {"DRAM_LATENCY": 30}, {"DRAM_LATENCY": 30, "DRAM_MAX_OUTSTANDING": 1},
                            {"DRAM_LATENCY": 30, "DRAM_MAX_OUTSTANDING": 1, "DRAM_BYTES_PER_CYCLE": 1})]
    finally:
        p.close()
    assert cycles == sorted(cycles) and cycles[0] < cycles[-1]


def test_unknown_engine(env):
    import numpy as np

    with pytest.raises(ValueError, match="engine"):
        rp.replay(env, np.zeros((0, 2), np.int64), [0] * 4, 4096, mc.DEFAULT_TIMING, engine="fortran")
