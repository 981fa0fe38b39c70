"""How each engine reaches its fast forms, against the scalar oracle.

The NumPy engine numbers the instructions of a run by plan key before executing any
(:meth:`vta.sim.stream.Program.plan_ids`: the encoded bytes, with the micro-op buffer
version for GEMM and ALU, worked out from the execution order), so the same encoded GEMM or ALU
instruction must get a new plan after every micro-op LOAD that executes before it -- also when
the stages are interleaved at random, and in a second run on the same device. The compiled
engine checks a stream in one pass before executing it (in-order tokens and the field checks of
LOAD and STORE) and runs ALU immediates over consecutive rows as one stretch of lanes, including
when the rows of successive ``i_out`` overlap.
"""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.errors import DRAMAccessError
from vta.sim.fsim import FunctionalSimulator
from vta.testing.programs import ProgramBuilder

from .conftest import assert_same_state, run_both
from .oracle import Oracle

_ROWS = 16


def _reloading_program(env, dram, rng):
    """Micro-op tables A, B, a no-op micro-op LOAD, A again, each followed by the same encoded
    GEMM and ALU instructions and a STORE; loads and stores pass tokens so the stages overlap."""
    prog = ProgramBuilder(env, dram)
    inp = prog.buffer(rng.integers(-128, 128, size=_ROWS * env.INP_ELEM_BYTES, dtype=np.int8))
    wgt = prog.buffer(rng.integers(-128, 128, size=_ROWS * env.WGT_ELEM_BYTES, dtype=np.int8))
    out = prog.buffer(nbytes=4 * _ROWS * env.OUT_ELEM_BYTES)
    tables = [[(0, 0, 0), (1, 2, 3), (5, 1, 0)], [(3, 4, 1), (0, 0, 2), (2, 7, 7)]]
    table_addr = [prog.uop_table(t) for t in tables]
    gemm = isa.GemmInsn(uop_bgn=0, uop_end=3, iter_out=2, iter_in=3, dst_factor_out=4, dst_factor_in=1,
                        src_factor_out=1, src_factor_in=2, wgt_factor_out=1, wgt_factor_in=1)
    alus = [isa.AluInsn(alu_opcode=isa.ALU_ADD, use_imm=1, imm=-5, uop_bgn=0, uop_end=2, iter_out=2, iter_in=2,
                        dst_factor_out=4, dst_factor_in=1),
            isa.AluInsn(alu_opcode=isa.ALU_SHR, use_imm=1, imm=2, uop_bgn=1, uop_end=2, iter_in=3, dst_factor_in=1),
            isa.AluInsn(alu_opcode=isa.ALU_MAX, uop_bgn=0, uop_end=3, iter_in=2, dst_factor_in=1, src_factor_in=2)]
    prog.load(isa.MEM_INP, 0, inp, 1, _ROWS)
    prog.load(isa.MEM_WGT, 0, wgt, 1, _ROWS)
    for step, table in enumerate((0, 1, None, 0)):
        if table is None:  # x_size 0: a no-op, the micro-ops stay those of table B
            prog.load(isa.MEM_UOP, 0, table_addr[0], 1, 0)
        else:
            prog.load(isa.MEM_UOP, 0, table_addr[table], 1, len(tables[table]))
        prog.append(isa.GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=_ROWS, dst_factor_out=1))
        prog.append(gemm)
        for alu in alus:
            prog.append(alu)
        prog.store(0, out + step * _ROWS * env.OUT_ELEM_BYTES, 1, _ROWS)
    prog.finish()
    prog.serialize()
    return prog, [(out, 4 * _ROWS * env.OUT_ELEM_BYTES)]


@pytest.mark.parametrize("seed", [None, 1, 2, 3])
def test_plans_follow_micro_op_loads(any_env, dram, engine, seed):
    prog, outputs = _reloading_program(any_env, dram, np.random.default_rng(5))
    try:
        addr, count = prog.build()
        with FunctionalSimulator(any_env, dram, engine=engine, seed=seed) as dev:
            ref = Oracle(any_env, dram)
            for _ in range(2):  # the second run starts from the first one's buffers and plans
                for a, n in outputs:
                    dram.write(a, bytes(n))
                dev.run(addr, count)
                got = [dram.read(a, n) for a, n in outputs]
                for a, n in outputs:
                    dram.write(a, bytes(n))
                ref.run(addr, count)
                want = [dram.read(a, n) for a, n in outputs]
                assert got == want
                assert any(any(b) for b in got)
                assert_same_state(dev, ref)
    finally:
        prog.close()


@pytest.mark.parametrize("op", [isa.ALU_MIN, isa.ALU_MAX, isa.ALU_ADD, isa.ALU_SHR, isa.ALU_MUL])
@pytest.mark.parametrize("imm", [-33, -3, 0, 5, 31, 1000])
@pytest.mark.parametrize("io, ii, dfo", [(1, 4, 0), (3, 4, 1), (3, 2, 2), (2, 3, 3), (4, 1, 0)])
def test_alu_immediate_over_consecutive_rows(env, dram, engine, op, imm, io, ii, dfo):
    """``dst_factor_in == 1`` with one micro-op: successive ``i_out`` may revisit rows (``dfo < ii``),
    which must then be updated once per visit, in loop order."""
    rng = np.random.default_rng(abs(imm) * 7 + op)
    prog = ProgramBuilder(env, dram)
    vals = rng.choice(np.array([0, 1, -1, 7, -8, 2**31 - 1, -2**31, 65535, -65536], dtype=np.int32),
                      size=_ROWS * env.BATCH * env.BLOCK_OUT)
    acc = prog.buffer(vals.view(np.uint8))
    out = prog.buffer(nbytes=_ROWS * env.OUT_ELEM_BYTES)
    prog.load(isa.MEM_ACC, 0, acc, 1, _ROWS)
    prog.uops([(2, 0, 0)], sram_base=0)
    prog.append(isa.AluInsn(alu_opcode=op, use_imm=1, imm=imm, uop_bgn=0, uop_end=1, iter_out=io, iter_in=ii,
                            dst_factor_out=dfo, dst_factor_in=1))
    prog.store(0, out, 1, _ROWS)
    prog.finish()
    prog.serialize()
    try:
        addr, count = prog.build()
        dram.write(out, bytes(_ROWS * env.OUT_ELEM_BYTES))
        with FunctionalSimulator(env, dram, engine=engine) as dev:
            dev.run(addr, count)
            got = dram.read(out, _ROWS * env.OUT_ELEM_BYTES)
            dram.write(out, bytes(_ROWS * env.OUT_ELEM_BYTES))
            ref = Oracle(env, dram)
            ref.run(addr, count)
            assert got == dram.read(out, _ROWS * env.OUT_ELEM_BYTES)
            assert_same_state(dev, ref)
            assert dev.stats()["alu_counter"] == ref.stats["alu_counter"] == io * ii
    finally:
        prog.close()


def test_field_check_stops_before_any_store(env, dram, engine):
    """A STORE outside the arena late in a stream that runs in stream order is found by the
    checks before the run: no earlier STORE has written its bytes."""
    prog = ProgramBuilder(env, dram)
    out = prog.buffer(nbytes=env.OUT_ELEM_BYTES)
    prog.store(0, out, 1, 1)
    prog.store(0, out + (1 << 28), 1, 1)  # past the end of the arena
    prog.finish()
    prog.serialize()
    try:
        addr, count = prog.build()
        dram.write(out, b"\x5a" * env.OUT_ELEM_BYTES)
        with FunctionalSimulator(env, dram, engine=engine) as dev, pytest.raises(DRAMAccessError) as err:
            dev.run(addr, count)
        assert err.value.insn_index == 1
        assert dram.read(out, env.OUT_ELEM_BYTES) == b"\x5a" * env.OUT_ELEM_BYTES
    finally:
        prog.close()


@pytest.mark.parametrize("pads", [(0, 0, 0, 0), (0, 0, 1, 0)])
def test_kept_weight_sums_follow_weight_loads(any_env, dram, engine, pads):
    """The same GEMMs (inner loop moving only the weights) again and again, with a LOAD WGT of
    one block inside the summed ones every third group (padded or not): a sum of weights kept
    from an earlier GEMM must not outlive the weights it was made from."""
    env = any_env
    rng = np.random.default_rng(11)
    prog = ProgramBuilder(env, dram)
    inp = prog.buffer(rng.integers(-128, 128, size=8 * env.INP_ELEM_BYTES, dtype=np.int8))
    wgt = prog.buffer(rng.integers(-128, 128, size=24 * env.WGT_ELEM_BYTES, dtype=np.int8))
    groups = 9
    out = prog.buffer(nbytes=groups * 4 * env.OUT_ELEM_BYTES)
    prog.load(isa.MEM_WGT, 0, wgt, 1, 16)
    prog.load(isa.MEM_INP, 0, inp, 1, 8)
    prog.uops([(0, 0, 0), (0, 4, 1)], sram_base=0)
    for g in range(groups):
        if g % 3 == 2:  # one new weight block at row 3 (with a left pad: rows 2 and 3)
            prog.load(isa.MEM_WGT, 3 - pads[2], wgt + (16 + g % 8) * env.WGT_ELEM_BYTES, 1, 1, pads=pads)
        prog.append(isa.GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=4, dst_factor_out=1))
        for bgn in (0, 1):
            prog.append(isa.GemmInsn(uop_bgn=bgn, uop_end=bgn + 1, iter_out=4, iter_in=5, dst_factor_out=1,
                                     src_factor_out=1, wgt_factor_in=2))
        prog.store(0, out + g * 4 * env.OUT_ELEM_BYTES, 1, 4)
    prog.finish()
    prog.serialize()
    try:
        addr, count = prog.build()
        outputs = [(out, groups * 4 * env.OUT_ELEM_BYTES)]
        dev, ref, got, want = run_both(env, dram, outputs, addr, count, engine=engine)
        assert got == want
        assert any(got[0])
        assert_same_state(dev, ref)
    finally:
        prog.close()
