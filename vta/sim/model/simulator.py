"""The fast cycle-level model (TARGET ``model``): fsim's results with an estimate of tsim's time.

:class:`CycleModel` is a :class:`~vta.sim.fsim.FunctionalSimulator` -- the same opcode
functions compute the same bits and raise the same errors -- that also replays each stream on
an event-driven model of OUR RTL (``hw/README.md``) to count cycles:

* fetch reads bursts of up to 8 instructions and dispatches them in stream order, one per cycle,
  into the load, compute and store queues (512 entries each; an entry is freed when its
  instruction retires; a full queue blocks dispatch, not the next burst's read);
* each unit runs its queue in order, one instruction at a time: it starts an instruction once it
  has been dispatched, the previous one has retired and every token it pops has been pushed;
  pushes are visible to the consumer when the producer retires;
* fetch bursts and the LOAD bursts of the load and compute units share one read channel: one
  request per cycle (fixed priority: fetch, uop, inp, wgt, acc), beats returned in request order
  one per cycle, timed by the configuration's DRAM (``DRAM``, ``DRAM_LATENCY``,
  ``DRAM_BYTES_PER_CYCLE``, ``DRAM_MAX_OUTSTANDING``: the model of tsim's memory shim);
* instruction costs come from :mod:`vta.sim.model.costs`; the replay loop is
  :mod:`vta.sim.model.replay` (compiled by numba when installed).

With ``functional=False`` the model only times: the timing depends on nothing but the
instruction words, the stream's address, the tokens outstanding before the run, the
configuration and :class:`Timing` -- micro-op contents, data and DRAM contents besides the
instructions never change a cycle (GEMM and ALU cost by their micro-op count, loads and stores by
the sizes, strides, pads and DRAM addresses in their fields). So for every stream the full model
accepts, a timing-only run gives the same ``cycle_count`` and hardware counters, fsim's
instruction and byte counters and the same tokens left, while executing nothing (scratchpads and
DRAM keep their contents, so outputs are not computed). It applies fsim's checks made before
execution (encoding, token flow, deadlock, token overflow, LOAD/STORE SRAM and DRAM ranges) with
the same errors; what fsim finds only while executing (GEMM/ALU SRAM indices out of range, read
from the micro-ops) goes undetected. With numba a timing-only run is one compiled call that checks,
counts and times the stream (:func:`vta.sim.model.replay._timing_run`); what it cannot settle
alone (a suspect LOAD/STORE, an invalid stream, tokens outstanding, a stream that runs only out of
stream order) is checked the slow way, so the errors stay fsim's. A functional run is timed by the
same compiled call, its checks off, once fsim has executed the stream. When a device runs the same
stream again (same words, length, tokens and live allocations), the compiled call compares the words
with those it last decoded and skips the decode and checks; the replay itself always runs. A
timing-only run that was clean and left no tokens is repeated by that compiled call alone, through
its entry point (no dispatch, no Python checks), while the inputs it depends on besides the words
stay (:meth:`CycleModel._repeat_key`: address, count, the DRAM and its generation, tokens, flags,
configuration and cost rules).

The run ends when FINISH retires (as in the RTL, FINISH does not wait for the load and store
units; well-formed streams make it pop their last tokens). Statistics are fsim's plus tsim's
hardware counters: ``cycle_count`` and ``<unit>_busy_cycles``, ``<unit>_stall_cycles``
(waiting for tokens; fetch: blocked on a full queue) and ``<unit>_retired`` for fetch, load,
compute and store.

Examples
--------
>>> from vta.env import get_env
>>> from vta.dram import DRAM
>>> from vta.testing.programs import ProgramBuilder
>>> env = get_env()
>>> with DRAM(1 << 24) as dram, CycleModel(env, dram) as dev:
...     prog = ProgramBuilder(env, dram)
...     _ = prog.finish()
...     addr, count = prog.build()
...     _ = dev.run(addr, count)
...     dev.stats()["cycle_count"]
8
"""

from __future__ import annotations

import numpy as np

from ... import isa
from ...dram import DRAM
from ...env import Environment
from ...errors import DeadlockError, InvalidInstructionError, SimulationError
from ..debug import DEBUG_DUMP_INSN, dump_executed
from ..fsim.sched import schedule
from ..fsim.simulator import FunctionalSimulator
from ..stream import Program, check_fields, confirm_suspects, count_executed, lent_tokens
from . import costs as mc
from . import replay as rp
from .costs import Timing
from .lanes import footprints
from .replay import Scratch, replay

__all__ = ["HW_STAT_KEYS", "QUEUE_DEPTH", "CycleModel", "Timing", "time_stream"]

UNITS = ("fetch", "load", "compute", "store")
#: Hardware counters (the names tsim uses), added to fsim's statistics.
HW_STAT_KEYS = (("cycle_count",) + tuple(f"{u}_busy_cycles" for u in UNITS)
                + tuple(f"{u}_stall_cycles" for u in UNITS) + tuple(f"{u}_retired" for u in UNITS))
#: Entries of each instruction queue.
QUEUE_DEPTH = 512
_STAGES = (isa.STAGE_LOAD, isa.STAGE_COMPUTE, isa.STAGE_STORE)
_NONE_HELD = (0, 0, 0, 0)
#: The allocations of an arena without any: one empty range (the compiled checks read row 0).
_NO_ALLOCS = np.zeros((1, 2), np.int64)


def _no_entry(*args) -> int:
    """The stand-in for a compiled entry that cannot be found: the repeat is never taken."""
    return 0


class CycleModel(FunctionalSimulator):
    """fsim plus an event-driven timing model of the RTL (see the module docstring).

    Parameters
    ----------
    env : Environment
        The configuration.
    dram : DRAM
        The arena holding instructions, micro-ops and data.
    timing : Timing, optional
        Cost constants (default: those measured on tsim).
    functional : bool
        Execute every stream as fsim does (default), or only time it (see the module docstring:
        same cycles and counters for every stream the full model accepts, no outputs).
    **fsim_options
        Passed to :class:`~vta.sim.fsim.FunctionalSimulator` (``engine``, ``trace``, ...;
        ``seed`` changes only the functional order, never the timing).

    Raises
    ------
    TypeError
        If ``functional`` is not a bool.
    ValueError
        For an unknown fsim ``engine``, or ``trace=True`` with ``functional=False`` (nothing
        executes, so there is nothing to trace).
    """

    name = "model"

    def __init__(self, env: Environment, dram: DRAM, *, timing: Timing | None = None, functional: bool = True,
                 **fsim_options):
        if not isinstance(functional, (bool, np.bool_)):
            raise TypeError(f"functional must be True (execute and time) or False (time only), got {functional!r}")
        if not functional and fsim_options.get("trace"):
            raise ValueError("trace=True records executed instructions, but functional=False executes none")
        super().__init__(env, dram, **fsim_options)
        #: Whether runs execute the stream (False: timing only, see the module docstring).
        self.functional = bool(functional)
        self.timing = Timing() if timing is None else timing
        self._timed = None
        self._executed_words = None  # the words fsim executed in the current run (read before it ran)
        self._scratch = Scratch()  # the replay's work arrays, reused run after run
        self._hw = dict.fromkeys(HW_STAT_KEYS, 0)
        # the compiled timing-only run (replay._timing_run): its in/out slots (two, used in turn: the
        # last successful run's stay readable) and the counters of its clean runs, added to the
        # statistics when they are read (the hardware counters, then fsim's of replay.COUNT_KEYS)
        self._io = np.zeros(rp.IO_SIZE, np.int64)
        self._io_in = None  # what the in slots of self._io hold
        # a repeat of the last timing-only run, when it was clean and left no tokens: (the inputs
        # it depends on, the compiled entry, the tuple of its arguments) (see :meth:`_repeat_key`)
        self._repeat = None
        self._repeat_next = None  # the arguments of the current run's compiled call, when it can be repeated
        # (the DRAM data array, the compiled entry for stream words that are views of it) (see rp.timing_entry)
        self._view_entry = (None, None)
        # (the DRAM data array, it as int64, the compiled entry of rp._timing_run_at for it) (see _time_new)
        self._at = (None, None, None)
        # the stream of the last compiled run: (address, count, DRAM generation) when its range
        # was checked and its words are a view of the arena (valid while the generation stays)
        self._stream_key = None
        self._stream_words = None
        self._allocs_generation = None  # the DRAM generation of self._allocs
        self._keyed_dram = None  # the DRAM these keys and generations are of
        self._allocs = None  # the live allocations as start and end (k x 2)
        self._abuf = np.zeros(2, np.int64)  # (_time_new's compiled run copies them here, flat)
        self._scanned = None  # the inputs (but the words) of the scan the work space holds, if any
        self._scanned_consts = None  # (and the constants it used)
        self._acc = np.zeros(len(HW_STAT_KEYS) + len(rp.COUNT_KEYS), np.int64)
        self._last_run: dict | None = {}
        self._probe = False
        self._new_ok = False  # (whether _time_new may apply: see _can_time_new)
        #: The timing events of the last run while the probe is on (see :meth:`set_probe`).
        self.probe_events: list | None = None

    @property
    def last_run(self) -> dict:
        """Counters of the last successful run only (``cycle_count`` and per-unit figures)."""
        if self._last_run is None:  # (a compiled run's: the counters it committed)
            self._last_run = dict(zip(HW_STAT_KEYS, self._io[rp.IO_LAST:rp.IO_LAST + len(HW_STAT_KEYS)].tolist(),
                                      strict=True))
        return self._last_run

    @last_run.setter
    def last_run(self, value: dict) -> None:
        self._last_run = value

    def set_probe(self, enable: bool) -> None:
        """Record the timing events of every run in :attr:`probe_events` (for the profiler).

        The ``events`` of :func:`time_stream` describe them; with the probe off nothing is kept.
        """
        self._probe = bool(enable)
        self._repeat = None
        self.probe_events = None

    def run(self, insn_phys_addr: int, insn_count: int, wait_cycles: int = 0) -> int:
        """Execute the stream (as fsim does), then add its estimated cycles to the statistics.

        ``wait_cycles`` is accepted for API compatibility and ignored (the functional result
        does not depend on time).

        Returns
        -------
        int
            0.

        Raises
        ------
        ValueError, DRAMAccessError, InvalidInstructionError, SRAMIndexError, DeadlockError,
        TokenOverflowError
            Exactly as :meth:`vta.sim.fsim.FunctionalSimulator.run`; a failed run adds no cycles.
        """
        rep = self._repeat
        # (a new stream is a new DRAM generation: two items of the key tell most first runs at once)
        if (rep is not None and rep[0][5] == self.dram.generation and rep[0][0] == insn_phys_addr
                and type(wait_cycles) is int and wait_cycles >= 0
                and rep[0] == (insn_phys_addr, insn_count, type(insn_count), self.functional, self.dram,
                               self.dram.generation, self.tokens, self.debug_flags, self.env, self.timing,
                               mc.compute_cycles, mc.store_cycles, getattr(mc, "FETCH_BUFFER_INSNS", 0))
                # (the key of _repeat_key, inlined)
                and (rep[1] or self._repeat_entry())(*rep[2])):
            self._last_run = None  # (the counters it committed)
            return 0
        self._repeat = None
        if not self.functional:
            if type(insn_count) is int and type(wait_cycles) is int and wait_cycles >= 0:
                try:
                    if self._time_new(insn_phys_addr, insn_count):
                        return 0
                except SimulationError:
                    self._failed()
                    raise
            self._timed = None
            self._repeat_next = None
            result = super().run(insn_phys_addr, insn_count, wait_cycles)
            if self._repeat_next is not None:  # (the entry of the arena's views, or looked up when repeated)
                entry = self._view_entry[1] if self._view_entry[0] is self.dram.data else None
                self._repeat = (self._repeat_key(insn_phys_addr, insn_count, [0, 0, 0, 0]), entry, self._repeat_next)
                self._io[rp.IO_REUSE] = 2
                self._io_in = None
            if self._timed is None:  # timed by the compiled run (the counters are in self._acc)
                if self.debug_flags & DEBUG_DUMP_INSN:
                    words, tokens = self._fast_timed
                    start = self._scratch.take(words.shape[0])[1][0].tolist()
                    dump_executed(self.env, words, sorted(range(len(start)), key=lambda i: (start[i], i)), tokens)
                return result
            return self._finish_run(result)
        outstanding = list(self.tokens)
        self._functional_order = None
        self._timed = None
        try:
            result = super().run(insn_phys_addr, insn_count, wait_cycles)
        except SimulationError:
            if self._functional_order is not None:  # debug dump: what ran before the failure
                dump_executed(self.env, *self._functional_order)
            raise
        if self._timed is None:  # executed by fsim: time the stream it ran (as read before it ran)
            words = self._executed_words
            tokens = outstanding
            if any(outstanding):  # the tokens the stream was lent (device contract)
                tokens = lent_tokens(Program(words, self.env).flow, outstanding)
            if self._time_compiled(words, tokens, insn_phys_addr):
                return result
            self._time(words, tokens, insn_phys_addr)
        return self._finish_run(result)

    def _time_new(self, insn_phys_addr: int, n: int) -> bool:
        """The common timing-only run, in one method: a stream at an 8-byte aligned address, run from
        no outstanding token, with the compiled run and no debug dump. Same checks, counters, tokens
        and repeat as the general path (fsim's :meth:`run` around :meth:`_run`), fewer steps (a first
        run of a small stream is mostly this Python path): the compiled call
        (:func:`~vta.sim.model.replay._timing_run_at`) finds the stream's range in the live allocations
        and views its words in the arena itself, so no NumPy object is made here for a new stream.
        Returns False, having done nothing, when it does not apply (the caller then takes the
        general path).

        Raises
        ------
        DRAMAccessError, InvalidInstructionError, SRAMIndexError, DeadlockError, TokenOverflowError
            fsim's errors for the stream (the caller resets the device, as fsim does).
        """
        t = self.tokens
        if (t[0] or t[1] or t[2] or t[3] or n <= 0 or type(insn_phys_addr) is not int or insn_phys_addr % 8
                or self.debug_flags & DEBUG_DUMP_INSN or self._probe or not (self._new_ok or self._can_time_new())):
            return False
        consts = self._scratch.packed(self.env, self.timing)
        if consts is None:
            return False
        dram = self.dram
        if dram is not self._keyed_dram:
            self._new_dram()
        at = self._at
        if at[0] is not dram.data:  # (the arena as int64, the words a view of it made by the compiled run)
            at = self._at = (dram.data, dram.data[:dram.data.size & ~7].view(np.int64), None)
        bounds = dram.live_bounds  # (the compiled run copies them into abuf: no NumPy array per generation)
        abuf = self._abuf
        if len(bounds) > abuf.size:
            abuf = self._abuf = np.zeros(2 * len(bounds), np.int64)
        io = self._io
        scan = (n, 0, 0, 0, 0, True, dram.generation)
        reuse = 1 if scan == self._scanned and consts is self._scanned_consts else 0
        self._io_in = None  # (the compiled run writes the in slots itself)
        scratch = self._scratch
        flat = scratch.flat if n <= scratch.fits else scratch.flat_for(n)
        self._scanned = None
        acc = self._acc
        run = at[2] or rp._TIMING_RUN_AT
        rc = run(at[1], consts, bounds, abuf, flat, io, acc, insn_phys_addr, n, reuse)
        if rc:
            self._scanned = scan
            self._scanned_consts = consts
            committed = True
            if run is rp._TIMING_RUN_AT:  # (the entry of this arena's runs, looked up once)
                entry = rp.timing_entry((at[1], consts, bounds, abuf, flat, io, acc, insn_phys_addr, n, reuse),
                                        at=True)
                at = self._at = at[:2] + (entry,)
        else:
            if io[rp.IO_STATUS] == rp.STATUS_RANGE:  # not inside one live allocation: DRAM's error
                dram.check(insn_phys_addr, 16 * n, "instruction stream")
                return False  # (dram.check raises for such a range; if not, the general path does)
            words = dram.data[insn_phys_addr:insn_phys_addr + 16 * n].view("<i8").reshape(n, 2)
            if self._allocs_generation != dram.generation:  # (the slow checks read them as NumPy)
                self._live_allocs()
            committed = self._settle(words, consts, flat, scan, n)
        self._last_run = None
        self._timed = self._repeat_next = None
        if rc == 1:  # clean, and the stream pushes as many tokens as it pops
            self.tokens = [0, 0, 0, 0]
        else:
            net = io[rp.IO_COUNTERS + 14:rp.IO_COUNTERS + 18].tolist()  # (the net tokens the stream pushes)
            self.tokens = net
            if net[0] or net[1] or net[2] or net[3]:
                self._stats["runs_with_tokens_left"] += 1
                return True
            if not committed:
                return True
        # a clean run from no tokens to none: it may be repeated (its compiled call, with IO_REUSE 2)
        self._repeat = (self._repeat_key(insn_phys_addr, n, [0, 0, 0, 0]), at[2],
                        (at[1], consts, bounds, abuf, flat, io, acc, insn_phys_addr, n, 2))
        return True

    def _can_time_new(self) -> bool:
        """Whether :meth:`_time_new` may apply to this device at all (fsim's compiled engine, the
        compiled replay, no COMPUTE_OVERLAP: none of which changes), kept in ``_new_ok``."""
        self._new_ok = self._jit is not None and not self.env.COMPUTE_OVERLAP and rp.compiled() is not None
        return self._new_ok

    def _repeat_entry(self):
        """The compiled entry of :attr:`_repeat` (looked up on its first repeat, then kept in it), or
        :func:`_no_entry` when there is none (the run then takes the whole path)."""
        args = self._repeat[2]
        entry = rp.timing_entry(args, at=args[0].ndim == 1) or _no_entry  # (1-d: the arena of _time_new)
        self._repeat = (self._repeat[0], entry, args)
        return entry

    def _repeat_key(self, insn_phys_addr, insn_count, tokens: list) -> tuple:
        """What a timing-only run depends on besides the words (the compiled run compares those):
        a run with the same key as a clean run that left no tokens repeats it, through the compiled
        entry alone (:attr:`_repeat`; same checks, same counters, the replay made again)."""
        return (insn_phys_addr, insn_count, type(insn_count), self.functional, self.dram, self.dram.generation,
                tokens, self.debug_flags, self.env, self.timing, mc.compute_cycles, mc.store_cycles,
                getattr(mc, "FETCH_BUFFER_INSNS", 0))

    def _time_compiled(self, words: np.ndarray, tokens: list[int], insn_addr: int) -> bool:
        """Time a stream fsim has executed with the compiled run of the timing-only model (its
        checks off): set :attr:`last_run` and add the hardware counters. Returns False, having
        done nothing, when that run cannot be used (no numba, the probe on, a debug dump, cost
        rules without a closed form): then :meth:`_time` times it."""
        if (self._jit is None or self._probe or self.debug_flags & DEBUG_DUMP_INSN or rp.compiled() is None
                or self.env.COMPUTE_OVERLAP):  # (the compiled run has no footprints)
            return False
        consts = self._scratch.packed(self.env, self.timing)
        if consts is None:
            return False
        n = words.shape[0]
        dram = self.dram
        if dram is not self._keyed_dram:
            self._new_dram()
        if self._allocs_generation != dram.generation:  # (the scan's field checks need them)
            self._live_allocs()
        io = self._io
        scan = (n, tokens[0], tokens[1], tokens[2], tokens[3], False, self._allocs_generation)
        reuse = scan == self._scanned and consts is self._scanned_consts
        io_in = (tokens[0], tokens[1], tokens[2], tokens[3], False, insn_addr, reuse, "functional")
        if self._io_in != io_in:  # (the timing-only runs' never equals it: they rewrite the slots)
            self._io_in = io_in
            io[:6] = io_in[:6]  # IO_TOKENS, IO_CHECK, IO_ADDR
            io[rp.IO_REUSE] = reuse
            io[rp.IO_HW_ONLY] = 1
        self._scanned = None
        if not rp._TIMING_RUN(words, consts, self._allocs, self._scratch.flat_for(n), io, self._acc):
            self._settle_timed(n)  # (not clean: its hardware counters are added here)
        self._scanned = scan
        self._scanned_consts = consts
        self._last_run = None
        return True

    def _settle_timed(self, n: int) -> None:
        """After a compiled run of :meth:`_time_compiled` that committed nothing: raise for a stream
        it could not time, else add its hardware counters (it had suspects, which fsim confirmed).

        Raises
        ------
        InvalidInstructionError, DeadlockError
            If the timing model cannot time a stream fsim has accepted (an inconsistency).
        """
        io = self._io
        out = io.tolist()
        if out[rp.IO_STATUS] == 2:  # (unreachable: fsim has accepted the stream)
            i = out[rp.IO_BAD] - 1
            raise InvalidInstructionError(f"instruction {i}: a token flag names a channel its stage does not have", i)
        if out[rp.IO_RC] < 0:
            raise DeadlockError(f"timing model: no unit can start after {-1 - out[rp.IO_RC]} of {n} instructions; "
                                "the stream was accepted by fsim", None)
        nhw = len(HW_STAT_KEYS)
        io[rp.IO_LAST:rp.IO_LAST + nhw] = io[rp.IO_COUNTERS:rp.IO_COUNTERS + nhw]
        self._acc[:nhw] += io[rp.IO_LAST:rp.IO_LAST + nhw]  # (added to the statistics when read)

    def _finish_run(self, result: int) -> int:
        """Add the last run's hardware counters (timed by :meth:`_time`) and make its debug dump."""
        words, tokens, arrays = self._timed
        for key, value in self.last_run.items():
            self._hw[key] += value
        if self.debug_flags & DEBUG_DUMP_INSN:
            # In the order the timing model started them (ties: stream order).
            start = arrays["start"].tolist()
            dump_executed(self.env, words, sorted(range(len(start)), key=lambda i: (start[i], i)), tokens)
        return result

    def _time(self, words: np.ndarray, tokens: list[int], insn_addr: int) -> dict:
        """Replay the stream: set :attr:`last_run`, the probe's events and ``_timed``; return the arrays."""
        events = [] if self._probe else None
        self._scanned = None  # (the replay below writes over the compiled run's work space)
        self.last_run, arrays = _replay(self.env, words, tokens, insn_addr, self.timing, events, self._scratch,
                                        self.dram)
        self.probe_events = events
        self._timed = (words, tokens, arrays)
        return arrays

    def _run(self, insn_phys_addr: int, n: int) -> tuple[list[int], list[int]]:
        """fsim's run (executes), or with ``functional=False`` its checks and the timing only."""
        if self.functional:
            self._executed_words = None  # (set by _execute: the words fsim read)
            return super()._run(insn_phys_addr, n)
        if n == 0:
            raise DeadlockError("the stream has 0 instructions, so FINISH never executes and the run never ends")
        dram = self.dram
        if dram is not self._keyed_dram:
            self._new_dram()
        if self._stream_key != (insn_phys_addr, n, dram.generation):  # (else: checked, the view is valid)
            dram.check(insn_phys_addr, 16 * n, "instruction stream")
            data = dram.data[insn_phys_addr:insn_phys_addr + 16 * n]
            if insn_phys_addr % 8:
                words = data.copy().view("<i8").reshape(n, 2)  # (a copy: not kept)
                self._stream_key = None
            else:
                words = data.view("<i8").reshape(n, 2)
                self._stream_key = (insn_phys_addr, n, dram.generation)
            self._stream_words = words
            if self._allocs_generation != dram.generation:
                self._live_allocs()
        words = self._stream_words
        consts = self._scratch.packed(self.env, self.timing) \
            if (self._jit is not None and not self._probe and rp.compiled() is not None
                and not self.env.COMPUTE_OVERLAP) else None
        if consts is None:
            return self._run_checked_in_python(words, insn_phys_addr, n)
        lent = self.tokens
        check = not (lent[0] or lent[1] or lent[2] or lent[3])
        if not check:  # the checks with outstanding tokens, the slow way (the errors fsim raises)
            _, lent = self._check_stream(words, list(lent))
        io = self._io
        # the scan of the last run is reused when all but the words are the same (and, as the
        # compiled run checks, the words too)
        scan = (n, lent[0], lent[1], lent[2], lent[3], check, self._allocs_generation)
        reuse = scan == self._scanned and consts is self._scanned_consts
        if self._io_in != (lent[0], lent[1], lent[2], lent[3], check, insn_phys_addr, reuse):
            self._io_in = (lent[0], lent[1], lent[2], lent[3], check, insn_phys_addr, reuse)
            io[:6] = self._io_in[:6]  # IO_TOKENS, IO_CHECK, IO_ADDR
            io[rp.IO_REUSE] = reuse
            io[rp.IO_HW_ONLY] = 0
        flat = self._scratch.flat_for(n)
        self._scanned = None
        view = self._stream_key is not None
        entry = self._view_entry
        run = entry[1] if view and entry[0] is dram.data else rp._TIMING_RUN
        if run(words, consts, self._allocs, flat, io, self._acc):  # clean: checked, timed and counted
            self._scanned = scan
            self._scanned_consts = consts
            committed = True
            if view and run is rp._TIMING_RUN:  # (the entry of this arena's views, looked up once)
                self._view_entry = (dram.data, rp.timing_entry((words, consts, self._allocs, flat, io, self._acc))
                                    or rp._TIMING_RUN)
        else:
            committed = self._settle(words, consts, flat, scan, n)
        self._last_run = None
        if self.debug_flags & DEBUG_DUMP_INSN:
            self._fast_timed = (words.copy(), list(lent))
        net = io[rp.IO_COUNTERS + 14:rp.IO_COUNTERS + 18].tolist()  # (the net tokens the stream pushes)
        after = [lent[0] + net[0], lent[1] + net[1], lent[2] + net[2], lent[3] + net[3]]
        if check:
            if committed and view and not self.debug_flags & DEBUG_DUMP_INSN and not (net[0] or net[1] or net[2]
                                                                                      or net[3]):
                # a clean run from no tokens to none, of a stream that stays where it is: it may be repeated
                self._repeat_next = (words, consts, self._allocs, flat, io, self._acc)
            return after, _NONE_HELD
        t = self.tokens
        return after, [t[0] - lent[0], t[1] - lent[1], t[2] - lent[2], t[3] - lent[3]]

    def _settle(self, words: np.ndarray, consts: np.ndarray, flat: np.ndarray, scan: tuple, n: int) -> bool:
        """After a compiled timing-only run that was not clean: check an invalid stream (or one that runs
        only out of stream order) the slow way and run it again, confirm the suspects, add the
        counters of a run with suspects; return whether the compiled run committed its counters.

        Raises
        ------
        InvalidInstructionError, DeadlockError, TokenOverflowError, SRAMIndexError, DRAMAccessError
            fsim's errors for the stream.
        """
        io = self._io
        out = io.tolist()
        if out[rp.IO_STATUS] == 1:  # invalid, or its tokens do not let it run in stream order
            self._check_stream(words, [0, 0, 0, 0])
            io[rp.IO_CHECK] = 0
            io[rp.IO_REUSE] = 0
            self._io_in = None
            scan = scan[:5] + (False,) + scan[6:]  # (check)
            rp._TIMING_RUN(words, consts, self._allocs, flat, io, self._acc)
            out = io.tolist()
        if out[rp.IO_STATUS] == 0:  # (the scan completed: the work space holds it)
            self._scanned = scan
            self._scanned_consts = consts
        if out[rp.IO_STATUS] == 2:  # (unreachable for a stream fsim accepts)
            i = out[rp.IO_BAD] - 1
            raise InvalidInstructionError(f"instruction {i}: a token flag names a channel its stage does not have", i)
        k = out[rp.IO_SUSPECTS]
        if k:
            start = rp.suspects_at(n)
            confirm_suspects(self.env, words, flat[start:start + k].tolist(), self.dram)
        if out[rp.IO_RC] < 0:
            raise DeadlockError(f"timing model: no unit can start after {-1 - out[rp.IO_RC]} of {n} instructions; "
                                "the stream was accepted by fsim", None)
        if not out[rp.IO_COMMITTED]:  # (suspects that passed)
            nhw = len(HW_STAT_KEYS)
            self._acc[:nhw] += io[rp.IO_COUNTERS:rp.IO_COUNTERS + nhw]
            self._acc[nhw:] += io[rp.IO_COUNTS:rp.IO_COUNTS + len(rp.COUNT_KEYS)]
            io[rp.IO_LAST:rp.IO_LAST + nhw] = io[rp.IO_COUNTERS:rp.IO_COUNTERS + nhw]
        return bool(out[rp.IO_COMMITTED])

    def _new_dram(self) -> None:
        """Forget what was kept of another DRAM (its stream view, allocations and scan): the device
        was given a new one, whose generations count from its own start."""
        self._stream_key = self._allocs_generation = self._scanned = None
        self._keyed_dram = self.dram

    def _live_allocs(self) -> None:
        """Take ``_allocs``: the live allocations of the arena as start and end (k x 2; the arena's own
        array, made once per generation, read only; one empty range when there is none)."""
        bounds = self.dram.bounds()
        self._allocs = bounds if bounds.shape[0] else _NO_ALLOCS
        self._allocs_generation = self.dram.generation

    def _check_stream(self, words: np.ndarray, lent: list[int]) -> tuple[Program, list[int]]:
        """fsim's checks of validity and token flow, the slow way (its errors): the decoded program
        and the tokens lent."""
        program = Program(words, self.env)
        program.validate()
        schedule(program.flow, list(lent))
        if any(lent):
            lent = lent_tokens(program.flow, lent)
            schedule(program.flow, list(lent))
        return program, lent

    def _run_checked_in_python(self, words: np.ndarray, insn_phys_addr: int, n: int) -> tuple[list[int], list[int]]:
        """The timing-only run without the compiled pass (no numba, cost rules without a closed form,
        the probe on): fsim's checks, then :meth:`_time`."""
        words = words.copy()
        lent = list(self.tokens)
        program = None
        if any(lent) or self._jit is None or not self._jit.runs_as_written(words, list(lent)):
            # the checks fsim makes before executing, the slow way (the errors it raises)
            program, lent = self._check_stream(words, lent)
        if self._jit is not None:
            confirm_suspects(self.env, words, self._jit.field_suspects(words, self.dram), self.dram)
        else:
            check_fields(self.env, words, (program or Program(words, self.env))
                         .cols.header["opcode"], self.dram)
        held = [a - b for a, b in zip(self.tokens, lent, strict=True)]
        self._run_tokens = list(self.tokens)
        arrays = self._time(words, lent, insn_phys_addr)
        count_executed(self._stats, program or Program(words, self.env), np.arange(n), self.env)
        return [t + d for t, d in zip(lent, arrays["tokens"], strict=True)], held

    def _execute(self, program: Program, order: np.ndarray) -> None:
        # the words fsim executes: its own copy, read before the run (timed afterwards)
        self._executed_words = program.words
        super()._execute(program, order)

    def _dump_executed(self, program: Program, done: np.ndarray) -> None:
        # The functional run prints nothing itself; a successful run prints in timed order.
        if self.debug_flags & DEBUG_DUMP_INSN:
            self._functional_order = (program.words, done.tolist(), self._run_tokens)

    def close(self) -> None:
        """Drop what holds views of the DRAM arena (the stream words, the repeat), then fsim's."""
        self._repeat = self._repeat_next = self._stream_words = self._stream_key = None
        self._view_entry = (None, None)
        self._at = (None, None, None)
        super().close()

    def stats(self) -> dict:
        """fsim's counters (upstream keys, ``insn_*``, ``tokens_*``) and the hardware counters.

        Returns
        -------
        dict
            ``STAT_KEYS`` first, then fsim's keys, then :data:`HW_STAT_KEYS`.
        """
        if self._acc.any():  # the counters of compiled timing-only runs
            values = self._acc.tolist()
            nhw = len(HW_STAT_KEYS)
            for key, value in zip(HW_STAT_KEYS, values[:nhw], strict=True):
                self._hw[key] += value
            for key, value in zip(rp.COUNT_KEYS, values[nhw:], strict=True):
                self._stats[key] += value
            self._acc[:] = 0
        out = super().stats()
        out.update(self._hw)
        return out

    def clear_stats(self) -> None:
        """Zero every counter, the cycle counters included."""
        super().clear_stats()
        self._acc[:] = 0
        for key in self._hw:
            self._hw[key] = 0


def time_stream(env: Environment, words: np.ndarray, tokens: list[int], insn_addr: int = 0,
                timing: Timing = mc.DEFAULT_TIMING, events: list | None = None, dram: DRAM | None = None) -> dict:
    """Replay a valid stream on the timing model and return its hardware counters.

    Parameters
    ----------
    env : Environment
        The configuration.
    words : ndarray of shape (n, 2), int64
        The encoded instructions.
    tokens : list of 4 int
        Tokens outstanding at the start, in fsim's channel order (l2g, g2l, s2g, g2s).
    insn_addr : int
        Byte address of the stream (fetch bursts never cross a 128-byte boundary).
    timing : Timing
        Cost constants.
    events : list, optional
        When given, the replay appends one tuple per event (the profiler reads them, see
        :mod:`vta.profile.collect`): ``("burst", i, t0, t1)`` a fetch burst starting with
        instruction i, ``("dispatch", i, t, blocked_from)``, ``("insn", unit, i, ready, start,
        end)`` with ``ready`` the cycle the unit could have started it but for tokens,
        ``("push", channel, i, t)`` and ``("pop", channel, i, t)`` (fsim's channel order).
    dram : DRAM, optional
        The memory the stream's LOAD UOPs read: required with the option COMPUTE_OVERLAP (the
        compute unit's hazard check needs the micro-ops' footprints), unused otherwise.

    Returns
    -------
    dict
        The keys of :data:`HW_STAT_KEYS` for this stream alone.

    Raises
    ------
    DeadlockError
        If some instruction can never start (callers pass streams fsim has accepted, so this
        signals an inconsistency between the two models).
    InvalidInstructionError
        If a token flag names a channel its stage does not have.
    ValueError
        If the configuration has COMPUTE_OVERLAP and ``dram`` is missing.
    """
    return _replay(env, words, tokens, insn_addr, timing, events, dram=dram)[0]


def _replay(env: Environment, words: np.ndarray, tokens: list[int], insn_addr: int,
            timing: Timing, events: list | None = None, scratch: Scratch | None = None,
            dram=None) -> tuple[dict, dict]:
    """:func:`time_stream`, plus the arrays of :func:`vta.sim.model.replay.replay` (``dram``: the
    memory the stream's LOAD UOPs read, for the footprints of COMPUTE_OVERLAP)."""
    foot = None
    if env.COMPUTE_OVERLAP:
        if dram is None:
            raise ValueError("timing a stream of a configuration with COMPUTE_OVERLAP needs the DRAM its LOAD UOPs "
                             "read (the footprints of the compute unit's hazard check)")
        foot = footprints(env, words, dram)
    counters, arr = replay(env, words, tokens, insn_addr, timing, scratch=scratch, foot=foot)
    if events is not None:
        start = arr["start"].tolist()
        dispatch, blocked = arr["dispatch"].tolist(), arr["blocked_from"].tolist()
        n = len(start)
        if getattr(mc, "FETCH_BUFFER_INSNS", 0):
            # buffered fetch: reading overlaps dispatching; what shows is fetch waiting for beats
            for j in range(n):
                earliest = dispatch[j - 1] + 1 if j else 0
                if blocked[j] > earliest:
                    events.append(("burst", j, earliest, blocked[j]))
                events.append(("dispatch", j, dispatch[j], earliest))
        else:
            bursts = arr["bursts"].tolist()
            for k, (i, t0, t1) in enumerate(bursts):
                events.append(("burst", i, t0, t1))
                stop = bursts[k + 1][0] if k + 1 < len(bursts) else n
                for j in range(i, stop):
                    events.append(("dispatch", j, dispatch[j], blocked[j]))
        unit, pops, pushes = arr["unit"].tolist(), arr["pops"].tolist(), arr["pushes"].tolist()
        end, ready = arr["end"].tolist(), arr["ready"].tolist()
        for i in sorted(range(n), key=lambda j: (start[j], j)):
            events.append(("insn", unit[i] + 1, i, ready[i], start[i], end[i]))
            for c in range(4):
                if (pops[i] >> c) & 1:
                    events.append(("pop", c, i, start[i]))
                if (pushes[i] >> c) & 1:
                    events.append(("push", c, i, end[i]))
    return counters, arr
