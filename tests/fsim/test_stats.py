"""Statistics (upstream counting plus per-opcode counts and tokens) and the execution trace."""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.sim.device import STAT_KEYS
from vta.sim.fsim import FunctionalSimulator
from vta.testing.programs import ProgramBuilder


def _program(env, prog):
    inp = prog.buffer(nbytes=8 * env.INP_ELEM_BYTES)
    acc8 = prog.buffer(nbytes=8 * env.ACC_8BIT_ELEM_BYTES)
    out = prog.buffer(nbytes=8 * env.OUT_ELEM_BYTES)
    prog.load(isa.MEM_INP, 0, inp, 2, 3, pads=(1, 1, 1, 1), push_next_dep=1)     # 6 elements, pads not counted
    prog.nop(isa.STAGE_LOAD)
    prog.load(isa.MEM_ACC_8BIT, 0, acc8, 1, 4, pop_prev_dep=1)                   # counted x64 like upstream
    prog.uops([(0, 0, 0), (1, 1, 0), (2, 2, 0)])                                 # 3 uops
    prog.append(isa.GemmInsn(reset_reg=1, uop_bgn=0, uop_end=3, iter_out=2))     # resets do not count
    prog.append(isa.GemmInsn(uop_bgn=0, uop_end=2, iter_out=2, iter_in=3))       # 12
    prog.append(isa.AluInsn(uop_bgn=0, uop_end=1, iter_in=4, dst_factor_in=1, src_factor_in=1))  # 4
    prog.nop(isa.STAGE_COMPUTE, push_next_dep=1)
    prog.store(0, out, 2, 2, pop_prev_dep=1)                                     # 4 elements
    prog.nop(isa.STAGE_STORE, push_prev_dep=1)                                  # a token left over
    prog.finish()


def test_statistics_values(env, dram, sim):
    with ProgramBuilder(env, dram) as prog:
        _program(env, prog)
        addr, count = prog.build()
        sim.run(addr, count)
        stats = sim.stats()
        assert list(stats)[:7] == list(STAT_KEYS)
        assert stats == {
            "inp_load_nbytes": 6 * env.INP_ELEM_BYTES,
            "wgt_load_nbytes": 0,
            "acc_load_nbytes": 4 * env.ACC_ELEM_BYTES,
            "uop_load_nbytes": 12,
            "out_store_nbytes": 4 * env.BATCH * env.BLOCK_OUT * env.OUT_WIDTH // 8,
            "gemm_counter": 12,
            "alu_counter": 4,
            "insn_load": 3, "insn_store": 1, "insn_gemm": 2, "insn_alu": 1, "insn_finish": 1, "insn_nop": 3,
            "tokens_l2g": 0, "tokens_g2l": 0, "tokens_s2g": 1, "tokens_g2s": 0,
            "runs_failed": 0, "runs_with_tokens_left": 1, "runs_with_surplus_tokens": 0,
        }
        sim.run(addr, count)
        assert sim.stats()["gemm_counter"] == 24 and sim.stats()["tokens_s2g"] == 2
        assert sim.stats()["runs_with_surplus_tokens"] == 1  # the first token was held back
        sim.clear_stats()
        cleared = sim.stats()
        assert all(cleared[k] == 0 for k in cleared if not k.startswith("tokens_"))
        assert cleared["tokens_s2g"] == 2  # tokens are state, not counters


def test_trace_lists_executed_instructions_in_order(env, dram):
    with ProgramBuilder(env, dram) as prog:
        _program(env, prog)
        addr, count = prog.build()
        dev = FunctionalSimulator(env, dram, trace=True)
        dev.run(addr, count)
        assert [i for i, _, _ in dev.trace] == list(range(count))
        stages = [s for _, s, _ in dev.trace]
        assert stages[:3] == ["load", "load", "compute"] and stages[-3:] == ["store", "store", "compute"]
        assert dev.trace[0][2].startswith("LOAD INP") and "y_pad_0=1" in dev.trace[0][2]
        assert dev.trace[-1][2] == "FINISH"
        seeded = FunctionalSimulator(env, dram, seed=5, trace=True)
        seeded.run(addr, count)
        assert sorted(i for i, _, _ in seeded.trace) == list(range(count))
        assert FunctionalSimulator(env, dram).trace == []


def test_wide_stream_counts(env, dram, sim):
    """Counters are exact integers on a stream with many instructions."""
    with ProgramBuilder(env, dram) as prog:
        prog.uops([(0, 0, 0)])
        for _ in range(300):
            prog.append(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=7, iter_in=5))
        prog.finish()
        sim.run(*prog.build())
    assert sim.stats()["gemm_counter"] == 300 * 35
    assert sim.stats()["insn_gemm"] == 300
    np.testing.assert_array_equal(sim.sram.acc, 0)  # zero inputs after reset give zero sums


def test_engine_choice(env, dram):
    with pytest.raises(ValueError, match="engine must be 'auto', 'numpy' or 'jit', got 'fast'"):
        FunctionalSimulator(env, dram, engine="fast")
    assert FunctionalSimulator(env, dram, engine="numpy").engine == "numpy"


def test_engine_from_environment(env, dram, monkeypatch):
    """``VTA_FSIM_ENGINE`` picks the engine of ``engine="auto"`` (an explicit choice wins)."""
    monkeypatch.setenv("VTA_FSIM_ENGINE", "numpy")
    assert FunctionalSimulator(env, dram).engine == "numpy"
    monkeypatch.setenv("VTA_FSIM_ENGINE", "fast")
    with pytest.raises(ValueError, match="got 'fast'"):
        FunctionalSimulator(env, dram)
    assert FunctionalSimulator(env, dram, engine="numpy").engine == "numpy"
