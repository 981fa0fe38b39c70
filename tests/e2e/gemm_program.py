"""A hand-built blocked GEMM program with its NumPy oracle (for tsim tests and benchmarks).

``out[i] = clip((sum_k inp[i*K + k] . wgt[k]^T) * reps >> shift, -128, 127)`` for ``i < M``:
one uop per ``k``, the outer loop over ``i`` and an inner repetition loop that accumulates the
same products ``reps`` times (a long GEMM with a known uop count). Dependency tokens follow the
runtime's conventions: the weight load pushes l2g, the accumulating GEMM pops it, the last ALU
pushes g2s, the store pops it and pushes s2g, and FINISH pops s2g; no token is left over.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vta import isa
from vta.dram import DRAM
from vta.env import Environment


@dataclass
class GemmProgram:
    """An installed program: where it is, what it should produce."""

    insn_addr: int
    insn_count: int
    out_addr: int
    expected: np.ndarray  # (M, BATCH, BLOCK_OUT) int8
    gemm_uops: int        # uops of the accumulating GEMM
    addrs: tuple[int, ...]

    def output(self, dram: DRAM) -> np.ndarray:
        return dram.copy_out(self.out_addr, self.expected.shape, np.int8)

    def free(self, dram: DRAM) -> None:
        for a in self.addrs:
            dram.free(a)


def oracle(inp: np.ndarray, wgt: np.ndarray, m: int, k: int, reps: int, shift: int) -> np.ndarray:
    """Independent NumPy model of the program's result."""
    a = inp.astype(np.int64).reshape(m, k, *inp.shape[1:])          # (M, K, BATCH, BLOCK_IN)
    acc = np.einsum("mkbi,koi->mbo", a, wgt.astype(np.int64)) * reps  # (M, BATCH, BLOCK_OUT)
    acc = ((acc + (1 << 31)) % (1 << 32)) - (1 << 31)               # int32 wrap
    return np.clip(acc >> shift, -128, 127).astype(np.int8)


def build(env: Environment, dram: DRAM, m: int = 4, k: int = 4, reps: int = 1, shift: int = 6,
          seed: int = 0) -> GemmProgram:
    """Allocate, fill and encode the program in ``dram``."""
    rng = np.random.default_rng(seed)
    inp = rng.integers(-128, 128, size=(m * k, env.BATCH, env.BLOCK_IN), dtype=np.int8)
    wgt = rng.integers(-128, 128, size=(k, env.BLOCK_OUT, env.BLOCK_IN), dtype=np.int8)
    uops = [isa.Uop(0, kk, kk) for kk in range(k)] + [isa.Uop(0, 0, 0)]
    uop_words = np.array([isa.encode_uop(u, env) for u in uops], dtype=np.uint32)

    inp_addr = dram.alloc(inp.nbytes)
    wgt_addr = dram.alloc(wgt.nbytes)
    uop_addr = dram.alloc(uop_words.nbytes)
    out_addr = dram.alloc(m * env.OUT_ELEM_BYTES)
    dram.write(inp_addr, inp)
    dram.write(wgt_addr, wgt)
    dram.write(uop_addr, uop_words)
    dram.data[out_addr:out_addr + m * env.OUT_ELEM_BYTES] = 0x55

    n_uop = len(uops)
    program = [
        isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, sram_base=0,
                    dram_base=uop_addr // 4, y_size=1, x_size=n_uop, x_stride=n_uop),
        isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_INP, sram_base=0,
                    dram_base=inp_addr // env.INP_ELEM_BYTES, y_size=1, x_size=m * k, x_stride=m * k),
        isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_WGT, sram_base=0,
                    dram_base=wgt_addr // env.WGT_ELEM_BYTES, y_size=1, x_size=k, x_stride=k,
                    push_next_dep=1),
        isa.GemmInsn(reset_reg=1, uop_bgn=k, uop_end=k + 1, iter_out=m, iter_in=1, dst_factor_out=1),
        isa.GemmInsn(uop_bgn=0, uop_end=k, iter_out=m, iter_in=reps, dst_factor_out=1,
                     src_factor_out=k, pop_prev_dep=1),
        isa.AluInsn(uop_bgn=k, uop_end=k + 1, iter_out=m, iter_in=1, dst_factor_out=1, src_factor_out=1,
                    alu_opcode=isa.ALU_SHR, use_imm=1, imm=shift),
        isa.AluInsn(uop_bgn=k, uop_end=k + 1, iter_out=m, iter_in=1, dst_factor_out=1, src_factor_out=1,
                    alu_opcode=isa.ALU_MIN, use_imm=1, imm=127),
        isa.AluInsn(uop_bgn=k, uop_end=k + 1, iter_out=m, iter_in=1, dst_factor_out=1, src_factor_out=1,
                    alu_opcode=isa.ALU_MAX, use_imm=1, imm=-128, push_next_dep=1),
        isa.MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, sram_base=0,
                    dram_base=out_addr // env.OUT_ELEM_BYTES, y_size=1, x_size=m, x_stride=m,
                    pop_prev_dep=1, push_prev_dep=1),
        isa.FinishInsn(pop_next_dep=1),
    ]
    words = isa.encode_program(program, env)
    insn_addr = dram.alloc(words.nbytes)
    dram.write(insn_addr, words)
    return GemmProgram(insn_addr, len(program), out_addr, oracle(inp, wgt, m, k, reps, shift),
                       m * k * reps, (inp_addr, wgt_addr, uop_addr, out_addr, insn_addr))
