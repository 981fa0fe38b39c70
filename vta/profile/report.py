"""The per-layer report: cycles, percent of the GEMM bound, busy and stall cycles per unit with
the reason of the stalls, as rows (:func:`layer_rows`) written as text, CSV and JSON.

Definitions (cycles of one layer, i.e. one run):

* ``gemm_bound_pct``: GEMM micro-ops (without reset) / cycles x 100 -- the compute bound of
  DESIGN.md (one GEMM micro-op per cycle) as a share of the time taken;
* ``<unit>_busy``: cycles the unit worked on an instruction (the trace's instruction slices;
  on tsim exactly the core's BUSY counters);
* ``<unit>_stall``: cycles an instruction waited for tokens (fetch: blocked on a full queue),
  with ``<unit>_stall_reason`` the channel (or queue) responsible for most of them;
* ``<unit>_mem``: busy cycles not spent moving data (latency, port contention, acks);
* ``<unit>_idle``: the rest -- nothing to do (an empty queue).
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

from .events import UNITS, Timeline

__all__ = ["layer_rows", "roofs", "format_text", "write_csv", "write_json", "write_reports"]


def roofs(env) -> dict:
    """The configuration's roofs: MACs per cycle of the GEMM core, DRAM bytes per cycle."""
    return {"macs_per_cycle": env.BATCH * env.BLOCK_IN * env.BLOCK_OUT, "dram_bytes_per_cycle": 8}


def _reason(events, unit: str) -> str:
    waits = Counter()
    for e in events:
        if unit == "fetch":
            if e.queue_wait and e.info is not None:
                waits[f"{e.info.unit} queue full"] += e.queue_wait
        elif e.token_wait and e.info is not None:
            waits["token " + "+".join(e.info.pops)] += e.token_wait
    return waits.most_common(1)[0][0] if waits else ""


def layer_rows(tl: Timeline) -> list[dict]:
    """One row per layer, then a ``total`` row.

    Returns
    -------
    list of dict
        Keys: ``layer``, ``cycles``, ``gemm_uops``, ``gemm_bound_pct``, ``macs``,
        ``dram_bytes``, ``macs_per_cycle``, ``intensity`` (MACs per DRAM byte), ``bottleneck``,
        then per unit ``<unit>_busy``, ``_stall``, ``_stall_reason``, ``_mem``, ``_idle``,
        ``_util_pct`` and ``_insns``, and ``compute_gemm_busy``, ``compute_alu_busy``.
    """
    rows = []
    by_layer: dict = {}
    for e in tl.events:
        by_layer.setdefault(e.layer, []).append(e)
    groups = [(layer.name, [layer], by_layer.get(layer.name, [])) for layer in tl.layers]
    if len(groups) > 1:
        groups.append(("total", tl.layers, tl.events))
    seen_layers: dict = {}
    for name, layers, events in groups:
        if name in seen_layers and name != "total":
            continue  # the same layer name twice: its events are already grouped together
        seen_layers[name] = True
        same = [lay for lay in tl.layers if lay.name == name] if name != "total" else layers
        cycles = sum(lay.end - lay.start for lay in same) if tl.level != "sim" else 0
        gemm = sum(lay.gemm_uops for lay in same)
        macs = sum(lay.macs for lay in same)
        nbytes = sum(lay.dram_bytes for lay in same)
        traffic = sum(8 * e.info.beats for e in events if e.info is not None and e.unit != "fetch")
        row = {"layer": name, "cycles": cycles, "gemm_uops": gemm,
               "gemm_bound_pct": round(100.0 * gemm / cycles, 2) if cycles else None,
               "macs": macs, "dram_bytes": nbytes,
               "macs_per_cycle": round(macs / cycles, 3) if cycles else None,
               "intensity": round(macs / traffic, 3) if traffic else None}
        busiest, busiest_cycles = "", -1
        for unit in UNITS:
            own = [e for e in events if e.unit == unit]
            busy = sum(e.busy for e in own)
            stall = sum(e.queue_wait if unit == "fetch" else e.token_wait for e in own)
            row[f"{unit}_busy"] = busy
            row[f"{unit}_stall"] = stall
            row[f"{unit}_stall_reason"] = _reason(own, unit)
            row[f"{unit}_mem"] = sum(e.mem_wait for e in own)
            row[f"{unit}_idle"] = max(0, cycles - busy - stall) if cycles else 0
            row[f"{unit}_util_pct"] = round(100.0 * busy / cycles, 2) if cycles else None
            row[f"{unit}_insns"] = len({e.index for e in own}) if unit != "fetch" else len(own)
            if unit != "fetch" and busy > busiest_cycles:
                busiest, busiest_cycles = unit, busy
        for opcode in ("GEMM", "ALU"):  # the compute unit's share of each core
            row[f"compute_{opcode.lower()}_busy"] = sum(
                e.busy for e in events if e.unit == "compute" and e.info is not None and e.info.opcode == opcode)
        row["bottleneck"] = busiest if tl.level != "sim" else ""
        rows.append(row)
    return rows


def format_text(rows: list[dict], tl: Timeline) -> str:
    """An aligned text table of the rows (one line per layer, the units' columns grouped)."""
    r = roofs(tl.env)
    head = (f"VTA {tl.level} profile, {tl.env.BITSTREAM}: compute roof {r['macs_per_cycle']} MACs/cycle, "
            f"DRAM roof {r['dram_bytes_per_cycle']} B/cycle\n")
    if tl.level == "sim":  # no time: what each unit executes
        cols = ["layer", "gemm uops", "macs", "dram bytes"] + [f"{u} insns" for u in UNITS if u != "fetch"]
        lines = [cols] + [[str(row["layer"]), str(row["gemm_uops"]), str(row["macs"]), str(row["dram_bytes"])]
                          + [str(row[f"{u}_insns"]) for u in UNITS if u != "fetch"] for row in rows]
        return head + _align(lines)
    cols = ["layer", "cycles", "gemm%", "bottleneck"]
    for u in UNITS:
        cols += [f"{u} busy (mem)", f"{u} stall (reason)"]
    lines = [cols]
    for row in rows:
        line = [str(row["layer"]), str(row["cycles"]),
                "" if row["gemm_bound_pct"] is None else f"{row['gemm_bound_pct']:.1f}", row["bottleneck"]]
        for u in UNITS:
            mem = row[f"{u}_mem"]
            line.append(f"{row[f'{u}_busy']}" + (f" (mem {mem})" if mem else ""))
            reason = row[f"{u}_stall_reason"]
            line.append(f"{row[f'{u}_stall']}" + (f" ({reason})" if reason else ""))
        lines.append(line)
    return head + _align(lines)


def _align(lines: list[list[str]]) -> str:
    """Columns padded to their widest cell (the first left-aligned), a rule under the header."""
    widths = [max(len(line[k]) for line in lines) for k in range(len(lines[0]))]
    out = []
    for n, line in enumerate(lines):
        cells = (cell.ljust(w) if k == 0 else cell.rjust(w) for k, (cell, w) in enumerate(zip(line, widths, strict=True)))
        out.append("  ".join(cells).rstrip() + "\n")
        if n == 0:
            out.append("  ".join("-" * w for w in widths) + "\n")
    return "".join(out)


def write_csv(rows: list[dict], path: str | Path) -> Path:
    """Write the rows as CSV (a header line, then one line per row)."""
    path = Path(path)
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def write_json(rows: list[dict], tl: Timeline, path: str | Path) -> Path:
    """Write ``{"level", "config", "roofs", "counters", "layers": rows}`` as JSON."""
    path = Path(path)
    doc = {"level": tl.level, "config": tl.env.BITSTREAM, "roofs": roofs(tl.env),
           "counters": tl.counts, "layers": rows}
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path


def write_reports(tl: Timeline, out_dir: str | Path) -> dict:
    """Write ``layers.txt``, ``layers.csv`` and ``layers.json`` into ``out_dir``.

    Returns
    -------
    dict
        ``{"text": path, "csv": path, "json": path}``.
    """
    out_dir = Path(out_dir)
    rows = layer_rows(tl)
    text = out_dir / "layers.txt"
    text.write_text(format_text(rows, tl), encoding="utf-8")
    return {"text": text, "csv": write_csv(rows, out_dir / "layers.csv"),
            "json": write_json(rows, tl, out_dir / "layers.json")}
