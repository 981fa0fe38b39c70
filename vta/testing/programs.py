"""Hand-built and random VTA programs for tests, demos and simulator comparisons.

:class:`ProgramBuilder` allocates DRAM buffers, appends instructions and micro-ops, and writes
the instruction stream; :func:`random_program` generates a random *valid* program for any
configuration, deterministically from a seed. Nothing here depends on a simulator: the same
program runs on fsim, tsim or the cycle model and their DRAM outputs can be compared.

Examples
--------
>>> import numpy as np
>>> from vta import isa
>>> from vta.env import get_env
>>> from vta.dram import DRAM
>>> env = get_env()
>>> with DRAM(1 << 24) as dram, ProgramBuilder(env, dram) as prog:
...     src = prog.buffer(np.arange(64, dtype=np.int32))           # one ACC element
...     out = prog.buffer(nbytes=env.OUT_ELEM_BYTES)
...     _ = prog.load(isa.MEM_ACC, sram_base=0, dram_addr=src, y_size=1, x_size=1)
...     _ = prog.store(sram_base=0, dram_addr=out, y_size=1, x_size=1, pop_prev_dep=1)
...     prog.insns[0] = isa.replace(prog.insns[0], push_next_dep=1)
...     _ = prog.finish()
...     addr, count = prog.build()
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import isa
from ..dram import DRAM
from ..env import Environment

__all__ = ["ProgramBuilder", "RandomProgram", "random_program"]


class ProgramBuilder:
    """Collects instructions and DRAM buffers of one program.

    Every buffer the builder allocates is freed by :meth:`close` (or on leaving a ``with``
    block). Addresses are physical DRAM byte addresses; the builder converts them to element
    indices (``dram_base``) for the memory type of each instruction.

    Parameters
    ----------
    env : Environment
        Configuration the instructions are encoded for.
    dram : DRAM
        The arena to allocate from.
    """

    def __init__(self, env: Environment, dram: DRAM):
        self.env = env
        self.dram = dram
        self.insns: list[isa.Insn] = []
        self._allocs: list[int] = []

    # -------------------------------------------------------------- buffers
    def buffer(self, data=None, *, nbytes: int | None = None) -> int:
        """Allocate a DRAM buffer, optionally filled with ``data`` (bytes or any array).

        Raises
        ------
        ValueError
            If neither ``data`` nor ``nbytes`` is given.
        AllocationError
            If the arena is full.
        """
        if data is None and nbytes is None:
            raise ValueError("buffer() needs data or nbytes")
        raw = None
        if data is not None:
            raw = np.frombuffer(memoryview(np.ascontiguousarray(data)).cast("B"), dtype=np.uint8)
            nbytes = max(nbytes or 0, raw.size)
        addr = self.dram.alloc(max(int(nbytes), 1))
        self._allocs.append(addr)
        if raw is not None and raw.size:
            self.dram.write(addr, raw)
        return addr

    def elem_index(self, addr: int, memory_type: int) -> int:
        """``dram_base`` of byte address ``addr`` for ``memory_type`` (the address must be aligned).

        Raises
        ------
        ValueError
            If ``addr`` is not a multiple of the element size.
        """
        size = self.env.elem_bytes(memory_type)
        if addr % size:
            raise ValueError(f"DRAM address 0x{addr:x} is not aligned to the {size}-byte "
                             f"{isa.MEM_NAMES[memory_type]} element")
        return addr // size

    # -------------------------------------------------------------- instructions
    def append(self, insn: isa.Insn) -> int:
        """Append an instruction record; return its index in the stream."""
        self.insns.append(insn)
        return len(self.insns) - 1

    def load(self, memory_type: int, sram_base: int, dram_addr: int, y_size: int, x_size: int,
             x_stride: int | None = None, pads: tuple[int, int, int, int] = (0, 0, 0, 0), **deps) -> int:
        """Append a LOAD; ``pads`` is ``(y_pad_0, y_pad_1, x_pad_0, x_pad_1)``; ``deps`` are dep flags."""
        return self.append(isa.MemInsn(
            opcode=isa.OPCODE_LOAD, memory_type=memory_type, sram_base=sram_base,
            dram_base=self.elem_index(dram_addr, memory_type), y_size=y_size, x_size=x_size,
            x_stride=x_size if x_stride is None else x_stride, y_pad_0=pads[0], y_pad_1=pads[1],
            x_pad_0=pads[2], x_pad_1=pads[3], **deps))

    def store(self, sram_base: int, dram_addr: int, y_size: int, x_size: int, x_stride: int | None = None,
              **deps) -> int:
        """Append a STORE of OUT elements from accumulator rows ``sram_base..``."""
        return self.append(isa.MemInsn(
            opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, sram_base=sram_base,
            dram_base=self.elem_index(dram_addr, isa.MEM_OUT), y_size=y_size, x_size=x_size,
            x_stride=x_size if x_stride is None else x_stride, **deps))

    def uop_table(self, uops) -> int:
        """Place micro-ops in a new DRAM buffer; return its address (see :meth:`uops`).

        Raises
        ------
        EncodingError
            If an index does not fit its micro-op field.
        """
        words = np.array([isa.encode_uop(u, self.env) for u in uops], dtype="<u4")
        return self.buffer(words)

    def uops(self, uops, sram_base: int = 0, **deps) -> int:
        """Place micro-ops in a new DRAM buffer and append the LOAD UOP that brings them on chip.

        Parameters
        ----------
        uops : sequence of :class:`vta.isa.Uop` or ``(dst, src, wgt)`` tuples
        sram_base : int
            First micro-op buffer entry to fill.

        Returns
        -------
        int
            Index of the LOAD UOP instruction.

        Raises
        ------
        EncodingError
            If an index does not fit its micro-op field.
        """
        uops = list(uops)
        return self.load(isa.MEM_UOP, sram_base, self.uop_table(uops), 1, len(uops), **deps)

    def nop(self, stage: int, **deps) -> int:
        """Append a no-op of ``stage`` (1 load, 2 compute, 3 store) carrying dep flags, as the runtime does."""
        if stage == isa.STAGE_STORE:
            insn = isa.MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_UOP, **deps)
        else:
            mt = isa.MEM_INP if stage == isa.STAGE_LOAD else isa.MEM_UOP
            insn = isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=mt, **deps)
        return self.append(insn)

    def finish(self, **deps) -> int:
        """Append FINISH."""
        return self.append(isa.FinishInsn(**deps))

    def serialize(self) -> None:
        """Add tokens so that the stages run one after another in stream order.

        At every change of stage the last instruction of the old stage pushes a token to the
        new one and the first instruction of the new stage pops it; a change between load and
        store goes through a compute no-op. Every legal interleaving of the result computes
        what the stream computes when run as written. Existing flags are kept.
        """
        steps: list[isa.Insn] = []
        for insn in self.insns:
            if steps and {isa.stage_of(steps[-1]), isa.stage_of(insn)} == {isa.STAGE_LOAD, isa.STAGE_STORE}:
                steps.append(isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP))
            steps.append(insn)
        flags = [dict() for _ in steps]
        for k in range(1, len(steps)):
            a, b = isa.stage_of(steps[k - 1]), isa.stage_of(steps[k])
            if a != b:
                push, pop = _STAGE_CHANGE[(a, b)]
                flags[k - 1][push] = 1
                flags[k][pop] = 1
        self.insns = [isa.replace(insn, **deps) if deps else insn for insn, deps in zip(steps, flags, strict=True)]

    def build(self) -> tuple[int, int]:
        """Write the instruction stream to a new DRAM buffer; return ``(address, count)``.

        Raises
        ------
        EncodingError
            If a field does not fit its instruction format.
        """
        words = isa.encode_program(self.insns, self.env)
        addr = self.buffer(words.astype("<u8"))
        return addr, len(self.insns)

    # -------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Free every buffer this builder allocated."""
        while self._allocs:
            self.dram.free(self._allocs.pop())

    def __enter__(self) -> "ProgramBuilder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ==================================================================================== random
@dataclass
class RandomProgram:
    """A generated program ready to run.

    Attributes
    ----------
    builder : ProgramBuilder
        Owns the buffers; call ``close()`` when done.
    insn_addr, insn_count : int
        Where the stream is and how long it is.
    outputs : list of (int, int)
        ``(address, nbytes)`` of every buffer the program stores into; the last one receives
        every accumulator row the program uses, stored after the body.
    """

    builder: ProgramBuilder
    insn_addr: int
    insn_count: int
    outputs: list = field(default_factory=list)

    def read_outputs(self) -> list[bytes]:
        """The current bytes of every output buffer."""
        return [self.builder.dram.read(a, n) for a, n in self.outputs]

    def clear_outputs(self) -> None:
        """Zero every output buffer (before running the program again)."""
        for a, n in self.outputs:
            self.builder.dram.write(a, bytes(n))

    def close(self) -> None:
        self.builder.close()


_STAGE_CHANGE = {  # (from stage, to stage) -> (push flag on the sender, pop flag on the receiver)
    (1, 2): ("push_next_dep", "pop_prev_dep"),
    (2, 1): ("push_prev_dep", "pop_next_dep"),
    (2, 3): ("push_next_dep", "pop_prev_dep"),
    (3, 2): ("push_prev_dep", "pop_next_dep"),
}


def random_program(env: Environment, dram: DRAM, seed: int, *, length: int = 16, allow_mul: bool = True,
                   allow_acc_8bit: bool = True, allow_empty: bool = True, allow_pads: bool = True,
                   imm_in_place: bool = False, allow_tensor_shr: bool = True,
                   region: int = 24) -> RandomProgram:
    """Generate and place a random valid program.

    The program loads random data into the first ``region`` rows of the input, weight and
    accumulator buffers, then runs ``length`` random instructions (loads with padding, GEMM
    and ALU with random loops, factors and micro-ops, stores), each within those rows, then
    stores every accumulator row and finishes. Tokens serialise the stages at every change of
    stage, so every legal interleaving computes the same result.

    Parameters
    ----------
    env, dram : the configuration and the arena to place the program in
    seed : int
        The same seed always gives the same program (for a given ``env`` and options).
    length : int
        Number of random body instructions (no-ops inserted for synchronisation come on top).
    allow_mul, allow_acc_8bit : bool
        Use ALU MUL and ACC_8BIT loads (upstream's Chisel RTL supports neither).
    allow_empty : bool
        Sometimes use zero trip counts or empty micro-op ranges.
    allow_pads : bool
        Use load padding.
    imm_in_place : bool
        Give immediate ALU micro-ops ``src == dst`` (where the RTL and fsim agree).
    allow_tensor_shr : bool
        Use SHR with a tensor operand (upstream's RTL shifts negative amounts differently).
    region : int
        Rows of each buffer the program works in (capped by the buffer depths).

    Returns
    -------
    RandomProgram

    Raises
    ------
    AllocationError
        If the arena cannot hold the program's buffers (nothing stays allocated).
    """
    rng = np.random.default_rng(seed)
    gen = _Generator(env, dram, rng, region, allow_mul=allow_mul, allow_acc_8bit=allow_acc_8bit,
                     allow_empty=allow_empty, allow_pads=allow_pads, imm_in_place=imm_in_place,
                     allow_tensor_shr=allow_tensor_shr)
    try:
        return gen.generate(length)
    except BaseException:
        gen.b.close()  # free what was allocated, then report the original error
        raise


class _Generator:
    """Draws the instructions of one random program (see :func:`random_program`)."""

    def __init__(self, env, dram, rng, region, **opts):
        self.env, self.rng, self.opts = env, rng, opts
        self.b = ProgramBuilder(env, dram)
        self.ni = min(region, env.INP_BUFF_DEPTH)
        self.nw = min(region, env.WGT_BUFF_DEPTH)
        self.na = min(region, env.ACC_BUFF_DEPTH)
        self.nu = min(4 * region, env.UOP_BUFF_DEPTH)
        self.steps: list[tuple[int, object]] = []  # (stage, record kwargs or Insn)
        self.src_elems = 4 * region

    def _rand_bytes(self, n: int) -> np.ndarray:
        return self.rng.integers(0, 256, size=n, dtype=np.uint8)

    def generate(self, length: int) -> RandomProgram:
        env, b, rng = self.env, self.b, self.rng
        self.data = {
            isa.MEM_INP: b.buffer(self._rand_bytes(self.src_elems * env.INP_ELEM_BYTES)),
            isa.MEM_WGT: b.buffer(self._rand_bytes(self.src_elems * env.WGT_ELEM_BYTES)),
            isa.MEM_ACC: b.buffer(self._acc_values(self.src_elems * env.ACC_ELEM_BYTES)),
            isa.MEM_ACC_8BIT: b.buffer(self._rand_bytes(self.src_elems * env.ACC_8BIT_ELEM_BYTES)),
        }
        self.out_elems = self.src_elems
        out = b.buffer(nbytes=self.out_elems * env.OUT_ELEM_BYTES)
        self.out = out
        dump = b.buffer(nbytes=self.na * env.OUT_ELEM_BYTES)
        # Prologue: initialise the working rows of every buffer.
        for mt, rows in ((isa.MEM_INP, self.ni), (isa.MEM_WGT, self.nw), (isa.MEM_ACC, self.na)):
            self._mem(isa.OPCODE_LOAD, mt, 0, self.data[mt], 1, rows, rows, (0, 0, 0, 0))
        kinds = ["inp", "wgt", "acc", "gemm", "gemm", "alu", "alu", "store", "nop"]
        if self.opts["allow_acc_8bit"]:
            kinds.append("acc8")
        for _ in range(length):
            getattr(self, f"_gen_{rng.choice(kinds)}")()
        self._mem(isa.OPCODE_STORE, isa.MEM_OUT, 0, dump, 1, self.na, self.na, (0, 0, 0, 0))
        self.steps.append((isa.STAGE_COMPUTE, isa.FinishInsn()))
        self._emit()
        addr, count = b.build()
        return RandomProgram(b, addr, count, [(out, self.out_elems * env.OUT_ELEM_BYTES),
                                              (dump, self.na * env.OUT_ELEM_BYTES)])

    def _acc_values(self, nbytes: int) -> np.ndarray:
        # Mix small values (so that SHR/MIN/MAX and stores show structure) and full-range ones.
        n = nbytes * 8 // self.env.ACC_WIDTH
        lim = 1 << (self.env.ACC_WIDTH - 1)
        small = self.rng.integers(-300, 300, size=n)
        big = self.rng.integers(-lim, lim, size=n)
        vals = np.where(self.rng.random(n) < 0.8, small, big)
        return vals.astype(f"<i{max(self.env.ACC_WIDTH // 8, 1)}")

    # ------------------------------------------------------------------ steps
    def _mem(self, opcode, mt, sram_base, dram_addr, y, x, stride, pads, elem_offset=0):
        stage = isa.STAGE_STORE if opcode == isa.OPCODE_STORE else (
            isa.STAGE_LOAD if mt in (isa.MEM_INP, isa.MEM_WGT) else isa.STAGE_COMPUTE)
        base = self.b.elem_index(dram_addr, mt) + elem_offset
        self.steps.append((stage, dict(opcode=opcode, memory_type=mt, sram_base=sram_base, dram_base=base,
                                       y_size=y, x_size=x, x_stride=stride, y_pad_0=pads[0], y_pad_1=pads[1],
                                       x_pad_0=pads[2], x_pad_1=pads[3])))

    def _gen_load(self, mt, rows):
        rng = self.rng
        pads = tuple(int(v) for v in rng.integers(0, 3, size=4)) if self.opts["allow_pads"] and rng.random() < 0.6 \
            else (0, 0, 0, 0)
        y, x = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        while (pads[0] + y + pads[1]) * (pads[2] + x + pads[3]) > rows:
            if any(pads):
                pads = (0, 0, 0, 0)
            else:
                y, x = 1, 1
        w, h = pads[2] + x + pads[3], pads[0] + y + pads[1]
        sram = int(rng.integers(0, rows - w * h + 1))
        stride = x + int(rng.integers(0, 3))
        span = (y - 1) * stride + x
        off = int(rng.integers(0, self.src_elems - span + 1))
        self._mem(isa.OPCODE_LOAD, mt, sram, self.data[mt], y, x, stride, pads, off)

    def _gen_inp(self):
        self._gen_load(isa.MEM_INP, self.ni)

    def _gen_wgt(self):
        self._gen_load(isa.MEM_WGT, self.nw)

    def _gen_acc(self):
        self._gen_load(isa.MEM_ACC, self.na)

    def _gen_acc8(self):
        self._gen_load(isa.MEM_ACC_8BIT, self.na)

    def _gen_store(self):
        rng = self.rng
        y, x = int(rng.integers(1, 3)), int(rng.integers(1, 5))
        sram = int(rng.integers(0, self.na - x * y + 1))
        stride = x + int(rng.integers(0, 3))
        off = int(rng.integers(0, self.out_elems - ((y - 1) * stride + x) + 1))
        self._mem(isa.OPCODE_STORE, isa.MEM_OUT, sram, self.out, y, x, stride, (0, 0, 0, 0), off)

    def _gen_nop(self):
        self.steps.append((int(self.rng.integers(1, 4)), "nop"))

    def _loops(self, roles: dict) -> tuple[dict, list]:
        """Random trip counts, factors and micro-op indices keeping every index below its limit."""
        rng = self.rng
        lo = 0 if self.opts["allow_empty"] and rng.random() < 0.08 else 1
        io, ii = int(rng.integers(lo, 4)), int(rng.integers(lo, 4))
        n_uops = int(rng.integers(lo, 4))
        fields = {"iter_out": io, "iter_in": ii}
        cols = {}
        for role, limit in roles.items():
            fo = int(rng.integers(0, 3)) if io > 1 else 0
            fi = int(rng.integers(0, 3)) if ii > 1 else 0
            reach = max(io - 1, 0) * fo + max(ii - 1, 0) * fi
            if reach >= limit:
                fo = fi = reach = 0
            fields[f"{role}_factor_out"], fields[f"{role}_factor_in"] = fo, fi
            cols[role] = rng.integers(0, limit - reach, size=n_uops).tolist()
        uops = [isa.Uop(cols["dst"][k], cols["src"][k], cols.get("wgt", [0] * n_uops)[k]) for k in range(n_uops)]
        return fields, uops

    def _place_uops(self, uops) -> tuple[int, int]:
        start = int(self.rng.integers(0, self.nu - len(uops) + 1))
        if uops:
            addr = self.b.uop_table(uops)
            self._mem(isa.OPCODE_LOAD, isa.MEM_UOP, start, addr, 1, len(uops), len(uops), (0, 0, 0, 0))
        return start, start + len(uops)

    def _gen_gemm(self):
        fields, uops = self._loops({"dst": self.na, "src": self.ni, "wgt": self.nw})
        bgn, end = self._place_uops(uops)
        reset = int(self.rng.random() < 0.15)
        self.steps.append((isa.STAGE_COMPUTE, isa.GemmInsn(reset_reg=reset, uop_bgn=bgn, uop_end=end, **fields)))

    def _gen_alu(self):
        rng = self.rng
        ops = [isa.ALU_MIN, isa.ALU_MAX, isa.ALU_ADD, isa.ALU_SHR] + ([isa.ALU_MUL] if self.opts["allow_mul"] else [])
        # the opcodes of the configuration's hardware options (REQ with ALU_REQUANT, MOV with ALU_MOV)
        ops += [op for op, key in isa.ALU_OPTIONS.items() if getattr(self.env, key)]
        op = int(rng.choice(ops))
        use_imm = int(rng.random() < 0.5 or (op == isa.ALU_SHR and not self.opts["allow_tensor_shr"]))
        fields, uops = self._loops({"dst": self.na, "src": self.na})
        if use_imm and self.opts["imm_in_place"]:
            uops = [isa.Uop(u.dst_idx, u.dst_idx, 0) for u in uops]
            fields["src_factor_out"], fields["src_factor_in"] = fields["dst_factor_out"], fields["dst_factor_in"]
        imm = int(rng.integers(-33, 34)) if op == isa.ALU_SHR else int(rng.integers(-(1 << 15), 1 << 15))
        if op == isa.ALU_SHR and self.opts["imm_in_place"]:
            imm = max(-31, min(31, imm))
        bgn, end = self._place_uops(uops)
        self.steps.append((isa.STAGE_COMPUTE, isa.AluInsn(alu_opcode=op, use_imm=use_imm, imm=imm, uop_bgn=bgn,
                                                          uop_end=end, **fields)))

    # ------------------------------------------------------------------ tokens
    def _emit(self) -> None:
        """Append the steps, then serialise the stages with tokens."""
        for stage, what in self.steps:
            if what == "nop":
                self.b.nop(stage)
            elif isinstance(what, dict):
                self.b.append(isa.MemInsn(**what))
            else:
                self.b.append(what)
        self.b.serialize()
