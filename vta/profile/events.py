"""What the profiler knows about a run: per-instruction, per-unit events, token hand-offs and
counters over time, in one form for every level.

* :func:`describe` decodes a stream once into :class:`InsnInfo` (unit, opcode, sizes, DRAM
  bytes, micro-ops, tokens), the static half of every event;
* :class:`InsnEvent` is one unit working on one instruction (``start``/``end`` in cycles, or
  ``None`` for fsim, which has no time), with what it waited for before it started;
* :class:`Flow` is one token hand-off (a push and the pop that consumed it);
* :class:`Timeline` holds the events, flows and counters of one or more runs on one time axis,
  with the layer each run belongs to;
* :func:`program_order` gives fsim's events: the same instructions in program order, no time.

Units are ``fetch``, ``load``, ``compute`` (GEMM, ALU, LOAD UOP/ACC, FINISH) and ``store``, as
in the RTL; token channels are named ``l2g``, ``g2l``, ``g2s`` and ``s2g``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import isa
from ..env import Environment
from ..sim.model import costs

__all__ = ["UNITS", "CHANNELS", "InsnInfo", "InsnEvent", "Flow", "Layer", "Timeline", "describe",
           "program_order"]

UNITS = ("fetch", "load", "compute", "store")
CHANNELS = ("l2g", "g2l", "g2s", "s2g")
#: channel -> (the unit that pushes it, the unit that pops it)
CHANNEL_UNITS = {"l2g": ("load", "compute"), "g2l": ("compute", "load"),
                 "g2s": ("compute", "store"), "s2g": ("store", "compute")}
#: unit -> channel its prev / next flags name, for (pop, push)
_DEPS = {
    "load": {"pop_prev": None, "pop_next": "g2l", "push_prev": None, "push_next": "l2g"},
    "compute": {"pop_prev": "l2g", "pop_next": "s2g", "push_prev": "g2l", "push_next": "g2s"},
    "store": {"pop_prev": "g2s", "pop_next": None, "push_prev": "s2g", "push_next": None},
}


@dataclass(frozen=True)
class InsnInfo:
    """What one instruction is, independent of time.

    Attributes
    ----------
    index : int
        Position in its stream.
    unit : str
        ``load``, ``compute`` or ``store``.
    opcode : str
        ``LOAD``, ``STORE``, ``GEMM``, ``ALU`` or ``FINISH``.
    name : str
        Short label: ``LOAD INP``, ``GEMM``, ``GEMM reset``, ``ALU ADD imm``, ``NOP`` ...
    sizes : dict
        The fields that size it (``y_size``/``x_size``/pads, or loop extents and uop range).
    dram_bytes : int
        Bytes moved between DRAM and the scratchpads (as the statistics count them).
    beats : int
        64-bit memory beats the transfer takes.
    uops : int
        Micro-ops executed (GEMM, ALU).
    macs : int
        Multiply-accumulates (GEMM without reset).
    pops, pushes : tuple of str
        Token channels it takes before it starts and gives when it retires.
    """

    index: int
    unit: str
    opcode: str
    name: str
    sizes: dict
    dram_bytes: int
    beats: int
    uops: int
    macs: int
    pops: tuple
    pushes: tuple
    pad_cycles: int = 0


@dataclass
class InsnEvent:
    """One unit working on one instruction (or, for fetch, fetching and dispatching it).

    Attributes
    ----------
    info : InsnInfo or None
        The instruction (None for a fetch event of an instruction past the stream).
    unit : str
        The unit the event belongs to (``fetch`` for dispatch events).
    start, end : int or None
        First cycle and the cycle after the last one, on the timeline's axis; None in fsim.
    layer : str
        The layer (or program) the instruction belongs to.
    order : int
        Position in the unit's execution order (fsim: in the program).
    token_wait : int
        Cycles it waited for tokens just before ``start``.
    queue_wait : int
        Cycles its unit sat idle with an empty queue just before (fetch: blocked on a full
        queue before dispatching it).
    mem_wait : int
        Cycles inside ``[start, end)`` not spent moving data: memory latency and port
        contention of a transfer, acknowledgements of a store, a fetch burst's wait.
    """

    info: InsnInfo | None
    unit: str
    start: int | None
    end: int | None
    layer: str = ""
    order: int = 0
    token_wait: int = 0
    queue_wait: int = 0
    mem_wait: int = 0

    @property
    def index(self) -> int:
        """The instruction's index in its stream (-1 when unknown)."""
        return self.info.index if self.info is not None else -1

    @property
    def busy(self) -> int:
        """Cycles of the event (0 without time)."""
        return 0 if self.start is None else self.end - self.start


@dataclass(frozen=True)
class Flow:
    """One token hand-off on a channel: pushed by one instruction, popped by another."""

    channel: str
    push_time: int
    pop_time: int
    producer: int
    consumer: int
    layer: str = ""


@dataclass(frozen=True)
class Layer:
    """A run on the timeline: its name, first cycle and the cycle after its last."""

    name: str
    start: int
    end: int
    gemm_uops: int = 0
    macs: int = 0
    dram_bytes: int = 0


@dataclass
class Timeline:
    """Events, hand-offs and counters of runs on one time axis (cycles from the first run).

    Attributes
    ----------
    level : str
        ``tsim``, ``model`` or ``sim`` (fsim: no time).
    env : Environment
        The configuration (for the roofs of the reports).
    events : list of InsnEvent
    flows : list of Flow
    counters : dict
        name -> list of ``(cycle, {series: value})``, values constant until the next sample.
    layers : list of Layer
    counts : dict
        The level's own counters summed over the runs (``<unit>_busy_cycles`` ...).
    """

    level: str
    env: Environment
    events: list = field(default_factory=list)
    flows: list = field(default_factory=list)
    counters: dict = field(default_factory=dict)
    layers: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)

    @property
    def cycles(self) -> int:
        """The end of the last layer (0 without time)."""
        return self.layers[-1].end if self.layers and self.level != "sim" else 0

    def unit_events(self, unit: str) -> list:
        """The events of one unit, in time (or program) order."""
        evs = [e for e in self.events if e.unit == unit]
        return sorted(evs, key=lambda e: (e.start if e.start is not None else e.order, e.order))

    def add_counts(self, counts: dict) -> None:
        """Add a run's counters to :attr:`counts`."""
        for key, value in counts.items():
            if isinstance(value, (int, np.integer)):
                self.counts[key] = self.counts.get(key, 0) + int(value)


def _unit_of(opcode: int, memory_type: int) -> str:
    if opcode == isa.OPCODE_STORE:
        return "store"
    if opcode == isa.OPCODE_LOAD and memory_type in (isa.MEM_INP, isa.MEM_WGT):
        return "load"
    return "compute"


def describe(env: Environment, words: np.ndarray) -> list[InsnInfo]:
    """Decode a stream into one :class:`InsnInfo` per instruction.

    Parameters
    ----------
    env : Environment
        The configuration.
    words : ndarray of shape (n, 2) or bytes
        The encoded instructions.

    Returns
    -------
    list of InsnInfo
    """
    cols = isa.decode_array(words, env)
    h, m, g, a = ({k: v.tolist() for k, v in part.items()} for part in (cols.header, cols.mem, cols.gemm, cols.alu))
    n = len(h["opcode"])
    out = []
    macs_per_uop = env.BATCH * env.BLOCK_IN * env.BLOCK_OUT
    for i in range(n):
        op = h["opcode"][i]
        mt = m["memory_type"][i]
        unit = _unit_of(op, mt)
        opname = isa.OPCODE_NAMES.get(op, f"OP{op}")
        flags = {k: h[f"{k}_dep"][i] for k in ("pop_prev", "pop_next", "push_prev", "push_next")}
        deps = _DEPS[unit]
        pops = tuple(deps[k] for k in ("pop_prev", "pop_next") if flags[k] and deps[k])
        pushes = tuple(deps[k] for k in ("push_prev", "push_next") if flags[k] and deps[k])
        dram_bytes = beats = uops = macs = pad = 0
        if op in (isa.OPCODE_LOAD, isa.OPCODE_STORE):
            f = {k: v[i] for k, v in m.items()}
            sizes = {k: f[k] for k in ("sram_base", "dram_base", "y_size", "x_size", "x_stride",
                                       "y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")}
            if f["x_size"] == 0:
                name = "NOP"
            else:
                name = f"{opname} {isa.MEM_NAMES.get(mt, mt)}" if op == isa.OPCODE_LOAD else "STORE"
                elem = env.elem_bytes(mt if op == isa.OPCODE_LOAD else isa.MEM_OUT)
                if op == isa.OPCODE_LOAD and mt in (isa.MEM_ACC, isa.MEM_ACC_8BIT):
                    elem = env.ACC_ELEM_BYTES  # the statistics count ACC loads in ACC elements
                dram_bytes = f["x_size"] * f["y_size"] * elem
                if op == isa.OPCODE_LOAD:
                    beats = costs.load_beats(env, f)
                    pad = costs.load_pad_cycles(f)
                else:
                    beats = f["x_size"] * f["y_size"] * max(env.OUT_ELEM_BYTES // costs.BEAT_BYTES, 1)
        elif op in (isa.OPCODE_GEMM, isa.OPCODE_ALU):
            f = {k: v[i] for k, v in (g if op == isa.OPCODE_GEMM else a).items()}
            sizes = {k: f[k] for k in ("iter_out", "iter_in", "uop_bgn", "uop_end")}
            uops = costs.uop_count(f)
            if op == isa.OPCODE_GEMM:
                name = "GEMM reset" if f["reset_reg"] else "GEMM"
                macs = 0 if f["reset_reg"] else uops * macs_per_uop
            else:
                name = f"ALU {isa.ALU_NAMES.get(f['alu_opcode'], f['alu_opcode'])}" + (" imm" if f["use_imm"] else "")
                sizes["use_imm"] = f["use_imm"]
        else:
            sizes = {}
            name = opname
        out.append(InsnInfo(i, unit, opname, name, sizes, dram_bytes, beats, uops, macs, pops, pushes, pad))
    return out


def mem_wait(info: InsnInfo, busy: int, overhead: int = costs.DEFAULT_TIMING.overhead) -> int:
    """Cycles of a LOAD or STORE not spent moving data (0 for other instructions).

    A LOAD moves one beat per cycle and writes pads in cycles of their own; a STORE reads one
    accumulator row and writes its beats per element. What remains of the instruction's cycles,
    beyond the sequencer's fixed ``overhead``, is memory latency, port contention and write
    acknowledgements.
    """
    if info is None or info.dram_bytes == 0:
        return 0
    if info.opcode == "LOAD":
        moving = info.beats + info.pad_cycles
    elif info.opcode == "STORE":
        moving = info.beats + info.sizes["x_size"] * info.sizes["y_size"]
    else:
        return 0
    return max(0, busy - overhead - moving)


def program_order(env: Environment, words: np.ndarray, layer: str = "") -> list[InsnEvent]:
    """fsim's events: one per instruction, in program order, without time.

    Parameters
    ----------
    env : Environment
        The configuration.
    words : ndarray of shape (n, 2)
        The encoded instructions.
    layer : str
        The layer they belong to.

    Returns
    -------
    list of InsnEvent
        ``start`` and ``end`` are None; ``order`` is the program index.
    """
    return [InsnEvent(info, info.unit, None, None, layer, info.index) for info in describe(env, words)]
