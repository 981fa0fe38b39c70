"""The single source of VTA instruction and micro-op layouts.

Every bit position used anywhere in the project (the fsim decoder, the C runtime header, the
RTL package) is computed here from an :class:`~vta.env.Environment`. The packing rule is the C
bit-field rule of upstream ``hw_spec.h`` (ISA reference 2.1): fields fill 64-bit words LSB
first, and a field that would straddle a word boundary starts at the next word.

Instructions are 128 bits (two little-endian 64-bit words); micro-ops are 32 bits.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Iterable, Sequence, Union

import numpy as np

from . import env as _envmod
from .env import Environment, get_env
from .errors import DecodeError, EncodingError

__all__ = [
    "OPCODE_LOAD", "OPCODE_STORE", "OPCODE_GEMM", "OPCODE_FINISH", "OPCODE_ALU",
    "MEM_UOP", "MEM_WGT", "MEM_INP", "MEM_ACC", "MEM_OUT", "MEM_ACC_8BIT",
    "ALU_MIN", "ALU_MAX", "ALU_ADD", "ALU_SHR", "ALU_MUL", "ALU_REQ", "ALU_MOV", "ALU_OPTIONS",
    "alu_opcodes_text", "req_operand",
    "Field", "Layout", "layout", "MemInsn", "GemmInsn", "AluInsn", "FinishInsn", "Uop",
    "encode", "encode_words", "encode_program", "decode", "decode_program", "decode_array",
    "encode_uop", "decode_uop", "decode_uop_array", "disassemble", "dump_insn", "apply_tokens", "c_header",
]

OPCODE_LOAD, OPCODE_STORE, OPCODE_GEMM, OPCODE_FINISH, OPCODE_ALU = 0, 1, 2, 3, 4
OPCODE_NAMES = {0: "LOAD", 1: "STORE", 2: "GEMM", 3: "FINISH", 4: "ALU"}
MEM_UOP, MEM_WGT, MEM_INP, MEM_ACC, MEM_OUT, MEM_ACC_8BIT = 0, 1, 2, 3, 4, 5
MEM_NAMES = {0: "UOP", 1: "WGT", 2: "INP", 3: "ACC", 4: "OUT", 5: "ACC_8BIT"}
ALU_MIN, ALU_MAX, ALU_ADD, ALU_SHR, ALU_MUL, ALU_REQ, ALU_MOV = 0, 1, 2, 3, 4, 5, 6
ALU_NAMES = {0: "MIN", 1: "MAX", 2: "ADD", 3: "SHR", 4: "MUL", 5: "REQ", 6: "MOV"}
#: ALU opcodes that exist only with a hardware option (``vta.env.OPTION_KEYS``): opcode -> key.
#: REQ: ``acc = clip((acc * m + 2**(s-1)) >> s)`` to the OUT range, with ``m = b & 0xFFFF`` and
#: ``s = (b >> 16) & 63`` of the operand ``b`` (README, hardware options). MOV: ``acc = b``, the
#: source row's lane or the sign-extended immediate (a copy of a row, or a constant fill).
ALU_OPTIONS = {ALU_REQ: "ALU_REQUANT", ALU_MOV: "ALU_MOV"}
#: Bits of the REQ operand: the unsigned multiplier, then the shift.
REQ_MULT_BITS, REQ_SHIFT_BITS = 16, 6


def alu_opcodes_text(env: Environment | None = None) -> str:
    """The ALU opcodes ``env`` accepts, as an error message lists them (``0 MIN, ..., 4 MUL``)."""
    env = env or get_env()
    return ", ".join(f"{k} {v}" for k, v in ALU_NAMES.items() if k not in ALU_OPTIONS or getattr(env, ALU_OPTIONS[k]))


def req_operand(multiplier: int, shift: int) -> int:
    """The REQ operand packing ``multiplier`` (0 .. 2**16 - 1) and ``shift`` (0 .. 63).

    Raises
    ------
    EncodingError
        If either is out of its range.
    """
    if not 0 <= int(multiplier) < 1 << REQ_MULT_BITS:
        raise EncodingError(f"REQ multiplier {multiplier!r} is outside 0..{(1 << REQ_MULT_BITS) - 1}")
    if not 0 <= int(shift) < 1 << REQ_SHIFT_BITS:
        raise EncodingError(f"REQ shift {shift!r} is outside 0..{(1 << REQ_SHIFT_BITS) - 1}")
    return int(multiplier) | (int(shift) << REQ_MULT_BITS)


def check_alu_opcode(op: int, env: Environment | None = None) -> str | None:
    """None when ``env`` accepts ALU opcode ``op``; else why not (an unknown opcode, or the
    hardware option it needs and ``env`` lacks)."""
    env = env or get_env()
    op = int(op)
    if op not in ALU_NAMES:
        return f"alu_opcode={op!r}; accepted {alu_opcodes_text(env)}"
    key = ALU_OPTIONS.get(op)
    if key is not None and not getattr(env, key):
        return env.option_refusal(key, f"alu_opcode {op} ({ALU_NAMES[op]})")
    return None

#: Stage that executes an instruction (runtime numbering: 1 load, 2 compute, 3 store).
STAGE_LOAD, STAGE_COMPUTE, STAGE_STORE = 1, 2, 3


@dataclass(frozen=True)
class Field:
    """One bit field of an instruction or micro-op.

    Attributes
    ----------
    name : str
        Field name, as in upstream ``hw_spec.h``.
    lo : int
        Position of the least significant bit in the 128-bit (or 32-bit) word.
    width : int
        Number of bits.
    signed : bool
        Whether the field is two's complement (only the ALU immediate).
    """

    name: str
    lo: int
    width: int
    signed: bool = False

    @property
    def hi(self) -> int:
        """Position of the most significant bit (inclusive)."""
        return self.lo + self.width - 1

    @property
    def min(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1


def _pack(decls: Sequence[tuple[str, int, bool]], word_bits: int) -> tuple[Field, ...]:
    """Place fields LSB first; a field that would cross a ``word_bits`` boundary moves to the next word."""
    fields = []
    pos = 0
    for name, width, signed in decls:
        if pos // word_bits != (pos + width - 1) // word_bits:
            pos = (pos // word_bits + 1) * word_bits
        fields.append(Field(name, pos, width, signed))
        pos += width
    return tuple(fields)


_HEADER = [("opcode", 3, False), ("pop_prev_dep", 1, False), ("pop_next_dep", 1, False),
           ("push_prev_dep", 1, False), ("push_next_dep", 1, False)]


@dataclass(frozen=True)
class Layout:
    """All field positions for one configuration.

    Build one with :func:`layout`; it is cached per configuration.
    """

    mem: tuple[Field, ...]
    gemm: tuple[Field, ...]
    alu: tuple[Field, ...]
    uop: tuple[Field, ...]

    @property
    def header(self) -> tuple[Field, ...]:
        return self.mem[:5]

    def fields(self, opcode: int) -> tuple[Field, ...]:
        """Fields of the instruction format used by ``opcode``.

        Raises
        ------
        DecodeError
            If ``opcode`` is not 0..4.
        """
        if opcode in (OPCODE_LOAD, OPCODE_STORE):
            return self.mem
        if opcode in (OPCODE_GEMM, OPCODE_FINISH):
            return self.gemm if opcode == OPCODE_GEMM else self.header
        if opcode == OPCODE_ALU:
            return self.alu
        raise DecodeError(f"opcode {opcode!r} is not one of 0 LOAD, 1 STORE, 2 GEMM, 3 FINISH, 4 ALU")

    def field(self, kind: str, name: str) -> Field:
        """Look up one field of ``kind`` ('mem', 'gemm', 'alu', 'uop') by name."""
        for f in getattr(self, kind):
            if f.name == name:
                return f
        raise KeyError(f"{kind} format has no field {name!r}")


@functools.lru_cache(maxsize=None)
def _layout_for(u: int, i: int, w: int, a: int) -> Layout:
    mem = _pack(_HEADER + [
        ("memory_type", 3, False), ("sram_base", _envmod.MEMOP_SRAM_ADDR_WIDTH, False),
        ("dram_base", _envmod.MEMOP_DRAM_ADDR_WIDTH, False), ("y_size", _envmod.MEMOP_SIZE_WIDTH, False),
        ("x_size", _envmod.MEMOP_SIZE_WIDTH, False), ("x_stride", _envmod.MEMOP_STRIDE_WIDTH, False),
        ("y_pad_0", 4, False), ("y_pad_1", 4, False), ("x_pad_0", 4, False), ("x_pad_1", 4, False),
    ], 64)
    common = _HEADER + [
        ("reset_reg", 1, False), ("uop_bgn", u, False), ("uop_end", u + 1, False),
        ("iter_out", _envmod.LOOP_ITER_WIDTH, False), ("iter_in", _envmod.LOOP_ITER_WIDTH, False),
        ("dst_factor_out", a, False), ("dst_factor_in", a, False),
    ]
    gemm = _pack(common + [("src_factor_out", i, False), ("src_factor_in", i, False),
                           ("wgt_factor_out", w, False), ("wgt_factor_in", w, False)], 64)
    alu = _pack(common + [("src_factor_out", a, False), ("src_factor_in", a, False),
                          ("alu_opcode", 3, False), ("use_imm", 1, False),
                          ("imm", _envmod.ALUOP_IMM_WIDTH, True)], 64)
    uop = _pack([("dst_idx", a, False), ("src_idx", max(a, i), False), ("wgt_idx", w, False)], 32)
    for fmt, fields, limit in (("memory", mem, 128), ("GEMM", gemm, 128), ("ALU", alu, 128), ("uop", uop, 32)):
        if fields[-1].hi >= limit:
            raise EncodingError(f"the {fmt} format needs {fields[-1].hi + 1} bits but holds {limit}")
    return Layout(mem, gemm, alu, uop)


def layout(env: Environment | None = None) -> Layout:
    """Return the field layout of ``env`` (the current environment by default)."""
    env = env or get_env()
    return _layout_for(env.LOG_UOP_BUFF_DEPTH, env.LOG_INP_BUFF_DEPTH, env.LOG_WGT_BUFF_DEPTH, env.LOG_ACC_BUFF_DEPTH)


# ---------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class _Deps:
    pop_prev_dep: int = 0
    pop_next_dep: int = 0
    push_prev_dep: int = 0
    push_next_dep: int = 0


@dataclass(frozen=True)
class MemInsn(_Deps):
    """LOAD (opcode 0) or STORE (opcode 1). Sizes, strides and bases count buffer elements."""

    opcode: int = OPCODE_LOAD
    memory_type: int = MEM_INP
    sram_base: int = 0
    dram_base: int = 0
    y_size: int = 0
    x_size: int = 0
    x_stride: int = 0
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0


@dataclass(frozen=True)
class _LoopInsn(_Deps):
    """The fields GEMM and ALU share: a uop range run inside two loops with index factors."""

    opcode: int = OPCODE_GEMM
    reset_reg: int = 0
    uop_bgn: int = 0
    uop_end: int = 0
    iter_out: int = 1
    iter_in: int = 1
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0


@dataclass(frozen=True)
class GemmInsn(_LoopInsn):
    """GEMM (opcode 2): ``acc[dst] += inp[src] . wgt[wgt]^T`` over two loops and a uop range."""

    wgt_factor_out: int = 0
    wgt_factor_in: int = 0


@dataclass(frozen=True)
class AluInsn(_LoopInsn):
    """ALU (opcode 4): ``acc[dst] = op(acc[dst], imm or acc[src])`` over two loops and a uop range."""

    opcode: int = OPCODE_ALU
    alu_opcode: int = ALU_ADD
    use_imm: int = 0
    imm: int = 0


@dataclass(frozen=True)
class FinishInsn(_Deps):
    """FINISH (opcode 3): ends the run once it executes on the compute stage."""

    opcode: int = OPCODE_FINISH


Insn = Union[MemInsn, GemmInsn, AluInsn, FinishInsn]


@dataclass(frozen=True)
class Uop:
    """A micro-op: accumulator row, source row (inp for GEMM, acc for ALU) and weight row."""

    dst_idx: int = 0
    src_idx: int = 0
    wgt_idx: int = 0


def _fields_for(insn: Insn, lay: Layout) -> tuple[Field, ...]:
    if isinstance(insn, MemInsn):
        if insn.opcode not in (OPCODE_LOAD, OPCODE_STORE):
            raise EncodingError(f"a MemInsn must have opcode 0 (LOAD) or 1 (STORE), got {insn.opcode!r}")
        return lay.mem
    if isinstance(insn, GemmInsn):
        return lay.gemm
    if isinstance(insn, AluInsn):
        return lay.alu
    if isinstance(insn, FinishInsn):
        return lay.header
    raise TypeError(f"not an instruction record: {insn!r}")


def _put(value: int, f: Field, what: str) -> int:
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, (int, np.integer)):
        raise EncodingError(f"{what} field {f.name!r} must be an integer, got {value!r}")
    value = int(value)
    if not f.min <= value <= f.max:
        raise EncodingError(f"{what} field {f.name!r} = {value!r} does not fit {f.width} bits "
                            f"(accepted {f.min}..{f.max})")
    return (value & ((1 << f.width) - 1)) << f.lo


def encode_int(insn: Insn, env: Environment | None = None) -> int:
    """Encode an instruction record as one 128-bit integer.

    Raises
    ------
    EncodingError
        If any field value does not fit its field.
    """
    lay = layout(env)
    what = OPCODE_NAMES.get(getattr(insn, "opcode", None), "instruction")
    if isinstance(insn, AluInsn) and isinstance(insn.alu_opcode, (int, np.integer)) and insn.alu_opcode in ALU_OPTIONS:
        why = check_alu_opcode(insn.alu_opcode, env)
        if why is not None:
            raise EncodingError(why)
    value = 0
    for f in _fields_for(insn, lay):
        value |= _put(getattr(insn, f.name), f, what)
    return value


def encode_words(insn: Insn, env: Environment | None = None) -> tuple[int, int]:
    """Encode an instruction as ``(word0, word1)``, the two little-endian 64-bit words."""
    v = encode_int(insn, env)
    return v & 0xFFFF_FFFF_FFFF_FFFF, v >> 64


def encode(insn: Insn, env: Environment | None = None) -> bytes:
    """Encode an instruction as its 16 bytes in DRAM order."""
    return encode_int(insn, env).to_bytes(16, "little")


def encode_program(insns: Iterable[Insn], env: Environment | None = None) -> np.ndarray:
    """Encode a sequence of instructions into an ``(N, 2)`` uint64 array (one row per instruction)."""
    rows = [encode_words(i, env) for i in insns]
    return np.array(rows, dtype=np.uint64).reshape(-1, 2)


def _get(value: int, f: Field) -> int:
    raw = (value >> f.lo) & ((1 << f.width) - 1)
    if f.signed and raw >> (f.width - 1):
        raw -= 1 << f.width
    return raw


def decode(data: bytes | Sequence[int] | int, env: Environment | None = None) -> Insn:
    """Decode one instruction.

    Parameters
    ----------
    data : bytes, (word0, word1) or int
        16 bytes in DRAM order, the two 64-bit words, or the 128-bit integer.

    Raises
    ------
    DecodeError
        If the opcode is not 0..4, a LOAD/STORE memory type is not 0..5, or an ALU opcode is
        not 0..4 (or 5, REQ, when the configuration has the option ``ALU_REQUANT``; 6, MOV, with
        ``ALU_MOV``).
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        if len(data) != 16:
            raise DecodeError(f"an instruction is 16 bytes, got {len(data)}")
        value = int.from_bytes(bytes(data), "little")
    elif isinstance(data, (int, np.integer)):
        value = int(data)
    else:
        w0, w1 = data
        value = int(w0) | (int(w1) << 64)
    lay = layout(env)
    opcode = value & 7
    fields = lay.fields(opcode)
    vals = {f.name: _get(value, f) for f in fields}
    if opcode in (OPCODE_LOAD, OPCODE_STORE):
        if vals["memory_type"] not in MEM_NAMES:
            raise DecodeError(f"memory_type {vals['memory_type']!r} is not one of 0 UOP .. 5 ACC_8BIT")
        return MemInsn(**vals)
    if opcode == OPCODE_GEMM:
        return GemmInsn(**vals)
    if opcode == OPCODE_ALU:
        if vals["alu_opcode"] not in ALU_NAMES:
            raise DecodeError(f"alu_opcode {vals['alu_opcode']!r} is not one of {alu_opcodes_text(env)}")
        why = check_alu_opcode(vals["alu_opcode"], env)
        if why is not None:
            raise DecodeError(why)
        return AluInsn(**vals)
    return FinishInsn(**vals)


def decode_program(words: np.ndarray | bytes, env: Environment | None = None) -> list[Insn]:
    """Decode an instruction stream given as bytes or as an ``(N, 2)`` uint64 array."""
    arr = _as_words(words)
    return [decode((int(a), int(b)), env) for a, b in arr]


def _as_words(words) -> np.ndarray:
    if isinstance(words, (bytes, bytearray, memoryview)):
        if len(words) % 16:
            raise DecodeError(f"an instruction stream is a multiple of 16 bytes, got {len(words)}")
        return np.frombuffer(bytes(words), dtype="<u8").reshape(-1, 2)
    arr = np.asarray(words)
    if arr.dtype == np.uint8:
        if arr.size % 16:
            raise DecodeError(f"an instruction stream is a multiple of 16 bytes, got {arr.size}")
        return arr.reshape(-1).view("<u8").reshape(-1, 2)
    return arr.astype(np.uint64, copy=False).reshape(-1, 2)


def _column(words: np.ndarray, f: Field) -> np.ndarray:
    word = words[:, f.lo // 64]
    col = (word >> np.uint64(f.lo % 64)) & np.uint64((1 << f.width) - 1)
    col = col.astype(np.int64)
    if f.signed:
        col = np.where(col >> (f.width - 1), col - (1 << f.width), col)
    return col


@dataclass
class InsnColumns:
    """Every field of an instruction stream as NumPy int64 columns.

    ``mem``, ``gemm`` and ``alu`` decode all rows with that format; a column is meaningful only
    on rows whose opcode uses the format. ``header`` holds opcode and dependency flags.
    """

    header: dict[str, np.ndarray]
    mem: dict[str, np.ndarray]
    gemm: dict[str, np.ndarray]
    alu: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.header["opcode"])


def decode_array(words: np.ndarray | bytes, env: Environment | None = None) -> InsnColumns:
    """Decode a whole instruction stream at once into field columns (vectorised).

    Invalid opcodes or memory types are *not* rejected here; executors check the rows they run.
    """
    arr = _as_words(words)
    lay = layout(env)
    return InsnColumns(
        header={f.name: _column(arr, f) for f in lay.header},
        mem={f.name: _column(arr, f) for f in lay.mem[5:]},
        gemm={f.name: _column(arr, f) for f in lay.gemm[5:]},
        alu={f.name: _column(arr, f) for f in lay.alu[5:]},
    )


# ---------------------------------------------------------------------------------------- uops
def encode_uop(uop: Uop | Sequence[int], env: Environment | None = None) -> int:
    """Encode a micro-op as a 32-bit integer.

    Raises
    ------
    EncodingError
        If an index does not fit its field.
    """
    if not isinstance(uop, Uop):
        uop = Uop(*uop)
    value = 0
    for f in layout(env).uop:
        value |= _put(getattr(uop, f.name), f, "uop")
    return value


def decode_uop(word: int, env: Environment | None = None) -> Uop:
    """Decode a 32-bit micro-op word."""
    return Uop(**{f.name: _get(int(word), f) for f in layout(env).uop})


def decode_uop_array(words: np.ndarray, env: Environment | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode an array of uint32 micro-ops into ``(dst, src, wgt)`` int64 index arrays."""
    w = np.asarray(words).astype(np.int64) & 0xFFFF_FFFF
    out = []
    for f in layout(env).uop:
        out.append((w >> f.lo) & ((1 << f.width) - 1))
    return out[0], out[1], out[2]


# ---------------------------------------------------------------------------------------- stages
def stage_of(insn: Insn) -> int:
    """Stage that executes ``insn``: 1 load (INP/WGT loads), 3 store, 2 compute (all else)."""
    if isinstance(insn, MemInsn):
        if insn.opcode == OPCODE_STORE:
            return STAGE_STORE
        if insn.memory_type in (MEM_INP, MEM_WGT):
            return STAGE_LOAD
    return STAGE_COMPUTE


# ---------------------------------------------------------------------------------------- text
def _insn_text(i: Insn) -> list[str]:
    deps = (f"\tdep - pop prev: {i.pop_prev_dep}, pop next: {i.pop_next_dep}, "
            f"push prev: {i.push_prev_dep}, push next: {i.push_next_dep}")
    if isinstance(i, MemInsn):
        if i.x_size == 0:
            if i.opcode == OPCODE_STORE:
                title = "NOP-STORE-STAGE"
            elif stage_of(i) == STAGE_COMPUTE:
                title = "NOP-COMPUTE-STAGE"
            else:
                title = "NOP-MEMORY-STAGE"
            return [title, deps]
        title = ("LOAD " if i.opcode == OPCODE_LOAD else "STORE ") + MEM_NAMES[i.memory_type]
        return [title, deps,
                f"\tDRAM: 0x{i.dram_base:08x}, SRAM:0x{i.sram_base:04x}",
                f"\ty: size={i.y_size}, pad=[{i.y_pad_0}, {i.y_pad_1}]",
                f"\tx: size={i.x_size}, stride={i.x_stride}, pad=[{i.x_pad_0}, {i.x_pad_1}]"]
    if isinstance(i, GemmInsn):
        return ["GEMM", deps, f"\treset_out: {i.reset_reg}", f"\trange ({i.uop_bgn}, {i.uop_end})",
                f"\touter loop - iter: {i.iter_out}, wgt: {i.wgt_factor_out}, inp: {i.src_factor_out}, "
                f"acc: {i.dst_factor_out}",
                f"\tinner loop - iter: {i.iter_in}, wgt: {i.wgt_factor_in}, inp: {i.src_factor_in}, "
                f"acc: {i.dst_factor_in}"]
    if isinstance(i, AluInsn):
        imm = f", imm: {i.imm}" if i.use_imm else ""
        return [f"ALU - {ALU_NAMES[i.alu_opcode].lower()}", deps, f"\treset_out: {i.reset_reg}",
                f"\trange ({i.uop_bgn}, {i.uop_end})",
                f"\touter loop - iter: {i.iter_out}, dst: {i.dst_factor_out}, src: {i.src_factor_out}",
                f"\tinner loop - iter: {i.iter_in}, dst: {i.dst_factor_in}, src: {i.src_factor_in}{imm}"]
    return ["FINISH", deps]


def apply_tokens(insn: Insn, tokens: list[int]) -> None:
    """Update the running token counts ``[l2g, g2l, s2g, g2s]`` for one executed instruction
    (its pops, then its pushes), as the upstream dump counts them."""
    stage = stage_of(insn)
    if stage == STAGE_LOAD:
        tokens[1] -= insn.pop_next_dep
        tokens[0] += insn.push_next_dep
    elif stage == STAGE_COMPUTE:
        tokens[0] -= insn.pop_prev_dep
        tokens[2] -= insn.pop_next_dep
        tokens[1] += insn.push_prev_dep
        tokens[3] += insn.push_next_dep
    else:
        tokens[3] -= insn.pop_prev_dep
        tokens[2] += insn.push_prev_dep


def dump_insn(index: int, insn: Insn, tokens: Sequence[int] | None = None) -> str:
    """One instruction in the upstream dump format: ``INSTRUCTION <index>: <name>``, its
    dependency flags and fields, and (when given) the token counts ``[l2g, g2l, s2g, g2s]``
    after it. The lines end with a newline."""
    text = _insn_text(insn)
    lines = [f"INSTRUCTION {index}: {text[0]}", *text[1:]]
    if tokens is not None:
        lines.append(f"\tl2g_queue = {tokens[0]}, g2l_queue = {tokens[1]}")
        lines.append(f"\ts2g_queue = {tokens[2]}, g2s_queue = {tokens[3]}")
    return "\n".join(lines) + "\n"


def disassemble(insns: Iterable[Insn] | np.ndarray | bytes, env: Environment | None = None,
                tokens: bool = True) -> str:
    """Render an instruction stream in the upstream runtime's dump format.

    Parameters
    ----------
    insns : instruction records, an ``(N, 2)`` uint64 array or raw bytes
    tokens : bool
        Also print the running token counts of the four channels after each instruction, as the
        upstream dump does.

    Raises
    ------
    DecodeError
        If a raw instruction cannot be decoded.
    """
    if isinstance(insns, (bytes, bytearray, memoryview, np.ndarray)):
        insns = decode_program(insns, env)
    insns = list(insns)
    parts = [f"There are {len(insns)} instructions\n"]
    counts = [0, 0, 0, 0]
    for n, i in enumerate(insns):
        if tokens:
            apply_tokens(i, counts)
        parts.append(dump_insn(n, i, counts if tokens else None))
    return "".join(parts)


# ---------------------------------------------------------------------------------------- C header
def c_header(env: Environment | None = None) -> str:
    """Generate a C header carrying the configuration and every field position.

    The header defines ``VTA_*`` configuration macros, element sizes and buffer depths, and for
    each field ``VTA_<FMT>_<FIELD>_LO`` / ``_WIDTH`` plus the packed structs ``VTAMemInsn``,
    ``VTAGemInsn``, ``VTAAluInsn``, ``VTAUop`` and the union ``VTAGenericInsn`` written with
    ``uint64_t`` bit-fields in the same order, so a C compiler reproduces the same layout.
    """
    env = env or get_env()
    lay = layout(env)
    out = ["/* Generated by vta.isa.c_header for configuration "
           f"{env.BITSTREAM}. Do not edit. */",
           "#ifndef VTA_HW_SPEC_GENERATED_H_", "#define VTA_HW_SPEC_GENERATED_H_",
           "#include <stdint.h>", ""]
    macros = {
        "LOG_INP_WIDTH": env.LOG_INP_WIDTH, "LOG_WGT_WIDTH": env.LOG_WGT_WIDTH,
        "LOG_ACC_WIDTH": env.LOG_ACC_WIDTH, "LOG_OUT_WIDTH": env.LOG_OUT_WIDTH,
        "LOG_BATCH": env.LOG_BATCH, "LOG_BLOCK": env.LOG_BLOCK,
        "LOG_BLOCK_IN": env.LOG_BLOCK_IN, "LOG_BLOCK_OUT": env.LOG_BLOCK_OUT,
        "BATCH": env.BATCH, "BLOCK_IN": env.BLOCK_IN, "BLOCK_OUT": env.BLOCK_OUT,
        "INP_WIDTH": env.INP_WIDTH, "WGT_WIDTH": env.WGT_WIDTH, "ACC_WIDTH": env.ACC_WIDTH,
        "OUT_WIDTH": env.OUT_WIDTH,
        "INP_ELEM_BYTES": env.INP_ELEM_BYTES, "WGT_ELEM_BYTES": env.WGT_ELEM_BYTES,
        "ACC_ELEM_BYTES": env.ACC_ELEM_BYTES, "OUT_ELEM_BYTES": env.OUT_ELEM_BYTES,
        "UOP_ELEM_BYTES": env.UOP_ELEM_BYTES, "INS_ELEM_BYTES": env.INS_ELEM_BYTES,
        "ACC_8BIT_ELEM_BYTES": env.ACC_8BIT_ELEM_BYTES,
        "LOG_UOP_BUFF_DEPTH": env.LOG_UOP_BUFF_DEPTH, "LOG_INP_BUFF_DEPTH": env.LOG_INP_BUFF_DEPTH,
        "LOG_WGT_BUFF_DEPTH": env.LOG_WGT_BUFF_DEPTH, "LOG_ACC_BUFF_DEPTH": env.LOG_ACC_BUFF_DEPTH,
        "UOP_BUFF_DEPTH": env.UOP_BUFF_DEPTH, "INP_BUFF_DEPTH": env.INP_BUFF_DEPTH,
        "WGT_BUFF_DEPTH": env.WGT_BUFF_DEPTH, "ACC_BUFF_DEPTH": env.ACC_BUFF_DEPTH,
        "OUT_BUFF_DEPTH": env.OUT_BUFF_DEPTH,
        "OPCODE_LOAD": OPCODE_LOAD, "OPCODE_STORE": OPCODE_STORE, "OPCODE_GEMM": OPCODE_GEMM,
        "OPCODE_FINISH": OPCODE_FINISH, "OPCODE_ALU": OPCODE_ALU,
        "MEM_ID_UOP": MEM_UOP, "MEM_ID_WGT": MEM_WGT, "MEM_ID_INP": MEM_INP, "MEM_ID_ACC": MEM_ACC,
        "MEM_ID_OUT": MEM_OUT, "MEM_ID_ACC_8BIT": MEM_ACC_8BIT,
        "ALU_OPCODE_MIN": ALU_MIN, "ALU_OPCODE_MAX": ALU_MAX, "ALU_OPCODE_ADD": ALU_ADD,
        "ALU_OPCODE_SHR": ALU_SHR, "ALU_OPCODE_MUL": ALU_MUL,
        **({"ALU_OPCODE_REQ": ALU_REQ} if env.ALU_REQUANT else {}),
        **({"ALU_OPCODE_MOV": ALU_MOV} if env.ALU_MOV else {}),
        "PAGE_BYTES": _envmod.PAGE_BYTES,
    }
    out += [f"#define VTA_{k} {v}" for k, v in macros.items()]
    out.append("")
    for kind, fields in (("MEM", lay.mem), ("GEM", lay.gemm), ("ALU", lay.alu), ("UOP", lay.uop)):
        for f in fields:
            out.append(f"#define VTA_{kind}_{f.name.upper()}_LO {f.lo}")
            out.append(f"#define VTA_{kind}_{f.name.upper()}_WIDTH {f.width}")
    out.append("")

    def struct(name: str, fields: tuple[Field, ...], base: str) -> list[str]:
        body = ["typedef struct {"]
        for f in fields:
            ctype = "int64_t" if f.signed else base
            body.append(f"  {ctype} {f.name} : {f.width};")
        body.append(f"}} {name};")
        return body

    out += struct("VTAMemInsn", lay.mem, "uint64_t") + [""]
    out += struct("VTAGemInsn", lay.gemm, "uint64_t") + [""]
    out += struct("VTAAluInsn", lay.alu, "uint64_t") + [""]
    out += struct("VTAUop", lay.uop, "uint32_t") + [""]
    out += ["typedef struct {", "  uint64_t opcode : 3;", "  uint64_t pop_prev_dep : 1;",
            "  uint64_t pop_next_dep : 1;", "  uint64_t push_prev_dep : 1;", "  uint64_t push_next_dep : 1;",
            "  uint64_t pad_0 : 57;", "  uint64_t pad_1 : 64;", "} VTAGenericInsn;", "",
            "typedef union {", "  VTAGenericInsn generic;", "  VTAMemInsn mem;", "  VTAGemInsn gemm;",
            "  VTAAluInsn alu;", "} VTAInsn;", "",
            '_Static_assert(sizeof(VTAInsn) == 16, "an instruction must be 16 bytes");',
            '_Static_assert(sizeof(VTAUop) == 4, "a micro-op must be 4 bytes");', "",
            "#endif  /* VTA_HW_SPEC_GENERATED_H_ */", ""]
    return "\n".join(out)


def replace(insn: Insn, **changes) -> Insn:
    """Return a copy of ``insn`` with some fields changed (``dataclasses.replace``)."""
    return dataclasses.replace(insn, **changes)
