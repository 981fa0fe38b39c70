"""Execution plans: the NumPy engine's fast form of small, common instructions.

Executing a small instruction through the opcode functions of :mod:`vta.sim.fsim.units` costs
tens of microseconds, almost all of it spent working out the same index grids and checks again
for each instruction. Streams repeat instructions a great deal (a loop body emits the same
encoded instruction many times), so the NumPy engine turns each distinct instruction, once,
into a *plan*: a small function holding everything that depends only on the instruction and
the micro-op buffer (rows as slices or index arrays, the opcode's NumPy operation), which then
executes each occurrence with two or three NumPy calls.

A plan exists only for the simple common shapes: 8-bit inputs and weights, 32-bit accumulators,
8-bit outputs; LOAD of INP, WGT or ACC and STORE without padding; GEMM reset; GEMM whose
accumulator rows are written once or whose products fit a small gather; ALU with an immediate
whose rows are distinct. Everything else (and every instruction that would fail a check) has
no plan (:func:`make_plan` returns None) and runs through the opcode functions, which are the
specification. The same ISA semantics as there (``reference/vta-isa.md`` section 4):

* int32 NumPy arithmetic wraps modulo 2^32 like the accumulator, so ADD, MUL and left shifts
  run in place on int32 rows; SHR by ``imm & 31`` (right for ``imm >= 0``, left by
  ``(-imm) & 31`` otherwise);
* GEMM products of 8-bit values summed over one ``BLOCK_IN`` vector stay below 2^24, so
  float32 products are exact; sums over several uop-iterations are taken in int64.

GEMM and ALU plans depend on the micro-op buffer: the caller keys them by the buffer's version
(:class:`PlanCache`), which changes whenever a micro-op LOAD executes.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ... import isa
from ...dram import DRAM
from .loops import LoopNest
from .units import Scratchpads, check_mem

__all__ = ["PlanCache", "make_plan"]

Plan = Callable[[], None]

#: Largest GEMM (uop-iterations) planned as one gather-and-multiply.
_GEMM_MAX_ITERS = 4096


class PlanCache:
    """Plans of the distinct instructions met so far, for one simulator.

    Parameters
    ----------
    sp : Scratchpads
        The simulator's buffers.
    dram : DRAM
        The arena.
    """

    def __init__(self, sp: Scratchpads, dram: DRAM):
        self.sp = sp
        self.dram = dram
        self.env = sp.env
        self.ok = (sp.env.INP_WIDTH == 8 and sp.env.WGT_WIDTH == 8 and sp.env.ACC_WIDTH == 32
                   and sp.env.OUT_WIDTH == 8)
        #: Changes whenever the micro-op buffer may have changed.
        self.uop_version = 0
        #: Changes whenever the weight buffer may have changed (see :meth:`changed`).
        self.wgt_version = [0]
        #: Plans (or None) by key (see :meth:`make`).
        self.table: dict = {}

    def changed(self, memory_type: int) -> None:
        """Note that a LOAD outside the plans (or a reset) wrote the buffer of ``memory_type``."""
        if memory_type == isa.MEM_UOP:
            self.uop_version += 1
        elif memory_type == isa.MEM_WGT:
            self.wgt_version[0] += 1

    def make(self, key, opcode: int, fields: Callable[[str], dict]) -> Plan | None:
        """Make, keep under ``key`` and return the plan of an instruction (None when it has none).

        ``key`` is the instruction's encoded bytes, paired with :attr:`uop_version` for GEMM and
        ALU; ``fields(kind)`` decodes it in format ``kind``.
        """
        plan = make_plan(self.sp, self.dram, opcode, fields, self.wgt_version) if self.ok else None
        if len(self.table) > 1 << 16:  # bounded: a stream of all-distinct instructions
            self.table.clear()
        self.table[key] = plan
        return plan


def make_plan(sp: Scratchpads, dram: DRAM, opcode: int, fields: Callable[[str], dict],
              wgt_version: list) -> Plan | None:
    """A plan for one instruction, or None if it is not one of the planned shapes (or would
    fail a check: the opcode functions then raise the error). ``wgt_version[0]`` changes
    whenever the weight buffer is written (WGT load plans change it themselves)."""
    if opcode == isa.OPCODE_FINISH:
        return _nothing
    if opcode == isa.OPCODE_ALU:
        return _alu_plan(sp, fields("alu"))
    if opcode == isa.OPCODE_GEMM:
        f = fields("gemm")
        return _reset_plan(sp, f) if f["reset_reg"] else _gemm_plan(sp, f, wgt_version)
    if opcode in (isa.OPCODE_LOAD, isa.OPCODE_STORE):
        return _mem_plan(sp, dram, opcode, fields("mem"), wgt_version)
    return None


# ------------------------------------------------------------------------------ LOAD / STORE
def _nothing() -> None:
    """FINISH, and LOAD or STORE with ``x_size == 0`` (a no-op carrying tokens)."""


def _mem_plan(sp: Scratchpads, dram: DRAM, opcode: int, f: dict, wgt_version: list) -> Plan | None:
    env = sp.env
    xs, ys, mt = f["x_size"], f["y_size"], f["memory_type"]
    if xs == 0 and mt <= isa.MEM_ACC_8BIT:
        return _nothing
    if ys == 0 or f["y_pad_0"] or f["y_pad_1"] or f["x_pad_0"] or f["x_pad_1"]:
        return None
    if opcode == isa.OPCODE_LOAD and mt not in (isa.MEM_INP, isa.MEM_WGT, isa.MEM_ACC):
        return None
    try:
        check_mem(env, dram, -1, f, opcode)
    except Exception:  # noqa: BLE001 -- any failing check: no plan, the opcode function raises it
        return None
    base, stride = f["sram_base"], f["x_stride"]
    if opcode == isa.OPCODE_STORE:
        elem = env.OUT_ELEM_BYTES
        rows = as_strided(dram.data[f["dram_base"] * elem:], shape=(ys, xs * elem), strides=(stride * elem, 1))
        lanes = sp.acc[base:base + xs * ys].reshape(ys, xs * elem)
        out = rows.view(np.int8)

        def store() -> None:
            np.copyto(out, lanes, casting="unsafe")  # the low 8 bits of each lane
        return store
    elem = env.elem_bytes(mt)
    target = {isa.MEM_INP: sp.inp, isa.MEM_WGT: sp.wgt, isa.MEM_ACC: sp.acc}[mt]
    dtype = np.int32 if mt == isa.MEM_ACC else np.int8
    src = as_strided(dram.data[f["dram_base"] * elem:], shape=(ys, xs * elem), strides=(stride * elem, 1))
    src = src.view(dtype)
    dest = target[base:base + xs * ys].reshape(ys, -1)
    if mt == isa.MEM_WGT:
        def load_wgt() -> None:
            np.copyto(dest, src, casting="unsafe")
            wgt_version[0] += 1
        return load_wgt

    def load() -> None:
        np.copyto(dest, src, casting="unsafe")
    return load


# ------------------------------------------------------------------------------ GEMM
def _nest(sp: Scratchpads, f: dict, roles: tuple, limits: dict) -> LoopNest | None:
    """The loop nest of ``f`` if it is non-empty and in range, else None."""
    if f["uop_end"] > sp.uop_dst.shape[0]:
        return None
    nest = LoopNest.from_fields(sp, f, roles)
    if nest.empty or not nest.in_bounds(limits):
        return None
    return nest


def _rows(idx: np.ndarray):
    """Row indices ``idx`` as a slice when they are consecutive and ascending, else as they are."""
    if idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return slice(int(idx[0]), int(idx[0]) + idx.size)
    return idx


def _reset_plan(sp: Scratchpads, f: dict) -> Plan | None:
    nest = _nest(sp, f, ("dst",), {"dst": sp.acc.shape[0]})
    if nest is None:
        return None
    rows = _rows(nest.unique_rows("dst"))
    acc = sp.acc
    if isinstance(rows, slice):
        view = acc[rows]  # (a view: the buffers are never reallocated)

        def reset_slice() -> None:
            view.fill(0)
        return reset_slice

    def reset() -> None:
        acc[rows] = 0
    return reset


def _gemm_plan(sp: Scratchpads, f: dict, wgt_version: list) -> Plan | None:
    """Gather the inputs and weights of every uop-iteration, multiply them in one batched
    product and add the products to their accumulator rows (summed first, in int64, for rows
    written several times)."""
    nest = _nest(sp, f, ("dst", "src", "wgt"),
                 {"dst": sp.acc.shape[0], "src": sp.inp.shape[0], "wgt": sp.wgt.shape[0]})
    if nest is None or nest.count > _GEMM_MAX_ITERS:
        return None
    d, s, w = (nest.flat(r) for r in ("dst", "src", "wgt"))
    inp, wgt = sp.inp, sp.wgt
    acc2 = sp.acc.reshape(sp.acc.shape[0], -1)
    order = np.argsort(d, kind="stable")
    d, s, w = d[order], s[order], w[order]
    starts = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
    rows = _rows(d[starts])
    if starts.size == d.size:  # each row written once: no sums across uop-iterations
        if isinstance(rows, slice):
            out_rows = acc2[rows]  # (a view: the buffers are never reallocated)

            def gemm_slice() -> None:
                prod = np.matmul(inp[s], wgt[w].transpose(0, 2, 1))
                np.add(out_rows, prod.reshape(len(d), -1).astype(np.int32), out=out_rows)
            return gemm_slice

        def gemm() -> None:
            prod = np.matmul(inp[s], wgt[w].transpose(0, 2, 1))
            acc2[rows] += prod.reshape(len(d), -1).astype(np.int32)
        return gemm
    # one input row (or one weight block) per accumulator row: sum that row's weights (inputs)
    # first, exactly: |sum of products| <= iterations per row * 2^14 * BLOCK_IN <= 2^24
    per_row = np.diff(np.r_[starts, d.size])
    if per_row.max() * sp.env.BLOCK_IN <= 1024:
        n_rows = starts.size
        group = _group_sum(starts, per_row)
        if np.array_equal(s, np.repeat(s[starts], per_row)):
            x_rows = _rows(s[starts])
            if np.all(per_row == per_row[0]) and np.all(w.reshape(n_rows, -1) == w[:per_row[0]]):
                w_once = w[:per_row[0]]  # every row sums the same weight blocks: sum them once
                summed = [None, None]  # (weight version, the transposed sum), kept while valid
                if isinstance(rows, slice) and isinstance(x_rows, slice):
                    x_in, out_rows = inp[x_rows], acc2[rows]  # (views: buffers are never reallocated)

                    def gemm_shared_wgt_slices() -> None:
                        if summed[0] != wgt_version[0]:
                            summed[:] = wgt_version[0], wgt[w_once].sum(axis=0).T
                        prod = np.matmul(x_in, summed[1])
                        np.add(out_rows, prod.reshape(n_rows, -1).astype(np.int32), out=out_rows)
                    return gemm_shared_wgt_slices

                def gemm_shared_wgt() -> None:
                    if summed[0] != wgt_version[0]:
                        summed[:] = wgt_version[0], wgt[w_once].sum(axis=0).T
                    prod = np.matmul(inp[x_rows], summed[1])
                    acc2[rows] += prod.reshape(n_rows, -1).astype(np.int32)
                return gemm_shared_wgt

            def gemm_summed_wgt() -> None:
                wsum = group(wgt[w])
                prod = np.matmul(inp[x_rows], wsum.transpose(0, 2, 1))
                acc2[rows] += prod.reshape(n_rows, -1).astype(np.int32)
            return gemm_summed_wgt
        if np.array_equal(w, np.repeat(w[starts], per_row)):
            w_rows = w[starts]

            def gemm_summed_inp() -> None:
                xsum = group(inp[s])
                prod = np.matmul(xsum, wgt[w_rows].transpose(0, 2, 1))
                acc2[rows] += prod.reshape(n_rows, -1).astype(np.int32)
            return gemm_summed_inp

    def gemm_reduced() -> None:
        prod = np.matmul(inp[s], wgt[w].transpose(0, 2, 1)).reshape(len(d), -1).astype(np.int64)
        acc2[rows] += np.add.reduceat(prod, starts, axis=0).astype(np.int32)
    return gemm_reduced


def _group_sum(starts: np.ndarray, sizes: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """A function summing consecutive groups of rows (group ``k``: ``sizes[k]`` rows from
    ``starts[k]``) of its argument along the first axis."""
    n, g = sizes.size, int(sizes[0])
    if np.all(sizes == g):  # equal groups: a reshape and a sum (much faster than reduceat)
        return lambda a: a.reshape((n, g) + a.shape[1:]).sum(axis=1)
    return lambda a: np.add.reduceat(a.reshape(a.shape[0], -1), starts, axis=0).reshape((n,) + a.shape[1:])


# ------------------------------------------------------------------------------ ALU
def _alu_plan(sp: Scratchpads, f: dict) -> Plan | None:
    """ALU with an immediate over distinct rows: one in-place int32 operation."""
    op, imm = f["alu_opcode"], f["imm"]
    if not f["use_imm"] or op not in isa.ALU_NAMES or op in isa.ALU_OPTIONS:
        return None
    nest = _nest(sp, f, ("dst",), {"dst": sp.acc.shape[0]})
    if nest is None:
        return None
    d = nest.flat("dst")
    uniq = np.unique(d)
    if uniq.size != d.size:  # a row updated several times: the opcode function's closed form
        return None
    rows = _rows(uniq)
    acc2 = sp.acc.reshape(sp.acc.shape[0], -1)
    value = np.int32(imm)
    if op == isa.ALU_SHR:
        ufunc, value = (np.right_shift, np.int32(imm & 31)) if imm >= 0 else (np.left_shift, np.int32(-imm & 31))
    else:
        ufunc = {isa.ALU_MIN: np.minimum, isa.ALU_MAX: np.maximum, isa.ALU_ADD: np.add,
                 isa.ALU_MUL: np.multiply}[op]
    if isinstance(rows, slice):
        view = acc2[rows]

        def alu_slice() -> None:
            ufunc(view, value, out=view)
        return alu_slice

    def alu_rows() -> None:
        acc2[rows] = ufunc(acc2[rows], value)
    return alu_rows
