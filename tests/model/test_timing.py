"""Timing formulas and the event-driven replay against numbers derived by hand.

Conventions used in the derivations (``hw/README.md`` and :mod:`vta.sim.model.costs`): a fetch
burst of m instructions starting at cycle t has its 2m beats on the read port from t+1, its first
dispatch at t+2+2m and one dispatch per cycle after; a unit starts an instruction the cycle
after its dispatch; a no-op or FINISH takes 3 cycles; a token pushed when an instruction retires
lets its consumer start in that cycle.
"""

from __future__ import annotations

import pytest

from vta import isa
from vta.sim.model import costs as mc
from vta.sim.model.simulator import _ReadPort, time_stream

from . import streams as s

ADDR = 4096  # a page-aligned stream: bursts of 8


def cycles(env, insns, tokens=(0, 0, 0, 0)):
    return time_stream(env, s.words(insns, env), list(tokens), ADDR)


def test_finish_alone(env):
    # burst of 1: dispatch at 2 + 2 = 4, start 5, 3 cycles
    out = cycles(env, [isa.FinishInsn()])
    assert out["cycle_count"] == 8
    assert out["compute_busy_cycles"] == 3
    assert out["fetch_busy_cycles"] == 5  # 4 reading, 1 dispatching
    assert (out["fetch_retired"], out["compute_retired"], out["load_retired"]) == (1, 1, 0)


@pytest.mark.parametrize("n", [1, 16, 1000])
def test_long_gemm_is_uops_plus_overhead(env, n):
    # burst of 2: GEMM dispatched at 6, starts 7, takes n + 8; FINISH 3 more
    out = cycles(env, [s.gemm(n), isa.FinishInsn()])
    assert out["cycle_count"] == 7 + (n + 8) + 3
    assert out["compute_busy_cycles"] == (n + 8) + 3


@pytest.mark.parametrize("n", [1, 16, 300])
def test_alu_immediate_and_tensor(env, n):
    assert cycles(env, [s.alu(n, 1), isa.FinishInsn()])["cycle_count"] == 7 + (n + 8) + 3
    assert cycles(env, [s.alu(n, 0), isa.FinishInsn()])["cycle_count"] == 7 + (2 * n + 7) + 3


def test_empty_loops(env):
    empty = isa.GemmInsn(reset_reg=0, uop_bgn=0, uop_end=1, iter_out=0, iter_in=4)
    assert cycles(env, [empty, isa.FinishInsn()])["cycle_count"] == 7 + 5 + 3


def test_load_inp_beats_and_token(env):
    # 16 x 16 INP elements of INP_ELEM_BYTES: beats on the port from start + 6, retire 1 later
    beats = 16 * 16 * env.INP_ELEM_BYTES // 8
    out = cycles(env, [s.mem(isa.OPCODE_LOAD, isa.MEM_INP, 16, 16, push_next_dep=1),
                       isa.FinishInsn(pop_prev_dep=1)])
    load_end = 7 + 6 + beats + 1
    assert out["load_busy_cycles"] == load_end - 7
    assert out["cycle_count"] == load_end + 3
    assert out["compute_stall_cycles"] == load_end - 8  # FINISH could start at 8


def test_load_padding(env):
    # 4 x 4 with one pad on every side: 20 pad elements, 2 pad rows, fixed 3
    f = {"x_size": 4, "y_size": 4, "y_pad_0": 1, "y_pad_1": 1, "x_pad_0": 1, "x_pad_1": 1}
    assert mc.load_pad_cycles(f) == 20 + 2 * 2 + 3
    assert mc.load_pad_cycles(dict(f, y_pad_0=0, y_pad_1=0, x_pad_0=0, x_pad_1=0)) == 0


def test_uop_beats_round_out(env):
    # micro-ops are 4 bytes: 3 uops from an odd index cover bytes 4..16 -> 2 beats
    f = {"memory_type": isa.MEM_UOP, "dram_base": 1, "y_size": 1, "x_size": 3, "x_stride": 3}
    assert mc.load_beats(env, f) == 2
    assert mc.load_beats(env, dict(f, dram_base=0, x_size=256)) == 128


def test_store_formula(env):
    # per row: 1 + 3 per element (1 acc read + 2 beats of 16 B) + 2 per burst (128-byte blocks)
    if env.OUT_ELEM_BYTES != 16:
        pytest.skip("the derivation below is for 16-byte OUT elements (default configuration)")
    f = {"x_size": 16, "y_size": 16, "x_stride": 16, "dram_base": 64}
    assert mc.store_cycles(env, f) == 3 + 16 * (1 + 16 * 3 + 2 * 2)
    assert mc.store_cycles(env, dict(f, x_size=0)) == 3


def test_fetch_bound_nops(env):
    # 64 compute no-ops + FINISH: 8 bursts of 8 (26 cycles each: 2 + 16 reading, 8 dispatching),
    # burst k's no-ops run from 26k + 19 to 26k + 43; the last burst (FINISH) starts at 208,
    # dispatches at 212, and FINISH waits for the compute unit until 7 * 26 + 43 = 225.
    out = cycles(env, [s.nop_compute() for _ in range(64)] + [isa.FinishInsn()])
    assert out["cycle_count"] == 225 + 3
    assert out["fetch_busy_cycles"] == 8 * 26 + 5


def test_shared_read_port(env):
    # burst of 4 takes the port for 8 beats (1..9), dispatches at 10, 11, 12, 13.
    # LOAD INP (32 beats) starts 11, beats from 17 to 49, retires 50 and pushes l2g.
    # LOAD ACC (x4 ACC elements) starts 12, wants the port from 18, gets it from 49.
    inp_beats = 16 * env.INP_ELEM_BYTES // 8
    acc_beats = 4 * env.ACC_ELEM_BYTES // 8
    insns = [s.mem(isa.OPCODE_LOAD, isa.MEM_INP, 1, 16, push_next_dep=1),
             s.mem(isa.OPCODE_LOAD, isa.MEM_ACC, 1, 4, dram_base=8),
             s.nop_compute(pop_prev_dep=1), isa.FinishInsn()]
    out = cycles(env, insns)
    inp_end = 17 + inp_beats + 1
    acc_end = max(18, 17 + inp_beats) + acc_beats + 1
    assert out["cycle_count"] == max(acc_end, inp_end) + 3 + 3


def test_initial_tokens_are_available_at_once(env):
    out = cycles(env, [isa.FinishInsn(pop_prev_dep=1)], tokens=(1, 0, 0, 0))
    assert out["cycle_count"] == 8 and out["compute_stall_cycles"] == 0


def test_read_port_fills_gaps():
    port = _ReadPort()
    assert port.take(10, 5) == 15
    assert port.take(0, 4) == 4       # before the reservation
    assert port.take(2, 10) == 19     # 4..10 free (6 beats), skip 10..15, then 15..19
    assert port.take(0, 1) == 20      # everything up to 19 is taken
    assert port.starts == [0] and port.ends == [20]
