"""The results of a sweep: the table (CSV and JSON lines), per-configuration totals, the Pareto
front and its plot.

A configuration is *complete* when every workload of the sweep ran on it (status ``ok``); its
totals are the sums of cycles, MACs and bytes moved over the workloads. The Pareto front is taken
over complete configurations with three objectives, all minimised: total cycles, ``mac_count``
and ``sram_bits`` (the area proxy); when the sweep synthesised its configurations
(:func:`vta.hw.area`), ``cells`` (the logic from synthesis, MAC array included) replaces
``mac_count``. A configuration is on the front when no other one is at least
as good in all three and better in one.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from .. import atomic
from ..env import INT_KEYS, OPTION_KEYS

__all__ = [
    "TABLE_COLUMNS",
    "config_totals",
    "draw_pareto",
    "pareto_front",
    "plot_pareto",
    "read_jsonl",
    "write_csv",
    "write_jsonl",
]

#: Columns of the point table, in order.
TABLE_COLUMNS = (("workload", "level", "status") + tuple(INT_KEYS) + tuple(OPTION_KEYS)
                 + ("cycles", "macs", "macs_per_cycle", "utilisation", "bytes_moved", "sram_bits", "mac_count",
                    "insn_count", "gemm_counter", "alu_counter", "reason", "key"))
_OBJECTIVES = ("cycles", "mac_count", "sram_bits")
#: With synthesised area: the logic cells replace the MAC count (they include the MAC array).
_OBJECTIVES_AREA = ("cycles", "cells", "sram_bits")


def write_csv(rows: Iterable[dict], path: str | Path, columns: Sequence[str] = TABLE_COLUMNS) -> Path:
    """Write ``rows`` as CSV with ``columns`` (missing values empty); return the path.

    Raises
    ------
    OSError
        If the file cannot be written.
    """
    path = Path(path)
    with atomic.atomic_writer(path, "w", newline="") as handle:
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
    with atomic.atomic_writer(path, "w") as handle:
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
    # an option absent from a row (one cached before the option existed) is off
    return tuple((k, row.get(k)) for k in INT_KEYS) + tuple((k, bool(row.get(k))) for k in OPTION_KEYS)


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


#: The panels of the Pareto plot: (record key, axis label, divisor of the value).
_PANELS = (("mac_count", "MAC units (BATCH x BLOCK_IN x BLOCK_OUT)", 1),
           ("cells", "logic cells from synthesis (generic gates and flip-flops)", 1),
           ("sram_bits", "on-chip SRAM (KiB)", 8 * 1024))


def _numeric_axis(ax, which: str, values, base: float) -> None:
    """Scale one axis so its ticks read as plain numbers, whatever the span of ``values``.

    A logarithmic axis is used only when the values span at least two powers of ``base`` (so at
    least two labelled major ticks fall inside); a narrower span gets a linear axis with a few
    round ticks. Either way the labels are plain numbers (no offset, no exponent notation).
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    positive = [v for v in values if v > 0]
    plain = FuncFormatter(lambda v, _pos: f"{v:,.6g}")
    if positive and max(positive) / min(positive) >= base ** 2:
        (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=base)
        axis.set_major_locator(LogLocator(base=base))
        axis.set_minor_formatter(NullFormatter())
    else:
        axis.set_major_locator(MaxNLocator(nbins=5, min_n_ticks=2))
    axis.set_major_formatter(plain)


def draw_pareto(records: Sequence[dict], title: str = "VTA design space"):
    """The Pareto figure (a matplotlib ``Figure``): total cycles against each area measure.

    One panel per area measure the records carry (MAC units, logic cells from synthesis when
    the sweep synthesised its configurations, SRAM), the front marked. Every axis is labelled
    with plain numbers.

    Raises
    ------
    ImportError
        If matplotlib is not installed (``pip install vta[dse]``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    complete = [r for r in records if r.get("complete")]
    objectives = tuple(k for k in _OBJECTIVES_AREA if any(r.get(k) is not None for r in complete)) \
        if any(r.get("cells") is not None for r in complete) else _OBJECTIVES
    front = set(pareto_front(complete, objectives))
    panels = [p for p in _PANELS if p[0] != "cells" or "cells" in objectives]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.5), sharey=True, squeeze=False)
    axes = axes[0]
    ys = [r["cycles"] for r in complete]
    for ax, (key, label, scale) in zip(axes, panels, strict=True):
        xs = [r[key] / scale if r.get(key) is not None else float("nan") for r in complete]
        ax.scatter(xs, ys, s=18, c="#8fa3bf", label="configuration")
        ax.scatter([xs[i] for i in sorted(front)], [ys[i] for i in sorted(front)], s=46, facecolors="none",
                   edgecolors="#c0392b", linewidths=1.6, label="Pareto front")
        _numeric_axis(ax, "x", [x for x in xs if x == x], 2)
        _numeric_axis(ax, "y", ys, 10)
        ax.set_xlabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("total cycles (all workloads)")
    axes[0].legend(loc="best", fontsize=8)
    measured = ", ".join({"cycles": "cycles", "mac_count": "MACs", "cells": "cells", "sram_bits": "SRAM"}[o]
                         for o in objectives)
    fig.suptitle(f"{title}: {len(complete)} complete configurations, {len(front)} on the front "
                 f"({measured} minimised)", fontsize=10)
    fig.tight_layout()
    return fig


def plot_pareto(records: Sequence[dict], path: str | Path, title: str = "VTA design space") -> Path:
    """Draw :func:`draw_pareto` to ``path`` (a PNG); return the path.

    Raises
    ------
    ImportError
        If matplotlib is not installed (``pip install vta[dse]``).
    OSError
        If the file cannot be written.
    """
    import matplotlib.pyplot as plt

    path = Path(path)
    fig = draw_pareto(records, title)
    try:
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
    return path
