"""Small hand-built instruction streams for the timing tests (placed in a DRAM arena)."""

from __future__ import annotations

import numpy as np

from vta import isa


def words(insns, env) -> np.ndarray:
    """The (n, 2) int64 words of a list of instruction records."""
    return isa.encode_program(insns, env).astype("<u8").view("<i8").reshape(len(insns), 2)


def gemm(n: int, **deps) -> isa.GemmInsn:
    """A GEMM of ``n`` micro-ops (one uop, ``n`` inner iterations; all indices 0)."""
    return isa.GemmInsn(reset_reg=0, uop_bgn=0, uop_end=1, iter_out=1, iter_in=n, **deps)


def alu(n: int, use_imm: int, **deps) -> isa.AluInsn:
    """An ALU ADD of ``n`` micro-ops."""
    return isa.AluInsn(reset_reg=0, uop_bgn=0, uop_end=1, iter_out=1, iter_in=n, alu_opcode=isa.ALU_ADD,
                       use_imm=use_imm, imm=1, **deps)


def mem(opcode: int, memory_type: int, y: int, x: int, pads=(0, 0, 0, 0), dram_base: int = 64, **deps):
    """A LOAD/STORE of a y x x rectangle at element ``dram_base`` (stride = x)."""
    return isa.MemInsn(opcode=opcode, memory_type=memory_type, sram_base=0, dram_base=dram_base, y_size=y,
                       x_size=x, x_stride=x, y_pad_0=pads[0], y_pad_1=pads[1], x_pad_0=pads[2],
                       x_pad_1=pads[3], **deps)


def nop_compute(**deps) -> isa.MemInsn:
    """The runtime's compute no-op (LOAD UOP with x_size = 0)."""
    return isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, **deps)
