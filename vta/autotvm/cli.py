"""``python -m vta tune MODEL.onnx|resnet18 --trials N --out log.json [--config FILE] [--target model|tsim]``.

Extracts the network's tasks (``--ops``: conv2d, grouped and dense by default; add and multiply on
the ALU when asked), tunes each with ``--tuner`` (xgb when xgboost is
installed, else ga) for up to ``--trials`` candidates measured on the cycle model (or tsim) on a
Dask LocalCluster (``--workers``, or ``--scheduler`` for an existing cluster), appends every
record to ``--out``, and prints per task the default chooser's cycles, the best found and the
speed-up.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = ["add_command", "tune_tasks"]

TUNERS = ("xgb", "ga", "random", "gridsearch")


def make_tuner(name: str, task: Any, seed: int = 0):
    """The tuner called ``name`` (``xgb`` falls back to ``ga`` without xgboost).

    Raises
    ------
    ValueError
        If ``name`` is not one of :data:`TUNERS`.
    """
    from . import tuner as t

    if name == "xgb":
        try:
            return t.XGBTuner(task, seed=seed)
        except ImportError:
            return t.GATuner(task, pop_size=50, seed=seed)
    if name == "ga":
        return t.GATuner(task, pop_size=50, seed=seed)
    if name == "random":
        return t.RandomTuner(task, seed=seed)
    if name == "gridsearch":
        return t.GridSearchTuner(task)
    raise ValueError(f"tuner {name!r} is not one of {TUNERS!r}")


def tune_tasks(tasks: Sequence[Any], measure_option: dict, tuner: str = "xgb", n_trial: int = 200,
               early_stopping: int | None = None, log_filename: str | Path = "tuning.log",
               progress: bool = True, seed: int = 0) -> list[dict]:
    """Tune every task (upstream tutorials' ``tune_tasks``); one summary dict per task:
    ``task``, ``layers``, ``trials``, ``default_cycles`` (None when the default chooser's
    candidate failed), ``best_cycles``, ``errors``, ``first_error`` (the message of the first
    error record, or None), ``seconds``."""
    from .callback import log_to_file, progress_bar
    from .measure import CLOCK_HZ

    out = []
    for i, task in enumerate(tasks):
        tun = make_tuner(tuner, task, seed)
        n = min(n_trial, len(task.config_space))
        first_error: list = []

        def keep_first_error(_tuner, _inputs, results, first_error=first_error):
            for res in results:
                if res.error_no and not first_error:
                    first_error.append(f"error {res.error_no}: {res.costs[0] if res.costs else ''}")

        callbacks = [log_to_file(str(log_filename)), keep_first_error]
        if progress:
            callbacks.append(progress_bar(n, prefix=f"[Task {i + 1:2d}/{len(tasks):2d}] "))
        start = time.perf_counter()
        tun.tune(n_trial=n, measure_option=measure_option, early_stopping=early_stopping, callbacks=callbacks)
        default = None
        if getattr(task, "default_index", None) is not None:
            default = next((y for x, y in zip(tun.xs, tun.ys, strict=True) if x == task.default_index), None)
        out.append({"task": task, "layers": getattr(task, "layers", []), "trials": len(tun.xs),
                    "default_cycles": None if default is None or default == float("inf")
                    else round(default * CLOCK_HZ),
                    "best_cycles": round(tun.best_cost * CLOCK_HZ) if tun.best_config is not None else None,
                    "errors": sum(y == float("inf") for y in tun.ys), "seconds": time.perf_counter() - start,
                    "first_error": first_error[0] if first_error else None,
                    "best_config": tun.best_config})
    return out


def format_summary(rows: list[dict]) -> str:
    lines = [(f"{'task':>4} {'layers':<28} {'trials':>6} {'errors':>6} {'default':>11} {'tuned':>11} "
              f"{'speed-up':>8} {'s':>6}")]
    for i, r in enumerate(rows):
        d, b = r["default_cycles"], r["best_cycles"]
        up = f"{d / b:7.3f}x" if d and b else "       -"
        layers = ",".join(r["layers"])[:28]
        lines.append(f"{i + 1:>4} {layers:<28} {r['trials']:>6} {r['errors']:>6} {d or '-':>11} {b or '-':>11} {up} "
                     f"{r['seconds']:6.1f}")
    return "\n".join(lines)


def _cmd_tune(args, out: TextIO) -> int:
    from ..env import Environment, load_config
    from . import LocalBuilder, LocalRunner, extract_from_program, measure_option
    from .measure import close_clusters

    if args.trials < 1:
        raise ValueError(f"--trials {args.trials!r} must be positive")
    source = args.model if args.model == "resnet18" else Path(args.model)
    env = Environment({**load_config(args.config), "TARGET": args.target})
    runner = LocalRunner(target=args.target, n_parallel=args.workers, cluster=args.scheduler)
    option = measure_option(builder=LocalBuilder(), runner=runner)
    start = time.perf_counter()
    with env:
        tasks = extract_from_program(source, ops=tuple(args.ops.split(",")), env=env)
        out.write(f"{len(tasks)} tasks from {args.model} (extracted in {time.perf_counter() - start:.1f} s); "
                  f"measuring on {args.target}\n")
        out.flush()
        try:
            rows = tune_tasks(tasks, option, tuner=args.tuner, n_trial=args.trials, log_filename=args.out,
                              progress=not args.no_progress, seed=args.seed)
        finally:
            close_clusters()
    out.write(format_summary(rows) + "\n")
    out.write(f"tuned {len(tasks)} tasks in {time.perf_counter() - start:.1f} s; records in {args.out}\n")
    return 0


def add_command(sub: Any) -> None:
    """Add ``tune`` to the ``python -m vta`` subcommands."""
    p = sub.add_parser("tune", help="tune a network's conv2d/dense schedules (AutoTVM) on the cycle model or tsim")
    p.add_argument("model", metavar="MODEL.onnx|resnet18", help="an int8 ONNX model, or 'resnet18' (seeded, quantized)")
    p.add_argument("--trials", type=int, default=200, help="candidates measured per task (default 200)")
    p.add_argument("--out", type=Path, required=True, metavar="LOG", help="tuning log (JSON lines, appended)")
    p.add_argument("--config", type=Path, default=None, help="configuration file (default: $VTA_CONFIG or the default)")
    p.add_argument("--target", choices=("model", "tsim"), default="model", help="measure on the cycle model (default) "
                   "or tsim")
    p.add_argument("--tuner", choices=TUNERS, default="xgb", help="search strategy (default xgb; ga without xgboost)")
    p.add_argument("--ops", default="nn.conv2d,nn.dense", help="operators to tune, of nn.conv2d (plain and grouped), "
                   "nn.dense, add, multiply (default nn.conv2d,nn.dense)")
    p.add_argument("--workers", type=int, default=None, help="Dask workers (default: the cores; 0: in this process)")
    p.add_argument("--scheduler", default=None, help="address of an existing Dask scheduler (tcp://host:8786)")
    p.add_argument("--seed", type=int, default=0, help="tuner seed (default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_tune)


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - python -m vta tune is the entry
    ap = argparse.ArgumentParser(prog="vta-tune")
    add_command(ap.add_subparsers(dest="command", required=True))
    args = ap.parse_args(argv)
    import sys

    return args.func(args, sys.stdout)
