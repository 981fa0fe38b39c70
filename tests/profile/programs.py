"""Hand-built programs for the profiler tests, with the timing facts the tests rely on.

* :func:`pipeline`: LOAD WGT -> GEMM -> STORE -> GEMM -> FINISH chained by one token on each of
  l2g, g2s and s2g: every unit waits for the one before it, so the trace must show three token
  hand-offs and waits that end only after the matching push.
* :func:`gemms`: a GEMM of ``n`` micro-ops then FINISH, no tokens; the RTL issues one GEMM
  micro-op per cycle (hw/README.md, "Timing"), so the GEMM's slice grows by exactly one cycle per
  extra micro-op.
"""

from __future__ import annotations

import numpy as np

from vta import isa
from vta.dram import DRAM
from vta.env import Environment


def _mem(opcode, memory_type, y, x, dram_base, **deps) -> isa.MemInsn:
    return isa.MemInsn(opcode=opcode, memory_type=memory_type, sram_base=0, dram_base=dram_base, y_size=y,
                       x_size=x, x_stride=x, y_pad_0=0, y_pad_1=0, x_pad_0=0, x_pad_1=0, **deps)


def _gemm(n: int, **deps) -> isa.GemmInsn:
    return isa.GemmInsn(reset_reg=0, uop_bgn=0, uop_end=1, iter_out=1, iter_in=n, **deps)


def pipeline(env: Environment, buf: int) -> list:
    """The five-instruction token chain (``buf``: a 64 KiB DRAM buffer for the data)."""
    return [
        _mem(isa.OPCODE_LOAD, isa.MEM_WGT, 1, 8, buf // env.WGT_ELEM_BYTES, push_next_dep=1),
        _gemm(64, pop_prev_dep=1, push_next_dep=1),
        _mem(isa.OPCODE_STORE, isa.MEM_OUT, 1, 4, buf // env.OUT_ELEM_BYTES, pop_prev_dep=1, push_prev_dep=1),
        _gemm(32, pop_next_dep=1),
        isa.FinishInsn(),
    ]


def gemms(n: int) -> list:
    """One GEMM of ``n`` micro-ops, then FINISH."""
    return [_gemm(n), isa.FinishInsn()]


def place(env: Environment, dram: DRAM, make) -> tuple[int, int]:
    """Allocate a data buffer and the stream ``make(env, buf)`` (or ``make`` itself if a list)
    in ``dram``; return the stream's address and length. A zeroed uop table sits at the start."""
    buf = dram.alloc(1 << 16)
    insns = make(env, buf) if callable(make) else make
    data = isa.encode_program(insns, env).tobytes()
    addr = dram.alloc(len(data))
    dram.write(addr, np.frombuffer(data, dtype=np.uint8))
    return addr, len(insns)
