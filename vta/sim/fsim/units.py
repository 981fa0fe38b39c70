"""The data path of the functional simulator: on-chip buffers and one function per opcode.

Every function here executes one decoded instruction against :class:`Scratchpads` and the DRAM
arena, exactly as ``reference/vta-isa.md`` section 4 and the semantics table of DESIGN.md say.
They check every SRAM index and DRAM range before touching anything and raise an error naming
the instruction index, the field, the value and the accepted limit.

Representation (an internal choice, invisible through the device contract):

* ``inp`` and ``wgt`` hold element values (any width up to 8 bits) as float32, which represents
  them exactly and feeds BLAS without conversion, shaped ``(depth, BATCH, BLOCK_IN)`` and
  ``(depth, BLOCK_OUT, BLOCK_IN)``; GEMM sums in float32 or float64, whichever holds every
  partial sum exactly (see :func:`gemm`);
* ``acc`` holds int32 lanes, shaped ``(depth, BATCH, BLOCK_OUT)``, always wrapped to
  ``ACC_WIDTH`` bits;
* ``uop`` holds the three decoded micro-op index columns.

A GEMM or ALU instruction is executed as whole-array NumPy operations over its loop nest
(:mod:`vta.sim.fsim.loops` builds the index grids), with the result the sequential loop of the
ISA reference would give.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ... import isa
from ...dram import DRAM
from ...env import Environment
from ...errors import DRAMAccessError, InvalidInstructionError, SRAMIndexError
from .loops import LoopNest, alu_segments

__all__ = ["Scratchpads", "load", "store", "gemm", "gemm_run", "alu"]


# ------------------------------------------------------------------------------ element packing
def unpack_signed(raw: np.ndarray, width: int) -> np.ndarray:
    """Split the bytes in the last axis of ``raw`` into signed ``width``-bit values (low bits first).

    Widths 1, 2 and 4 pack several values per byte, the first in the lowest bits; 8, 16 and 32
    are little-endian two's complement.
    """
    if width == 8:
        return raw.view(np.int8)
    if width in (16, 32):
        return np.ascontiguousarray(raw).view(f"<i{width // 8}")
    per_byte = 8 // width
    shifts = np.arange(per_byte, dtype=np.uint8) * np.uint8(width)
    vals = (raw[..., None] >> shifts) & np.uint8((1 << width) - 1)
    vals = vals.reshape(raw.shape[:-1] + (raw.shape[-1] * per_byte,)).astype(np.int8)
    sign = np.int8(1 << (width - 1))
    return (vals ^ sign) - sign


def pack_low_bits(vals: np.ndarray, width: int) -> np.ndarray:
    """Inverse of :func:`unpack_signed`: keep the low ``width`` bits of each value, as bytes."""
    if width == 8:
        return vals.astype(np.int8).view(np.uint8)
    if width in (16, 32):
        return vals.astype(f"<i{width // 8}").view(np.uint8)
    per_byte = 8 // width
    v = (vals.astype(np.int64) & ((1 << width) - 1)).astype(np.uint8)
    v = v.reshape(vals.shape[:-1] + (vals.shape[-1] // per_byte, per_byte))
    shifts = np.arange(per_byte, dtype=np.uint8) * np.uint8(width)
    return np.bitwise_or.reduce(v << shifts, axis=-1).astype(np.uint8)


def wrap_acc(values: np.ndarray, width: int) -> np.ndarray:
    """Wrap integer ``values`` to ``width``-bit two's complement, returned as int32."""
    if width == 32:
        return values.astype(np.int32)
    v = values.astype(np.int64) & ((1 << width) - 1)
    sign = 1 << (width - 1)
    return ((v ^ sign) - sign).astype(np.int32)


# ------------------------------------------------------------------------------ state
class Scratchpads:
    """The on-chip buffers of one simulated core (contents persist until :meth:`clear`)."""

    def __init__(self, env: Environment):
        self.env = env
        e = env
        self.uop_dst = np.zeros(e.UOP_BUFF_DEPTH, dtype=np.int64)
        self.uop_src = np.zeros(e.UOP_BUFF_DEPTH, dtype=np.int64)
        self.uop_wgt = np.zeros(e.UOP_BUFF_DEPTH, dtype=np.int64)
        self.inp = np.zeros((e.INP_BUFF_DEPTH, e.BATCH, e.BLOCK_IN), dtype=np.float32)
        self.wgt = np.zeros((e.WGT_BUFF_DEPTH, e.BLOCK_OUT, e.BLOCK_IN), dtype=np.float32)
        self.acc = np.zeros((e.ACC_BUFF_DEPTH, e.BATCH, e.BLOCK_OUT), dtype=np.int32)
        #: Largest |product| of one input and one weight value; bounds exact float sums.
        self.max_product = (1 << (e.INP_WIDTH - 1)) * (1 << (e.WGT_WIDTH - 1))

    def clear(self) -> None:
        """Zero every buffer (a hardware reset)."""
        for buf in (self.uop_dst, self.uop_src, self.uop_wgt, self.inp, self.wgt, self.acc):
            buf[...] = 0


def _where(index: int, name: str) -> str:
    return f"instruction {index} ({name})"


# ------------------------------------------------------------------------------ DRAM helpers
def _dram_check(dram: DRAM, index: int, name: str, base: int, rows: int, cols: int, stride: int,
                elem: int) -> None:
    """Require a 2-D DRAM region to lie in one live allocation (DRAMAccessError naming it)."""
    start = base * elem
    end = (base + (rows - 1) * stride + cols) * elem
    try:
        dram.check(start, end - start, f"{_where(index, name)} dram_base={base!r}")
    except DRAMAccessError as exc:
        raise DRAMAccessError(
            f"{exc} (y_size={rows}, x_size={cols}, x_stride={stride}, element of {elem} bytes)", index
        ) from None


def _dram_view(dram: DRAM, base: int, rows: int, cols: int, stride: int, elem: int) -> np.ndarray:
    """A ``(rows, cols*elem)`` uint8 view of a 2-D DRAM region already checked by :func:`_dram_check`."""
    return as_strided(dram.data[base * elem:], shape=(rows, cols * elem), strides=(stride * elem, 1))


def _depth(env: Environment, mt: int) -> int:
    return {isa.MEM_UOP: env.UOP_BUFF_DEPTH, isa.MEM_WGT: env.WGT_BUFF_DEPTH, isa.MEM_INP: env.INP_BUFF_DEPTH,
            isa.MEM_ACC: env.ACC_BUFF_DEPTH, isa.MEM_ACC_8BIT: env.ACC_BUFF_DEPTH}[mt]


def check_mem(env: Environment, dram: DRAM, index: int, f: dict, opcode: int) -> None:
    """The checks of a LOAD or STORE with ``x_size > 0`` that depend on its fields alone.

    :func:`load` and :func:`store` make them before touching anything, and
    :func:`vta.sim.stream.check_stream` makes them for a whole stream before it runs, so the
    errors and their messages are the same either way.

    Raises
    ------
    InvalidInstructionError
        A LOAD of OUT; a STORE of another memory type or with padding.
    SRAMIndexError
        If the SRAM rectangle runs past its buffer.
    DRAMAccessError
        If the DRAM rows leave the live allocation holding ``dram_base``.
    """
    mt = f["memory_type"]
    xs, ys, stride = f["x_size"], f["y_size"], f["x_stride"]
    base = f["sram_base"]
    if opcode == isa.OPCODE_LOAD:
        if mt == isa.MEM_OUT:
            raise InvalidInstructionError(
                f"{_where(index, 'LOAD')}: memory_type 4 (OUT) cannot be loaded; accepted 0 UOP, 1 WGT, "
                "2 INP, 3 ACC, 5 ACC_8BIT", index)
        name = f"LOAD {isa.MEM_NAMES[mt]}"
        w = f["x_pad_0"] + xs + f["x_pad_1"]
        h = f["y_pad_0"] + ys + f["y_pad_1"]
        depth = _depth(env, mt)
        if base + w * h > depth:
            raise SRAMIndexError(
                f"{_where(index, name)}: sram_base={base!r} + padded size {w}x{h} = {base + w * h} elements "
                f"exceeds the {isa.MEM_NAMES[mt if mt != isa.MEM_ACC_8BIT else isa.MEM_ACC]} buffer depth {depth}",
                index)
        if ys:
            _dram_check(dram, index, name, f["dram_base"], ys, xs, stride, env.elem_bytes(mt))
        return
    if mt != isa.MEM_OUT:
        raise InvalidInstructionError(
            f"{_where(index, 'STORE')}: memory_type {mt!r} "
            f"({isa.MEM_NAMES.get(mt, '?')}) cannot be stored; accepted 4 (OUT)", index)
    for pad in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
        if f[pad]:
            raise InvalidInstructionError(
                f"{_where(index, 'STORE')}: {pad}={f[pad]!r}; a store takes no padding (accepted 0)", index)
    depth = env.ACC_BUFF_DEPTH
    if base + xs * ys > depth:
        raise SRAMIndexError(
            f"{_where(index, 'STORE')}: sram_base={base!r} + y_size*x_size = {base + xs * ys} rows "
            f"exceeds the accumulator depth {depth}", index)
    if ys:
        _dram_check(dram, index, "STORE", f["dram_base"], ys, xs, stride, env.OUT_ELEM_BYTES)


# ------------------------------------------------------------------------------ LOAD
def load(sp: Scratchpads, dram: DRAM, index: int, f: dict) -> None:
    """LOAD (opcode 0) of UOP, WGT, INP, ACC or ACC_8BIT with 2-D strides and zero padding.

    ISA reference 4.2: element ``(yy, xx)`` of the padded ``H x W`` rectangle goes to SRAM index
    ``sram_base + yy*W + xx``; data rows come from ``dram_base + y*x_stride`` (element units), pads
    are zero. ``x_size == 0`` is a no-op (the caller does not call this).

    Raises
    ------
    InvalidInstructionError
        For memory type OUT (loads of OUT do not exist).
    SRAMIndexError
        If ``sram_base + W*H`` exceeds the buffer depth.
    DRAMAccessError
        If the source rows leave the live allocation holding ``dram_base``.
    """
    env = sp.env
    check_mem(env, dram, index, f, isa.OPCODE_LOAD)
    mt = f["memory_type"]
    xs, ys, stride = f["x_size"], f["y_size"], f["x_stride"]
    w = f["x_pad_0"] + xs + f["x_pad_1"]
    h = f["y_pad_0"] + ys + f["y_pad_1"]
    target = {isa.MEM_UOP: sp.uop_dst, isa.MEM_WGT: sp.wgt, isa.MEM_INP: sp.inp,
              isa.MEM_ACC: sp.acc, isa.MEM_ACC_8BIT: sp.acc}[mt]
    base = f["sram_base"]
    elem = env.elem_bytes(mt)
    rows = _dram_view(dram, f["dram_base"], ys, xs, stride, elem) if ys else None
    region = slice(base, base + w * h)
    ypad0, xpad0 = f["y_pad_0"], f["x_pad_0"]
    if mt == isa.MEM_UOP:
        words = np.zeros((h, w), dtype=np.int64)
        if rows is not None:
            words[ypad0:ypad0 + ys, xpad0:xpad0 + xs] = np.ascontiguousarray(rows).view("<u4")
        dst, src, wgt = isa.decode_uop_array(words.reshape(-1), env)
        sp.uop_dst[region], sp.uop_src[region], sp.uop_wgt[region] = dst, src, wgt
        return
    if mt == isa.MEM_INP:
        vals = None if rows is None else unpack_signed(rows, env.INP_WIDTH)
        shape = (env.BATCH, env.BLOCK_IN)
    elif mt == isa.MEM_WGT:
        vals = None if rows is None else unpack_signed(rows, env.WGT_WIDTH)
        shape = (env.BLOCK_OUT, env.BLOCK_IN)
    elif mt == isa.MEM_ACC:
        vals = None if rows is None else unpack_signed(rows, env.ACC_WIDTH)
        shape = (env.BATCH, env.BLOCK_OUT)
    else:  # ACC_8BIT: one int8 per accumulator lane, sign-extended
        vals = None if rows is None else wrap_acc(rows.view(np.int8), env.ACC_WIDTH)
        shape = (env.BATCH, env.BLOCK_OUT)
    dest = target[region].reshape((h, w) + shape)
    if w * h != ys * xs:  # zero the pads (cheaper to zero all when any pad exists)
        dest[...] = 0
    if rows is not None:
        dest[ypad0:ypad0 + ys, xpad0:xpad0 + xs] = vals.reshape((ys, xs) + shape)


# ------------------------------------------------------------------------------ STORE
def store(sp: Scratchpads, dram: DRAM, index: int, f: dict) -> None:
    """STORE (opcode 1): the low OUT_WIDTH bits of ACC rows, as they are now, to DRAM.

    ISA reference 4.3: SRAM row ``sram_base + y*x_size + x`` goes to DRAM element
    ``dram_base + y*x_stride + x``; memory type must be OUT and every pad 0.

    Raises
    ------
    InvalidInstructionError
        If the memory type is not OUT or a pad is not 0.
    SRAMIndexError
        If the rows read run past the accumulator buffer.
    DRAMAccessError
        If the destination leaves the live allocation holding ``dram_base``.
    """
    env = sp.env
    check_mem(env, dram, index, f, isa.OPCODE_STORE)
    xs, ys, base = f["x_size"], f["y_size"], f["sram_base"]
    if ys == 0:
        return
    rows = _dram_view(dram, f["dram_base"], ys, xs, f["x_stride"], env.OUT_ELEM_BYTES)
    lanes = sp.acc[base:base + xs * ys].reshape(ys, xs * env.BATCH * env.BLOCK_OUT)
    rows[...] = pack_low_bits(lanes, env.OUT_WIDTH)


# ------------------------------------------------------------------------------ GEMM
def check_uops(depth: int, index: int, name: str, f: dict) -> None:
    """Require a GEMM/ALU micro-op range to end inside a uop buffer of ``depth`` entries.

    Raises
    ------
    SRAMIndexError
        If ``uop_end`` exceeds ``depth``.
    """
    if f["uop_end"] > depth:
        raise SRAMIndexError(
            f"{_where(index, name)}: uop_end={f['uop_end']!r} exceeds the micro-op buffer depth {depth}", index)


def gemm(sp: Scratchpads, index: int, f: dict) -> int:
    """GEMM (opcode 2): ``acc[d] += inp[s] . wgt[w]^T`` over the loop nest, or ``acc[d] = 0`` on reset.

    ISA reference 4.4. Products of int8 (or narrower) values are summed in float32 when every
    partial sum stays within 2^24 and in float64 otherwise, so the sums are exact; the int32
    accumulation wraps modulo 2^ACC_WIDTH.

    Returns
    -------
    int
        The uop-iterations executed (0 for an empty nest).

    Raises
    ------
    SRAMIndexError
        If ``uop_end`` or any acc/inp/wgt index of the nest is outside its buffer.
    """
    check_uops(sp.uop_dst.shape[0], index, "GEMM", f)
    reset = bool(f["reset_reg"])
    nest = LoopNest.from_fields(sp, f, ("dst",) if reset else ("dst", "src", "wgt"))
    if nest.empty:
        return 0
    nest.check_bounds(index, "GEMM", {"dst": ("acc", sp.acc.shape[0]), "src": ("inp", sp.inp.shape[0]),
                                      "wgt": ("wgt", sp.wgt.shape[0])})
    if reset:  # a reset reads neither inp nor wgt
        sp.acc[nest.unique_rows("dst")] = 0
        return nest.count
    _accumulate(sp, nest)
    return nest.count


def _accumulate(sp: Scratchpads, nest: LoopNest) -> None:
    """Add the products of a (bounds-checked) GEMM nest to the accumulator, wrapping."""
    acc2 = sp.acc.reshape(sp.acc.shape[0], -1)
    width = sp.env.ACC_WIDTH
    for rows, contrib, unique in nest.gemm_contributions(sp.inp, sp.wgt, sp.max_product):
        lanes = contrib.reshape(len(rows), -1)
        if not unique:
            order = np.argsort(rows, kind="stable")
            rows, lanes = rows[order], lanes[order]
            starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
            rows, lanes = rows[starts], np.add.reduceat(lanes, starts, axis=0)
        acc2[rows] = wrap_acc(acc2[rows].astype(np.int64) + lanes, width)


def gemm_run(sp: Scratchpads, fields: list[dict]) -> bool:
    """Execute consecutive GEMMs as one batched product, if their micro-ops line up.

    ``fields`` are non-reset GEMMs with one micro-op each and identical trip counts and
    factors. When the micro-op indices step by a constant from one instruction to the next,
    the run is one loop nest with an extra outer level (the instruction), and one BLAS call
    does the work of all of them. GEMMs only add to the accumulator, so running them together
    gives the sequential result.

    Returns
    -------
    bool
        False (having changed nothing) when the run does not line up or some index is out of
        range; the caller then executes the instructions one by one, which raises any error.
    """
    depth = sp.uop_dst.shape[0]
    bgn = np.array([f["uop_bgn"] for f in fields], dtype=np.int64)
    if bgn.max() >= depth:
        return False
    f0 = fields[0]
    bases, factors = {}, {}
    for role, col in (("dst", sp.uop_dst), ("src", sp.uop_src), ("wgt", sp.uop_wgt)):
        v = col[bgn]
        step = int(v[1] - v[0])
        if step < 0 or np.any(v != v[0] + step * np.arange(v.size)):
            return False
        bases[role] = v[:1]
        factors[role] = (step, f0[f"{role}_factor_out"], f0[f"{role}_factor_in"])
    nest = LoopNest((len(fields), f0["iter_out"], f0["iter_in"]), bases, factors, int(bgn[0]))
    if not nest.in_bounds({"dst": sp.acc.shape[0], "src": sp.inp.shape[0], "wgt": sp.wgt.shape[0]}):
        return False
    _accumulate(sp, nest)
    return True


# ------------------------------------------------------------------------------ ALU
def req_op(a: np.ndarray, b: np.ndarray, out_width: int) -> np.ndarray:
    """REQ (ALU opcode 5, option ``ALU_REQUANT``) lane-wise on int64 arrays: the multiplier
    ``m = b & 0xFFFF`` and shift ``s = (b >> 16) & 63``, ``clip((a * m + 2**(s-1)) >> s)`` with
    the exact product (no rounding term for ``s = 0``), saturated to the signed ``out_width``-bit
    range (README, hardware options)."""
    b = np.asarray(b, dtype=np.int64)
    m = b & 0xFFFF
    s = (b >> 16) & 63
    r = a * m
    r = np.where(s > 0, (r + (np.int64(1) << np.maximum(s - 1, 0))) >> s, r)
    hi = (1 << (out_width - 1)) - 1
    return np.clip(r, -hi - 1, hi)


def alu_op(op: int, a: np.ndarray, b: np.ndarray, width: int, out_width: int = 8) -> np.ndarray:
    """Apply ALU opcode ``op`` lane-wise to int64 arrays ``a`` and ``b``; result wrapped to ``width`` bits.

    MIN/MAX are signed; ADD and MUL wrap; SHR shifts right arithmetically by ``b & 31`` when
    ``b >= 0`` and left by ``(-b) & 31`` (wrapping) when ``b < 0`` (DESIGN semantics table);
    REQ (:func:`req_op`) saturates to the signed ``out_width``-bit range; MOV (opcode 6, option
    ``ALU_MOV``) is ``b``.
    """
    if op == isa.ALU_REQ:
        return wrap_acc(req_op(a, b, out_width), width)
    if op == isa.ALU_MOV:
        return wrap_acc(np.broadcast_to(np.asarray(b, dtype=np.int64), np.shape(a)), width)
    if op == isa.ALU_MIN:
        r = np.minimum(a, b)
    elif op == isa.ALU_MAX:
        r = np.maximum(a, b)
    elif op == isa.ALU_ADD:
        r = a + b
    elif op == isa.ALU_MUL:
        r = (a * b) & 0xFFFF_FFFF
    else:  # SHR
        right = b >= 0
        amount = np.where(right, b, -b) & 31
        r = np.where(right, a >> amount, (a << amount) & 0xFFFF_FFFF)
    return wrap_acc(r, width)


def alu(sp: Scratchpads, index: int, f: dict) -> int:
    """ALU (opcode 4): ``acc[d] = op(acc[d], imm or acc[s])`` over the loop nest, sequentially.

    ISA reference 4.5 with the DESIGN rule for immediates (the first operand is ``acc[dst]``).
    The result equals the one-uop-at-a-time loop even when a uop reads or rewrites a row an
    earlier uop of the same instruction wrote.

    Returns
    -------
    int
        The uop-iterations executed.

    Raises
    ------
    InvalidInstructionError
        If ``alu_opcode`` is not 0..4 (5, REQ, with the option ``ALU_REQUANT``; 6, MOV, with
        ``ALU_MOV``).
    SRAMIndexError
        If ``uop_end`` or any acc index of the nest is outside the buffer.
    """
    op = f["alu_opcode"]
    why = isa.check_alu_opcode(op, sp.env)
    if why is not None:
        raise InvalidInstructionError(f"{_where(index, 'ALU')}: {why}", index)
    check_uops(sp.uop_dst.shape[0], index, "ALU", f)
    use_imm = bool(f["use_imm"])
    nest = LoopNest.from_fields(sp, f, ("dst",) if use_imm else ("dst", "src"))
    if nest.empty:
        return 0
    depth = sp.acc.shape[0]
    nest.check_bounds(index, "ALU", {"dst": ("acc", depth), "src": ("acc", depth)})
    acc2 = sp.acc.reshape(depth, -1)
    width, out_width = sp.env.ACC_WIDTH, sp.env.OUT_WIDTH
    for lo, hi in nest.chunks():  # in order, bounded memory however long the nest
        dst = nest.flat("dst", lo, hi)
        if use_imm:
            rows, times = np.unique(dst, return_counts=True)
            acc2[rows] = _alu_imm_repeated(op, acc2[rows].astype(np.int64), int(f["imm"]), times, width, out_width)
            continue
        src = nest.flat("src", lo, hi)
        for a, b in alu_segments(dst, src):
            d = dst[a:b]
            acc2[d] = alu_op(op, acc2[d].astype(np.int64), acc2[src[a:b]].astype(np.int64), width, out_width)
    return nest.count


def _alu_imm_repeated(op: int, a: np.ndarray, imm: int, times: np.ndarray, width: int,
                      out_width: int = 8) -> np.ndarray:
    """``op(..op(op(a, imm), imm).., imm)`` applied ``times`` times per row, in closed form
    (REQ: applied repeatedly, at most a few dozen times before it reaches a fixed point; MOV: once
    is as many times)."""
    t = times.astype(np.int64)[:, None]
    if op == isa.ALU_MOV:
        return alu_op(op, a, np.int64(imm), width)
    if op == isa.ALU_REQ:
        out = a.copy()
        for k in range(1, int(times.max()) + 1):
            sel = times >= k
            out[sel] = alu_op(op, out[sel], np.int64(imm), width, out_width)
        return out
    if op in (isa.ALU_MIN, isa.ALU_MAX):
        return alu_op(op, a, np.int64(imm), width)
    if op == isa.ALU_ADD:
        return wrap_acc(a + t * imm, width)
    if op == isa.ALU_MUL:
        powers = {int(k): pow(imm, int(k), 1 << 32) for k in np.unique(times)}
        factor = np.array([powers[int(k)] for k in times], dtype=np.int64)[:, None]
        return wrap_acc(((a & 0xFFFF_FFFF) * factor) & 0xFFFF_FFFF, width)
    if imm >= 0:  # SHR right: shifts add up; past 31 only the sign is left
        return wrap_acc(a >> np.minimum(t * (imm & 31), 63), width)
    total = np.minimum(t * ((-imm) & 31), 32)
    return wrap_acc((a << total) & 0xFFFF_FFFF, width)
