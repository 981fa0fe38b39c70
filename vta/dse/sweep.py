"""A whole sweep: a SPEC's points on the cycle model, the files a designer reads, and on request the
Pareto configurations confirmed on tsim.

Files written to the output directory:

``points.csv`` / ``points.jsonl``   one row per (configuration, workload, level)
``configs.csv``                     one row per configuration with totals and a ``pareto`` column
``pareto.png``                      cycles against the area measures, the front marked

With ``"area": true`` in the SPEC every complete configuration is synthesised (:func:`vta.hw.area`,
cached by content) and its logic cells replace the MAC count in the Pareto front.
``confirm.csv``                     (with ``confirm_tsim``) model against tsim on the front
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..env import INT_KEYS, OPTION_KEYS
from . import workloads as wl
from .engine import SweepOutcome, run_points
from .evaluate import Point
from .results import _OBJECTIVES, _OBJECTIVES_AREA, config_totals, pareto_front, plot_pareto, write_csv, write_jsonl
from .space import Spec
from .store import ResultStore

__all__ = ["SweepReport", "add_area", "points_of", "run_sweep"]

_KEYS = tuple(INT_KEYS) + tuple(OPTION_KEYS)
_CONFIG_COLUMNS = (_KEYS + ("complete", "ok", "workloads", "cycles", "macs", "macs_per_cycle",
                                      "bytes_moved", "sram_bits", "mac_count", "cells", "flip_flops",
                                      "transistors", "area_sram_bits", "pareto", "reason"))
_CONFIRM_COLUMNS = (_KEYS + ("workload", "model_cycles", "tsim_cycles", "error_percent", "outputs_equal"))


@dataclass
class SweepReport:
    """What :func:`run_sweep` did and wrote."""

    model: SweepOutcome
    configs: list
    front: list
    files: dict = field(default_factory=dict)
    confirm: list = field(default_factory=list)
    tsim: SweepOutcome | None = None

    def summary(self) -> str:
        """A few lines for the terminal."""
        rows = self.model.rows
        counts = {s: sum(r.get("status") == s for r in rows) for s in ("ok", "infeasible", "error")}
        lines = [f"{len(rows)} points ({self.model.evaluated} evaluated, {self.model.cached} from the cache): "
                 f"{counts['ok']} ok, {counts['infeasible']} infeasible, {counts['error']} errors",
                 f"{sum(c['complete'] for c in self.configs)} of {len(self.configs)} configurations run every "
                 f"workload; {len(self.front)} on the Pareto front"]
        for c in (self.configs[i] for i in self.front):
            keys = " ".join([f"{k.replace('LOG_', '').lower()}={c[k]}" for k in INT_KEYS]
                            + [k.lower() for k in OPTION_KEYS if c.get(k)])
            lines.append(f"  front: {keys}: {c['cycles']} cycles, {c['mac_count']} MACs, {c['sram_bits'] // 8192} KiB")
        for row in self.confirm:
            lines.append(f"  tsim: {row['workload']} model {row['model_cycles']} tsim {row['tsim_cycles']} "
                         f"({row['error_percent']:+.2f}%)")
        lines += [f"wrote {p}" for p in self.files.values()]
        return "\n".join(lines)


def add_area(configs: list[dict], base: dict, log=None) -> None:
    """Synthesise every complete configuration (:func:`vta.hw.area`, cached) and add its area to its record:
    ``cells``, ``flip_flops``, ``transistors`` and ``area_sram_bits`` (the memories synthesis kept,
    instruction queues included; ``sram_bits`` stays the scratchpads' size).

    Raises
    ------
    vta.errors.BuildError
        If Yosys is missing or a synthesis fails.
    """
    import sys

    from ..env import Environment
    from ..hw import area

    log = log or sys.stderr
    for rec in configs:
        if not rec.get("complete"):
            continue
        cfg = dict(base)
        cfg.update({k: rec[k] for k in _KEYS if rec.get(k) is not None})
        env = Environment(cfg)
        log.write(f"area: synthesising {env.BITSTREAM} (cached after the first time) ...\n")
        a = area(env)
        rec.update(cells=a["cells"], flip_flops=a["flip_flops"], transistors=a["transistors"],
                   area_sram_bits=a["sram_bits"])


def points_of(spec: Spec, level: str = "model") -> list[Point]:
    """The tasks of a spec: every sampled configuration times every workload.

    Raises
    ------
    KeyError
        If a workload name is unknown.
    """
    names = [w.name for w in wl.resolve(spec.workloads)]
    return [Point.make(cfg, name, level) for cfg in spec.points() for name in names]


def run_sweep(spec: Spec, out_dir: str | Path, *, store: ResultStore | None = None, scheduler: str | None = None,
              workers: int | None = None, client=None, progress: bool = False, confirm_tsim: bool = False,
              plot: bool = True, on_row: Callable[[dict], None] | None = None,
              timing_only: bool = False) -> SweepReport:
    """Run ``spec`` on the model, write the tables and the plot, optionally confirm the front on tsim.

    With ``timing_only`` the points run on the timing-only model (level ``model-timing``: the
    same cycles and counters, no outputs, so ``confirm.csv`` has no ``outputs_equal`` check).

    Raises
    ------
    OSError
        If the output directory cannot be written.
    ImportError
        If Dask or matplotlib is needed and missing.
    KeyboardInterrupt
        When interrupted (finished points stay in the store).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    points = points_of(spec, "model-timing" if timing_only else "model")
    opts = dict(store=store, scheduler=scheduler, workers=workers, client=client, progress=progress, on_row=on_row)
    outcome = run_points(points, **opts)
    configs = config_totals(outcome.rows)
    if spec.area:
        add_area(configs, spec.space.base)
    front = pareto_front(configs, _OBJECTIVES_AREA if spec.area else _OBJECTIVES)
    for i, c in enumerate(configs):
        c["pareto"] = i in front
    report = SweepReport(outcome, configs, front)
    report.files["points.csv"] = write_csv(outcome.rows, out / "points.csv")
    report.files["points.jsonl"] = write_jsonl(outcome.rows, out / "points.jsonl")
    report.files["configs.csv"] = write_csv(configs, out / "configs.csv", _CONFIG_COLUMNS)
    if plot:
        report.files["pareto.png"] = plot_pareto(configs, out / "pareto.png")
    if confirm_tsim and front:
        chosen = {tuple(configs[i][k] for k in _KEYS) for i in front}
        model_rows = [r for r in outcome.rows if tuple(r.get(k, False if k in OPTION_KEYS else None) for k in _KEYS)
                      in chosen and r["status"] == "ok"]
        tsim_points = [Point.make({k: r.get(k, False) for k in _KEYS}, r["workload"], "tsim") for r in model_rows]
        report.tsim = run_points(tsim_points, **opts)
        for m, t in zip(model_rows, report.tsim.rows, strict=True):
            rec = {k: m.get(k, False) for k in _KEYS}
            rec.update(workload=m["workload"], model_cycles=m["cycles"], tsim_cycles=t.get("cycles"),
                       error_percent=((100.0 * (m["cycles"] - t["cycles"]) / t["cycles"]) if t.get("cycles")
                                      else float("nan")),
                       outputs_equal=(m.get("output_digest") == t.get("output_digest")) if m.get("output_digest")
                       else None)
            report.confirm.append(rec)
        report.files["confirm.csv"] = write_csv(report.confirm, out / "confirm.csv", _CONFIRM_COLUMNS)
    return report
