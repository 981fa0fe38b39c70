"""The functional simulator (fsim): the executable specification of the VTA instruction set.

:class:`FunctionalSimulator` implements the :class:`~vta.sim.device.Device` contract. It reads an
instruction stream from the shared DRAM arena, orders it by the dependency tokens
(:mod:`vta.sim.fsim.sched`) and executes every instruction with one small function per opcode
(:mod:`vta.sim.fsim.units`), following ``reference/vta-isa.md`` sections 2 to 6 and the
semantics table of DESIGN.md. When numba is installed, a compiled loop
(:mod:`vta.sim.fsim.jit`) executes the common instructions and hands anything unusual back to
those functions, so results and errors are the same with or without it. Without it (the NumPy
engine), small common instructions run through plans made once per distinct instruction
(:mod:`vta.sim.fsim.plans`), everything else through the opcode functions.

Examples
--------
>>> from vta.env import get_env
>>> from vta.dram import DRAM
>>> from vta.testing.programs import ProgramBuilder
>>> env = get_env()
>>> with DRAM(1 << 24) as dram, FunctionalSimulator(env, dram) as dev:
...     prog = ProgramBuilder(env, dram)
...     _ = prog.finish()
...     addr, count = prog.build()
...     dev.run(addr, count)
0
"""

from __future__ import annotations

import contextlib
import os
import warnings

import numpy as np
from threadpoolctl import ThreadpoolController

from ... import isa
from ...dram import DRAM
from ...env import Environment
from ...errors import DeadlockError, InvalidInstructionError, SimulationError
from ..debug import DEBUG_DUMP_INSN, DEBUG_SKIP_EXEC, dump_executed
from ..device import RUN_KEYS, STAT_KEYS, Device
from . import jit
from .plans import PlanCache
from .sched import CHANNELS, Flow, schedule
from .units import Scratchpads, alu, check_mem, gemm, gemm_run, load, store

# Batched GEMMs are many small BLAS products; threaded BLAS runs them up to 20x slower on a
# small or busy machine, so they run single-threaded (numbers are identical either way). The
# controller is made on first use, after the compiled engine has loaded the BLAS it calls.
_BLAS: ThreadpoolController | None = None


def _one_blas_thread():
    """A context limiting every loaded BLAS library to one thread."""
    global _BLAS
    if _BLAS is None:
        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")

__all__ = ["FunctionalSimulator", "INSN_KEYS", "TOKEN_KEYS", "check_stream", "lent_tokens"]

#: Per-opcode instruction counters (x_size == 0 loads and stores count as ``insn_nop`` only).
INSN_KEYS = ("insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish", "insn_nop")
#: Tokens left in each channel after the last run.
TOKEN_KEYS = tuple(f"tokens_{c}" for c in CHANNELS)
#: With the NumPy engine, runs of consecutive GEMMs doing at least this many multiply-accumulates
#: are executed as one BLAS product when their micro-ops line up (:func:`vta.sim.fsim.units.gemm_run`;
#: the compiled engine has its own threshold, :data:`vta.sim.fsim.jit.BATCH_MIN_MACS`).
BATCH_MIN_MACS = 1 << 20
#: When a stream has at least this many instructions per distinct one, the NumPy engine decodes
#: the fields of each distinct one alone, once (about 30 us each), instead of whole columns (about
#: 0.4 us per instruction; see :meth:`_Program.fields`).
_ROW_DECODE_RATIO = 64
_STAGE_NAMES = {isa.STAGE_LOAD: "load", isa.STAGE_COMPUTE: "compute", isa.STAGE_STORE: "store"}


class FunctionalSimulator(Device):
    """A functional, bit-exact model of one VTA core.

    Execution order: by default deterministic -- among the three stage queues whose next
    instruction has its tokens available, the instruction earliest in the stream runs next
    (for a stream that is valid when run as written, that is stream order). With ``seed``, a
    ready stage is picked at random at each step, from a generator seeded once per device, to
    expose missing dependencies.

    A run ends when every instruction has executed and one of them was FINISH. A stream in
    which some instruction can never get its tokens (including any instruction after FINISH),
    that has no FINISH, or that would put more than 255 tokens on a channel is rejected before
    any instruction executes (:func:`check_stream`). Other errors (invalid fields, SRAM or DRAM
    out of range) stop the run at the failing instruction.

    State between runs follows the device contract (:mod:`vta.sim.device`): tokens and SRAM
    persist across successful runs, but a stream is lent only the outstanding tokens it needs
    (:func:`lent_tokens`; the rest is held back during the run); a run that raises leaves the
    device in its reset state (scratchpads zero, no tokens) and counts in ``runs_failed``.

    Parameters
    ----------
    env : Environment
        The configuration (any encodable one: BATCH > 1, BLOCK 32, narrow inputs, ...).
    dram : DRAM
        The arena holding instructions, micro-ops and data.
    seed : int, optional
        Use a seeded random interleaving of the stages instead of the deterministic order.
    trace : bool
        Record every executed instruction in :attr:`trace` as ``(index, stage, text)``.
    engine : {"auto", "numpy", "jit"}
        ``"numpy"`` executes every instruction with the opcode functions of
        :mod:`vta.sim.fsim.units`; ``"jit"`` runs small instructions in a loop compiled by
        numba (:mod:`vta.sim.fsim.jit`, identical results); ``"auto"`` uses ``"jit"`` when
        numba is installed, unless the environment variable ``VTA_FSIM_ENGINE`` names an
        engine (``numpy`` or ``jit``: e.g. to run a test suite on the NumPy engine).
    batch_gemms : bool, optional
        Execute runs of consecutive GEMMs whose micro-ops line up as BLAS products (same
        results), with BLAS limited to one thread during the run: the NumPy engine through
        :func:`vta.sim.fsim.units.gemm_run`, the compiled engine inside its loop
        (:mod:`vta.sim.fsim.kernels`). Default: on (fastest for GEMM-heavy streams).

    Raises
    ------
    ValueError
        For an unknown ``engine`` (or ``VTA_FSIM_ENGINE``).
    ImportError
        For ``engine="jit"`` without numba.
    """

    name = "sim"
    debug_flags_supported = DEBUG_SKIP_EXEC | DEBUG_DUMP_INSN

    def __init__(self, env: Environment, dram: DRAM, *, seed: int | None = None, trace: bool = False,
                 engine: str = "auto", batch_gemms: bool | None = None):
        super().__init__(env, dram)
        if engine == "auto":
            engine = os.environ.get("VTA_FSIM_ENGINE", "auto") or "auto"
        if engine not in ("auto", "numpy", "jit"):
            raise ValueError(f"engine must be 'auto', 'numpy' or 'jit', got {engine!r}")
        self.seed = seed
        self._rng = None if seed is None else np.random.default_rng(seed)
        self.sram = Scratchpads(env)
        self.tokens = [0, 0, 0, 0]
        self.trace_enabled = bool(trace)
        #: Executed instructions ``(index, stage name, one-line text)`` (with ``trace=True``).
        self.trace: list[tuple[int, str, str]] = []
        self._stats = dict.fromkeys(STAT_KEYS + INSN_KEYS + RUN_KEYS, 0)
        self._jit = None
        self.batch_gemms = True if batch_gemms is None else bool(batch_gemms)
        if engine == "jit":
            self._jit = jit.JitEngine(env, self.batch_gemms)
        elif engine == "auto" and jit.available():
            try:
                self._jit = jit.JitEngine(env, self.batch_gemms)
            except ImportError as exc:  # numba present but unusable (e.g. built for another NumPy)
                warnings.warn(f"fsim: numba cannot be used ({exc}); running the NumPy engine", RuntimeWarning,
                              stacklevel=2)
        #: The engine in use: "jit" (compiled loop plus NumPy) or "numpy".
        self.engine = "numpy" if self._jit is None else "jit"
        # the NumPy engine's plans of small instructions (:mod:`vta.sim.fsim.plans`)
        self._plans = PlanCache(self.sram, dram) if self._jit is None else None

    # ------------------------------------------------------------------ contract
    def run(self, insn_phys_addr: int, insn_count: int, wait_cycles: int = 0) -> int:
        """Execute ``insn_count`` instructions at ``insn_phys_addr`` until the run completes.

        ``wait_cycles`` is accepted for API compatibility; a functional model has no time.

        Returns
        -------
        int
            0.

        Raises
        ------
        ValueError
            If ``insn_count`` or ``wait_cycles`` is negative or not an integer.
        DRAMAccessError
            If the stream or a data access lies outside a live allocation.
        InvalidInstructionError
            For an invalid opcode, memory type, ALU opcode, store padding or token flag.
        SRAMIndexError
            For an on-chip index outside its buffer.
        DeadlockError
            If an instruction can never run or the stream has no FINISH.
        TokenOverflowError
            If more than 255 tokens would be outstanding on a channel.
        """
        for what, value in (("insn_count", insn_count), ("wait_cycles", wait_cycles)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
        try:
            tokens, held = self._run(insn_phys_addr, int(insn_count))
        except SimulationError:
            self._failed()
            raise
        self.tokens = [t + h for t, h in zip(tokens, held)]
        if any(held):
            self._stats["runs_with_surplus_tokens"] += 1
        if any(self.tokens):
            self._stats["runs_with_tokens_left"] += 1
        return 0

    def _run(self, insn_phys_addr: int, n: int) -> tuple[list[int], list[int]]:
        """Check and execute the stream with the tokens it is lent (:func:`lent_tokens`);
        return the tokens it leaves and those held back."""
        if n == 0:
            raise DeadlockError("the stream has 0 instructions, so FINISH never executes and the run never ends")
        self.dram.check(insn_phys_addr, 16 * n, "instruction stream")
        words = self.dram.data[insn_phys_addr:insn_phys_addr + 16 * n].copy().view("<i8").reshape(n, 2)
        program = _Program(_Columns(words, self.env), words, self.env)
        tokens = list(self.tokens)
        if any(tokens):
            program.validate()
            schedule(program.flow, list(tokens))  # with every outstanding token: deadlock, overflow
            tokens = lent_tokens(program.flow, tokens)
        held = [a - b for a, b in zip(self.tokens, tokens)]
        self._run_tokens = list(self.tokens)  # outstanding at the start (held ones too), for the dump
        after, suspects = self._jit.prechecks(words, tokens, self.dram) if self._jit is not None else (None, None)
        if self._rng is None and after is not None:
            tokens[:] = after
            order = np.arange(n)  # a valid stream run in stream order (checked in one compiled pass)
        else:
            program.validate()
            order = schedule(program.flow, tokens, self._rng)
        if suspects is not None:  # the checks of check_fields, from the same compiled pass
            confirm_suspects(self.env, words, suspects, self.dram)
        else:
            check_fields(self.env, words, program.cols.header["opcode"], self.dram)
        try:
            self._execute(program, order)
        except SimulationError as exc:
            if exc.insn_index is None:
                exc.insn_index = int(order[self._position])
            raise
        return tokens, held

    def _failed(self) -> None:
        """After a run that raised: back to the reset state, counted in ``runs_failed``."""
        self._clear_sram()
        self.tokens = [0, 0, 0, 0]
        self._stats["runs_failed"] += 1

    def stats(self) -> dict:
        """Counters since the last :meth:`clear_stats` and the tokens left in each channel.

        Returns
        -------
        dict
            The seven upstream keys (``STAT_KEYS``, upstream counting), ``insn_load``,
            ``insn_store``, ``insn_gemm``, ``insn_alu``, ``insn_finish``, ``insn_nop``,
            ``runs_failed``, ``runs_with_tokens_left``, ``runs_with_surplus_tokens`` and
            ``tokens_l2g``, ``tokens_g2l``, ``tokens_s2g``, ``tokens_g2s`` (outstanding after
            the last run; 0 after a failed run).
        """
        out = dict(self._stats)
        out.update(zip(TOKEN_KEYS, self.tokens))
        return out

    def clear_stats(self) -> None:
        """Zero every counter (tokens are state, not counters, and stay)."""
        for key in self._stats:
            self._stats[key] = 0

    def reset(self) -> None:
        """Zero the scratchpads and the token channels, and forget the trace."""
        self._clear_sram()
        self.tokens = [0, 0, 0, 0]
        self.trace = []

    def close(self) -> None:
        """Drop the NumPy engine's plans (they hold views of the DRAM arena)."""
        if self._plans is not None:
            self._plans.table.clear()

    def _clear_sram(self) -> None:
        self.sram.clear()
        if self._plans is not None:
            self._plans.changed(isa.MEM_UOP)
            self._plans.changed(isa.MEM_WGT)

    # ------------------------------------------------------------------ execution
    def _execute(self, program: "_Program", order: np.ndarray) -> None:
        """Run ``order``; the compiled engine (if any) runs what it can, the rest goes one by one
        through the opcode functions. :attr:`_position` counts the instructions done."""
        self._position = 0
        if self.debug_flags & DEBUG_SKIP_EXEC:
            try:
                self._execute_uop_loads(program, order)
            finally:
                _count(self._stats, program, order[:self._position], self.env)
                self._record_trace(program, order)
            return
        if self._jit is not None:  # the compiled loop batches lined-up GEMMs itself
            with _one_blas_thread() if self.batch_gemms else contextlib.nullcontext():
                try:
                    self._jit.run(self, program, order, _count)
                finally:
                    self._record_trace(program, order)
            return
        in_stream_order = np.array_equal(order, np.arange(order.size))
        runs = program.gemm_runs(self.env) if self.batch_gemms and in_stream_order else None
        with _one_blas_thread() if runs is not None else contextlib.nullcontext():
            self._execute_order(program, order, runs, in_stream_order)

    def _execute_order(self, program: "_Program", order: np.ndarray, runs, in_stream_order: bool = False) -> None:
        """The NumPy engine: instruction by instruction (through its plan when it has one), and
        lined-up GEMM runs as one product."""
        try:
            if self._plans is not None and self._plans.ok:
                self._execute_planned(program, order, runs, in_stream_order)
                return
            order_list = order.tolist()
            while self._position < len(order_list):
                i = order_list[self._position]
                if runs is not None and runs[i] and self.step_run(program, i, int(runs[i])):
                    self._position += int(runs[i])
                    continue
                self.step(program, i)
                self._position += 1
        finally:
            _count(self._stats, program, order[:self._position], self.env)
            self._record_trace(program, order)

    def _execute_planned(self, program: "_Program", order: np.ndarray, runs, in_stream_order: bool) -> None:
        """:meth:`_execute_order` with plans (:mod:`vta.sim.fsim.plans`): the loop every
        instruction of a long stream goes through, so it keeps to local names.

        Instructions are numbered by their plan key (:meth:`_Program.plan_ids`: the encoded
        bytes, with the micro-op buffer version for GEMM and ALU), so each distinct one is
        looked up in the plan table once per run and every occurrence is a list index."""
        plans = self._plans
        ids, firsts = program.plan_ids(order, plans.uop_version)
        missing = plans  # marks "not looked up yet" (None means "no plan")
        plan_of = [missing] * len(firsts)
        runs = {} if runs is None else dict(zip(np.flatnonzero(runs).tolist(), runs[runs > 0].tolist()))
        pos, n = self._position, len(order)
        if not runs and in_stream_order and pos == 0:
            self._execute_ids(ids, plan_of, firsts, program)
            return
        order = order.tolist()
        try:
            while pos < n:
                i = order[pos]
                if runs and i in runs and self.step_run(program, i, runs[i]):
                    pos += runs[i]
                    continue
                k = ids[i]
                plan = plan_of[k]
                if plan is missing:
                    plan = plan_of[k] = self._plan(program, k)
                if plan is not None:
                    plan()
                else:
                    self._position = pos
                    self.step(program, i)
                pos += 1
        finally:
            self._position = pos

    def _execute_ids(self, ids: list, plan_of: list, firsts: list, program: "_Program") -> None:
        """:meth:`_execute_planned` for a whole stream in stream order with no GEMM runs (the
        plain loop over the plan numbers)."""
        missing = self._plans
        pos = 0
        try:
            for k in ids:
                plan = plan_of[k]
                if plan is missing:
                    plan = plan_of[k] = self._plan(program, k)
                if plan is not None:
                    plan()
                else:
                    self._position = pos
                    self.step(program, pos)
                pos += 1
        finally:
            self._position = pos

    def _plan(self, program: "_Program", k: int):
        """The plan of the instructions numbered ``k`` by :meth:`_Program.plan_ids` from the
        table, made now if it is not there (None when it has none)."""
        plans = self._plans
        i, op, key = program.firsts[k], program.first_ops[k], program.first_keys[k]
        if op in (isa.OPCODE_GEMM, isa.OPCODE_ALU):
            key = (key, plans.uop_version)
        plan = plans.table.get(key, plans)
        if plan is plans:
            plan = plans.make(key, op, lambda kind: program.fields(i, kind))
        return plan

    def step_run(self, program: "_Program", i: int, length: int) -> bool:
        """Try to execute the GEMMs ``i .. i+length-1`` as one batch (see :func:`units.gemm_run`)."""
        return gemm_run(self.sram, [program.fields(k, "gemm") for k in range(i, i + length)])

    def _execute_uop_loads(self, program: "_Program", order: np.ndarray) -> None:
        """``DEBUG_SKIP_EXEC``: walk ``order`` executing only the micro-op loads (upstream fsim)."""
        for i in order.tolist():
            if program.opcode[i] == isa.OPCODE_LOAD and program.mem_type[i] == isa.MEM_UOP and program.x_size[i]:
                self.step(program, i)
            self._position += 1

    def _record_trace(self, program: "_Program", order: np.ndarray) -> None:
        """Keep the executed instructions in :attr:`trace` and print them in debug mode."""
        if self.trace_enabled:
            stage = program.flow.stage
            done = order[:self._position].tolist()
            self.trace.extend((i, _STAGE_NAMES[int(stage[i])], program.text(i)) for i in done)
        self._dump_executed(program, order[:self._position])

    def _dump_executed(self, program: "_Program", done: np.ndarray) -> None:
        """``DEBUG_DUMP_INSN``: print the executed instructions in the order they ran."""
        if self.debug_flags & DEBUG_DUMP_INSN:
            dump_executed(self.env, program.words, done.tolist(), self._run_tokens)

    def step(self, program: "_Program", i: int) -> None:
        """Execute instruction ``i`` with the opcode functions of :mod:`vta.sim.fsim.units`."""
        op = program.opcode[i]
        if op == isa.OPCODE_GEMM:
            gemm(self.sram, i, program.fields(i, "gemm"))
        elif op == isa.OPCODE_ALU:
            alu(self.sram, i, program.fields(i, "alu"))
        elif op == isa.OPCODE_FINISH:
            pass
        else:
            f = program.fields(i, "mem")
            if f["x_size"] == 0:
                pass
            elif op == isa.OPCODE_LOAD:
                load(self.sram, self.dram, i, f)
                if self._plans is not None:  # plans of GEMM and ALU read the micro-ops, some the weights
                    self._plans.changed(f["memory_type"])
            else:
                store(self.sram, self.dram, i, f)


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
    return [int(min(d, t)) for d, t in zip(deficit, outstanding)]


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
    program = _Program(_Columns(words, env), words, env)
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
    m = _Columns(words[rows], env).mem
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


def _count(st: dict, program: "_Program", done: np.ndarray, env: Environment) -> None:
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


class _Columns:
    """Field columns of a stream by format (``header``, ``mem``, ``gemm``, ``alu``), decoded lazily
    with the positions of :func:`vta.isa.layout`."""

    def __init__(self, words: np.ndarray, env: Environment):
        lay = isa.layout(env)
        self.header = _Format(words, lay.header)
        self.mem = _Format(words, lay.mem[5:])
        self.gemm = _Format(words, lay.gemm[5:])
        self.alu = _Format(words, lay.alu[5:])


class _Program:
    """A decoded instruction stream: field columns as Python lists, stages and token flags."""

    def __init__(self, cols: "_Columns", words: np.ndarray, env: Environment):
        self.cols = cols
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
                cols = getattr(_Columns(self.words[self.firsts[k[0]]][None], self.env), kind)
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

    def gemm_runs(self, env: Environment) -> np.ndarray:
        """Lengths of the runs of GEMMs worth executing as one batch, at each run's first index.

        A run is two or more consecutive non-reset GEMMs with one micro-op each and identical
        trip counts and factors, doing at least :data:`BATCH_MIN_MACS` multiply-accumulates;
        0 elsewhere.
        """
        op = self.cols.header["opcode"]
        out = np.zeros(op.size, dtype=np.int64)
        rows = np.flatnonzero(op == isa.OPCODE_GEMM)  # only the GEMM rows are decoded
        if rows.size < 2:
            return out
        g = _Columns(self.words[rows], env).gemm
        ok = (g["reset_reg"] == 0) & (g["uop_end"] - g["uop_bgn"] == 1)
        same = np.zeros(rows.size, dtype=bool)
        same[1:] = ok[1:] & ok[:-1] & (rows[1:] == rows[:-1] + 1)
        for k in ("iter_out", "iter_in", "dst_factor_out", "dst_factor_in", "src_factor_out", "src_factor_in",
                  "wgt_factor_out", "wgt_factor_in"):
            same[1:] &= g[k][1:] == g[k][:-1]
        group = np.cumsum(~same)
        length = np.bincount(group)[group]
        macs = length * g["iter_out"] * g["iter_in"] * (env.BATCH * env.BLOCK_IN * env.BLOCK_OUT)
        out[rows] = np.where(ok & ~same & (length >= 2) & (macs >= BATCH_MIN_MACS), length, 0)
        return out

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
        top = isa.ALU_REQ if self.env.ALU_REQUANT else isa.ALU_MUL
        bad = np.flatnonzero((op == isa.OPCODE_ALU) & (aop > top))
        if bad.size:
            i = int(bad[0])
            raise InvalidInstructionError(f"instruction {i} (ALU): {isa.check_alu_opcode(int(aop[i]), self.env)}", i)
        if not np.any(op == isa.OPCODE_FINISH):
            raise DeadlockError(
                f"none of the {op.size} instructions is a FINISH, so the run would never end", None)
        _ = self.flow
