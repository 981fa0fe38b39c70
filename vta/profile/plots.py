"""matplotlib pictures of a profile: per-layer utilisation bars, a roofline, a timeline.

matplotlib is the optional extra ``profile`` (``pip install vta[profile]``); it is imported
when a plot is drawn, with the Agg backend, so no display is needed.
"""

from __future__ import annotations

from pathlib import Path

from .events import UNITS, Timeline
from .recorder import ProfileError
from .report import layer_rows, roofs

__all__ = ["PLOTS", "plot_utilisation", "plot_roofline", "plot_timeline", "plots_unavailable", "write_plots"]

#: The plots :func:`write_plots` draws, by output name.
PLOTS = ("utilisation", "roofline", "timeline")

_COLOURS = {"fetch": "#7f7f7f", "load": "#1f77b4", "compute": "#d62728", "store": "#2ca02c"}


def plots_unavailable() -> str | None:
    """Why the plots cannot be drawn here (matplotlib missing), or None when they can."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        return f"matplotlib is not installed ({exc.name!r} cannot be imported); pip install 'vta[profile]' to draw them"
    return None


def _pyplot():
    try:
        import matplotlib
    except ImportError as exc:
        raise ProfileError("the plots need matplotlib: pip install 'vta[profile]'") from exc
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def plot_utilisation(tl: Timeline, path: str | Path) -> Path:
    """Bars of each unit's busy share (and stall share, hatched) per layer.

    Raises
    ------
    ProfileError
        If matplotlib is missing or the timeline has no time (fsim).
    """
    if tl.level == "sim":
        raise ProfileError("fsim has no time: utilisation needs tsim or the cycle model")
    plt = _pyplot()
    rows = [r for r in layer_rows(tl) if r["layer"] != "total"]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(rows) + 3), 4))
    width = 0.8 / len(UNITS)
    for k, unit in enumerate(UNITS):
        xs = [n + (k - 1.5) * width for n in range(len(rows))]
        busy = [100.0 * r[f"{unit}_busy"] / r["cycles"] if r["cycles"] else 0 for r in rows]
        stall = [100.0 * r[f"{unit}_stall"] / r["cycles"] if r["cycles"] else 0 for r in rows]
        ax.bar(xs, busy, width, color=_COLOURS[unit], label=f"{unit} busy")
        ax.bar(xs, stall, width, bottom=busy, color=_COLOURS[unit], alpha=0.35, hatch="//",
               label=f"{unit} stalled")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r["layer"] for r in rows], rotation=30, ha="right")
    ax.set_ylabel("% of the layer's cycles")
    ax.set_ylim(0, 105)
    ax.set_title(f"Unit utilisation per layer ({tl.level}, {tl.env.BITSTREAM})")
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.25))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def plot_roofline(tl: Timeline, path: str | Path) -> Path:
    """Achieved MACs per cycle against operational intensity (MACs per DRAM byte), per layer,
    under the configuration's compute roof and the 64-bit port's bandwidth roof.

    Raises
    ------
    ProfileError
        If matplotlib is missing or the timeline has no time (fsim).
    """
    if tl.level == "sim":
        raise ProfileError("fsim has no time: the roofline needs tsim or the cycle model")
    plt = _pyplot()
    r = roofs(tl.env)
    peak, bw = r["macs_per_cycle"], r["dram_bytes_per_cycle"]
    rows = [row for row in layer_rows(tl) if row["layer"] != "total"]
    pts = [(row["intensity"], row["macs_per_cycle"], row["layer"]) for row in rows
           if row["intensity"] and row["macs_per_cycle"]]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    lo = min([p[0] for p in pts] + [peak / bw / 100])
    hi = max([p[0] for p in pts] + [peak / bw * 100])
    xs = [lo * (hi / lo) ** (k / 200) for k in range(201)]
    ax.plot(xs, [min(peak, bw * x) for x in xs], color="black", lw=1.5, label="roof")
    ax.axhline(peak, color="#d62728", ls=":", lw=1, label=f"compute roof {peak} MACs/cycle")
    ax.plot(xs, [bw * x for x in xs], color="#1f77b4", ls=":", lw=1, label=f"DRAM roof {bw} B/cycle")
    for x, y, name in pts:
        ax.scatter([x], [y], s=25, zorder=3)
        ax.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(min([p[1] for p in pts] + [peak]) / 10, peak * 2)
    ax.set_xlabel("operational intensity (MACs per DRAM byte)")
    ax.set_ylabel("achieved MACs per cycle")
    ax.set_title(f"Roofline ({tl.level}, {tl.env.BITSTREAM})")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def plot_timeline(tl: Timeline, path: str | Path, max_cycles: int = 20000) -> Path:
    """Each unit's instructions as bars over time (token waits hatched), for the first
    ``max_cycles`` cycles.

    Raises
    ------
    ProfileError
        If matplotlib is missing or the timeline has no time (fsim).
    """
    if tl.level == "sim":
        raise ProfileError("fsim has no time: the timeline picture needs tsim or the cycle model")
    plt = _pyplot()
    end = min(tl.cycles, max_cycles) or 1
    fig, ax = plt.subplots(figsize=(10, 3))
    for row, unit in enumerate(reversed(UNITS)):
        busy, wait = [], []
        for e in tl.events:
            if e.unit != unit or e.start >= end:
                continue
            busy.append((e.start, min(e.end, end) - e.start))
            if e.token_wait:
                wait.append((e.start - e.token_wait, e.token_wait))
        ax.broken_barh(busy, (row - 0.35, 0.7), facecolors=_COLOURS[unit], edgecolor="white", linewidth=0.3)
        if wait:
            ax.broken_barh(wait, (row - 0.35, 0.7), facecolors="none", edgecolor=_COLOURS[unit], hatch="///",
                           linewidth=0.3)
    for layer in tl.layers:
        if layer.start < end:
            ax.axvline(layer.start, color="black", lw=0.5, ls="--")
    ax.set_yticks(range(len(UNITS)))
    ax.set_yticklabels(list(reversed(UNITS)))
    ax.set_xlim(0, end)
    ax.set_xlabel("cycle")
    ax.set_title(f"Timeline ({tl.level}; hatched: waiting for a token)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def write_plots(tl: Timeline, out_dir: str | Path) -> dict:
    """Write ``utilisation.png``, ``roofline.png`` and ``timeline.png`` into ``out_dir``.

    Returns
    -------
    dict
        name -> path.

    Raises
    ------
    ProfileError
        If matplotlib is missing or the timeline has no time.
    """
    out_dir = Path(out_dir)
    return {"utilisation": plot_utilisation(tl, out_dir / "utilisation.png"),
            "roofline": plot_roofline(tl, out_dir / "roofline.png"),
            "timeline": plot_timeline(tl, out_dir / "timeline.png")}
