"""The results of a sweep: the table (CSV and JSON lines), per-configuration totals, the Pareto
front and its plot.

A configuration is *complete* when every workload of the sweep ran on it (status ``ok``); its
totals are the sums of cycles, MACs and bytes moved over the workloads. The Pareto front is taken
over complete configurations with three objectives, all minimised: total cycles, ``mac_count``
and ``sram_bits`` (the area proxy). A configuration is on the front when no other one is at least
as good in all three and better in one.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..env import INT_KEYS

__all__ = [
    "TABLE_COLUMNS",
    "config_totals",
    "pareto_front",
    "plot_pareto",
    "read_jsonl",
    "write_csv",
    "write_jsonl",
]

#: Columns of the point table, in order.
TABLE_COLUMNS = (("workload", "level", "status") + tuple(INT_KEYS)
                 + ("cycles", "macs", "macs_per_cycle", "utilisation", "bytes_moved", "sram_bits", "mac_count",
                    "insn_count", "gemm_counter", "alu_counter", "reason", "key"))
_OBJECTIVES = ("cycles", "mac_count", "sram_bits")


def write_csv(rows: Iterable[dict], path: str | Path, columns: Sequence[str] = TABLE_COLUMNS) -> Path:
    """Write ``rows`` as CSV with ``columns`` (missing values empty); return the path.

    Raises
    ------
    OSError
        If the file cannot be written.
    """
    path = Path(path)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({c: _cell(row.get(c)) for c in columns})
    return path


def _cell(value):
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else value


def write_jsonl(rows: Iterable[dict], path: str | Path) -> Path:
    """Write one JSON object per line (every field of every row); return the path.

    Raises
    ------
    OSError
        If the file cannot be written.
    """
    path = Path(path)
    with open(path, "w") as handle:
        for row in rows:
            handle.write(json.dumps(row, sort_keys=True) + "\n")
    return path


def read_jsonl(path: str | Path) -> list[dict]:
    """The rows of a JSON-lines file.

    Raises
    ------
    ValueError
        If a line is not a JSON object (the message names the line).
    """
    rows = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{n}: expected an object, got {type(row).__name__}")
        rows.append(row)
    return rows


def _config_of(row: dict) -> tuple:
    return tuple((k, row.get(k)) for k in INT_KEYS)


def config_totals(rows: Iterable[dict]) -> list[dict]:
    """One record per configuration: its keys, totals over its workloads, and whether it is complete.

    Returns
    -------
    list of dict
        Keys of :data:`vta.env.INT_KEYS`, ``workloads`` (count), ``ok`` (count), ``complete``,
        ``cycles``, ``macs``, ``bytes_moved`` (sums over ok rows), ``macs_per_cycle``,
        ``sram_bits``, ``mac_count`` and ``reason`` (the first infeasibility or error).
    """
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(_config_of(row), []).append(row)
    out = []
    for config, members in groups.items():
        ok = [r for r in members if r.get("status") == "ok"]
        rec = dict(config)
        rec.update(workloads=len(members), ok=len(ok), complete=len(ok) == len(members),
                   cycles=sum(int(r["cycles"]) for r in ok), macs=sum(int(r["macs"]) for r in ok),
                   bytes_moved=sum(int(r["bytes_moved"]) for r in ok),
                   sram_bits=next((r.get("sram_bits") for r in members if r.get("sram_bits") is not None), None),
                   mac_count=next((r.get("mac_count") for r in members if r.get("mac_count") is not None), None),
                   reason=next((r.get("reason") for r in members if r.get("status") != "ok"), ""))
        rec["macs_per_cycle"] = rec["macs"] / rec["cycles"] if rec["cycles"] else 0.0
        out.append(rec)
    return out


def pareto_front(records: Sequence[dict], objectives: Sequence[str] = _OBJECTIVES) -> list[int]:
    """Indices of the complete records no other complete record dominates (all objectives minimised)."""
    live = [i for i, r in enumerate(records)
            if r.get("complete", True) and all(r.get(o) is not None for o in objectives)]
    front = []
    for i in live:
        a = [records[i][o] for o in objectives]
        dominated = False
        for j in live:
            if j == i:
                continue
            b = [records[j][o] for o in objectives]
            if all(y <= x for x, y in zip(a, b, strict=True)) and any(y < x for x, y in zip(a, b, strict=True)):
                dominated = True
                break
        if not dominated:
            front.append(i)
    return front


def plot_pareto(records: Sequence[dict], path: str | Path, title: str = "VTA design space") -> Path:
    """Plot total cycles against the area proxy, one panel per proxy, the Pareto front marked.

    Raises
    ------
    ImportError
        If matplotlib is not installed (``pip install vta[dse]``).
    OSError
        If the file cannot be written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    complete = [r for r in records if r.get("complete")]
    front = set(pareto_front(complete))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for ax, (key, label, scale) in zip(axes, (("mac_count", "MAC units (BATCH x BLOCK_IN x BLOCK_OUT)", 1),
                                              ("sram_bits", "on-chip SRAM (KiB)", 8 * 1024)), strict=True):
        xs = [r[key] / scale for r in complete]
        ys = [r["cycles"] for r in complete]
        ax.scatter(xs, ys, s=18, c="#8fa3bf", label="configuration")
        fx = [xs[i] for i in sorted(front)]
        fy = [ys[i] for i in sorted(front)]
        ax.scatter(fx, fy, s=46, facecolors="none", edgecolors="#c0392b", linewidths=1.6, label="Pareto front")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("total cycles (all workloads)")
    axes[0].legend(loc="best", fontsize=8)
    fig.suptitle(f"{title}: {len(complete)} complete configurations, {len(front)} on the front "
                 "(cycles, MACs, SRAM minimised)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
