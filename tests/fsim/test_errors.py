"""Every error path raises its own exception with a message naming instruction, field, value, limit."""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.errors import (DeadlockError, DRAMAccessError, InvalidInstructionError, SRAMIndexError,
                        TokenOverflowError)
from vta.testing.programs import ProgramBuilder


def _run_raw(sim, env, dram, rows):
    """Run a stream given as (word0, word1) pairs."""
    with ProgramBuilder(env, dram) as prog:
        addr = prog.buffer(np.array(rows, dtype="<u8"))
        return sim.run(addr, len(rows))


def _run(sim, env, dram, build):
    with ProgramBuilder(env, dram) as prog:
        build(prog)
        return sim.run(*prog.build())


FINISH = (3, 0)


def test_invalid_opcode(env, dram, sim):
    with pytest.raises(InvalidInstructionError, match=r"instruction 1: opcode=5.*accepted 0 LOAD"):
        _run_raw(sim, env, dram, [FINISH, (5, 0)])


def test_invalid_memory_type(env, dram, sim):
    w0, w1 = isa.encode_words(isa.MemInsn(memory_type=6, x_size=1, y_size=1), env)
    with pytest.raises(InvalidInstructionError, match=r"instruction 0 \(LOAD\): memory_type=6.*5 ACC_8BIT"):
        _run_raw(sim, env, dram, [(w0, w1), FINISH])


def test_invalid_alu_opcode(env, dram, sim):
    w0, w1 = isa.encode_words(isa.AluInsn(alu_opcode=7), env)
    with pytest.raises(InvalidInstructionError, match=r"instruction 0 \(ALU\): alu_opcode=7.*4 MUL"):
        _run_raw(sim, env, dram, [(w0, w1), FINISH])


def test_load_of_out_and_store_of_inp_are_invalid(env, dram, sim):
    def load_out(p):
        p.append(isa.MemInsn(memory_type=isa.MEM_OUT, x_size=1, y_size=1, dram_base=1))
        p.finish()

    with pytest.raises(InvalidInstructionError, match=r"instruction 0 .*memory_type 4 \(OUT\) cannot be loaded"):
        _run(sim, env, dram, load_out)

    def store_inp(p):
        p.append(isa.MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_INP, x_size=1, y_size=1))
        p.finish()

    with pytest.raises(InvalidInstructionError, match=r"memory_type 2 \(INP\) cannot be stored; accepted 4"):
        _run(sim, env, dram, store_inp)


def test_store_with_padding_is_invalid(env, dram, sim):
    def build(p):
        out = p.buffer(nbytes=64)
        p.append(isa.MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, x_size=1, y_size=1, x_pad_1=2,
                             dram_base=p.elem_index(out, isa.MEM_OUT)))
        p.finish()

    with pytest.raises(InvalidInstructionError, match=r"instruction 0 \(STORE\): x_pad_1=2.*accepted 0"):
        _run(sim, env, dram, build)


@pytest.mark.parametrize("insn, flag", [
    (isa.MemInsn(memory_type=isa.MEM_INP, push_prev_dep=1), "push_prev_dep"),
    (isa.MemInsn(memory_type=isa.MEM_WGT, pop_prev_dep=1), "pop_prev_dep"),
    (isa.MemInsn(opcode=isa.OPCODE_STORE, pop_next_dep=1), "pop_next_dep"),
    (isa.MemInsn(opcode=isa.OPCODE_STORE, push_next_dep=1), "push_next_dep"),
])
def test_flags_without_a_channel_are_invalid(env, dram, sim, insn, flag):
    def build(p):
        p.finish()
        p.append(insn)

    with pytest.raises(InvalidInstructionError, match=rf"instruction 1 \(NOP\): {flag}=1 .*no such channel"):
        _run(sim, env, dram, build)


def test_load_past_sram_depth(env, dram, sim):
    def build(p):
        src = p.buffer(nbytes=4 * env.INP_ELEM_BYTES)
        p.load(isa.MEM_INP, env.INP_BUFF_DEPTH - 4, src, 1, 2, pads=(0, 0, 1, 2))
        p.finish()

    with pytest.raises(
        SRAMIndexError,
        match=rf"instruction 0 \(LOAD INP\): sram_base={env.INP_BUFF_DEPTH - 4} "
        rf"\+ padded size 5x1 = {env.INP_BUFF_DEPTH + 1}.*depth {env.INP_BUFF_DEPTH}",
    ):
        _run(sim, env, dram, build)


def test_gemm_index_out_of_range(env, dram, sim):
    def build(p):
        p.uops([(0, env.INP_BUFF_DEPTH - 2, 0)])
        p.append(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=3, src_factor_out=1))
        p.finish()

    with pytest.raises(SRAMIndexError, match=rf"instruction 1 \(GEMM\): inp index .* reaches {env.INP_BUFF_DEPTH} "
                                             rf".*src_factor_out=1.*accepted 0\.\.{env.INP_BUFF_DEPTH - 1}"):
        _run(sim, env, dram, build)


def test_alu_index_and_uop_range_out_of_range(env, dram, sim):
    def build(p):
        p.uops([(env.ACC_BUFF_DEPTH - 1, 0, 0)])
        p.append(isa.AluInsn(uop_bgn=0, uop_end=1, iter_in=2, dst_factor_in=1, use_imm=1))
        p.finish()

    with pytest.raises(SRAMIndexError, match=r"instruction 1 \(ALU\): acc index dst_idx.*dst_factor_in=1"):
        _run(sim, env, dram, build)

    def build_uop(p):
        p.append(isa.GemmInsn(uop_bgn=0, uop_end=env.UOP_BUFF_DEPTH + 1))
        p.finish()

    with pytest.raises(SRAMIndexError, match=rf"uop_end={env.UOP_BUFF_DEPTH + 1}.*depth {env.UOP_BUFF_DEPTH}"):
        _run(sim, env, dram, build_uop)


def test_store_reading_past_acc(env, dram, sim):
    def build(p):
        out = p.buffer(nbytes=8 * env.OUT_ELEM_BYTES)
        p.store(env.ACC_BUFF_DEPTH - 2, out, 1, 4)
        p.finish()

    with pytest.raises(SRAMIndexError, match=r"instruction 0 \(STORE\).*exceeds the accumulator depth"):
        _run(sim, env, dram, build)


def test_dram_outside_allocation(env, dram, sim):
    def load_past_end(p):
        src = p.buffer(nbytes=env.INP_ELEM_BYTES * 3)
        p.load(isa.MEM_INP, 0, src, 2, 2)  # needs 4 elements
        p.finish()

    with pytest.raises(DRAMAccessError, match=r"instruction 0 \(LOAD INP\).*runs past the end.*y_size=2, x_size=2"):
        _run(sim, env, dram, load_past_end)

    def store_nowhere(p):
        p.append(isa.MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, x_size=1, y_size=1, x_stride=1,
                             dram_base=1 << 30))
        p.finish()

    with pytest.raises(DRAMAccessError, match=r"instruction 0 \(STORE\).*not inside any live allocation"):
        _run(sim, env, dram, store_nowhere)
    with pytest.raises(DRAMAccessError, match="instruction stream"):
        sim.run(1 << 27, 4)


def test_deadlock_names_blocked_instructions_and_tokens(env, dram, sim):
    def build(p):
        p.nop(isa.STAGE_LOAD, pop_next_dep=1)
        p.append(isa.GemmInsn(pop_prev_dep=1))
        p.nop(isa.STAGE_STORE, push_prev_dep=1)
        p.finish()

    with pytest.raises(DeadlockError) as info:
        _run(sim, env, dram, build)
    msg = str(info.value)
    assert "after 1 of 4 instructions" in msg
    assert "load stage blocked at instruction 0 (NOP) waiting for a token on g2l" in msg
    assert "compute stage blocked at instruction 1 (GEMM) waiting for a token on l2g" in msg
    assert "store stage done" in msg
    assert "l2g=0, g2l=0, s2g=1, g2s=0" in msg
    assert info.value.insn_index == 0


def test_instruction_after_finish_that_cannot_run_is_a_deadlock(env, dram, sim):
    def build(p):
        p.finish()
        p.nop(isa.STAGE_COMPUTE, pop_prev_dep=1)

    with pytest.raises(DeadlockError, match="compute stage blocked at instruction 1"):
        _run(sim, env, dram, build)


def test_missing_finish_is_a_deadlock(env, dram, sim):
    with pytest.raises(DeadlockError, match="none of the 1 instructions is a FINISH"):
        _run(sim, env, dram, lambda p: p.nop(isa.STAGE_COMPUTE))
    with pytest.raises(DeadlockError, match="0 instructions"):
        sim.run(4096, 0)


def test_token_overflow(env, dram, sim):
    def build(p):
        for _ in range(256):
            p.nop(isa.STAGE_LOAD, push_next_dep=1)
        p.finish()

    with pytest.raises(TokenOverflowError, match=r"instruction 255 \(NOP\).*channel l2g.*256 tokens.*at most 255"):
        _run(sim, env, dram, build)
    assert sim.stats()["tokens_l2g"] == 0  # rejected before anything ran

    def build_half(p):
        for _ in range(200):
            p.nop(isa.STAGE_STORE, push_prev_dep=1)
        p.finish()

    _run(sim, env, dram, build_half)
    with pytest.raises(TokenOverflowError, match="channel s2g"):  # 200 left over + 200 more
        _run(sim, env, dram, build_half)
    with pytest.raises(TokenOverflowError, match="channel s2g"):
        seeded = type(sim)(env, dram, seed=1)
        seeded.tokens = [0, 0, 200, 0]
        _run(seeded, env, dram, build_half)


def test_device_is_usable_after_a_failed_run(env, dram, sim):
    def fails_midway(p):
        src = p.buffer(np.arange(16, dtype="<i4"))
        p.load(isa.MEM_ACC, 0, src, 1, 1, push_next_dep=1)
        p.uops([(env.ACC_BUFF_DEPTH - 1, 0, 0)])
        p.append(isa.AluInsn(uop_bgn=0, uop_end=1, iter_in=2, dst_factor_in=1, use_imm=1, imm=1))
        p.finish()

    with pytest.raises(SRAMIndexError) as info:
        _run(sim, env, dram, fails_midway)
    assert info.value.insn_index == 2
    # A failed run leaves the reset state: the load that executed before the failure is gone.
    st = sim.stats()
    assert st["tokens_g2s"] == 0 and st["runs_failed"] == 1
    assert not sim.sram.acc.any()
    _run(sim, env, dram, lambda p: p.finish())


def test_bad_run_arguments(sim):
    with pytest.raises(ValueError, match="insn_count"):
        sim.run(4096, -1)
    with pytest.raises(ValueError, match="wait_cycles"):
        sim.run(4096, 1, wait_cycles=-5)
