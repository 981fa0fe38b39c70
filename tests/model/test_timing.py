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
from vta.env import Environment
from vta.sim.model.simulator import _replay, time_stream

from . import streams as s

ADDR = 4096  # a page-aligned stream: bursts of 8


def cycles(env, insns, tokens=(0, 0, 0, 0)):
    return time_stream(env, s.words(insns, env), list(tokens), ADDR)


def with_dram(env, **keys):
    """``env`` with DRAM keys added."""
    return Environment({**env.cfg_dict, **keys})


def test_finish_alone(env):
    # burst of 1: dispatch at 2 + 2 = 4, start 5, 3 cycles
    out = cycles(env, [isa.FinishInsn()])
    assert out["cycle_count"] == 8
    assert out["compute_busy_cycles"] == 3
    assert out["fetch_busy_cycles"] == 5  # 4 reading, 1 dispatching
    assert (out["fetch_retired"], out["compute_retired"], out["load_retired"]) == (1, 1, 0)


@pytest.mark.parametrize("n", [1, 16, 1000])
def test_long_gemm_is_uops_plus_overhead(env, n):
    # burst of 2: GEMM dispatched at 6, starts 7, takes n + 6; FINISH 3 more
    out = cycles(env, [s.gemm(n), isa.FinishInsn()])
    assert out["cycle_count"] == 7 + (n + 6) + 3
    assert out["compute_busy_cycles"] == (n + 6) + 3


@pytest.mark.parametrize("n", [1, 16, 300])
def test_alu_immediate_and_tensor(env, n):
    assert cycles(env, [s.alu(n, 1), isa.FinishInsn()])["cycle_count"] == 7 + (n + 6) + 3
    assert cycles(env, [s.alu(n, 0), isa.FinishInsn()])["cycle_count"] == 7 + (2 * n + 5) + 3


def test_empty_loops(env):
    empty = isa.GemmInsn(reset_reg=0, uop_bgn=0, uop_end=1, iter_out=0, iter_in=4)
    assert cycles(env, [empty, isa.FinishInsn()])["cycle_count"] == 7 + 3 + 3


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


def test_requests_are_served_in_request_order(env):
    # A burst of 3 (6 beats) dispatches at 8, 9, 10. LOAD INP of 64 elements (8 bursts of 16
    # beats) starts at 9 and requests at 12, 13, ...; the LOAD UOP starts at 10 and requests at
    # 13, where it wins the arbiter (lower client number): its beat follows the INP's first burst
    # (memory cycles 12..27), at 28, and it retires 5 cycles after its last beat, at 33, long
    # before the INP load, whose 128 beats end at memory cycle 12 + 129 - 1.
    if env.INP_ELEM_BYTES != 16:
        pytest.skip("the derivation below is for 16-byte INP elements (default configuration)")
    insns = [s.mem(isa.OPCODE_LOAD, isa.MEM_INP, 1, 64, push_next_dep=1),
             s.mem(isa.OPCODE_LOAD, isa.MEM_UOP, 1, 1, dram_base=8),
             isa.FinishInsn(pop_prev_dep=1)]
    events = []
    _replay(env, s.words(insns, env), [0, 0, 0, 0], ADDR, mc.DEFAULT_TIMING, events)
    ends = {e[2]: e[5] for e in events if e[0] == "insn"}
    if getattr(mc, "FETCH_BUFFER_INSNS", 0):
        # buffered fetch: dispatches at 4, 6, 8; INP requests from 8 (beats from 8), the UOP
        # request at 10 follows the INP's first two bursts: its beat at 40
        assert ends[1] == 40 + 5
        assert ends[0] == 8 + 129 - 1 + 5
    else:
        assert ends[1] == 28 + 5
        assert ends[0] == 12 + 129 - 1 + 5


def test_dram_latency_delays_the_first_beat(env):
    # the LOAD of test_load_inp_beats_and_token with a memory of latency 40: 39 cycles later
    beats = 16 * 16 * env.INP_ELEM_BYTES // 8
    insns = [s.mem(isa.OPCODE_LOAD, isa.MEM_INP, 16, 16, push_next_dep=1), isa.FinishInsn(pop_prev_dep=1)]
    ideal = time_stream(env, s.words(insns, env), [0] * 4, ADDR)
    slow = time_stream(with_dram(env, DRAM_LATENCY=40), s.words(insns, env), [0] * 4, ADDR)
    # the fetch burst pays the latency too (39 more cycles before the first dispatch)
    assert slow["cycle_count"] == ideal["cycle_count"] + 39 + 39
    first_start = 5 if getattr(mc, "FETCH_BUFFER_INSNS", 0) else 7  # a buffered fetch dispatches sooner
    assert ideal["cycle_count"] == first_start + 6 + beats + 1 + 3


def test_dram_bandwidth_and_outstanding(env):
    # one 128-beat row at 4 bytes per cycle: the channel banked two beats of credit while idle and
    # earns half a beat per cycle, so the first three beats come back to back, then one every
    # other cycle
    insns = [s.mem(isa.OPCODE_LOAD, isa.MEM_INP, 1, 64, push_next_dep=1), isa.FinishInsn(pop_prev_dep=1)]
    if env.INP_ELEM_BYTES != 16:
        pytest.skip("the derivation below is for 16-byte INP elements (default configuration)")
    w = s.words(insns, env)
    ideal = time_stream(env, w, [0] * 4, ADDR)["load_busy_cycles"]
    half = time_stream(with_dram(env, DRAM_BYTES_PER_CYCLE=4), w, [0] * 4, ADDR)["load_busy_cycles"]
    assert ideal == 128 + 7
    assert half == 3 + 2 * 125 + 7
    # latency 30 and one burst in flight: 8 bursts, each 29 cycles of latency and 16 beats,
    # the next one issued the cycle after the last beat of the one before
    one = time_stream(with_dram(env, DRAM_LATENCY=30, DRAM_MAX_OUTSTANDING=1), w, [0] * 4, ADDR)
    assert one["load_busy_cycles"] == 8 * (29 + 16) + 1 + 7 - 1
