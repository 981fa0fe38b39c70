"""Footprints of the compute unit's instructions for the option COMPUTE_OVERLAP.

The two-lane compute unit (``hw/vta_compute_ov.sv``) takes an instruction only when it does not
conflict with the one in flight in the other lane; it compares intervals. :func:`footprints`
gives the cycle model's event loop (:func:`vta.sim.model.loop.core`) the same intervals, per
instruction, as the columns ``F_*`` of :mod:`vta.sim.model.loop`:

* the lane: 0 for a GEMM with a non-empty loop, 1 for everything else of the compute unit;
* ``D``: the accumulator rows a GEMM or ALU writes (its micro-ops' lowest and highest dst index,
  the highest plus ``(iter_out - 1) * dst_factor_out + (iter_in - 1) * dst_factor_in``), or the
  padded rectangle a LOAD ACC / ACC_8BIT writes;
* ``S``: the rows a tensor ALU reads as its src (the same rule with the src fields);
* ``U``: the uop entries a GEMM or ALU reads (``uop_bgn .. uop_end - 1``) or a LOAD UOP writes;
* the cycles of the footprint scanner for a GEMM or ALU: ``ceil((uop_end - uop_bgn) / 2) + 1``.

The micro-ops come from the uop buffer as the stream's LOAD UOPs before each instruction fill it,
read from ``dram`` as it is when the footprints are made (a LOAD UOP of memory that a STORE of the
same run wrote would be read before that write; the compiler never stores micro-ops). Entries no
LOAD UOP of the stream wrote read as zero (an index out of the buffer stops the run anyway).
"""

from __future__ import annotations

import numpy as np

from ... import isa
from ...env import Environment
from .loop import F_DHI, F_DLO, F_DV, F_LANE, F_SCAN, F_SHI, F_SLO, F_SV, F_UF, F_UHI, F_ULO

__all__ = ["footprints"]

#: Columns of the table :func:`footprints` returns.
COLUMNS = 11


def footprints(env: Environment, words: np.ndarray, dram) -> np.ndarray:
    """The footprint table (n x :data:`COLUMNS`, int64) of the stream ``words``.

    Parameters
    ----------
    env : Environment
        The configuration.
    words : ndarray of shape (n, 2)
        The stream.
    dram : DRAM
        The memory the stream's LOAD UOPs read.

    Returns
    -------
    ndarray
        One row per instruction (zeros but the lane for instructions of the load and store units).

    Raises
    ------
    InvalidInstructionError
        If an instruction does not decode.
    """
    insns = isa.decode_program(np.asarray(words), env)
    depth = env.UOP_BUFF_DEPTH
    udst = np.zeros(depth, np.int64)
    usrc = np.zeros(depth, np.int64)
    out = np.zeros((len(insns), COLUMNS), np.int64)
    out[:, F_LANE] = 1
    for i, x in enumerate(insns):
        if isinstance(x, isa.GemmInsn | isa.AluInsn):
            n_uop = x.uop_end - x.uop_bgn
            if not (x.iter_out and x.iter_in and n_uop > 0):
                continue
            idx = np.arange(x.uop_bgn, x.uop_end) % depth
            d, s = udst[idx], usrc[idx]
            gemm = isinstance(x, isa.GemmInsn)
            out[i, F_LANE] = 0 if gemm else 1
            out[i, F_DV] = 1
            out[i, F_DLO] = d.min()
            out[i, F_DHI] = d.max() + (x.iter_out - 1) * x.dst_factor_out + (x.iter_in - 1) * x.dst_factor_in
            if not gemm and not x.use_imm:
                out[i, F_SV] = 1
                out[i, F_SLO] = s.min()
                out[i, F_SHI] = s.max() + (x.iter_out - 1) * x.src_factor_out + (x.iter_in - 1) * x.src_factor_in
            out[i, F_UF] = 1
            out[i, F_ULO] = x.uop_bgn
            out[i, F_UHI] = x.uop_end - 1
            out[i, F_SCAN] = (n_uop + 1) // 2 + 1
        elif (isinstance(x, isa.MemInsn) and x.opcode == isa.OPCODE_LOAD and x.x_size
              and x.memory_type in (isa.MEM_UOP, isa.MEM_ACC, isa.MEM_ACC_8BIT)):
            height = x.y_pad_0 + x.y_size + x.y_pad_1
            width = x.x_pad_0 + x.x_size + x.x_pad_1
            area = height * width
            if x.memory_type == isa.MEM_UOP:
                out[i, F_UF] = 2
                out[i, F_ULO] = x.sram_base
                out[i, F_UHI] = x.sram_base + area - 1
                if x.sram_base + area <= depth:
                    _load_uops(env, dram, x, height, width, udst, usrc)
            else:
                out[i, F_DV] = 1
                out[i, F_DLO] = x.sram_base
                out[i, F_DHI] = x.sram_base + area - 1
    return out


def _load_uops(env: Environment, dram, x, height: int, width: int, udst: np.ndarray, usrc: np.ndarray) -> None:
    """Write the uop buffer entries of LOAD UOP ``x`` (its pads are zero)."""
    grid = np.zeros((height, width), np.int64)
    for y in range(x.y_size):
        row = np.frombuffer(dram.read((x.dram_base + y * x.x_stride) * 4, 4 * x.x_size), "<u4")
        grid[x.y_pad_0 + y, x.x_pad_0:x.x_pad_0 + x.x_size] = row
    d, s, _ = isa.decode_uop_array(grid.reshape(-1), env)
    lo = x.sram_base
    udst[lo:lo + height * width] = d
    usrc[lo:lo + height * width] = s
