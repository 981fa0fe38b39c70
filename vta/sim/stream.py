"""The instruction stream as every level sees it: decoding and the checks made before a run.

fsim (:mod:`vta.sim.fsim`), the cycle model (:mod:`vta.sim.model`) and tsim (:mod:`vta.sim.tsim`)
read a stream from the DRAM arena, decode its fields into columns and reject it as a whole
before any instruction executes, with the same errors at every level. This module is that one
place; the public names below are a contract other modules build on.

Public names
------------
:func:`read_stream`
    The ``(n, 2)`` int64 words of ``n`` instructions at a DRAM address (range-checked copy).
:class:`Columns`
    Field columns of a stream by format (``header``, ``mem``, ``gemm``, ``alu``), decoded lazily.
:class:`Program`
    A decoded stream: its columns, stages and token flags (:attr:`Program.flow`), the
    stream-level checks (:meth:`Program.validate`), one-line descriptions, per-row fields.
:func:`check_stream`
    Every check a level applies before executing any of a stream (opcodes, memory types, ALU
    opcodes, token flags, FINISH, deadlock, token overflow and, given the arena, the
    field-only checks of :func:`check_fields`); returns the tokens lent and left.
:func:`lent_tokens`
    How many of the outstanding tokens a stream is given when it starts.
:func:`check_fields`
    The first LOAD/STORE whose fields alone fail (memory type, padding, SRAM, DRAM ranges).
:func:`confirm_suspects`
    Raise the error of the first of some candidate rows that really fails those checks.
:func:`count_executed`
    Add the upstream counters and :data:`INSN_KEYS` of executed instructions to a dict.
:data:`INSN_KEYS`
    Per-opcode instruction counter names.

The per-instruction rule behind the field checks is :func:`vta.sim.fsim.units.check_mem` (the
executable specification); the order of execution and its token errors are
:func:`vta.sim.fsim.sched.schedule`.
"""

from __future__ import annotations

import numpy as np

from .. import isa
from ..dram import DRAM
from ..env import Environment
from ..errors import DeadlockError, InvalidInstructionError
from .fsim.sched import Flow, schedule
from .fsim.units import check_mem

__all__ = ["INSN_KEYS", "Columns", "Program", "check_fields", "check_stream", "confirm_suspects",
           "count_executed", "lent_tokens", "read_stream"]

#: Per-opcode instruction counters (x_size == 0 loads and stores count as ``insn_nop`` only).
INSN_KEYS = ("insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish", "insn_nop")
#: When a stream has at least this many instructions per distinct one, :meth:`Program.fields`
#: decodes each distinct one alone, once (about 30 us each), instead of whole columns (about
#: 0.4 us per instruction).
_ROW_DECODE_RATIO = 64


def read_stream(dram: DRAM, addr: int, count: int, what: str = "instruction stream") -> np.ndarray:
    """A copy of the ``count`` instructions at ``addr`` as an ``(count, 2)`` int64 array.

    Raises
    ------
    DRAMAccessError
        If the stream does not lie inside one live allocation (``what`` names it in the message).
    """
    dram.check(addr, 16 * count, what)
    return dram.data[addr:addr + 16 * count].copy().view("<i8").reshape(count, 2)


def lent_tokens(flow: Flow, outstanding: list[int]) -> list[int]:
    """How many of the ``outstanding`` tokens a stream is given when it starts (the rest wait).

    A stream may pop tokens an earlier run pushed (the runtime leaves a pending pop for the
    next window), but a token it has no use for would let one of its consumers start before
    its producer. So a stream is lent, per channel, what it needs to run in stream order --
    the deepest deficit of pops over pushes along the stream -- and at most what is there;
    the rest is held back and given back after the run.

    Parameters
    ----------
    flow : Flow
        Stages and token flags of the stream.
    outstanding : list of 4 int
        Tokens on l2g, g2l, s2g, g2s before the run.

    Returns
    -------
    list of 4 int
    """
    if not flow.stage.size:
        return [0, 0, 0, 0]
    delta = np.cumsum((flow.push - flow.pop).T, axis=1, dtype=np.int64)
    deficit = np.maximum(-delta.min(axis=1), 0)
    return [int(min(d, t)) for d, t in zip(deficit, outstanding, strict=True)]


def check_stream(env: Environment, words: np.ndarray, dram: DRAM | None = None,
                 outstanding: list[int] | None = None) -> tuple[list[int], list[int]]:
    """The checks every level applies to a stream before executing any of it.

    Parameters
    ----------
    env : Environment
        The configuration the stream is encoded for.
    words : ndarray of shape (n, 2), int64
        The encoded instructions.
    dram : DRAM, optional
        The arena the stream runs on: with it, every field-only check of
        :func:`check_fields` (memory types, padding, SRAM rectangles, DRAM ranges) is made too.
    outstanding : list of 4 int, optional
        Tokens on l2g, g2l, s2g, g2s before the run (default none).

    Returns
    -------
    (list of 4 int, list of 4 int)
        The tokens the stream is lent (:func:`lent_tokens`) and those it leaves when it has
        run from them (the held-back rest not included).

    Raises
    ------
    InvalidInstructionError
        For an invalid opcode, memory type, ALU opcode, token flag or store padding.
    DeadlockError
        If the stream has no FINISH or some instruction can never get its tokens.
    TokenOverflowError
        If more than 255 tokens would be outstanding on a channel in stream order.
    SRAMIndexError, DRAMAccessError
        (with ``dram``) For the first instruction whose fields alone put it out of range.
    """
    program = Program(words, env)
    program.validate()
    outstanding = [0, 0, 0, 0] if outstanding is None else list(outstanding)
    schedule(program.flow, list(outstanding))
    lent = lent_tokens(program.flow, outstanding) if any(outstanding) else outstanding
    tokens = list(lent)
    schedule(program.flow, tokens)
    if dram is not None:
        check_fields(env, words, program.cols.header["opcode"], dram)
    return lent, tokens


def check_fields(env: Environment, words: np.ndarray, opcode: np.ndarray, dram: DRAM) -> None:
    """Raise the error of the first instruction that fails on its fields alone.

    Those are the checks of :func:`vta.sim.fsim.units.check_mem`: LOAD and STORE memory types,
    padding, SRAM rectangles and DRAM ranges. GEMM and ALU index errors are left for execution
    (they depend on micro-op contents). Candidates are found with whole-column arithmetic over
    the LOAD and STORE rows, then confirmed one by one in stream order with the function the
    opcodes call.

    Parameters
    ----------
    env : Environment
    words : ndarray of shape (n, 2), int64
        The stream.
    opcode : ndarray of shape (n,)
        Its opcode column.
    dram : DRAM
        The arena its transfers must lie in.

    Raises
    ------
    InvalidInstructionError, SRAMIndexError, DRAMAccessError
        As the instruction itself would when executed.
    """
    rows = np.flatnonzero(opcode <= isa.OPCODE_STORE)
    m = Columns(words[rows], env).mem
    x, y, mt, base = m["x_size"], m["y_size"], m["memory_type"], m["sram_base"]
    load = (opcode[rows] == isa.OPCODE_LOAD) & (x > 0)
    store = (opcode[rows] == isa.OPCODE_STORE) & (x > 0)
    pads = (m["y_pad_0"], m["y_pad_1"], m["x_pad_0"], m["x_pad_1"])
    depth = np.full(rows.shape, env.ACC_BUFF_DEPTH, dtype=np.int64)
    for code, d in ((isa.MEM_UOP, env.UOP_BUFF_DEPTH), (isa.MEM_WGT, env.WGT_BUFF_DEPTH),
                    (isa.MEM_INP, env.INP_BUFF_DEPTH)):
        depth[mt == code] = d
    area = np.where(load, (pads[0] + y + pads[1]) * (pads[2] + x + pads[3]), x * y)
    bad = (load | store) & (base + area > depth)
    bad |= load & (mt == isa.MEM_OUT)
    bad |= store & ((mt != isa.MEM_OUT) | ((pads[0] | pads[1] | pads[2] | pads[3]) != 0))
    elem = np.zeros(rows.shape, dtype=np.int64)
    for code in (isa.MEM_UOP, isa.MEM_WGT, isa.MEM_INP, isa.MEM_ACC, isa.MEM_ACC_8BIT):
        elem[load & (mt == code)] = env.elem_bytes(code)
    elem[store] = env.OUT_ELEM_BYTES
    moves = (load | store) & (y > 0) & (elem > 0)
    if moves.any():
        start = m["dram_base"] * elem
        end = (m["dram_base"] + (y - 1) * m["x_stride"] + x) * elem
        allocs = list(dram.allocations())
        starts = np.array([a for a, _ in allocs], dtype=np.int64)
        ends = starts + np.array([n for _, n in allocs], dtype=np.int64)
        if starts.size:
            k = np.maximum(np.searchsorted(starts, start, side="right") - 1, 0)
            inside = (start >= starts[k]) & (start < ends[k]) & (end <= ends[k])
        else:
            inside = np.zeros(rows.shape, dtype=bool)
        bad |= moves & ~inside
    confirm_suspects(env, words, rows[bad].tolist(), dram)


def confirm_suspects(env: Environment, words: np.ndarray, suspects: list[int], dram: DRAM) -> None:
    """Raise the error of the first of the LOAD/STORE rows ``suspects`` (in stream order) that
    fails :func:`vta.sim.fsim.units.check_mem`.

    Raises
    ------
    InvalidInstructionError, SRAMIndexError, DRAMAccessError
        As the instruction itself would when executed.
    """
    for i in suspects:
        one = isa.decode_array(np.ascontiguousarray(words[i:i + 1]).view("<u8"), env)
        check_mem(env, dram, i, {k: int(v[0]) for k, v in one.mem.items()}, int(one.header["opcode"][0]))


def count_executed(st: dict, program: "Program", done: np.ndarray, env: Environment) -> None:
    """Add the counters of the executed instructions ``done`` (upstream counting rules)."""
    if not done.size:
        return
    cols = program.cols
    op = cols.header["opcode"][done]
    mem = {k: cols.mem[k][done] for k in ("memory_type", "x_size", "y_size")}
    is_mem = op <= isa.OPCODE_STORE
    nop = is_mem & (mem["x_size"] == 0)
    elems = mem["x_size"] * mem["y_size"]
    loads = (op == isa.OPCODE_LOAD) & ~nop
    for mt, key in ((isa.MEM_UOP, "uop_load_nbytes"), (isa.MEM_WGT, "wgt_load_nbytes"),
                    (isa.MEM_INP, "inp_load_nbytes"), (isa.MEM_ACC, "acc_load_nbytes")):
        sel = loads & (mem["memory_type"] == mt)
        if mt == isa.MEM_ACC:  # ACC_8BIT counts the 32-bit footprint, like upstream
            sel |= loads & (mem["memory_type"] == isa.MEM_ACC_8BIT)
        st[key] += int(elems[sel].sum()) * env.elem_bytes(mt)
    stores = (op == isa.OPCODE_STORE) & ~nop
    st["out_store_nbytes"] += int(elems[stores].sum()) * env.OUT_ELEM_BYTES
    for kind, code, key in (("gemm", isa.OPCODE_GEMM, "gemm_counter"), ("alu", isa.OPCODE_ALU, "alu_counter")):
        c = {k: cols.__dict__[kind][k][done] for k in ("uop_bgn", "uop_end", "iter_out", "iter_in")}
        iters = c["iter_out"] * c["iter_in"] * np.maximum(c["uop_end"] - c["uop_bgn"], 0)
        sel = op == code
        if kind == "gemm":
            sel = sel & (cols.gemm["reset_reg"][done] == 0)
        st[key] += int(iters[sel].sum())
    st["insn_load"] += int(loads.sum())
    st["insn_store"] += int(stores.sum())
    st["insn_gemm"] += int((op == isa.OPCODE_GEMM).sum())
    st["insn_alu"] += int((op == isa.OPCODE_ALU).sum())
    st["insn_finish"] += int((op == isa.OPCODE_FINISH).sum())
    st["insn_nop"] += int(nop.sum())


class _Format(dict):
    """The columns of one instruction format, decoded from the raw words on first use."""

    def __init__(self, words: np.ndarray, fields: tuple):
        super().__init__()
        self._words = words
        self._fields = {f.name: f for f in fields}

    def __missing__(self, name: str) -> np.ndarray:
        f = self._fields[name]
        col = (self._words[:, f.lo // 64] >> (f.lo % 64)) & ((1 << f.width) - 1)
        if f.signed:
            col = np.where(col >> (f.width - 1), col - (1 << f.width), col)
        self[name] = col
        return col

    def __iter__(self):
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


class Columns:
    """Field columns of a stream by format (``header``, ``mem``, ``gemm``, ``alu``), decoded lazily
    with the positions of :func:`vta.isa.layout`."""

    def __init__(self, words: np.ndarray, env: Environment):
        lay = isa.layout(env)
        self.header = _Format(words, lay.header)
        self.mem = _Format(words, lay.mem[5:])
        self.gemm = _Format(words, lay.gemm[5:])
        self.alu = _Format(words, lay.alu[5:])


class Program:
    """A decoded instruction stream: field columns as Python lists, stages and token flags."""

    def __init__(self, words: np.ndarray, env: Environment, cols: "Columns | None" = None):
        self.cols = Columns(words, env) if cols is None else cols
        self.words = words
        self.env = env
        self._flow = None
        self._lists: dict = {}
        self._rows: dict | None = None  # fields of single decoded rows (see :meth:`fields`)
        self._ids: list = []
        #: Set by :meth:`plan_ids`: per plan number, the first instruction, its opcode and its bytes.
        self.firsts: list = []
        self.first_ops: list = []
        self.first_keys: list = []

    @property
    def flow(self) -> Flow:
        """Stages and token flags of every instruction (built on first use).

        Raises
        ------
        InvalidInstructionError
            If an instruction sets a flag of a channel its stage does not have.
        """
        if self._flow is None:
            self._flow = Flow(self.cols.header, self.cols.mem["memory_type"], self.describe)
        return self._flow

    def _list(self, kind: str, name: str) -> list:
        """One column as a Python list (made on first use: the compiled engine needs none)."""
        key = (kind, name)
        if key not in self._lists:
            self._lists[key] = getattr(self.cols, kind)[name].tolist()
        return self._lists[key]

    @property
    def opcode(self) -> list:
        return self._list("header", "opcode")

    @property
    def x_size(self) -> list:
        return self._list("mem", "x_size")

    @property
    def mem_type(self) -> list:
        return self._list("mem", "memory_type")

    def plan_ids(self, order: list, uop_version: int) -> tuple[list, list]:
        """Number the instructions by their plan key, for executing ``order``.

        The key of a plan (:class:`vta.sim.fsim.plans.PlanCache`) is an instruction's 16 bytes
        and, for GEMM and ALU, the version of the micro-op buffer when it executes: that
        version starts at ``uop_version`` and goes up by one after every micro-op LOAD with
        ``x_size > 0`` (the only instructions that change it during a run), so it is known
        for every instruction before the run from the execution order.

        Returns
        -------
        (list of int, list of int)
            The number of every instruction's key, and for every number the first
            instruction (by index) holding that key.
        """
        op = self.cols.header["opcode"]
        n = op.size
        uop_load = (op == isa.OPCODE_LOAD) & (self.cols.mem["memory_type"] == isa.MEM_UOP) \
            & (self.cols.mem["x_size"] > 0)
        in_order = uop_load[np.asarray(order, dtype=np.int64)].astype(np.int64)
        version = np.empty(n, dtype=np.int64)
        version[order] = np.cumsum(in_order) - in_order  # micro-op loads executed before
        version[(op != isa.OPCODE_GEMM) & (op != isa.OPCODE_ALU)] = -1
        w0, w1 = self.words[:, 0], self.words[:, 1]
        sort = np.lexsort((version, w1, w0))
        new = np.zeros(n, dtype=bool)  # where a key starts in sorted order
        new[0] = True
        for col in (w0[sort], w1[sort], version[sort]):
            new[1:] |= col[1:] != col[:-1]
        ids = np.empty(n, dtype=np.int64)
        ids[sort] = np.cumsum(new) - 1
        firsts = sort[new]  # (lexsort is stable: the first index of each key)
        self.first_ops = op[firsts].tolist()
        self.first_keys = np.ascontiguousarray(self.words[firsts]).view("V16").ravel().tolist()
        ids, firsts = ids.tolist(), firsts.tolist()
        self.firsts = firsts
        if len(firsts) * _ROW_DECODE_RATIO <= n:
            self._rows, self._ids = {}, ids
        return ids, firsts

    def fields(self, i: int, kind: str) -> dict:
        """The fields of instruction ``i`` in format ``kind`` ('mem', 'gemm', 'alu') as ints.

        After :meth:`plan_ids` found few distinct instructions, each distinct one is decoded
        alone, once, instead of whole columns.
        """
        if self._rows is not None:
            k = (self._ids[i], kind)
            if k not in self._rows:
                cols = getattr(Columns(self.words[self.firsts[k[0]]][None], self.env), kind)
                self._rows[k] = {name: int(cols[name][0]) for name in cols}
            return dict(self._rows[k])
        return {k: self._list(kind, k)[i] for k in getattr(self.cols, kind)}

    def describe(self, i: int) -> str:
        """A short name: ``LOAD INP``, ``GEMM``, ``ALU ADD``, ``NOP (compute)``, ``FINISH`` ..."""
        op = self.opcode[i]
        if op in (isa.OPCODE_LOAD, isa.OPCODE_STORE):
            if self.x_size[i] == 0:
                return "NOP"
            return f"{isa.OPCODE_NAMES[op]} {isa.MEM_NAMES.get(self.mem_type[i], self.mem_type[i])}"
        if op == isa.OPCODE_ALU:
            return f"ALU {isa.ALU_NAMES.get(self._list('alu', 'alu_opcode')[i], '?')}"
        return isa.OPCODE_NAMES.get(op, f"opcode {op}")

    def text(self, i: int) -> str:
        """One line: the short name and every non-zero field."""
        w0, w1 = (int(v) & 0xFFFF_FFFF_FFFF_FFFF for v in self.words[i])
        insn = isa.decode((w0, w1), self.env)
        parts = [f"{k}={v}" for k, v in vars(insn).items() if v and k != "opcode"]
        return f"{self.describe(i)} " + " ".join(parts) if parts else self.describe(i)

    def validate(self) -> None:
        """Reject invalid opcodes, memory types and ALU opcodes before anything executes.

        Raises
        ------
        InvalidInstructionError
            Naming the first offending instruction, the field, its value and the accepted codes.
        DeadlockError
            If the stream holds no FINISH.
        """
        op = self.cols.header["opcode"]
        bad = np.flatnonzero(op > isa.OPCODE_ALU)
        if bad.size:
            i = int(bad[0])
            raise InvalidInstructionError(
                f"instruction {i}: opcode={int(op[i])!r}; accepted 0 LOAD, 1 STORE, 2 GEMM, 3 FINISH, 4 ALU", i)
        mt = self.cols.mem["memory_type"]
        bad = np.flatnonzero((op <= isa.OPCODE_STORE) & (mt > isa.MEM_ACC_8BIT))
        if bad.size:
            i = int(bad[0])
            raise InvalidInstructionError(
                f"instruction {i} ({isa.OPCODE_NAMES[int(op[i])]}): memory_type={int(mt[i])!r}; accepted 0 UOP, "
                "1 WGT, 2 INP, 3 ACC, 4 OUT, 5 ACC_8BIT", i)
        aop = self.cols.alu["alu_opcode"]
        accepted = np.array([isa.check_alu_opcode(k, self.env) is None for k in range(8)])
        bad = np.flatnonzero((op == isa.OPCODE_ALU) & ~accepted[aop & 7])
        if bad.size:
            i = int(bad[0])
            raise InvalidInstructionError(f"instruction {i} (ALU): {isa.check_alu_opcode(int(aop[i]), self.env)}", i)
        if not np.any(op == isa.OPCODE_FINISH):
            raise DeadlockError(
                f"none of the {op.size} instructions is a FINISH, so the run would never end", None)
        _ = self.flow
