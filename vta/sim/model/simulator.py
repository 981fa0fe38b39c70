"""The fast cycle-level model (TARGET ``model``): fsim's results with an estimate of tsim's time.

:class:`CycleModel` is a :class:`~vta.sim.fsim.FunctionalSimulator` -- the same opcode
functions compute the same bits and raise the same errors -- that also replays each stream on
an event-driven model of OUR RTL (``hw/README.md``) to count cycles:

* fetch reads bursts of up to 8 instructions into a 16-instruction buffer and dispatches them in
  stream order, one per cycle, into the load, compute and store queues (512 entries each; a full
  queue blocks dispatch); a burst is requested as soon as the buffer has room for it (requested
  but not dispatched instructions included), so reading overlaps dispatching, and an instruction
  can be dispatched once its two beats have arrived;
* each unit runs its queue in order, one instruction at a time: it starts an instruction once it
  has been dispatched, the previous one has retired and every token it pops has been pushed;
  pushes are visible to the consumer when the producer retires;
* fetch bursts and the LOAD data beats of every unit share one 64-bit read port
  (:class:`_ReadPort`, first come first served);
* instruction costs come from :mod:`vta.sim.model.costs`.

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

import bisect

import numpy as np

from ... import isa
from ...dram import DRAM
from ...env import Environment
from ...errors import DeadlockError, SimulationError
from ..debug import DEBUG_DUMP_INSN, dump_executed
from ..fsim.simulator import FunctionalSimulator, _Columns, _Program, lent_tokens
from . import costs as mc
from .costs import Timing

__all__ = ["HW_STAT_KEYS", "QUEUE_DEPTH", "CycleModel", "Timing", "time_stream"]

UNITS = ("fetch", "load", "compute", "store")
#: Hardware counters (the names tsim uses), added to fsim's statistics.
HW_STAT_KEYS = (("cycle_count",) + tuple(f"{u}_busy_cycles" for u in UNITS)
                + tuple(f"{u}_stall_cycles" for u in UNITS) + tuple(f"{u}_retired" for u in UNITS))
#: Entries of each instruction queue.
QUEUE_DEPTH = 512
_STAGES = (isa.STAGE_LOAD, isa.STAGE_COMPUTE, isa.STAGE_STORE)


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
    **fsim_options
        Passed to :class:`~vta.sim.fsim.FunctionalSimulator` (``engine``, ``trace``, ...;
        ``seed`` changes only the functional order, never the timing).

    Raises
    ------
    ValueError
        For an unknown fsim ``engine``.
    """

    name = "model"

    def __init__(self, env: Environment, dram: DRAM, *, timing: Timing | None = None, **fsim_options):
        super().__init__(env, dram, **fsim_options)
        self.timing = Timing() if timing is None else timing
        self._hw = dict.fromkeys(HW_STAT_KEYS, 0)
        #: Counters of the last run only (``cycle_count`` and per-unit figures).
        self.last_run: dict = {}
        self._probe = False
        #: The timing events of the last run while the probe is on (see :meth:`set_probe`).
        self.probe_events: list | None = None

    def set_probe(self, enable: bool) -> None:
        """Record the timing events of every run in :attr:`probe_events` (for the profiler).

        The ``events`` of :func:`time_stream` describe them; with the probe off nothing is kept.
        """
        self._probe = bool(enable)
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
        outstanding = list(self.tokens)
        self._functional_order = None
        try:
            result = super().run(insn_phys_addr, insn_count, wait_cycles)
        except SimulationError:
            if self._functional_order is not None:  # debug dump: what ran before the failure
                dump_executed(self.env, *self._functional_order)
            raise
        n = int(insn_count)
        words = self.dram.data[insn_phys_addr:insn_phys_addr + 16 * n].copy().view("<i8").reshape(n, 2)
        tokens = outstanding
        if any(outstanding):  # the tokens the stream was lent (device contract)
            tokens = lent_tokens(_Program(_Columns(words, self.env), words, self.env).flow, outstanding)
        events = [] if self._probe else None
        self.last_run, start = _replay(self.env, words, tokens, insn_phys_addr, self.timing, events)
        self.probe_events = events
        for key, value in self.last_run.items():
            self._hw[key] += value
        if self.debug_flags & DEBUG_DUMP_INSN:
            # In the order the timing model started them (ties: stream order).
            dump_executed(self.env, words, sorted(range(n), key=lambda i: (start[i], i)), tokens)
        return result

    def _dump_executed(self, program: _Program, done: np.ndarray) -> None:
        # The functional run prints nothing itself; a successful run prints in timed order.
        if self.debug_flags & DEBUG_DUMP_INSN:
            self._functional_order = (program.words, done.tolist(), self._run_tokens)

    def stats(self) -> dict:
        """fsim's counters (upstream keys, ``insn_*``, ``tokens_*``) and the hardware counters.

        Returns
        -------
        dict
            ``STAT_KEYS`` first, then fsim's keys, then :data:`HW_STAT_KEYS`.
        """
        out = super().stats()
        out.update(self._hw)
        return out

    def clear_stats(self) -> None:
        """Zero every counter, the cycle counters included."""
        super().clear_stats()
        for key in self._hw:
            self._hw[key] = 0


class _ReadPort:
    """The shared 64-bit read port: one beat per cycle, granted first come, first served.

    Busy cycles are kept as sorted, disjoint half-open intervals; a request takes the first free
    cycles at or after its start (it may be split around earlier reservations).
    """

    def __init__(self):
        self.starts: list[int] = []
        self.ends: list[int] = []

    def take(self, t: int, beats: int) -> int:
        """Reserve ``beats`` cycles from ``t`` on; return the cycle after the last one."""
        starts, ends = self.starts, self.ends
        k = bisect.bisect_right(ends, t)  # first interval ending after t
        while beats > 0:
            if k < len(starts) and starts[k] <= t:
                t = ends[k]  # inside a reservation: skip it
                k += 1
                continue
            gap_end = starts[k] if k < len(starts) else t + beats
            use = min(beats, gap_end - t)
            self._add(k, t, t + use)
            k = bisect.bisect_right(self.ends, t + use - 1)
            t += use
            beats -= use
        return t

    def _add(self, k: int, lo: int, hi: int) -> None:
        starts, ends = self.starts, self.ends
        if k > 0 and ends[k - 1] == lo:  # extend the previous interval
            ends[k - 1] = hi
            if k < len(starts) and starts[k] == hi:
                ends[k - 1] = ends[k]
                del starts[k], ends[k]
        elif k < len(starts) and starts[k] == hi:
            starts[k] = lo
        else:
            starts.insert(k, lo)
            ends.insert(k, hi)


def time_stream(env: Environment, words: np.ndarray, tokens: list[int], insn_addr: int = 0,
                timing: Timing = mc.DEFAULT_TIMING, events: list | None = None) -> dict:
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
        :mod:`vta.profile.collect`): ``("burst", i, t0, t1)`` fetch busy waiting for the beats
        of instruction i (bursts overlap dispatching, so this is the part of the reading that
        shows), ``("dispatch", i, t, blocked_from)``, ``("insn", unit, i, ready, start,
        end)`` with ``ready`` the cycle the unit could have started it but for tokens,
        ``("push", channel, i, t)`` and ``("pop", channel, i, t)`` (fsim's channel order).

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
    """
    return _replay(env, words, tokens, insn_addr, timing, events)[0]


def _replay(env: Environment, words: np.ndarray, tokens: list[int], insn_addr: int,
            timing: Timing, events: list | None = None) -> tuple[dict, list[int]]:
    """:func:`time_stream`, plus the cycle each instruction started (its execution order)."""
    n = words.shape[0]
    prog = _Program(_Columns(words, env), words, env)
    flow = prog.flow
    stage = flow.stage.tolist()
    pops, pushes = flow.pop.tolist(), flow.push.tolist()
    opcode = prog.opcode
    queues = [[i for i in range(n) if stage[i] == s] for s in _STAGES]
    qpos = [0] * n
    for q in queues:
        for k, i in enumerate(q):
            qpos[i] = k
    unit_of = {s: u for u, s in enumerate(_STAGES)}
    start = [-1] * n
    dispatch = [-1] * n
    port = _ReadPort()
    push_times: list[list[int]] = [[], [], [], []]
    popped = [0, 0, 0, 0]
    busy, stall, retired = [0] * 4, [0] * 4, [0] * 4
    free = [0, 0, 0]
    heads = [0, 0, 0]
    # fetch state: f_next the next instruction to dispatch, f_req the next to request, ready[i]
    # the first cycle instruction i can be dispatched (its beats have arrived)
    f_next, f_req, next_dispatch, last_req = 0, 0, 0, -1
    ready = [0] * n
    finish_end = None
    done = 0

    def token_time(c: int, k: int):
        """Cycle the k-th pop (0-based, this run) of channel c can happen, or None if unknown."""
        if k < tokens[c]:
            return 0
        j = k - tokens[c]
        return push_times[c][j] if j < len(push_times[c]) else None

    while done < n:
        # fetch: request every burst whose buffer room is known (it frees when the instruction
        # FETCH_BUFFER_INSNS before the burst's end is dispatched), then the next dispatch
        while f_req < n:
            m = mc.fetch_burst_size(insn_addr + 16 * f_req, n - f_req)
            frees = f_req + m - mc.FETCH_BUFFER_INSNS - 1  # the dispatch that makes room
            if frees >= f_next:
                break
            t_req = max(last_req + 1, dispatch[frees] + 1 if frees >= 0 else 0)
            arrived = port.take(t_req + 1, 2 * m)
            for j in range(m):  # beats arrive in order, two per instruction
                ready[f_req + j] = arrived - 2 * (m - 1 - j) + timing.fetch_latency - 1
            last_req = t_req
            f_req += m
        f_time = None
        if f_next < n and f_next < f_req:
            i = f_next
            f_time = max(next_dispatch, ready[i])
            if qpos[i] >= QUEUE_DEPTH:
                older = queues[unit_of[stage[i]]][qpos[i] - QUEUE_DEPTH]
                f_time = None if start[older] < 0 else max(f_time, start[older])
        # units: start the ready head with the earliest start time
        best, best_t, best_wait = -1, 0, 0
        for u in range(3):
            if heads[u] >= len(queues[u]):
                continue
            i = queues[u][heads[u]]
            if dispatch[i] < 0:
                continue
            t0 = max(dispatch[i] + 1, free[u])
            t = t0
            for c in range(4):
                if pops[i][c]:
                    tt = token_time(c, popped[c])
                    if tt is None:
                        t = None
                        break
                    t = max(t, tt)
            if t is None:
                continue
            if best < 0 or t < best_t:
                best, best_t, best_wait = u, t, t - t0
        if f_time is not None and (best < 0 or f_time <= best_t):
            i = f_next
            d = f_time
            if events is not None and f_time > next_dispatch:  # waiting for the beats of i
                events.append(("burst", i, next_dispatch, f_time))
            if qpos[i] >= QUEUE_DEPTH:
                older = queues[unit_of[stage[i]]][qpos[i] - QUEUE_DEPTH]
                if start[older] > d:
                    stall[0] += start[older] - d
                    d = start[older]
            if events is not None:
                events.append(("dispatch", i, d, next_dispatch))
            dispatch[i] = d
            retired[0] += 1
            next_dispatch = d + 1
            f_next += 1
            if f_next == n:  # fetch is busy from launch to its last dispatch, unless blocked
                busy[0] = d + 1 - stall[0]
            continue
        if best >= 0:
            u = best
            i = queues[u][heads[u]]
            heads[u] += 1
            s = best_t
            start[i] = s
            stall[u + 1] += best_wait
            for c in range(4):
                popped[c] += pops[i][c]
            end = s + _cost(env, prog, i, opcode[i], s, port, timing)
            busy[u + 1] += end - s
            retired[u + 1] += 1
            free[u] = end
            for c in range(4):
                if pushes[i][c]:
                    push_times[c].append(end)
            if events is not None:
                events.append(("insn", u + 1, i, s - best_wait, s, end))
                for c in range(4):
                    if pops[i][c]:
                        events.append(("pop", c, i, s))
                    if pushes[i][c]:
                        events.append(("push", c, i, end))
            if opcode[i] == isa.OPCODE_FINISH and finish_end is None:
                finish_end = end
            done += 1
            continue
        blocked = [queues[u][heads[u]] for u in range(3) if heads[u] < len(queues[u])]
        raise DeadlockError(f"timing model: no unit can start after {done} of {n} instructions "
                            f"(blocked heads {blocked!r}); the stream was accepted by fsim", None)
    out = {"cycle_count": int(finish_end if finish_end is not None else max(free))}
    for u, name in enumerate(UNITS):
        out[f"{name}_busy_cycles"] = int(busy[u])
        out[f"{name}_stall_cycles"] = int(stall[u])
        out[f"{name}_retired"] = int(retired[u])
    return out, start


def _cost(env: Environment, prog: _Program, i: int, op: int, s: int, port: _ReadPort, timing: Timing) -> int:
    """Cycles instruction ``i``, starting at cycle ``s``, occupies its unit."""
    if op == isa.OPCODE_GEMM:
        return mc.compute_cycles(op, prog.fields(i, "gemm"), timing)
    if op == isa.OPCODE_ALU:
        return mc.compute_cycles(op, prog.fields(i, "alu"), timing)
    if op == isa.OPCODE_FINISH or prog.x_size[i] == 0:
        return timing.overhead
    f = prog.fields(i, "mem")
    if op == isa.OPCODE_STORE:
        return mc.store_cycles(env, f, timing)
    beats = mc.load_beats(env, f)
    first = s + timing.load_latency
    last = port.take(first, beats) if beats else first
    return last - s + timing.load_tail + mc.load_pad_cycles(f, timing)
