"""Turn what a level recorded during one run into :class:`~vta.profile.events.Timeline` entries.

* :func:`add_tsim_run`: the probe records of tsim (:mod:`vta.sim.tsim.probe`), i.e. the RTL's
  own per-cycle unit states, queue fills, tokens, pushes, pops and memory beats;
* :func:`add_model_run`: the event tuples of the cycle model (``time_stream(events=...)``);
* :func:`add_fsim_run`: fsim's program-order events (no time).

Each appends the run as one layer starting at the timeline's current end.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from ..sim.model import costs
from ..sim.tsim import hwgen, probe
from .events import (
    CHANNELS,
    UNITS,
    Flow,
    InsnEvent,
    Layer,
    Timeline,
    describe,
    mem_wait,
    program_order,
)

__all__ = ["add_tsim_run", "add_model_run", "add_fsim_run", "READ_CLIENTS"]

#: The read clients of the memory engine, by id.
READ_CLIENTS = ("fetch", "uop", "inp", "wgt", "acc")
#: fsim's (and the model's) channel order -> channel name.
_FSIM_CHANNELS = ("l2g", "g2l", "s2g", "g2s")
#: The read client of each LOAD (the rest read accumulators).
_CLIENT_OF = {"LOAD UOP": "uop", "LOAD INP": "inp", "LOAD WGT": "wgt"}


def _layer(tl: Timeline, name: str, infos, offset: int, end: int) -> None:
    tl.layers.append(Layer(name, offset, end,
                           gemm_uops=sum(i.uops for i in infos if i.name == "GEMM"),
                           macs=sum(i.macs for i in infos),
                           dram_bytes=sum(i.dram_bytes for i in infos)))


def _flows(tl: Timeline, pushes: dict, pops: dict, initial: dict, layer: str) -> None:
    """Match each channel's pops, in order, to the tokens outstanding then the pushes."""
    for c in CHANNELS:
        queue = deque([None] * initial.get(c, 0))
        events = sorted([(t, 1, i) for t, i in pushes.get(c, [])] + [(t, 0, i) for t, i in pops.get(c, [])])
        # a pop and a push in the same cycle: the pop took an older token (pushes are visible later)
        for t, kind, i in events:
            if kind == 1:
                queue.append((t, i))
            elif queue:
                src = queue.popleft()
                if src is not None:
                    tl.flows.append(Flow(c, src[0], t, src[1], i, layer))


def _counter(tl: Timeline, name: str, t: int, values: dict) -> None:
    tl.counters.setdefault(name, []).append((t, values))


def add_tsim_run(tl: Timeline, words: np.ndarray, records: np.ndarray, counts: dict, layer: str,
                 window: int) -> None:
    """Append one tsim run from its probe records.

    Parameters
    ----------
    tl : Timeline
        The timeline (its ``env`` is the run's configuration).
    words : ndarray of shape (n, 2)
        The stream the run executed.
    records : ndarray of :data:`vta.sim.tsim.probe.RECORD`
        The run's probe records (they end with an END record).
    counts : dict
        The run's hardware counters (``<unit>_busy_cycles`` ...), kept in ``tl.counts``.
    layer : str
        The layer name.
    window : int
        Cycles per memory-beat window of the probe.

    Raises
    ------
    ValueError
        If the records do not end with the END record of a finished run.
    """
    env = tl.env
    infos = describe(env, words)
    offset = tl.cycles
    kind = (records["what"] >> 8).astype(np.int64)
    detail = (records["what"] & 0xFF).astype(np.int64)
    cyc = records["cycle"].astype(np.int64)
    val = records["value"].astype(np.int64)
    ends = np.nonzero(kind == probe.END)[0]
    if ends.size == 0:
        raise ValueError("the probe records of the run have no END record (was the probe on for the whole run?)")
    end = int(cyc[ends[-1]])
    # unit segments -> events
    order = {u: 0 for u in UNITS}
    new_events = []
    for u in range(4):
        unit = UNITS[u]
        sel = np.nonzero((kind == probe.UNIT) & ((detail & 0xF) == u))[0]
        seg_t = cyc[sel].tolist() + [end]
        seg_s = (detail[sel] >> 4).tolist()
        seg_i = val[sel].tolist()
        pending_token, pending_idle, cur = 0, 0, None
        for k in range(len(seg_s)):
            t0, t1, st, idx = seg_t[k], seg_t[k + 1], seg_s[k], seg_i[k]
            if t1 <= t0:
                continue
            info = infos[idx] if 0 <= idx < len(infos) else None
            if st == hwgen.STATE_BUSY:
                if cur is not None and cur.info is info and cur.end == offset + t0:
                    cur.end = offset + t1  # the same instruction, split by a state change
                else:
                    cur = InsnEvent(info, unit, offset + t0, offset + t1, layer, order[unit],
                                    token_wait=pending_token, queue_wait=pending_idle)
                    order[unit] += 1
                    new_events.append(cur)
                pending_token = pending_idle = 0
            elif st == hwgen.STATE_WAIT_TOKEN:
                pending_token += t1 - t0
            elif st == hwgen.STATE_BLOCKED:
                pending_idle += t1 - t0  # fetch: the target queue is full
            else:
                pending_idle = 0 if u == 0 else pending_idle + t1 - t0
    for e in new_events:
        e.mem_wait = max(0, e.busy - 1) if e.unit == "fetch" else mem_wait(e.info, e.busy)
    tl.events.extend(new_events)
    # counters: queue fills and tokens as recorded, memory beats per window
    for q, unit in enumerate(("load", "compute", "store")):
        sel = np.nonzero((kind == probe.FILL) & (detail == q))[0]
        for t, v in zip(cyc[sel].tolist(), val[sel].tolist(), strict=True):
            _counter(tl, f"queue {unit}", offset + t, {"entries": v})
    tok = {}
    for c in range(4):
        sel = np.nonzero((kind == probe.TOKENS) & (detail == c))[0]
        for t, v in zip(cyc[sel].tolist(), val[sel].tolist(), strict=True):
            tok.setdefault(t, {})[CHANNELS[c]] = v
    last = {}
    for t in sorted(tok):
        last.update(tok[t])
        _counter(tl, "tokens", offset + t, dict(last))
    _memory_counters(tl, kind, detail, cyc, val, offset, end, window)
    # token hand-offs
    pushes, pops = {}, {}
    for k_kind, target in ((probe.PUSH, pushes), (probe.POP, pops)):
        sel = np.nonzero(kind == k_kind)[0]
        for t, c, i in zip(cyc[sel].tolist(), detail[sel].tolist(), val[sel].tolist(), strict=True):
            target.setdefault(CHANNELS[c], []).append((offset + t, i))
    first_tokens = {}  # the samples of cycle 0 are taken before its pops and pushes take effect
    for c in range(4):
        sel = np.nonzero((kind == probe.TOKENS) & (detail == c) & (cyc == 0))[0]
        first_tokens[CHANNELS[c]] = int(val[sel[0]]) if sel.size else 0
    _flows(tl, pushes, pops, first_tokens, layer)
    _layer(tl, layer, infos, offset, offset + end)
    tl.add_counts(counts)


def _memory_counters(tl: Timeline, kind, detail, cyc, val, offset: int, end: int, window: int) -> None:
    """DRAM read bytes per cycle by client and write bytes per cycle, per window."""
    rd = {}
    for t, c, v in zip(cyc[kind == probe.READ].tolist(), detail[kind == probe.READ].tolist(),
                       val[kind == probe.READ].tolist(), strict=True):
        rd.setdefault(t, {})[READ_CLIENTS[c]] = v
    wr = dict(zip(cyc[kind == probe.WRITE].tolist(), val[kind == probe.WRITE].tolist(), strict=True))
    _emit_windows(tl, rd, wr, offset, end, window)


def _emit_windows(tl: Timeline, rd: dict, wr: dict, offset: int, end: int, window: int) -> None:
    zero = dict.fromkeys(READ_CLIENTS, 0.0)
    starts = sorted(set(rd) | set(wr))
    prev_end = None
    for t in starts:
        if prev_end is not None and prev_end < t:  # a quiet window between two busy ones
            _counter(tl, "DRAM read B/cycle", offset + prev_end, dict(zero))
            _counter(tl, "DRAM write B/cycle", offset + prev_end, {"out": 0.0})
        width = max(1, min(window, end - t))
        beats = rd.get(t, {})
        _counter(tl, "DRAM read B/cycle", offset + t,
                 {c: costs.BEAT_BYTES * beats.get(c, 0) / width for c in READ_CLIENTS})
        _counter(tl, "DRAM write B/cycle", offset + t, {"out": costs.BEAT_BYTES * wr.get(t, 0) / width})
        prev_end = t + width
    if prev_end is not None:
        _counter(tl, "DRAM read B/cycle", offset + prev_end, dict(zero))
        _counter(tl, "DRAM write B/cycle", offset + prev_end, {"out": 0.0})


def add_model_run(tl: Timeline, words: np.ndarray, events: list, counts: dict, layer: str,
                  tokens: list[int], window: int) -> None:
    """Append one cycle-model run from the event tuples of its replay.

    Parameters
    ----------
    tl : Timeline
        The timeline.
    words : ndarray of shape (n, 2)
        The stream.
    events : list of tuple
        ``CycleModel.probe_events`` of the run.
    counts : dict
        The run's counters (``CycleModel.last_run``).
    layer : str
        The layer name.
    tokens : list of 4 int
        Tokens outstanding when the run started, in fsim's channel order.
    window : int
        Cycles per memory-traffic window.
    """
    env = tl.env
    infos = describe(env, words)
    offset = tl.cycles
    end = int(counts.get("cycle_count", 0))
    order = {u: 0 for u in UNITS}
    fills = {"load": [], "compute": [], "store": []}
    pushes, pops = {}, {}
    rd, wr = {}, {}
    timing = costs.DEFAULT_TIMING

    def spread(target: dict, client: str, t0: int, t1: int, beats: int) -> None:
        """Spread ``beats`` evenly over [t0, t1) into the windows."""
        if beats <= 0:
            return
        t1 = max(t1, t0 + 1)
        rate = beats / (t1 - t0)
        w = (t0 // window) * window
        while w < t1:
            lo, hi = max(w, t0), min(w + window, t1)
            if hi > lo:
                slot = target.setdefault(w, {}) if client else target
                if client:
                    slot[client] = slot.get(client, 0) + rate * (hi - lo)
                else:
                    target[w] = target.get(w, 0) + rate * (hi - lo)
            w += window

    bursts = []  # [fetch event of the burst, instructions it brought]
    for ev in events:
        tag = ev[0]
        if tag == "burst":
            _, i, t0, t1 = ev
            e = InsnEvent(infos[i], "fetch", offset + t0, offset + t1, layer, order["fetch"])
            order["fetch"] += 1
            tl.events.append(e)
            bursts.append([e, 0])
        elif tag == "dispatch":
            _, i, d, earliest = ev
            last = bursts[-1] if bursts else None
            if last is not None and last[1] == 0 and last[0].end == offset + d:
                e = last[0]  # the burst and its first dispatch: one busy stretch, as in the RTL
                e.end += 1
                e.mem_wait = e.busy - 1
            else:
                e = InsnEvent(infos[i], "fetch", offset + d, offset + d + 1, layer, order["fetch"],
                              queue_wait=max(0, d - earliest))
                order["fetch"] += 1
                tl.events.append(e)
            if last is not None:
                last[1] += 1
            fills[infos[i].unit].append((d + 1, 1))
        elif tag == "insn":
            _, u, i, ready, s, e_end = ev
            unit = UNITS[u]
            info = infos[i]
            e = InsnEvent(info, unit, offset + s, offset + e_end, layer, order[unit], token_wait=s - ready)
            e.mem_wait = mem_wait(info, e.busy)
            order[unit] += 1
            tl.events.append(e)
            fills[unit].append((e_end, -1))
            if info.opcode == "LOAD" and info.beats:
                spread(rd, _CLIENT_OF.get(info.name, "acc"), s + timing.load_latency, e_end - timing.load_tail,
                       info.beats)
            elif info.opcode == "STORE" and info.beats:
                spread(wr, "", s, e_end, info.beats)
        elif tag in ("push", "pop"):
            _, c, i, t = ev
            # the model's push is visible at the producer's end: it happened in its last cycle
            t = t - 1 if tag == "push" else t
            (pushes if tag == "push" else pops).setdefault(_FSIM_CHANNELS[c], []).append((offset + t, i))
    for e, m in bursts:  # two beats per instruction of a burst, before its first dispatch
        spread(rd, "fetch", e.start - offset + 1, e.end - offset - timing.fetch_latency, 2 * m)
    for unit, changes in fills.items():
        level = 0
        _counter(tl, f"queue {unit}", offset, {"entries": 0})
        for t, dv in sorted(changes):
            level += dv
            _counter(tl, f"queue {unit}", offset + t, {"entries": level})
    initial = {_FSIM_CHANNELS[c]: int(tokens[c]) for c in range(4)}
    tok_changes = sorted([(t, c, 1) for c, lst in pushes.items() for t, _ in lst]
                         + [(t, c, -1) for c, lst in pops.items() for t, _ in lst])
    level = dict(initial)
    _counter(tl, "tokens", offset, dict(level))
    for t, c, dv in tok_changes:
        level[c] += dv
        _counter(tl, "tokens", t, dict(level))
    _emit_windows(tl, rd, wr, offset, max(end, 1), window)
    _flows(tl, pushes, pops, initial, layer)
    _layer(tl, layer, infos, offset, offset + end)
    tl.add_counts(counts)


def add_fsim_run(tl: Timeline, words: np.ndarray, counts: dict, layer: str) -> None:
    """Append one fsim run: its instructions in program order, without time."""
    infos_events = program_order(tl.env, words, layer)
    base = len(tl.events)
    for e in infos_events:
        e.order += base
    tl.events.extend(infos_events)
    infos = [e.info for e in infos_events]
    _layer(tl, layer, infos, base, base + len(infos))  # fsim: the layer spans program positions
    tl.add_counts(counts)
