"""The trace file: a :class:`~vta.profile.events.Timeline` in the Chrome trace-event JSON format.

The format is the documented "Trace Event Format" (a JSON object with a ``traceEvents`` list);
ui.perfetto.dev and chrome://tracing both open it, it needs no library to write or to read back,
and its events map one to one onto what the profiler has:

* one process per level, one thread (track) per unit: fetch, load, compute, store;
* complete events (``ph: "X"``): a slice per layer on every unit's track, and inside it one
  slice per instruction (category ``insn``) and one per wait (category ``stall``: a token
  wait, fetch blocked on a full queue), so slices nest layer -> instruction;
* counter events (``ph: "C"``): queue fills, tokens per channel, DRAM read bytes per cycle by
  client and write bytes per cycle;
* flow events (``ph: "s"`` / ``"f"``): an arrow from the instruction that pushed a token to the
  one that popped it.

Timestamps are cycles written as microseconds (``1 us`` on screen = 1 cycle); ``otherData``
says so. fsim has no time: its trace places instructions one per microsecond in program order.
"""

from __future__ import annotations

import bisect
import json
from pathlib import Path

from .events import CHANNEL_UNITS, UNITS, Timeline

__all__ = ["to_chrome", "write_chrome", "validate_chrome"]

_PID = 1
_TID = {u: k + 1 for k, u in enumerate(UNITS)}


def _args(e) -> dict:
    info = e.info
    out = {"index": e.index, "layer": e.layer, "cycles": e.busy}
    if info is not None:
        out["opcode"] = info.opcode
        if e.unit == "fetch":
            out["dispatched_to"] = info.unit
        out.update(info.sizes)
        if info.dram_bytes:
            out["dram_bytes"] = info.dram_bytes
        if info.uops:
            out["uops"] = info.uops
        if info.pops:
            out["pops"] = ",".join(info.pops)
        if info.pushes:
            out["pushes"] = ",".join(info.pushes)
    if e.token_wait:
        out["token_wait"] = e.token_wait
    if e.queue_wait:
        out["queue_wait"] = e.queue_wait
    if e.mem_wait:
        out["mem_wait"] = e.mem_wait
    return out


def to_chrome(tl: Timeline, title: str | None = None) -> dict:
    """The trace of a timeline as a Chrome trace-event JSON object.

    Parameters
    ----------
    tl : Timeline
        What to show.
    title : str, optional
        The process name (default: the level and configuration).

    Returns
    -------
    dict
        ``{"traceEvents": [...], "otherData": {...}}``.
    """
    timed = tl.level != "sim"
    title = title or f"VTA {tl.level} ({tl.env.BITSTREAM})"
    ev: list[dict] = [
        {"ph": "M", "pid": _PID, "tid": 0, "name": "process_name", "args": {"name": title}},
    ]
    for unit, tid in _TID.items():
        ev.append({"ph": "M", "pid": _PID, "tid": tid, "name": "thread_name", "args": {"name": unit}})
        ev.append({"ph": "M", "pid": _PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    events = tl.events
    if not timed:  # program order, one microsecond per instruction
        pos = {id(e): k for k, e in enumerate(sorted(events, key=lambda e: e.order))}

        def span(e):
            return pos[id(e)], 1
    else:
        def span(e):
            return e.start, e.end - e.start

    # layer slices: on every unit track, around the layer's instructions
    # (runs follow one another on the axis; fsim's layers span program positions)
    starts = [layer.start for layer in tl.layers]
    extent: dict = {}  # (layer number, unit) -> [first, end]
    for e in events:
        ts, dur = span(e)
        key = (max(0, bisect.bisect_right(starts, ts) - 1), e.unit)
        box = extent.get(key)
        if box is None:
            extent[key] = [ts, ts + dur]
        else:
            box[0], box[1] = min(box[0], ts), max(box[1], ts + dur)
    for k, layer in enumerate(tl.layers):
        for unit, tid in _TID.items():
            box = extent.get((k, unit))
            if box is None:
                continue
            lo, hi = box
            if timed:
                lo = min(lo, layer.start)
                hi = max(hi, layer.end)
            ev.append({"ph": "X", "pid": _PID, "tid": tid, "ts": lo, "dur": hi - lo, "name": layer.name,
                       "cat": "layer", "args": {"gemm_uops": layer.gemm_uops, "macs": layer.macs,
                                                "dram_bytes": layer.dram_bytes}})
    for e in events:
        ts, dur = span(e)
        name = e.info.name if e.info is not None else "fetch"
        if e.unit == "fetch" and e.info is not None:
            name = f"fetch #{e.index} ({e.info.name})"
        ev.append({"ph": "X", "pid": _PID, "tid": _TID[e.unit], "ts": ts, "dur": dur, "name": name,
                   "cat": "insn", "args": _args(e)})
        if timed and e.token_wait and e.info is not None:
            ev.append({"ph": "X", "pid": _PID, "tid": _TID[e.unit], "ts": ts - e.token_wait,
                       "dur": e.token_wait, "name": f"wait token {'+'.join(e.info.pops) or '?'}",
                       "cat": "stall", "args": {"index": e.index, "reason": "token",
                                                "channels": list(e.info.pops)}})
        if timed and e.unit == "fetch" and e.queue_wait and e.info is not None:
            ev.append({"ph": "X", "pid": _PID, "tid": _TID["fetch"], "ts": ts - e.queue_wait,
                       "dur": e.queue_wait, "name": f"blocked: {e.info.unit} queue full",
                       "cat": "stall", "args": {"index": e.index, "reason": "queue full"}})
    if timed:
        for name, samples in tl.counters.items():
            for t, values in samples:
                ev.append({"ph": "C", "pid": _PID, "name": name, "ts": t, "args": values})
        by_unit_index = {}
        for e in events:
            if e.unit != "fetch":
                by_unit_index[(e.layer, e.unit, e.index)] = e
        for k, f in enumerate(tl.flows):
            producer, consumer = CHANNEL_UNITS[f.channel]
            src = by_unit_index.get((f.layer, producer, f.producer))
            dst = by_unit_index.get((f.layer, consumer, f.consumer))
            if src is None or dst is None:
                continue
            ev.append({"ph": "s", "pid": _PID, "tid": _TID[producer], "ts": max(src.start, src.end - 1),
                       "id": k + 1, "name": f"token {f.channel}", "cat": "token"})
            ev.append({"ph": "f", "bp": "e", "pid": _PID, "tid": _TID[consumer], "ts": dst.start,
                       "id": k + 1, "name": f"token {f.channel}", "cat": "token"})
    return {
        "traceEvents": ev,
        "otherData": {"level": tl.level, "config": tl.env.BITSTREAM,
                      "time_unit": "1 us = 1 cycle" if timed else "1 us = 1 instruction in program order",
                      "cycles": tl.cycles},
    }


def write_chrome(tl: Timeline, path: str | Path, title: str | None = None) -> Path:
    """Write the trace of ``tl`` to ``path`` (JSON) and return the path.

    Raises
    ------
    OSError
        If the file cannot be written.
    """
    path = Path(path)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(to_chrome(tl, title), fh, separators=(",", ":"))
    return path


_PHASE_KEYS = {
    "X": ("name", "ts", "dur", "pid", "tid"),
    "C": ("name", "ts", "pid", "args"),
    "M": ("name", "pid", "args"),
    "s": ("name", "ts", "pid", "tid", "id"),
    "f": ("name", "ts", "pid", "tid", "id"),
}


def validate_chrome(doc: dict) -> None:
    """Check that ``doc`` is a well-formed trace as :func:`to_chrome` writes it.

    Checks every event's phase and required keys and their types, non-negative durations,
    that slices on one track nest (never partly overlap), and that every flow start has its end.

    Raises
    ------
    ValueError
        Naming the first offending event.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ValueError("a trace is a JSON object with a 'traceEvents' list")
    tracks: dict = {}
    flows: dict = {}
    for k, e in enumerate(doc["traceEvents"]):
        ph = e.get("ph")
        if ph not in _PHASE_KEYS:
            raise ValueError(f"event {k}: unknown phase {ph!r}")
        for key in _PHASE_KEYS[ph]:
            if key not in e:
                raise ValueError(f"event {k} ({ph}): missing {key!r}")
        if "ts" in e and not isinstance(e["ts"], (int, float)):
            raise ValueError(f"event {k}: ts {e['ts']!r} is not a number")
        if ph == "X":
            if not isinstance(e["dur"], (int, float)) or e["dur"] < 0:
                raise ValueError(f"event {k}: duration {e['dur']!r} is not a non-negative number")
            tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"], k))
        if ph == "C" and not all(isinstance(v, (int, float)) for v in e["args"].values()):
            raise ValueError(f"event {k}: counter values must be numbers")
        if ph in ("s", "f"):
            flows.setdefault(e["id"], set()).add(ph)
    for track, spans in tracks.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack: list = []
        for lo, hi, k in spans:
            while stack and stack[-1][1] <= lo:
                stack.pop()
            if stack and hi > stack[-1][1]:
                raise ValueError(f"event {k} on track {track} [{lo}, {hi}) overlaps event {stack[-1][2]} "
                                 f"[{stack[-1][0]}, {stack[-1][1]}) without nesting")
            stack.append((lo, hi, k))
    for fid, phases in flows.items():
        if phases != {"s", "f"}:
            raise ValueError(f"flow {fid}: has {sorted(phases)}, needs a start and an end")
