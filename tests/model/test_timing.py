"""Timing formulas and the event-driven replay against numbers derived by hand.

Conventions used in the derivations (``hw/README.md`` and :mod:`vta.sim.model.costs`): a fetch
burst of m instructions requested at cycle t has its 2m beats on the read port from t+1, and
its instruction j (0-based) can be dispatched from t+4+2j (two cycles after its second beat), at
most one per cycle; the next burst is requested as soon as the 16-instruction buffer has room
for it (the cycle after the dispatch that makes room; the first two bursts at 0 and 1); a unit
starts an instruction the cycle after its dispatch; a no-op or FINISH takes 1 cycle (taken, decoded
and retired in one cycle); a GEMM or ALU of n > 0 micro-ops (immediate or tensor operand) takes
n + 2 (the take cycle, n issue cycles, the last micro-op's S1); a LOAD requests its first burst 2
cycles after its start, its first beat reaches the unit 5 cycles after the start with the ideal
memory, and it retires in the cycle after its last beat; a token pushed when an instruction
retires lets its consumer start in that cycle.
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
    # burst of 1: dispatch at 2 + 2 = 4, start 5, 1 cycle
    out = cycles(env, [isa.FinishInsn()])
    assert out["cycle_count"] == 5 + 1
    assert out["compute_busy_cycles"] == 1
    assert out["fetch_busy_cycles"] == 5  # 4 reading, 1 dispatching
    assert (out["fetch_retired"], out["compute_retired"], out["load_retired"]) == (1, 1, 0)


@pytest.mark.parametrize("n", [1, 16, 1000])
def test_long_gemm_is_uops_plus_overhead(env, n):
    # burst of 2: GEMM dispatched at 4, starts 5, takes n + 2; FINISH 1 more
    out = cycles(env, [s.gemm(n), isa.FinishInsn()])
    assert out["cycle_count"] == 5 + (n + 2) + 1
    assert out["compute_busy_cycles"] == (n + 2) + 1


@pytest.mark.parametrize("n", [1, 16, 300])
def test_alu_immediate_and_tensor(env, n):
    # the tensor operand is read on the accumulator's second read port: one uop per cycle too
    assert cycles(env, [s.alu(n, 1), isa.FinishInsn()])["cycle_count"] == 5 + (n + 2) + 1
    assert cycles(env, [s.alu(n, 0), isa.FinishInsn()])["cycle_count"] == 5 + (n + 2) + 1


def test_empty_loops(env):
    empty = isa.GemmInsn(reset_reg=0, uop_bgn=0, uop_end=1, iter_out=0, iter_in=4)
    # the empty GEMM (dispatched at 4) is a 1-cycle no-op at 5; FINISH (j = 1 of the burst) is
    # dispatched at 4 + 2, starts 7 and retires 1 later
    assert cycles(env, [empty, isa.FinishInsn()])["cycle_count"] == 4 + 2 + 1 + 1


def test_load_inp_beats_and_token(env):
    # 16 x 16 INP elements of INP_ELEM_BYTES: the LOAD is dispatched at 4 and starts at 5, its
    # beats reach the unit from start + 5, it retires in the cycle after the last one
    beats = 16 * 16 * env.INP_ELEM_BYTES // 8
    out = cycles(env, [s.mem(isa.OPCODE_LOAD, isa.MEM_INP, 16, 16, push_next_dep=1),
                       isa.FinishInsn(pop_prev_dep=1)])
    load_end = 5 + 5 + beats
    assert out["load_busy_cycles"] == load_end - 5
    assert out["cycle_count"] == load_end + 1
    assert out["compute_stall_cycles"] == load_end - 7  # FINISH, dispatched at 6, could start at 7


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
    # the store streams: 2 beats (cycles) per element of 16 B whatever the rows and bursts, plus
    # 5 (the take cycle, the first read and beat, the last ack); an empty store is a 1-cycle no-op
    if env.OUT_ELEM_BYTES != 16:
        pytest.skip("the derivation below is for 16-byte OUT elements (default configuration)")
    f = {"x_size": 16, "y_size": 16, "x_stride": 16, "dram_base": 64}
    assert mc.store_cycles(env, f) == 5 + 16 * 16 * 2
    assert mc.store_cycles(env, dict(f, x_stride=21, dram_base=3)) == 5 + 16 * 16 * 2
    assert mc.store_cycles(env, dict(f, x_size=0)) == 1


def test_fetch_bound_nops(env):
    # 63 no-ops rotating over load, compute and store + FINISH: fetch streams one instruction per
    # 2 cycles (instruction k dispatched at 4 + 2k: each burst is requested before the previous
    # one's beats end), and every unit gets one every 6 cycles, so fetch is the bound. FINISH
    # (k = 63) is dispatched at 130, starts 131 and retires at 132.
    nops = (isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_INP), s.nop_compute(),
            isa.MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT))
    out = cycles(env, [nops[k % 3] for k in range(63)] + [isa.FinishInsn()])
    assert out["cycle_count"] == 4 + 2 * 63 + 1 + 1
    assert out["fetch_busy_cycles"] == 4 + 2 * 63 + 1


def test_one_unit_nops_run_at_the_fetch_rate(env):
    # 64 compute no-ops + FINISH: the compute unit (1 cycle each) keeps up with fetch (2 cycles
    # each), so instruction k runs in the cycle after its dispatch at 4 + 2k; FINISH (k = 64)
    # starts at 5 + 2 * 64 and retires 1 later.
    out = cycles(env, [s.nop_compute() for _ in range(64)] + [isa.FinishInsn()])
    assert out["cycle_count"] == 5 + 2 * 64 + 1
    assert out["compute_busy_cycles"] == 65
    assert out["fetch_busy_cycles"] == 4 + 2 * 64 + 1


def test_shared_read_port(env):
    # In memory cycles (a beat returned at p reaches its unit at p + 2; a LOAD retires in the
    # cycle after that, so the unit is free at last beat + 4): the burst of 4 requested at 0 holds
    # the port for 8 beats (0..7) and dispatches at 4, 6, 8, 10. LOAD INP starts 5, requests at
    # 7, its beats follow the fetch's (from 8); it pushes l2g when it retires. LOAD ACC (x4 ACC
    # elements, compute unit) starts 7, requests at 9, its beats follow the INP's. Then the
    # no-op and FINISH, 1 cycle each.
    inp_beats = 16 * env.INP_ELEM_BYTES // 8
    acc_beats = 4 * env.ACC_ELEM_BYTES // 8
    insns = [s.mem(isa.OPCODE_LOAD, isa.MEM_INP, 1, 16, push_next_dep=1),
             s.mem(isa.OPCODE_LOAD, isa.MEM_ACC, 1, 4, dram_base=8),
             s.nop_compute(pop_prev_dep=1), isa.FinishInsn()]
    out = cycles(env, insns)
    inp_first = max(5 + 2, 8)
    inp_end = inp_first + inp_beats - 1 + 4
    acc_end = max(7 + 2, inp_first + inp_beats) + acc_beats - 1 + 4
    assert out["cycle_count"] == max(acc_end, inp_end) + 1 + 1


def test_initial_tokens_are_available_at_once(env):
    out = cycles(env, [isa.FinishInsn(pop_prev_dep=1)], tokens=(1, 0, 0, 0))
    assert out["cycle_count"] == 5 + 1 and out["compute_stall_cycles"] == 0


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
        # buffered fetch: dispatches at 4, 6, 8; the INP load starts at 5 and requests from 7
        # (beats from 7), the UOP load starts at 7 and its request at 9 wins over the INP's
        # third: its beat follows the INP's first two bursts, at 7 + 32 = 39. A load retires 4
        # cycles after its last beat (the beat reaches the unit 2 cycles later, is written the
        # cycle after, and the load retires in the next cycle).
        assert ends[1] == 39 + 4
        assert ends[0] == 7 + 129 - 1 + 4
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
    assert ideal["cycle_count"] == first_start + 5 + beats + 1


def test_dram_bandwidth_and_outstanding(env):
    # one 128-beat row at 4 bytes per cycle: the channel banks at most two beats of credit while
    # idle and earns half a beat per cycle
    insns = [s.mem(isa.OPCODE_LOAD, isa.MEM_INP, 1, 64, push_next_dep=1), isa.FinishInsn(pop_prev_dep=1)]
    if env.INP_ELEM_BYTES != 16:
        pytest.skip("the derivation below is for 16-byte INP elements (default configuration)")
    w = s.words(insns, env)
    ideal = time_stream(env, w, [0] * 4, ADDR)["load_busy_cycles"]
    half = time_stream(with_dram(env, DRAM_BYTES_PER_CYCLE=4), w, [0] * 4, ADDR)["load_busy_cycles"]
    # (5 cycles besides the beats: the request 2 cycles after the start, the beat 2 cycles after
    # the memory returns it, retirement in the cycle after it). At half the bandwidth: the fetch
    # burst (4 beats) used up the credit at cycle 4; by the request at 5 + 2 = 7 the channel has
    # banked 3 x 4 bytes, a beat and a half, so two beats come back to back, then one every
    # other cycle
    assert ideal == 128 + 5
    assert half == 2 + 2 * 126 + 5
    # latency 30 and one burst in flight: 8 bursts, each 29 cycles of latency and 16 beats,
    # the next one issued the cycle after the last beat of the one before
    one = time_stream(with_dram(env, DRAM_LATENCY=30, DRAM_MAX_OUTSTANDING=1), w, [0] * 4, ADDR)
    assert one["load_busy_cycles"] == 8 * (29 + 16) + 1 + 5 - 1



@pytest.mark.parametrize("with_stores", [False, True])
def test_full_compute_queue_dispatches_when_a_slot_frees(env, with_stores):
    # 600 GEMMs of 40 micro-ops (42 cycles each), each optionally followed by a store no-op, then
    # FINISH: GEMM k runs from 5 + 42k to 5 + 42(k + 1). Fetch (instruction i readable from 4 + 2i)
    # runs ahead until the compute queue holds 512 instructions; then an instruction is dispatched
    # in the cycle the one 512 places before it in its queue retires (and after the previous
    # dispatch): the recurrence below, with every instruction's end taken from the replay.
    depth, n = 512, 600
    store = isa.MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT)
    insns = []
    for _ in range(n):
        insns += [s.gemm(40)] + ([store] if with_stores else [])
    insns.append(isa.FinishInsn())
    counters, arr = _replay(env, s.words(insns, env), [0, 0, 0, 0], ADDR, mc.DEFAULT_TIMING)
    step = 2 if with_stores else 1
    dispatch, start, end = arr["dispatch"].tolist(), arr["start"].tolist(), arr["end"].tolist()
    for k in range(n):
        assert (start[step * k], end[step * k]) == (5 + 42 * k, 5 + 42 * (k + 1))
    queues = {"compute": [], "store": []}
    want = []
    for i, insn in enumerate(insns):
        q = queues["store" if insn is store else "compute"]
        d = 4 + 2 * i if i == 0 else max(want[-1] + 1, 4 + 2 * i)
        if len(q) >= depth:
            d = max(d, end[q[-depth]])
        q.append(i)
        want.append(d)
    assert dispatch == want
    assert dispatch[step * (n - 1)] == end[step * (n - 1 - depth)] == 5 + 42 * (n - depth)  # a full queue
    if with_stores:
        assert all(start[2 * k + 1] == dispatch[2 * k + 1] + 1 for k in range(n))
    assert counters["cycle_count"] == 5 + 42 * n + 1
    assert counters["compute_retired"] == n + 1
