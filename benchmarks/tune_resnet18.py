"""Tuning ResNet-18's conv2d tasks with AutoTVM on the cycle model: wall time, and per task the
default chooser's cycles against the tuned ones.

Run: ``python benchmarks/tune_resnet18.py [--trials 200] [--tuner xgb] [--workers 2] [--quick]
[--tsim-check] [--log FILE]``.

The network is the package's seeded ResNet-18 (ImageNet shapes, quantized by onnxruntime on
two random images); :func:`vta.autotvm.extract_from_program` gives one task per distinct fused
convolution the graph build compiles. Each task is tuned for ``--trials`` candidates (fewer when
its space is smaller), every candidate built and run once on the cycle model (functional, its
output checked against NumPy) on a Dask LocalCluster of ``--workers`` processes. The default
chooser's tiling is always the first candidate, so the tuned cycles are never above it.
``--tsim-check`` re-measures the best candidate of the smallest task on tsim (the Verilated RTL)
and prints both cycle counts (they must be equal). ``--quick``: 3 tasks, 16 trials.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vta import autotvm  # noqa: E402
from vta.autotvm.cli import format_summary, tune_tasks  # noqa: E402
from vta.autotvm.measure import CLOCK_HZ, measure_candidate  # noqa: E402
from vta.env import Environment, get_env  # noqa: E402
import logging  # noqa: E402

logging.getLogger("distributed").setLevel(logging.WARNING)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--tuner", default="xgb")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tsim-check", action="store_true")
    ap.add_argument("--log", default=None)
    args = ap.parse_args(argv)
    env = Environment({**get_env().cfg_dict, "TARGET": "model"})
    log = args.log or os.path.join(tempfile.mkdtemp(), "resnet18.conv2d.log")
    trials = 16 if args.quick else args.trials
    t0 = time.perf_counter()
    with env:
        tasks = autotvm.extract_from_program("resnet18", ops=("nn.conv2d",), env=env)
    if args.quick:
        tasks = sorted(tasks, key=lambda t: len(t.config_space))[:3]
    extract_s = time.perf_counter() - t0
    print(f"{len(tasks)} conv2d tasks extracted in {extract_s:.1f} s; valid points per task: "
          f"{[len(t.config_space) for t in tasks]}", flush=True)
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                    runner=autotvm.LocalRunner(target="model", n_parallel=args.workers))
    t1 = time.perf_counter()
    rows = tune_tasks(tasks, option, tuner=args.tuner, n_trial=trials, log_filename=log, progress=True)
    tune_s = time.perf_counter() - t1
    print(format_summary(rows))
    total_default = sum(r["default_cycles"] for r in rows)
    total_best = sum(r["best_cycles"] for r in rows)
    slower = [i + 1 for i, r in enumerate(rows) if r["best_cycles"] > r["default_cycles"]]
    print(f"trials: {sum(r['trials'] for r in rows)}; tuning wall time {tune_s:.1f} s ({tune_s / 60:.2f} min) on "
          f"{args.workers} workers, extraction {extract_s:.1f} s")
    print(f"sum over tasks: default {total_default:,} cycles, tuned {total_best:,} cycles "
          f"({total_default / total_best:.3f}x); tasks slower than the default: {slower or 'none'}; log {log}")
    if args.tsim_check:
        small = min(range(len(rows)), key=lambda i: rows[i]["best_cycles"])
        task, cfg = rows[small]["task"], rows[small]["best_config"]
        res = measure_candidate(task, cfg, level="tsim")
        tsim_cycles = round(res.costs[0] * CLOCK_HZ) if res.error_no == 0 else None
        print(f"tsim check, task {small + 1} ({','.join(rows[small]['layers'])}), best config {cfg.index}: "
              f"model {rows[small]['best_cycles']:,} cycles, tsim {tsim_cycles} cycles "
              f"({'equal' if tsim_cycles == rows[small]['best_cycles'] else 'DIFFERENT: ' + str(res)})")
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
