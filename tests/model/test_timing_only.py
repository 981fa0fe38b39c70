"""The timing-only cycle model (``CycleModel(..., functional=False)``) and the compiled decoder.

Oracle: the full model (fsim's execution plus the timing replay) on the same streams, and
:func:`vta.sim.model.replay.prepare` (the NumPy decode) for the compiled one; tsim itself is the
oracle of ``test_vs_tsim.py``, where the timing-only model is compared too.
"""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.env import Environment
from vta.errors import DeadlockError, DRAMAccessError, InvalidInstructionError, SRAMIndexError, VTAError
from vta.sim.model import CycleModel, Timing
from vta.sim.model import costs as mc
from vta.sim.model import replay as rp
from vta.testing.malformed import KINDS, malformed_program
from vta.testing.programs import ProgramBuilder, random_program

MEMORIES = [{}, {"DRAM": "ddr4"}, {"DRAM_LATENCY": 12, "DRAM_BYTES_PER_CYCLE": 3, "DRAM_MAX_OUTSTANDING": 2}]
TOKENS = ("tokens_l2g", "tokens_g2l", "tokens_s2g", "tokens_g2s")


def _words(dram, addr, count):
    return dram.data[addr:addr + 16 * count].copy().view("<i8").reshape(count, 2)


@pytest.mark.parametrize("memory", range(len(MEMORIES)))
def test_random_programs_time_as_on_the_full_model(any_env, dram, memory):
    e = Environment({**any_env.cfg_dict, **MEMORIES[memory]})
    with CycleModel(e, dram) as full, CycleModel(e, dram, functional=False) as fast:
        for seed in range(12):
            p = random_program(e, dram, seed, length=48)
            try:
                full.run(p.insn_addr, p.insn_count)
                fast.run(p.insn_addr, p.insn_count)
            finally:
                p.close()
            assert fast.last_run == full.last_run, seed
        # every counter: cycles, per-unit figures, fsim's instruction and byte counters, tokens
        assert fast.stats() == full.stats()


def test_timing_only_executes_nothing(env, dram):
    p = random_program(env, dram, 3, length=32)
    try:
        p.clear_outputs()
        cleared = p.read_outputs()
        with CycleModel(env, dram, functional=False) as fast:
            fast.run(p.insn_addr, p.insn_count)
            assert fast.stats()["cycle_count"] > 0
        assert p.read_outputs() == cleared
        with CycleModel(env, dram) as full:
            full.run(p.insn_addr, p.insn_count)
        assert p.read_outputs() != cleared  # (the program does write its outputs)
    finally:
        p.close()


def test_tokens_left_by_one_run_are_lent_to_the_next(env, dram):
    # a first stream leaves a g2l token the second pops (the runtime's pending pop)
    streams = []
    for pop_first in (0, 1):
        b = ProgramBuilder(env, dram)
        inp = b.buffer(nbytes=16 * env.INP_ELEM_BYTES)
        b.load(isa.MEM_INP, 0, inp, 1, 4, pop_next_dep=pop_first, push_next_dep=1)
        b.append(isa.GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=4, dst_factor_out=1, pop_prev_dep=1,
                              push_prev_dep=1))
        b.finish()
        streams.append(b)
    with CycleModel(env, dram) as full, CycleModel(env, dram, functional=False) as fast:
        for b in streams:
            addr, count = b.build()
            full.run(addr, count)
            fast.run(addr, count)
            assert fast.last_run == full.last_run
            assert [fast.stats()[k] for k in TOKENS] == [full.stats()[k] for k in TOKENS]
        assert fast.stats() == full.stats()
    for b in streams:
        b.close()


@pytest.mark.parametrize("kind", list(KINDS))
def test_damaged_streams_fail_as_before_execution(env, dram, kind):
    """fsim's pre-execution errors are the timing-only model's; what fsim finds only while
    executing (GEMM/ALU indices read from micro-ops) lets the timing-only run complete."""
    with CycleModel(env, dram) as full, CycleModel(env, dram, functional=False) as fast:
        for seed in range(3):
            bad = malformed_program(env, dram, seed, kind)
            outcome = {}
            try:
                for name, dev in (("full", full), ("fast", fast)):
                    dev.clear_stats()
                    try:
                        dev.run(bad.insn_addr, bad.insn_count)
                        outcome[name] = "ran"
                    except VTAError as exc:
                        outcome[name] = type(exc).__name__
            finally:
                bad.close()
            if outcome["full"] == SRAMIndexError.__name__ and outcome["fast"] == "ran":
                continue
            assert outcome["fast"] == outcome["full"], (kind, seed)
            a, b = fast.stats(), full.stats()
            if outcome["full"] == "ran":
                assert a == b, (kind, seed)
            else:
                assert [a[k] for k in TOKENS + ("runs_failed",)] == [b[k] for k in TOKENS + ("runs_failed",)]


def test_errors_of_an_invalid_stream(env, dram):
    with CycleModel(env, dram, functional=False) as fast:
        with ProgramBuilder(env, dram) as b:  # no FINISH
            b.append(isa.GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=1))
            with pytest.raises(DeadlockError, match="FINISH"):
                fast.run(*b.build())
        with ProgramBuilder(env, dram) as b:  # a LOAD outside every allocation
            b.append(isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_INP, dram_base=(1 << 27),
                                 y_size=1, x_size=1, x_stride=1))
            b.finish()
            with pytest.raises(DRAMAccessError):
                fast.run(*b.build())
        with ProgramBuilder(env, dram) as b:  # pop_prev_dep on a load-stage instruction
            inp = b.buffer(nbytes=env.INP_ELEM_BYTES)
            b.load(isa.MEM_INP, 0, inp, 1, 1, pop_prev_dep=1)
            b.finish()
            with pytest.raises(InvalidInstructionError, match="pop_prev_dep"):
                fast.run(*b.build())
        assert fast.stats()["runs_failed"] == 3 and fast.stats()["cycle_count"] == 0
        with pytest.raises(DeadlockError, match="0 instructions"):
            fast.run(4096, 0)
        with pytest.raises(ValueError, match="insn_count"):
            fast.run(4096, -1)


@pytest.mark.parametrize("bad", ["no", 0, 1, None, 2.0])
def test_functional_must_be_a_bool(env, dram, bad):
    with pytest.raises(TypeError, match="functional must be True .* or False"):
        CycleModel(env, dram, functional=bad)


def test_trace_needs_execution(env, dram):
    with pytest.raises(ValueError, match="trace=True .* functional=False"):
        CycleModel(env, dram, functional=False, trace=True)


def test_a_compiled_workload_times_as_on_the_full_model(env):
    from vta.dram import global_dram
    from vta.dse import workloads as wl

    counts = {}
    for functional in (True, False):
        with CycleModel(env, global_dram(), functional=functional) as dev:
            stats = wl.run(wl.get("alu.chain"), env, dev)
        stats.pop("outputs")
        counts[functional] = stats
    assert counts[False] == counts[True]
    assert counts[True]["cycle_count"] > 0


# --------------------------------------------------------------------- the compiled decoder
@pytest.mark.skipif(rp.compiled() is None, reason="numba is not installed")
@pytest.mark.parametrize("timing", [Timing(), Timing(store_per_row=2, store_ack=3, overhead=4, pipe_fill=2)])
def test_compiled_decoder_matches_prepare(any_env, dram, timing):

    decode = rp._DECODE
    fields, elem = rp._tables(any_env)
    params = rp._cost_params(any_env, timing)
    assert params is not None
    for seed in range(6):
        p = random_program(any_env, dram, seed, length=60)
        try:
            words = _words(dram, p.insn_addr, p.insn_count)
        finally:
            p.close()
        want = rp.prepare(any_env, words, timing)
        cols = np.empty((len(rp._ROWS), words.shape[0]), np.int64)
        assert decode(words, fields, elem, params, cols) == 0
        loads = want["cost"] < 0  # (the transfer rows are written for LOADs with data only)
        for r, name in enumerate(rp._ROWS):
            sel = loads if r >= rp._ROWS.index("client") else slice(None)
            assert cols[r][sel].tolist() == want[name][sel].tolist(), (seed, name)
        assert loads.any()


def _per_iteration(opcode, f, timing=mc.DEFAULT_TIMING):
    """A compute cost with a per-outer-iteration term: no closed form of the decoder fits it."""
    return _PLAIN(opcode, f, timing) + 5 * int(f["iter_out"])


def _by_alu_opcode(opcode, f, timing=mc.DEFAULT_TIMING):
    """A compute cost reading a field the decoder's closed forms do not have."""
    return _PLAIN(opcode, f, timing) + (int(f["alu_opcode"]) if opcode == isa.OPCODE_ALU else 0)


_PLAIN = mc.compute_cycles


def test_cost_rules_reading_other_fields_are_not_fitted(env, monkeypatch):
    monkeypatch.setattr(mc, "compute_cycles", _by_alu_opcode)
    assert rp._cost_params(env, mc.DEFAULT_TIMING) is None


def test_cost_rules_of_another_shape_fall_back_to_prepare(env, dram, monkeypatch):
    monkeypatch.setattr(mc, "compute_cycles", _per_iteration)
    assert rp._cost_params(env, mc.DEFAULT_TIMING) is None
    p = random_program(env, dram, 2, length=40)
    try:
        words = _words(dram, p.insn_addr, p.insn_count)
    finally:
        p.close()
    fast, fa = rp.replay(env, words, [0] * 4, p.insn_addr, mc.DEFAULT_TIMING)
    slow, sa = rp.replay(env, words, [0] * 4, p.insn_addr, mc.DEFAULT_TIMING, engine="python")
    assert fast == slow and fa["end"].tolist() == sa["end"].tolist()


def test_a_flag_on_a_missing_channel_is_named(env):
    from tests.model import streams

    words = streams.words([isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_INP, y_size=1, x_size=1,
                                       x_stride=1, push_prev_dep=1), isa.FinishInsn()], env)
    for engine in ("auto", "python"):
        with pytest.raises(InvalidInstructionError, match="push_prev_dep"):
            rp.replay(env, words, [0] * 4, 4096, mc.DEFAULT_TIMING, engine=engine)


def test_a_design_point_on_the_timing_only_level():
    """The DSE level ``model-timing`` gives the ``model`` level's row, without an output digest."""
    from vta.dse.evaluate import Point, evaluate, release_devices
    from vta.dse.space import shipped_config

    cfg = shipped_config(None)
    try:
        rows = {level: evaluate(Point.make(cfg, "resnet18.C11", level)) for level in ("model", "model-timing")}
    finally:
        release_devices()
    full, fast = rows["model"], rows["model-timing"]
    assert full["status"] == fast["status"] == "ok", rows
    assert full["key"] != fast["key"]  # cached apart
    assert fast["output_digest"] == "" and full["output_digest"]
    for key in ("cycles", "macs", "bytes_moved", "insn_count", "gemm_counter", "alu_counter", "utilisation"):
        assert fast[key] == full[key], key


def test_a_stream_run_again_after_its_buffers_change_is_checked_again(env, dram):
    """The timing-only run keeps a checked stream's words from run to run; once an allocation is
    freed, the same stream at the same address fails as fsim says (oracle: fsim's own run)."""
    from vta.sim.fsim import FunctionalSimulator

    def outcome(dev, addr, count):
        try:
            dev.run(addr, count)
        except VTAError as exc:
            return type(exc).__name__, str(exc)
        return "ran", None

    with CycleModel(env, dram, functional=False) as fast, FunctionalSimulator(env, dram) as fsim:
        b = ProgramBuilder(env, dram)
        inp = b.buffer(nbytes=4 * env.INP_ELEM_BYTES)
        b.load(isa.MEM_INP, 0, inp, 1, 4, push_next_dep=1)
        b.nop(isa.STAGE_COMPUTE, pop_prev_dep=1)
        b.finish()
        addr, count = b.build()
        assert outcome(fast, addr, count) == outcome(fsim, addr, count) == ("ran", None)
        # the data buffer the LOAD reads goes: the LOAD is now outside every allocation
        b._allocs.remove(inp)
        dram.free(inp)
        want = outcome(fsim, addr, count)
        assert want[0] == "DRAMAccessError"
        assert outcome(fast, addr, count) == want
        # the stream's own buffer goes: reading it fails before anything is decoded
        b.close()
        want = outcome(fsim, addr, count)
        assert want[0] == "DRAMAccessError"
        assert outcome(fast, addr, count) == want


def test_a_stream_run_again_reuses_its_scan_only_while_its_words_stay(env, dram):
    """The same stream run again on a timing-only device skips the compiled scan (its decode and
    checks are kept); a word rewritten in place between runs is noticed. Oracle: a fresh device
    for every run."""
    if rp.compiled() is None:
        pytest.skip("numba is not installed")

    def alone(addr, count):
        with CycleModel(env, dram, functional=False) as dev:
            dev.run(addr, count)
            return dev.stats()

    with ProgramBuilder(env, dram) as b, CycleModel(env, dram, functional=False) as dev:
        b.uops([(0, 0, 0)], sram_base=0)
        gemm = b.append(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=3, iter_in=5))
        b.finish()
        addr, count = b.build()
        want = alone(addr, count)
        for k in range(3):
            dev.clear_stats()
            dev.run(addr, count)
            assert dev._io[rp.IO_REUSED] == (k > 0)
            assert dev.stats() == want
        # a longer GEMM written over the first one: a different stream at the same place
        words = isa.encode_words(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=30, iter_in=5), env)
        dram.write(addr + 16 * gemm, np.array(words, dtype="<u8").tobytes())
        want2 = alone(addr, count)
        assert want2["cycle_count"] > want["cycle_count"] and want2["gemm_counter"] == 10 * want["gemm_counter"]
        dev.clear_stats()
        dev.run(addr, count)
        assert dev._io[rp.IO_REUSED] == 0
        assert dev.stats() == want2
