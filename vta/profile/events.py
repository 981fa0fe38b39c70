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
from typing import NamedTuple

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


class InsnInfo(NamedTuple):
    """What one instruction is, independent of time (a named tuple: a network has millions).

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
    pad_cycles : int
        Cycles a LOAD spends writing zero padding.
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


@dataclass(slots=True)
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
    """A run on the timeline: its name, first cycle and the cycle after its last (fsim: its
    first and last-plus-one position in program order)."""

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


_MEM_KEYS = ("sram_base", "dram_base", "y_size", "x_size", "x_stride", "y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")
_LOOP_KEYS = ("iter_out", "iter_in", "uop_bgn", "uop_end")
_FLAG_KEYS = ("pop_prev", "pop_next", "push_prev", "push_next")


def _tokens(unit: str, flags: tuple) -> tuple[tuple, tuple]:
    """(pops, pushes) channel names of a unit's instruction with these four dependency flags."""
    deps = _DEPS[unit]
    on = dict(zip(_FLAG_KEYS, flags, strict=True))
    pops = tuple(deps[k] for k in ("pop_prev", "pop_next") if on[k] and deps[k])
    pushes = tuple(deps[k] for k in ("push_prev", "push_next") if on[k] and deps[k])
    return pops, pushes


def _name(op: int, mt: int, empty: bool, alu_op: int, use_imm: int, reset: int) -> tuple[str, str, str]:
    """(unit, opcode name, short label) of an instruction."""
    opname = isa.OPCODE_NAMES.get(op, f"OP{op}")
    if op == isa.OPCODE_STORE:
        return "store", opname, "NOP" if empty else "STORE"
    if op == isa.OPCODE_LOAD:
        unit = "load" if mt in (isa.MEM_INP, isa.MEM_WGT) else "compute"
        return unit, opname, "NOP" if empty else f"LOAD {isa.MEM_NAMES.get(mt, mt)}"
    if op == isa.OPCODE_GEMM:
        return "compute", opname, "GEMM reset" if reset else "GEMM"
    if op == isa.OPCODE_ALU:
        return "compute", opname, f"ALU {isa.ALU_NAMES.get(alu_op, alu_op)}" + (" imm" if use_imm else "")
    return "compute", opname, opname


def describe(env: Environment, words: np.ndarray) -> list[InsnInfo]:
    """Decode a stream into one :class:`InsnInfo` per instruction.

    The sizes are computed for the whole stream at once with NumPy; only the labels and the
    beats of micro-op loads (rows smaller than a beat) are worked out row by row.

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
    h, m, g, a = cols.header, cols.mem, cols.gemm, cols.alu
    op = h["opcode"].astype(np.int64)
    n = op.size
    mt = m["memory_type"].astype(np.int64)
    x, y = m["x_size"].astype(np.int64), m["y_size"].astype(np.int64)
    is_load, is_store = op == isa.OPCODE_LOAD, op == isa.OPCODE_STORE
    is_gemm, is_alu = op == isa.OPCODE_GEMM, op == isa.OPCODE_ALU
    is_mem, is_loop = is_load | is_store, is_gemm | is_alu
    moving = is_mem & (x > 0)
    # element bytes as the statistics count them (ACC and ACC_8BIT loads in ACC elements)
    elem_table = np.array([4, env.WGT_ELEM_BYTES, env.INP_ELEM_BYTES, env.ACC_ELEM_BYTES, env.OUT_ELEM_BYTES,
                           env.ACC_ELEM_BYTES, 0, 0], dtype=np.int64)
    elem = np.where(is_store, env.OUT_ELEM_BYTES, elem_table[mt & 7])
    dram_bytes = np.where(moving, x * y * elem, 0)
    # beats: whole-beat elements move bytes / 8; micro-op rows are rounded out row by row below
    beat_table = elem_table.copy()
    beat_table[isa.MEM_ACC_8BIT] = env.ACC_8BIT_ELEM_BYTES
    beats = np.where(moving & (y > 0), x * y * np.where(is_store, env.OUT_ELEM_BYTES, beat_table[mt & 7]), 0)
    beats //= costs.BEAT_BYTES
    yp = m["y_pad_0"].astype(np.int64) + m["y_pad_1"]
    xp = m["x_pad_0"].astype(np.int64) + m["x_pad_1"]
    padded = is_load & moving & ((yp > 0) | (xp > 0))
    pad = np.where(padded, (y + yp) * (x + xp) - y * x + costs.DEFAULT_TIMING.pad_per_row * yp
                   + costs.DEFAULT_TIMING.pad_fixed, 0)
    lp = {k: np.where(is_gemm, g[k], a[k]).astype(np.int64) for k in _LOOP_KEYS}
    uops = np.where(is_loop, lp["iter_out"] * lp["iter_in"] * np.maximum(lp["uop_end"] - lp["uop_bgn"], 0), 0)
    reset = np.where(is_gemm, g["reset_reg"], 0)
    macs = np.where(is_gemm & (reset == 0), uops * (env.BATCH * env.BLOCK_IN * env.BLOCK_OUT), 0)
    beats_l = beats.tolist()
    for i in np.nonzero(is_load & moving & (mt == isa.MEM_UOP))[0].tolist():
        beats_l[i] = costs.load_beats(env, {k: int(v[i]) for k, v in m.items()})
    labels: dict = {}
    flags_l = list(zip(*(h[f"{k}_dep"].tolist() for k in _FLAG_KEYS), strict=True))
    keys = list(zip(op.tolist(), mt.tolist(), (x == 0).tolist(), a["alu_opcode"].tolist(),
                    a["use_imm"].tolist(), reset.tolist(), strict=True))
    mem_sizes = list(zip(*(m[k].tolist() for k in _MEM_KEYS), strict=True))
    loop_sizes = list(zip(*(lp[k].tolist() for k in _LOOP_KEYS), strict=True))
    use_imm = a["use_imm"].tolist()
    toks: dict = {}
    out = []
    dram_l, uops_l, macs_l, pad_l = dram_bytes.tolist(), uops.tolist(), macs.tolist(), pad.tolist()
    for i in range(n):
        key = keys[i]
        if key[0] not in (isa.OPCODE_LOAD, isa.OPCODE_STORE):
            key = (key[0], 0, False) + key[3:]
        lab = labels.get(key)
        if lab is None:
            lab = labels[key] = _name(*key)
        unit, opname, name = lab
        tk = toks.get((unit, flags_l[i]))
        if tk is None:
            tk = toks[(unit, flags_l[i])] = _tokens(unit, flags_l[i])
        if opname in ("LOAD", "STORE"):
            sizes = dict(zip(_MEM_KEYS, mem_sizes[i], strict=True))
        elif opname in ("GEMM", "ALU"):
            sizes = dict(zip(_LOOP_KEYS, loop_sizes[i], strict=True))
            if opname == "ALU":
                sizes["use_imm"] = use_imm[i]
        else:
            sizes = {}
        out.append(InsnInfo(i, unit, opname, name, sizes, dram_l[i], beats_l[i], uops_l[i], macs_l[i],
                            tk[0], tk[1], pad_l[i]))
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
