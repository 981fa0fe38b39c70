"""Small GEMM, ALU, LOAD and STORE instructions repeated many times, against the scalar oracle.

Both engines have fast forms of such instructions: the compiled loop's per-opcode helpers (with
GEMM inner loops that move one operand summed first) and the NumPy engine's plans
(:mod:`vta.sim.fsim.plans`), made once per distinct instruction and reused. These tests run the
same encoded instructions on different data and after the micro-ops have been reloaded (a plan
must not outlive the micro-ops it was made from), with random loop factors and accumulator
values at the wrap-around limits, and check every buffer, output byte and counter.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vta import isa
from vta.testing.programs import ProgramBuilder

from .conftest import assert_same_state, run_both

_ROWS = 24  # rows of INP, WGT and ACC the programs use


def _program(env, dram, rng, gemm, alus, reps):
    """``reps`` times: new ACC/INP data (and WGT data the first two times), micro-op table A,
    the GEMM, a reset, the ALU ops, a STORE; then table B and the same instructions once more."""
    prog = ProgramBuilder(env, dram)
    acc_vals = rng.choice(np.array([0, 1, -1, 2**31 - 1, -2**31, 12345, -777], dtype=np.int32),
                          size=(reps, _ROWS * env.BATCH * env.BLOCK_OUT))
    acc = prog.buffer(acc_vals.view(np.uint8).reshape(-1))
    inp = prog.buffer(rng.integers(-128, 128, size=(reps, _ROWS * env.INP_ELEM_BYTES), dtype=np.int8).reshape(-1))
    wgt = prog.buffer(rng.integers(-128, 128, size=(2, _ROWS * env.WGT_ELEM_BYTES), dtype=np.int8).reshape(-1))
    out = prog.buffer(nbytes=(reps + 1) * _ROWS * env.OUT_ELEM_BYTES)
    tables = [[(int(rng.integers(0, 4)), int(rng.integers(0, 4)), int(rng.integers(0, 4))) for _ in range(3)]
              for _ in range(2)]
    for r in range(reps + 1):
        k = min(r, reps - 1)
        if r < 2:  # new weights for the second repetition
            prog.load(isa.MEM_WGT, 0, wgt + r * _ROWS * env.WGT_ELEM_BYTES, 1, _ROWS)
        prog.load(isa.MEM_ACC, 0, acc + k * _ROWS * env.ACC_ELEM_BYTES, 1, _ROWS)
        prog.load(isa.MEM_INP, 0, inp + k * _ROWS * env.INP_ELEM_BYTES, 1, _ROWS)
        prog.uops(tables[r == reps], sram_base=0)
        prog.append(gemm)
        prog.append(isa.GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=4, dst_factor_out=1))
        for alu in alus:
            prog.append(alu)
        prog.store(0, out + r * _ROWS * env.OUT_ELEM_BYTES, 1, _ROWS)
    prog.finish()
    prog.serialize()
    return prog, [(out, (reps + 1) * _ROWS * env.OUT_ELEM_BYTES)]


_factor = st.integers(0, 2)
_alu = st.builds(lambda op, imm, bgn, n, io, ii, fo, fi: isa.AluInsn(
    alu_opcode=op, use_imm=1, imm=imm, uop_bgn=bgn, uop_end=bgn + n, iter_out=io, iter_in=ii,
    dst_factor_out=fo, dst_factor_in=fi),
    st.integers(0, 4), st.sampled_from([-40, -31, -5, -1, 0, 1, 3, 7, 31, 32, 127, -128, 2**15 - 1, -2**15]),
    st.integers(0, 2), st.integers(0, 1), st.integers(1, 3), st.integers(1, 3), _factor, _factor)
_gemm = st.builds(lambda bgn, n, io, ii, f: isa.GemmInsn(
    uop_bgn=bgn, uop_end=bgn + n, iter_out=io, iter_in=ii, dst_factor_out=f[0], dst_factor_in=f[1],
    src_factor_out=f[2], src_factor_in=f[3], wgt_factor_out=f[4], wgt_factor_in=f[5]),
    st.integers(0, 2), st.integers(0, 1), st.integers(1, 4), st.integers(1, 8), st.tuples(*[_factor] * 6))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), gemm=_gemm, alus=st.lists(_alu, min_size=1, max_size=4),
       reps=st.integers(1, 3))
def test_repeated_small_instructions_match_oracle(any_env, dram, engine, seed, gemm, alus, reps):
    prog, outputs = _program(any_env, dram, np.random.default_rng(seed), gemm, alus, reps)
    try:
        addr, count = prog.build()
        dev, ref, got, want = run_both(any_env, dram, outputs, addr, count, engine=engine)
        assert got == want
        assert_same_state(dev, ref)
        stats = dev.stats()
        for key, value in ref.stats.items():
            assert stats[key] == value, key
    finally:
        prog.close()


def test_conv_like_stream_matches_oracle(any_env, dram, engine):
    """The instruction-heavy stream shape of ``benchmarks/fsim_throughput.py`` (GEMM inner loop
    moving only the weights, four ALU ops, small loads and stores), 40 groups, with new weights
    from group 20 on."""
    rng = np.random.default_rng(3)
    prog = ProgramBuilder(any_env, dram)
    inp = prog.buffer(rng.integers(-128, 128, size=64 * any_env.INP_ELEM_BYTES, dtype=np.int8))
    wgt = prog.buffer(rng.integers(-128, 128, size=2 * 64 * any_env.WGT_ELEM_BYTES, dtype=np.int8))
    out = prog.buffer(nbytes=40 * 4 * any_env.OUT_ELEM_BYTES)
    prog.load(isa.MEM_WGT, 0, wgt, 1, 64)
    prog.uops([(0, 0, 0)], sram_base=0)
    for g in range(40):
        if g == 20:
            prog.load(isa.MEM_WGT, 0, wgt + 64 * any_env.WGT_ELEM_BYTES, 1, 64)
        prog.load(isa.MEM_INP, (g % 8) * 4, inp + (g % 16) * 4 * any_env.INP_ELEM_BYTES, 1, 4)
        prog.append(isa.GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=4, dst_factor_out=1))
        prog.append(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=4, iter_in=8, dst_factor_out=1, src_factor_out=1,
                                 wgt_factor_in=1 + (g % 4)))
        for op, imm in ((isa.ALU_SHR, 7), (isa.ALU_ADD, 3), (isa.ALU_MAX, -127), (isa.ALU_MIN, 127)):
            prog.append(isa.AluInsn(alu_opcode=op, use_imm=1, imm=imm, uop_bgn=0, uop_end=1, iter_in=4,
                                    dst_factor_in=1, src_factor_in=1))
        prog.store(0, out + g * 4 * any_env.OUT_ELEM_BYTES, 1, 4)
    prog.finish()
    prog.serialize()
    try:
        addr, count = prog.build()
        outputs = [(out, 40 * 4 * any_env.OUT_ELEM_BYTES)]
        dev, ref, got, want = run_both(any_env, dram, outputs, addr, count, engine=engine)
        assert got == want
        assert any(got[0])
        assert_same_state(dev, ref)
    finally:
        prog.close()
