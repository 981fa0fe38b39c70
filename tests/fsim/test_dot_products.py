"""The compiled engine's dot products read weight blocks transposed (copied once per weight
version) and, for 16-lane blocks, sum them in one vector: every GEMM nest shape, with weight
loads between the GEMMs that rewrite blocks they read, against the scalar oracle on every
shipped configuration (block sizes 16 and 32, BATCH 1 and 2, 4-bit elements)."""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.testing.programs import ProgramBuilder

from .conftest import assert_same_state, run_both

#: GEMM loops per nest shape of the compiled loop (iter_out 3, iter_in 4; see
#: :func:`vta.sim.fsim.kernels._gemm_nest`): which of dst, src and wgt the inner loop moves.
SHAPES = {
    "row-by-row": dict(dst_factor_out=4, dst_factor_in=1, src_factor_out=4, src_factor_in=1, wgt_factor_out=1,
                       wgt_factor_in=1),
    "weights-summed": dict(dst_factor_out=1, src_factor_out=1, wgt_factor_out=0, wgt_factor_in=1),
    "inputs-summed": dict(dst_factor_out=1, src_factor_out=4, src_factor_in=1, wgt_factor_out=1),
    "both-summed": dict(dst_factor_out=1, src_factor_out=4, src_factor_in=1, wgt_factor_out=1, wgt_factor_in=1),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_gemm_nests_follow_weight_loads(any_env, dram, engine, shape):
    env = any_env
    rng = np.random.default_rng(5)
    groups = 6
    prog = ProgramBuilder(env, dram)
    inp = prog.buffer(rng.integers(-128, 128, size=16 * env.INP_ELEM_BYTES, dtype=np.int8))
    wgt = prog.buffer(rng.integers(-128, 128, size=12 * env.WGT_ELEM_BYTES, dtype=np.int8))
    out = prog.buffer(nbytes=groups * 12 * env.OUT_ELEM_BYTES)
    prog.load(isa.MEM_WGT, 0, wgt, 1, 8)
    prog.load(isa.MEM_INP, 0, inp, 1, 16)
    prog.uops([(0, 0, 0)], sram_base=0)
    for g in range(groups):
        if g % 2 == 1:  # a new block 2 (read by every shape's nest) from the spare ones
            prog.load(isa.MEM_WGT, 2, wgt + (8 + g % 4) * env.WGT_ELEM_BYTES, 1, 1)
        prog.append(isa.GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=12, dst_factor_out=1))
        prog.append(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=3, iter_in=4, **SHAPES[shape]))
        prog.store(0, out + g * 12 * env.OUT_ELEM_BYTES, 1, 12)
    prog.finish()
    prog.serialize()
    try:
        addr, count = prog.build()
        outputs = [(out, groups * 12 * env.OUT_ELEM_BYTES)]
        dev, ref, got, want = run_both(env, dram, outputs, addr, count, engine=engine)
        assert got == want
        assert any(got[0])
        assert_same_state(dev, ref)
    finally:
        prog.close()
