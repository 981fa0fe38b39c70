"""Dependency tokens: persistence across runs, interleavings, missing dependencies."""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.errors import DeadlockError
from vta.sim.fsim import FunctionalSimulator
from vta.testing.programs import ProgramBuilder

from .conftest import run_both

TOKENS = ("tokens_l2g", "tokens_g2l", "tokens_s2g", "tokens_g2s")


def _tokens(dev):
    return [dev.stats()[k] for k in TOKENS]


def test_tokens_persist_across_runs_and_reset_clears_them(env, dram, sim):
    with ProgramBuilder(env, dram) as first, ProgramBuilder(env, dram) as second:
        first.nop(isa.STAGE_LOAD, push_next_dep=1)
        first.nop(isa.STAGE_STORE, push_prev_dep=1)
        first.finish()
        a = first.build()
        second.finish(pop_prev_dep=1, pop_next_dep=1)
        b = second.build()
        sim.run(*a)
        assert _tokens(sim) == [1, 0, 1, 0]
        sim.run(*b)  # consumes the tokens the first run left
        assert _tokens(sim) == [0, 0, 0, 0]
        sim.run(*a)
        sim.reset()
        assert _tokens(sim) == [0, 0, 0, 0]
        with pytest.raises(DeadlockError, match="l2g=0"):
            sim.run(*b)


def test_sram_persists_across_runs(env, dram, sim):
    with ProgramBuilder(env, dram) as p1, ProgramBuilder(env, dram) as p2:
        src = p1.buffer(np.arange(16, dtype="<i4").repeat(env.BATCH))
        p1.load(isa.MEM_ACC, 5, src, 1, 1)
        p1.finish()
        out = p2.buffer(nbytes=env.OUT_ELEM_BYTES)
        p2.nop(isa.STAGE_COMPUTE, push_next_dep=1)
        p2.store(5, out, 1, 1, pop_prev_dep=1, push_prev_dep=1)
        p2.finish(pop_next_dep=1)
        sim.run(*p1.build())
        sim.run(*p2.build())
        assert (
            dram.read(out, env.OUT_ELEM_BYTES) == np.arange(16, dtype="<i4").repeat(env.BATCH).astype(np.int8).tobytes()
        )
        sim.reset()
        sim.run(*p2.build())
        assert dram.read(out, env.OUT_ELEM_BYTES) == bytes(env.OUT_ELEM_BYTES)


def _pipeline(env, dram, tiles=6, rows=4, drop_war=False):
    """A double-buffered load -> GEMM -> store pipeline synchronised like the runtime does.

    With ``drop_war`` the load stage no longer waits for compute to release an input buffer.
    """
    rng = np.random.default_rng(3)
    prog = ProgramBuilder(env, dram)
    inp = prog.buffer(rng.integers(-128, 128, size=tiles * rows * env.INP_ELEM_BYTES, dtype=np.int8))
    wgt = prog.buffer(rng.integers(-128, 128, size=env.WGT_ELEM_BYTES, dtype=np.int8))
    out = prog.buffer(nbytes=tiles * rows * env.OUT_ELEM_BYTES)
    prog.load(isa.MEM_WGT, 100, wgt, 1, 1)
    prog.uops([(0, 0, 100), (rows, rows, 100)], sram_base=0)  # one kernel per buffer
    for t in range(tiles):
        b = t % 2
        prog.load(isa.MEM_INP, b * rows, inp + t * rows * env.INP_ELEM_BYTES, 1, rows,
                  pop_next_dep=int(t >= 2 and not drop_war), push_next_dep=1)
        loop = dict(uop_bgn=b, uop_end=b + 1, iter_out=rows, iter_in=1, dst_factor_out=1, src_factor_out=1)
        prog.append(isa.GemmInsn(reset_reg=1, pop_prev_dep=1, pop_next_dep=int(t >= 2), **loop))
        prog.append(isa.GemmInsn(**loop))
        prog.append(isa.AluInsn(alu_opcode=isa.ALU_SHR, use_imm=1, imm=6, **loop,
                                push_prev_dep=int(t + 2 < tiles and not drop_war), push_next_dep=1))
        prog.store(b * rows, out + t * rows * env.OUT_ELEM_BYTES, 1, rows, pop_prev_dep=1, push_prev_dep=1)
    prog.nop(isa.STAGE_COMPUTE, pop_next_dep=1)
    prog.nop(isa.STAGE_COMPUTE, pop_next_dep=1)
    prog.finish()
    return prog, out, tiles * rows * env.OUT_ELEM_BYTES


def test_random_interleavings_agree_with_deterministic_order(env, dram):
    prog, out, nbytes = _pipeline(env, dram)
    addr, count = prog.build()
    dev, ref, got, want = run_both(env, dram, [(out, nbytes)], addr, count)
    assert got == want and any(got[0])
    orders = set()
    for seed in range(8):
        dram.write(out, bytes(nbytes))
        rnd = FunctionalSimulator(env, dram, seed=seed, trace=True)
        rnd.run(addr, count)
        assert dram.read(out, nbytes) == got[0]
        orders.add(tuple(i for i, _, _ in rnd.trace))
        assert rnd.stats()["tokens_s2g"] == 0 and rnd.stats()["tokens_g2l"] == 0
    assert len(orders) > 1  # the seeds really interleave the stages differently
    prog.close()


def test_missing_dependency_is_observable_under_some_seed(env, dram):
    """Without the WAR tokens a load may overwrite an input buffer before compute has read it."""
    prog, out, nbytes = _pipeline(env, dram, drop_war=True)
    addr, count = prog.build()
    dev, ref, got, want = run_both(env, dram, [(out, nbytes)], addr, count)
    assert got == want  # the deterministic order runs the stream as written
    differs = []
    for seed in range(40):
        dram.write(out, bytes(nbytes))
        FunctionalSimulator(env, dram, seed=seed).run(addr, count)
        differs.append(dram.read(out, nbytes) != got[0])
    assert any(differs)
    prog.close()
