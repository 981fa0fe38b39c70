"""``vta.runtime.capture`` on hand-written streams in a fresh DRAM arena (no compiler, no runtime)."""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.errors import DecodeError
from vta.runtime.capture import Capture, CapturedRun


def _program(env):
    uops = [isa.Uop(1, 2, 3), isa.Uop(4, 5, 6)]
    insns = [
        isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, sram_base=8, dram_base=0, y_size=1,
                    x_size=2, x_stride=2),
        isa.GemmInsn(uop_bgn=8, uop_end=10, iter_out=3, iter_in=2, dst_factor_out=4, wgt_factor_in=1),
        isa.AluInsn(uop_bgn=9, uop_end=10, iter_out=1, iter_in=5, dst_factor_in=1, src_factor_in=1,
                    alu_opcode=isa.ALU_MAX, use_imm=1, imm=-3),
        isa.GemmInsn(uop_bgn=8, uop_end=10, iter_out=3, iter_in=2, dst_factor_out=4, wgt_factor_in=1),
        isa.FinishInsn(),
    ]
    return insns, uops


def test_record_reads_stream_and_uops_from_dram(env, dram):
    insns, uops = _program(env)
    words = isa.encode_program(insns, env)
    uop_bytes = env.elem_bytes(isa.MEM_UOP)
    uop_addr = dram.alloc(4096)
    insn_addr = dram.alloc(4096)
    dram.write(uop_addr, np.array([isa.encode_uop(u, env) for u in uops], dtype=np.uint32).tobytes())
    words[0] = isa.encode_program([isa.replace(insns[0], dram_base=uop_addr // uop_bytes)], env)[0]
    dram.write(insn_addr, words.tobytes())

    cap = Capture(execute=False)
    run = cap.record(env, dram, insn_addr, len(insns))
    np.testing.assert_array_equal(run.words, words)
    assert not run.executed and len(run.uop_loads) == 1
    assert run.uop_loads[0].insn_index == 0 and run.uop_loads[0].sram_base == 8
    assert [isa.decode_uop(w, env) for w in run.uop_loads[0].words] == uops

    gemm, alu = run.uop_kernels()
    assert gemm.kind == "GEMM" and gemm.uops == tuple(uops) and gemm.insn_indices == (1, 3)
    assert gemm.loops == ((3, 4, 0, 0), (2, 0, 0, 1))
    assert alu.kind == "ALU" and alu.uops == (uops[1],) and alu.alu_ops == ("MAX imm -3",)
    assert cap.instructions()[1] == insns[1]
    assert cap.disassemble().startswith("There are 5 instructions\nINSTRUCTION 0: LOAD UOP")


def test_kernel_on_unloaded_uop_memory_is_reported(env):
    words = isa.encode_program([isa.GemmInsn(uop_bgn=0, uop_end=2), isa.FinishInsn()], env)
    with pytest.raises(DecodeError, match=r"instruction 0 uses uop SRAM \[0, 2\)"):
        CapturedRun(env, words).uop_kernels()
