"""Per-opcode semantics: hand-written programs on fsim against the scalar oracle."""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.sim.fsim import FunctionalSimulator
from vta.testing.programs import ProgramBuilder

from .conftest import assert_same_state, run_both

PADS = (1, 2, 2, 1)


def _data(env, rng, mt, n):
    return rng.integers(0, 256, size=n * env.elem_bytes(mt), dtype=np.uint8)


def _compare(env, dram, prog, outputs=(), engine="numpy", **options):
    addr, count = prog.build()
    dev, ref, got, want = run_both(env, dram, list(outputs), addr, count, engine=engine, **options)
    assert got == want
    assert_same_state(dev, ref)
    stats = dev.stats()
    for key, value in ref.stats.items():
        assert stats[key] == value, key
    return dev, ref, got


@pytest.mark.parametrize("mt", [isa.MEM_UOP, isa.MEM_WGT, isa.MEM_INP, isa.MEM_ACC, isa.MEM_ACC_8BIT])
def test_load_with_stride_and_padding(any_env, dram, mt, engine):
    rng = np.random.default_rng(mt)
    with ProgramBuilder(any_env, dram) as prog:
        src = prog.buffer(_data(any_env, rng, mt, 40))
        prog.load(mt, 3, src + 2 * any_env.elem_bytes(mt), y_size=3, x_size=4, x_stride=7, pads=PADS)
        prog.load(mt, 60, src, y_size=2, x_size=5, x_stride=5)  # no padding
        prog.load(mt, 80, src, y_size=0, x_size=2, pads=(1, 1, 0, 0))  # only pad rows are written
        prog.finish()
        dev, ref, _ = _compare(any_env, dram, prog, engine=engine)
    if mt == isa.MEM_INP:  # padding is zero, data lands at sram_base + yy*W + xx
        w = PADS[2] + 4 + PADS[3]
        assert not dev.sram.inp[3:3 + w].any()
        assert dev.sram.inp[3 + w + PADS[2]].any()


def test_acc_8bit_sign_extends(env, dram, engine):
    with ProgramBuilder(env, dram) as prog:
        src = prog.buffer(np.array([0x80, 0x7F, 0xFF, 0x01] * (env.ACC_8BIT_ELEM_BYTES // 4), dtype=np.uint8))
        prog.load(isa.MEM_ACC_8BIT, 0, src, 1, 1)
        prog.finish()
        dev, _, _ = _compare(env, dram, prog, engine=engine)
    assert dev.sram.acc[0].reshape(-1)[:4].tolist() == [-128, 127, -1, 1]


def test_store_writes_low_bits_of_acc(any_env, dram, engine):
    rng = np.random.default_rng(1)
    lanes = any_env.BATCH * any_env.BLOCK_OUT
    vals = rng.integers(-(1 << 31), 1 << 31, size=6 * lanes).astype("<i4")
    with ProgramBuilder(any_env, dram) as prog:
        src = prog.buffer(vals)
        out = prog.buffer(nbytes=12 * any_env.OUT_ELEM_BYTES)
        prog.load(isa.MEM_ACC, 0, src, 1, 6, push_next_dep=1)
        prog.store(0, out, y_size=2, x_size=3, x_stride=5, pop_prev_dep=1, push_prev_dep=1)
        prog.finish(pop_next_dep=1)
        _, _, got = _compare(any_env, dram, prog, [(out, 12 * any_env.OUT_ELEM_BYTES)], engine)
    # independent NumPy check of the first element (8-bit outputs only)
    if any_env.OUT_WIDTH == 8:
        assert got[0][:lanes] == vals[:lanes].astype(np.int8).tobytes()


# (dst_out, dst_in, src_out, src_in, wgt_out, wgt_in): every role a loop level can play
FACTORS = [
    (1, 0, 1, 0, 0, 0),   # rows: dst and src move, weights fixed
    (0, 0, 1, 1, 2, 1),   # reduction over both levels into one row
    (3, 1, 0, 0, 1, 0),   # columns (weights) and a dst-only level
    (1, 1, 1, 1, 1, 1),   # batch: everything moves, rows repeat (non-injective dst)
    (2, 0, 1, 0, 0, 1),   # rows outer, reduction over weights only... inner level moves wgt only
    (0, 0, 0, 0, 0, 0),   # pure repetition
    (0, 1, 2, 0, 0, 0),   # src-only outer level (a sum of inputs)
    (4, 1, 2, 1, 1, 0),
]


@pytest.mark.parametrize("factors", FACTORS)
def test_gemm_loop_nest_single_uop(env, dram, factors, engine):
    _gemm_case(env, dram, factors, n_uops=1, iters=(3, 4), engine=engine)


@pytest.mark.parametrize("n_uops, iters", [(3, (2, 2)), (20, (1, 1)), (5, (4, 3))])
def test_gemm_many_uops(any_env, dram, n_uops, iters, engine):
    _gemm_case(any_env, dram, (2, 1, 1, 2, 1, 1), n_uops=n_uops, iters=iters, engine=engine)


def _gemm_case(env, dram, factors, n_uops, iters, engine):
    rng = np.random.default_rng(n_uops * 31 + sum(factors))
    dfo, dfi, sfo, sfi, wfo, wfi = factors
    uops = [isa.Uop(int(rng.integers(0, 8)), int(rng.integers(0, 8)), int(rng.integers(0, 8)))
            for _ in range(n_uops)]
    with ProgramBuilder(env, dram) as prog:
        inp = prog.buffer(_data(env, rng, isa.MEM_INP, 32))
        wgt = prog.buffer(_data(env, rng, isa.MEM_WGT, 32))
        acc = prog.buffer(rng.integers(-1000, 1000, size=32 * env.BATCH * env.BLOCK_OUT).astype("<i4"))
        prog.load(isa.MEM_INP, 0, inp, 1, 32)
        prog.load(isa.MEM_WGT, 0, wgt, 1, 32, push_next_dep=1)
        prog.load(isa.MEM_ACC, 0, acc, 1, 32, pop_prev_dep=1)
        prog.uops(uops, sram_base=100)
        prog.append(isa.GemmInsn(uop_bgn=100, uop_end=100 + n_uops, iter_out=iters[0], iter_in=iters[1],
                                 dst_factor_out=dfo, dst_factor_in=dfi, src_factor_out=sfo, src_factor_in=sfi,
                                 wgt_factor_out=wfo, wgt_factor_in=wfi))
        prog.append(isa.GemmInsn(reset_reg=1, uop_bgn=100, uop_end=101, iter_out=2, iter_in=1, dst_factor_out=9))
        prog.finish()
        dev, _, _ = _compare(env, dram, prog, engine=engine)
    assert dev.stats()["gemm_counter"] == iters[0] * iters[1] * n_uops


def test_gemm_accumulation_wraps_at_32_bits(env, dram, engine):
    with ProgramBuilder(env, dram) as prog:
        inp = prog.buffer(np.full(env.INP_ELEM_BYTES, 127, dtype=np.int8))
        wgt = prog.buffer(np.full(env.WGT_ELEM_BYTES, 127, dtype=np.int8))
        acc = prog.buffer(np.full(env.BATCH * env.BLOCK_OUT, 2**31 - 100, dtype="<i4"))
        prog.load(isa.MEM_INP, 0, inp, 1, 1)
        prog.load(isa.MEM_WGT, 0, wgt, 1, 1, push_next_dep=1)
        prog.load(isa.MEM_ACC, 0, acc, 1, 1, pop_prev_dep=1)
        prog.uops([(0, 0, 0)])
        prog.append(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1))
        prog.finish()
        dev, _, _ = _compare(env, dram, prog, engine=engine)
    expect = (2**31 - 100 + 127 * 127 * env.BLOCK_IN) - 2**32
    assert dev.sram.acc[0, 0, 0] == expect


@pytest.mark.parametrize("op", sorted(set(isa.ALU_NAMES) - set(isa.ALU_OPTIONS)))
@pytest.mark.parametrize("use_imm", [0, 1])
def test_alu_sequential_semantics(any_env, dram, op, use_imm, engine):
    """Chains (src = previous dst), repeated destinations and edge immediates, vs the oracle."""
    rng = np.random.default_rng(op * 2 + use_imm)
    lanes = any_env.BATCH * any_env.BLOCK_OUT
    vals = np.where(rng.random(40 * lanes) < 0.5, rng.integers(-40, 40, 40 * lanes),
                    rng.integers(-(1 << 31), 1 << 31, 40 * lanes)).astype("<i4")
    imms = [-40, -32, -31, -3, 0, 5, 31, 32, 40, 32767, -32768] if op == isa.ALU_SHR else [-32768, -7, 0, 3, 32767]
    with ProgramBuilder(any_env, dram) as prog:
        acc = prog.buffer(vals)
        prog.load(isa.MEM_ACC, 0, acc, 1, 40)
        prog.uops([(1, 0, 0), (9, 3, 0)], sram_base=0)
        for imm in imms:
            # chain: row d+1 = op(row d+1, row d) for consecutive rows
            prog.append(isa.AluInsn(alu_opcode=op, use_imm=use_imm, imm=imm, uop_bgn=0, uop_end=1,
                                    iter_out=2, iter_in=6, dst_factor_out=7, dst_factor_in=1,
                                    src_factor_out=7, src_factor_in=1))
            # repeated destination: the same rows hit five times
            prog.append(isa.AluInsn(alu_opcode=op, use_imm=use_imm, imm=imm, uop_bgn=0, uop_end=2,
                                    iter_out=1, iter_in=5, src_factor_in=2))
        prog.finish()
        _compare(any_env, dram, prog, engine=engine)


def test_zero_trip_counts_do_nothing(env, dram, engine):
    with ProgramBuilder(env, dram) as prog:
        acc = prog.buffer(np.arange(64, dtype="<i4"))
        prog.load(isa.MEM_ACC, 0, acc, 1, 1)
        prog.uops([(0, 0, 0)])
        prog.append(isa.GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=0, iter_in=1))
        prog.append(isa.AluInsn(alu_opcode=isa.ALU_ADD, use_imm=1, imm=5, uop_bgn=0, uop_end=1, iter_in=0))
        prog.append(isa.AluInsn(alu_opcode=isa.ALU_ADD, use_imm=1, imm=5, uop_bgn=1, uop_end=1))
        prog.append(isa.AluInsn(alu_opcode=isa.ALU_ADD, use_imm=1, imm=5, uop_bgn=1, uop_end=0))
        prog.finish()
        dev, _, _ = _compare(env, dram, prog, engine=engine)
    assert dev.sram.acc[0].reshape(-1).tolist() == list(range(16))
    assert dev.stats()["alu_counter"] == 0 and dev.stats()["insn_alu"] == 3


@pytest.mark.parametrize("case", ["lined_up", "not_affine", "out_of_range"])
def test_runs_of_gemms_batched_like_one_by_one(env, dram, engine, monkeypatch, case):
    """Consecutive GEMMs run as one BLAS product give the oracle's result; runs that do not line
    up (or would go out of range) fall back to one-by-one execution and its precise errors.
    (The NumPy engine batches through ``fsim.gemm_run``, the compiled loop by itself.)"""
    from vta.errors import SRAMIndexError
    from vta.sim.fsim import jit
    from vta.sim.fsim import simulator as fsim

    monkeypatch.setattr(fsim, "BATCH_MIN_MACS", 0)
    monkeypatch.setattr(jit, "BATCH_MIN_MACS", 0)
    batched = []
    real = fsim.gemm_run
    monkeypatch.setattr(fsim, "gemm_run", lambda sp, fields: batched.append(real(sp, fields)) or batched[-1])
    rng = np.random.default_rng(5)
    uops = [(j, 0, 4 * j) for j in range(4)]
    if case == "not_affine":
        uops[2] = (9, 1, 3)
    if case == "out_of_range":
        uops = [(j, 0, (env.WGT_BUFF_DEPTH - 8) + 2 * j) for j in range(4)]
    with ProgramBuilder(env, dram) as prog:
        inp = prog.buffer(_data(env, rng, isa.MEM_INP, 32))
        wgt = prog.buffer(_data(env, rng, isa.MEM_WGT, 32))
        prog.load(isa.MEM_INP, 0, inp, 1, 32)
        prog.load(isa.MEM_WGT, 0, wgt, 1, 32, push_next_dep=1)
        prog.uops(uops, sram_base=0, pop_prev_dep=1)
        for j in range(4):
            prog.append(isa.GemmInsn(uop_bgn=j, uop_end=j + 1, iter_out=3, iter_in=4, dst_factor_out=4,
                                     src_factor_out=4, src_factor_in=1, wgt_factor_in=1))
        prog.finish()
        if case == "out_of_range":
            with pytest.raises(SRAMIndexError, match="instruction 6 .*wgt index"):
                FunctionalSimulator(env, dram, engine=engine, batch_gemms=True).run(*prog.build())
        else:
            dev, _, _ = _compare(env, dram, prog, engine=engine, batch_gemms=True)
            assert dev.stats()["gemm_counter"] == 4 * 12
            if engine == "jit":
                batched.append(bool(dev._jit.batched_runs))
    assert batched == ([] if engine == "jit" and case == "out_of_range" else [case == "lined_up"])
