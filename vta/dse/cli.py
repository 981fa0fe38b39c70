"""The ``regress`` and ``sweep`` sub-commands of ``python -m vta`` (added by :func:`add_commands`).

::

    python -m vta regress [--config FILE ...] [--baseline PATH] [--update-baseline] [--programs N]
                          [--junit FILE] [--hw DIR] [--stages lint,cocotb,differential,workloads]
                          [--workloads NAME,...] [--threshold PCT] [--model-tolerance PCT]
    python -m vta sweep SPEC [--out DIR] [--scheduler ADDRESS] [--workers N] [--cache DIR]
                             [--confirm-tsim] [--no-progress] [--no-plot] [--timing-only]

``regress`` exits 0 when every check passes, 1 when one fails; ``sweep`` exits 0 when every point
was evaluated (infeasible points included), 1 when a simulation failed, 130 when interrupted.
Both exit 2 on bad arguments or input.

The ``dse`` extra is optional for ``sweep``: without Dask the points are evaluated in this process
(unless ``--scheduler`` names a cluster, which needs Dask), without matplotlib ``pareto.png`` is
not drawn; each is said on stderr.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

__all__ = ["add_commands"]


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of percent") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be non-negative")
    return value / 100.0


def _missing(module: str) -> str | None:
    """The name of the package that cannot be imported when ``module`` is imported, or None."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as exc:
        return exc.name or module
    return None


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def add_commands(sub) -> None:
    """Add ``regress`` and ``sweep`` to an argparse sub-parser collection."""
    from .regress import DEFAULT_WORKLOADS, STAGES

    reg = sub.add_parser("regress", help="lint, cocotb, fsim-vs-tsim programs and cycle baselines of the RTL")
    reg.add_argument("--config", type=Path, action="append", default=None, metavar="FILE",
                     help="configuration to check (repeatable; default: every shipped one)")
    reg.add_argument("--baseline", type=Path, default=None, metavar="PATH",
                     help="baseline directory (default: baselines/) or, with one --config, a baseline file")
    reg.add_argument("--update-baseline", action="store_true", help="record the measured cycles as the new baselines")
    reg.add_argument("--programs", type=int, default=None, metavar="N",
                     help="random differential programs per configuration (default 1000 on the default, 200 on others)")
    reg.add_argument("--junit", type=Path, default=None, metavar="FILE", help="also write JUnit XML")
    reg.add_argument("--hw", type=Path, default=None, metavar="DIR", help="RTL directory under test (default: hw/)")
    reg.add_argument("--stages", type=_names, default=STAGES, metavar="LIST",
                     help=f"comma-separated stages (default: {','.join(STAGES)})")
    reg.add_argument("--workloads", type=_names, default=DEFAULT_WORKLOADS, metavar="LIST",
                     help=f"comma-separated workloads or groups (default: {','.join(DEFAULT_WORKLOADS)})")
    reg.add_argument("--threshold", type=_percent, default=0.01, metavar="PCT",
                     help="cycle change counted as a regression, in percent (default 1)")
    reg.add_argument("--model-tolerance", type=_percent, default=0.01, metavar="PCT",
                     help="largest accepted model error against tsim, in percent (default 1)")
    reg.set_defaults(func=_cmd_regress)

    sw = sub.add_parser("sweep", help="evaluate a design space (SPEC file) on the cycle model with Dask")
    sw.add_argument("spec", type=Path, metavar="SPEC", help="JSON spec: parameters, sampling, workloads")
    sw.add_argument("--out", type=Path, default=Path("sweep-results"), metavar="DIR",
                    help="output directory (default: sweep-results)")
    sw.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="use an existing Dask scheduler (tcp://host:8786) instead of a LocalCluster")
    sw.add_argument("--workers", type=int, default=None, metavar="N",
                    help="LocalCluster worker processes (default: the number of cores; 0: no Dask, in this process)")
    sw.add_argument("--cache", type=Path, default=None, metavar="DIR",
                    help="result cache (default: the vta cache directory, dse/)")
    sw.add_argument("--confirm-tsim", action="store_true", help="run the Pareto configurations on tsim as well")
    sw.add_argument("--no-progress", action="store_true", help="do not draw Dask's progress bar")
    sw.add_argument("--no-plot", action="store_true", help="do not draw pareto.png")
    sw.add_argument("--timing-only", action="store_true", help="run the points on the timing-only cycle model "
                    "(the same cycles, no outputs computed: faster)")
    sw.set_defaults(func=_cmd_sweep)


def _cmd_regress(args, out: TextIO) -> int:
    import sys

    from . import regress
    from .report import format_table, write_junit

    kwargs = {}
    if args.config:
        kwargs["configs"] = args.config
    if args.baseline is not None:
        kwargs["baselines"] = args.baseline
    if args.hw is not None:
        if not args.hw.is_dir():
            sys.stderr.write(f"vta: error: --hw {str(args.hw)!r} is not a directory\n")
            return 2
        kwargs["hw_dir"] = args.hw
    try:
        opts = regress.Options(update_baseline=args.update_baseline, programs=args.programs, threshold=args.threshold,
                               model_tolerance=args.model_tolerance, stages=args.stages, workloads=args.workloads,
                               **kwargs)
        from . import workloads as wl

        wl.resolve(opts.workloads)
    except (ValueError, KeyError) as exc:
        sys.stderr.write(f"vta: error: {exc}\n")
        return 2
    outcome = regress.run(opts, log=sys.stderr)
    out.write(format_table(outcome.checks, outcome.rows))
    for path in outcome.written:
        out.write(f"wrote baseline {path}\n")
    if args.junit is not None:
        write_junit(outcome.checks, args.junit)
        out.write(f"wrote {args.junit}\n")
    return 0 if outcome.ok else 1


def _cmd_sweep(args, out: TextIO) -> int:
    import sys

    from .space import SpecError, load_spec
    from .store import ResultStore
    from .sweep import run_sweep

    try:
        spec = load_spec(args.spec)
        from . import workloads as wl

        wl.resolve(spec.workloads)
    except (SpecError, KeyError, ValueError) as exc:
        sys.stderr.write(f"vta: error: {exc}\n")
        return 2
    if args.workers is not None and args.workers < 0:
        sys.stderr.write(f"vta: error: --workers must be 0 or more, got {args.workers}\n")
        return 2
    workers, plot = args.workers, not args.no_plot
    if args.scheduler is not None or workers != 0:
        missing = _missing("distributed")
        if missing and args.scheduler is not None:
            sys.stderr.write(f"vta: error: --scheduler needs Dask, but {missing!r} cannot be imported; "
                             "pip install 'vta[dse]'\n")
            return 2
        if missing:
            sys.stderr.write(f"vta: note: Dask is not installed ({missing!r} cannot be imported): evaluating the "
                             "points in this process, one at a time; pip install 'vta[dse]' to use every core\n")
            workers = 0
    if plot:
        missing = _missing("matplotlib")
        if missing:
            sys.stderr.write(f"vta: note: skipping pareto.png: matplotlib is not installed ({missing!r} cannot be "
                             "imported); pip install 'vta[dse]' to draw it\n")
            plot = False
    store = ResultStore(args.cache) if args.cache else None
    try:
        report = run_sweep(spec, args.out, store=store, scheduler=args.scheduler, workers=workers,
                           progress=not args.no_progress, confirm_tsim=args.confirm_tsim, plot=plot,
                           timing_only=args.timing_only)
    except KeyboardInterrupt:
        sys.stderr.write("\nvta: sweep interrupted; finished points are cached, run the same command to resume\n")
        return 130
    out.write("\n" + report.summary() + "\n")
    failed = report.model.failed + (report.tsim.failed if report.tsim else 0)
    if failed:
        errors = [r for r in report.model.rows if r.get("status") == "error"]
        for r in errors[:5]:
            out.write(f"  error: {r['workload']}: {r['reason']}\n")
    return 1 if failed else 0
