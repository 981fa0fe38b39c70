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
from ...errors import DeadlockError, SimulationError
from ..debug import DEBUG_DUMP_INSN, DEBUG_SKIP_EXEC, dump_executed
from ..device import RUN_KEYS, STAT_KEYS, Device
from ..stream import (INSN_KEYS, Columns, Program, check_fields, check_stream, confirm_suspects, count_executed,
                      lent_tokens, read_stream)
from . import jit
from .plans import PlanCache
from .sched import CHANNELS, schedule
from .units import Scratchpads, alu, gemm, gemm_run, load, store

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

#: Tokens left in each channel after the last run.
TOKEN_KEYS = tuple(f"tokens_{c}" for c in CHANNELS)
#: With the NumPy engine, runs of consecutive GEMMs doing at least this many multiply-accumulates
#: are executed as one BLAS product when their micro-ops line up (:func:`vta.sim.fsim.units.gemm_run`;
#: the compiled engine has its own threshold, :data:`vta.sim.fsim.jit.BATCH_MIN_MACS`).
BATCH_MIN_MACS = 1 << 20
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
        self._order: np.ndarray | None = None  # the stream order of the longest stream so far
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
        if type(insn_count) is not int or type(wait_cycles) is not int or insn_count < 0 or wait_cycles < 0:
            for what, value in (("insn_count", insn_count), ("wait_cycles", wait_cycles)):
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                    raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
        try:
            tokens, held = self._run(insn_phys_addr, int(insn_count))
        except SimulationError:
            self._failed()
            raise
        if held[0] or held[1] or held[2] or held[3]:
            self._stats["runs_with_surplus_tokens"] += 1
            tokens = [t + h for t, h in zip(tokens, held, strict=True)]
        self.tokens = tokens
        if tokens[0] or tokens[1] or tokens[2] or tokens[3]:
            self._stats["runs_with_tokens_left"] += 1
        return 0

    def _run(self, insn_phys_addr: int, n: int) -> tuple[list[int], list[int]]:
        """Check and execute the stream with the tokens it is lent (:func:`lent_tokens`);
        return the tokens it leaves and those held back."""
        if n == 0:
            raise DeadlockError("the stream has 0 instructions, so FINISH never executes and the run never ends")
        words = read_stream(self.dram, insn_phys_addr, n)
        program = Program(words, self.env)
        tokens = list(self.tokens)
        if any(tokens):
            program.validate()
            schedule(program.flow, list(tokens))  # with every outstanding token: deadlock, overflow
            tokens = lent_tokens(program.flow, tokens)
        held = [a - b for a, b in zip(self.tokens, tokens, strict=True)]
        self._run_tokens = list(self.tokens)  # outstanding at the start (held ones too), for the dump
        after, suspects = self._jit.prechecks(words, tokens, self.dram) if self._jit is not None else (None, None)
        if self._rng is None and after is not None:
            tokens[:] = after
            order = self._stream_order(n)  # a valid stream run in stream order (checked in one compiled pass)
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

    def _stream_order(self, n: int) -> np.ndarray:
        """``0 .. n-1``, kept between runs (a stream of many small instructions run again and again
        would otherwise allocate and fill it every run); callers only read it."""
        kept = self._order
        if kept is None or kept.size < n:
            kept = self._order = np.arange(n, dtype=np.int64)
        return kept[:n]

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
        out.update(zip(TOKEN_KEYS, self.tokens, strict=True))
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
    def _execute(self, program: Program, order: np.ndarray) -> None:
        """Run ``order``; the compiled engine (if any) runs what it can, the rest goes one by one
        through the opcode functions. :attr:`_position` counts the instructions done."""
        self._position = 0
        if self.debug_flags & DEBUG_SKIP_EXEC:
            try:
                self._execute_uop_loads(program, order)
            finally:
                count_executed(self._stats, program, order[:self._position], self.env)
                self._record_trace(program, order)
            return
        if self._jit is not None:  # the compiled loop batches lined-up GEMMs itself
            with _one_blas_thread() if self.batch_gemms else contextlib.nullcontext():
                try:
                    self._jit.run(self, program, order, count_executed)
                finally:
                    self._record_trace(program, order)
            return
        in_stream_order = np.array_equal(order, np.arange(order.size))
        runs = _gemm_runs(program, self.env) if self.batch_gemms and in_stream_order else None
        with _one_blas_thread() if runs is not None else contextlib.nullcontext():
            self._execute_order(program, order, runs, in_stream_order)

    def _execute_order(self, program: Program, order: np.ndarray, runs, in_stream_order: bool = False) -> None:
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
            count_executed(self._stats, program, order[:self._position], self.env)
            self._record_trace(program, order)

    def _execute_planned(self, program: Program, order: np.ndarray, runs, in_stream_order: bool) -> None:
        """:meth:`_execute_order` with plans (:mod:`vta.sim.fsim.plans`): the loop every
        instruction of a long stream goes through, so it keeps to local names.

        Instructions are numbered by their plan key (:meth:`Program.plan_ids`: the encoded
        bytes, with the micro-op buffer version for GEMM and ALU), so each distinct one is
        looked up in the plan table once per run and every occurrence is a list index."""
        plans = self._plans
        ids, firsts = program.plan_ids(order, plans.uop_version)
        missing = plans  # marks "not looked up yet" (None means "no plan")
        plan_of = [missing] * len(firsts)
        if runs is None:
            runs = {}
        else:
            firsts_of_runs = np.flatnonzero(runs)
            runs = dict(zip(firsts_of_runs.tolist(), runs[firsts_of_runs].tolist(), strict=True))
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

    def _execute_ids(self, ids: list, plan_of: list, firsts: list, program: Program) -> None:
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

    def _plan(self, program: Program, k: int):
        """The plan of the instructions numbered ``k`` by :meth:`Program.plan_ids` from the
        table, made now if it is not there (None when it has none)."""
        plans = self._plans
        i, op, key = program.firsts[k], program.first_ops[k], program.first_keys[k]
        if op in (isa.OPCODE_GEMM, isa.OPCODE_ALU):
            key = (key, plans.uop_version)
        plan = plans.table.get(key, plans)
        if plan is plans:
            plan = plans.make(key, op, lambda kind: program.fields(i, kind))
        return plan

    def step_run(self, program: Program, i: int, length: int) -> bool:
        """Try to execute the GEMMs ``i .. i+length-1`` as one batch (see :func:`units.gemm_run`)."""
        return gemm_run(self.sram, [program.fields(k, "gemm") for k in range(i, i + length)])

    def _execute_uop_loads(self, program: Program, order: np.ndarray) -> None:
        """``DEBUG_SKIP_EXEC``: walk ``order`` executing only the micro-op loads (upstream fsim)."""
        for i in order.tolist():
            if program.opcode[i] == isa.OPCODE_LOAD and program.mem_type[i] == isa.MEM_UOP and program.x_size[i]:
                self.step(program, i)
            self._position += 1

    def _record_trace(self, program: Program, order: np.ndarray) -> None:
        """Keep the executed instructions in :attr:`trace` and print them in debug mode."""
        if self.trace_enabled:
            stage = program.flow.stage
            done = order[:self._position].tolist()
            self.trace.extend((i, _STAGE_NAMES[int(stage[i])], program.text(i)) for i in done)
        self._dump_executed(program, order[:self._position])

    def _dump_executed(self, program: Program, done: np.ndarray) -> None:
        """``DEBUG_DUMP_INSN``: print the executed instructions in the order they ran."""
        if self.debug_flags & DEBUG_DUMP_INSN:
            dump_executed(self.env, program.words, done.tolist(), self._run_tokens)

    def step(self, program: Program, i: int) -> None:
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


def _gemm_runs(program: Program, env: Environment) -> np.ndarray:
    """Lengths of the runs of GEMMs worth executing as one batch, at each run's first index.

    A run is two or more consecutive non-reset GEMMs with one micro-op each and identical
    trip counts and factors, doing at least :data:`BATCH_MIN_MACS` multiply-accumulates;
    0 elsewhere.
    """
    op = program.cols.header["opcode"]
    out = np.zeros(op.size, dtype=np.int64)
    rows = np.flatnonzero(op == isa.OPCODE_GEMM)  # only the GEMM rows are decoded
    if rows.size < 2:
        return out
    g = Columns(program.words[rows], env).gemm
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
