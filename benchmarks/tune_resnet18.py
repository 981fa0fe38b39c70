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
``--cpu-sample N`` measures N candidates per task in this process, each with an empty object
cache, and prints the median CPU seconds per candidate (this process plus its compiler
subprocesses: a figure the load of a shared machine does not change), the tuner's own CPU per
trial in the parent (``--tuner`` over the largest space, measurements replaced by the cycle
estimate) and the tuning time both project on ``--workers`` idle cores; ``--cpu-only`` prints
only these (no tuning run; 5 candidates per task unless ``--cpu-sample`` says otherwise).

Measured (2026-11-29, this branch, default configuration, ideal memory, a 2-core machine shared
with other jobs at load average 14-22, so wall times are several times what idle cores give):

* ``--trials 24`` (xgb), all 18 tasks: 432 trials, 0 errors, 18.1 min wall; default
  9,540,099 cycles summed over the tasks, tuned 9,536,720; 6 tasks 0.05-0.24% faster
  (layer2.1.conv1 629,590 -> 628,440, layer3.0.downsample 74,580 -> 74,402), none slower.
* ``--trials 200`` (xgb), stopped after 19 min at load average 7-12: tasks 1-8 done (1,600
  trials, 0 errors, about 134 s of wall per task), 7 of them 0.12-0.29% faster than the default
  (conv1 1,424,289 -> 1,421,115; layer2.0.conv1 381,928 -> 380,820), layer2.0.downsample equal.
* ``--trials 200 --tasks 3 --cpu-sample 3 --tsim-check``: the three smallest spaces (154, 169,
  169 points) searched whole, 492 trials in 14.0 min wall: the default chooser's tiling is the
  exact optimum of all three; tsim gives the best candidate's 274,510 cycles exactly.
* CPU per candidate with an empty build cache (six tasks, three candidates each): median
  0.24 s (0.16-0.32); 18 tasks x 200 trials = 3,600 candidates x 0.24 s / 2 cores = 7.2 min
  on two idle cores (the target is 10 min; the loaded machine could not show it in wall time).
* 2026-12-07, candidates' host code compiled at ``-O0`` (it only drives the simulator; the
  cycles and outputs are those of ``-O1``): ``--cpu-only --cpu-sample 5``, all 18 tasks, empty
  object cache: median 0.165 s per candidate (0.117-0.227); the xgb tuner 3.2 ms per trial
  in the parent; 3,461 trials (200 per task, fewer where the space is smaller) = 3,461 x 0.165
  s / 2 + 3,461 x 0.0032 s = 4.9 min on two idle cores (a second run, the objects compiled into
  a private cache: 0.155 s, 3.9 ms, 4.7 min). Interleaved A/B on the same 30
  candidates (5 tasks x 6), object cache cleared before each: ``-O1`` median 0.215 s, ``-O0``
  0.173 s, every cycle count equal. Where a candidate's CPU goes (20 candidates, ``-O1``):
  lowering 0.08 s, the C compiler and linker 0.085 s, the checked cycle-model run 0.05-0.1 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import logging

from vta import autotvm
from vta.autotvm.cli import format_summary, tune_tasks
from vta.autotvm.measure import CLOCK_HZ, measure_candidate
from vta.env import Environment, get_env

logging.getLogger("distributed").setLevel(logging.WARNING)


def _cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def cpu_seconds_per_candidate(rows, n: int) -> list[float]:
    """Median CPU seconds of ``n`` candidates per task, measured in this process with an empty
    object cache (wall time on a shared machine says little; CPU time does not depend on the load).

    The candidates' objects go to a private, fresh directory for the duration (a tuning run builds
    every candidate once, so a hit in the user's cache would flatter the figure; deleting entries
    there would pull objects from under a concurrent tuning run)."""
    import vta.runtime.native_lib as native_lib

    shared = native_lib.cache_dir
    private = Path(tempfile.mkdtemp(prefix="vta_cpu_sample_"))

    def cold_codegen(kind: str) -> Path:
        if kind != "codegen":
            return shared(kind)
        path = private / kind
        path.mkdir(parents=True, exist_ok=True)
        return path

    out = []
    native_lib.cache_dir = cold_codegen
    try:
        for r in rows:
            task = r["task"]
            valid = task.config_space.valid_indices()
            measure_candidate(task, task.config_space.get(valid[0]))  # warm: references, devices
            times = []
            for index in valid[1:n + 1]:
                start = _cpu()
                measure_candidate(task, task.config_space.get(index))
                times.append(_cpu() - start)
            out.append(statistics.median(times))
    finally:
        native_lib.cache_dir = shared
        shutil.rmtree(private, ignore_errors=True)
    return out


def tuner_cpu_per_trial(task, tuner: str, trials: int) -> float:
    """CPU seconds the tuner itself spends per trial in the parent process (model fitting and
    ranking for xgb): ``trials`` trials of ``task`` whose measurements are replaced by the default
    chooser's cycle estimate (instant), so only the tuner's own work is timed."""
    import vta.autotvm.measure as m
    from vta.autotvm.cli import make_tuner
    from vta.topi.tiling import estimate_conv2d_cycles
    from vta.topi.tuned import qconv2d_workload

    env = get_env()
    wl = qconv2d_workload(task.spec, env)

    def fake_batch(task_, configs, option):
        from vta.autotvm.vta_ops import tiling_from_config

        return [m.MeasureResult((estimate_conv2d_cycles(env, wl, tiling_from_config("conv2d", c)) / CLOCK_HZ,),
                                0, 0.0, time.time()) for c in configs]

    import importlib

    tuner_mod = importlib.import_module("vta.autotvm.tuner.tuner")
    real = tuner_mod.measure_batch
    tuner_mod.measure_batch = fake_batch
    try:
        tun = make_tuner(tuner, task)
        n = min(trials, len(task.config_space))
        option = autotvm.measure_option(runner=autotvm.LocalRunner(target="model", n_parallel=0))
        start = _cpu()
        tun.tune(n_trial=n, measure_option=option)
        spent = _cpu() - start
    finally:
        tuner_mod.measure_batch = real
    return spent / n


def print_cpu_figures(rows, args) -> None:
    """The CPU cost per candidate and per tuner trial, and the tuning time they project."""
    cpu_per = cpu_seconds_per_candidate(rows, args.cpu_sample)
    planned = sum(min(args.trials, len(r["task"].config_space)) for r in rows)
    biggest = max(rows, key=lambda r: len(r["task"].config_space))["task"]
    tuner_per = tuner_cpu_per_trial(biggest, args.tuner, args.trials)
    per = statistics.median(cpu_per)
    minutes = (planned * per / args.workers + planned * tuner_per) / 60
    print(f"CPU per candidate (build + checked cycle-model run, this process and its compilers, empty object "
          f"cache, median of {args.cpu_sample} per task over {len(cpu_per)} tasks): {per:.3f} s "
          f"(min {min(cpu_per):.3f}, max {max(cpu_per):.3f}); {args.tuner} tuner in the parent: "
          f"{tuner_per * 1000:.1f} ms CPU per trial ({len(biggest.config_space)}-point space)")
    print(f"projection: {planned} trials at {args.trials} per task = {planned} x {per:.3f} s / {args.workers} "
          f"cores + {planned} x {tuner_per:.4f} s (tuner, serial) = {minutes:.1f} min on {args.workers} idle cores")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--tuner", default="xgb")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tasks", type=int, default=None, metavar="N", help="only the N tasks with the smallest spaces")
    ap.add_argument("--tsim-check", action="store_true")
    ap.add_argument("--log", default=None)
    ap.add_argument("--cpu-sample", type=int, default=0, metavar="N",
                    help="also measure N candidates per task in this process and print their CPU time")
    ap.add_argument("--cpu-only", action="store_true",
                    help="no tuning run: only the CPU figures of --cpu-sample (default 5) and the projection")
    args = ap.parse_args(argv)
    env = Environment({**get_env().cfg_dict, "TARGET": "model"})
    log = args.log or os.path.join(tempfile.mkdtemp(), "resnet18.conv2d.log")
    trials = 16 if args.quick else args.trials
    t0 = time.perf_counter()
    with env:
        tasks = autotvm.extract_from_program("resnet18", ops=("nn.conv2d",), env=env)
    if args.quick or args.tasks:
        tasks = sorted(tasks, key=lambda t: len(t.config_space))[:args.tasks or 3]
    extract_s = time.perf_counter() - t0
    print(f"{len(tasks)} conv2d tasks extracted in {extract_s:.1f} s; valid points per task: "
          f"{[len(t.config_space) for t in tasks]}", flush=True)
    if args.cpu_only:
        args.cpu_sample = args.cpu_sample or 5
        print_cpu_figures([{"task": t} for t in tasks], args)
        return 0
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                    runner=autotvm.LocalRunner(target="model", n_parallel=args.workers))
    t1 = time.perf_counter()
    rows = tune_tasks(tasks, option, tuner=args.tuner, n_trial=trials, log_filename=log, progress=True)
    autotvm.measure.close_clusters()
    tune_s = time.perf_counter() - t1
    print(format_summary(rows))
    total_default = sum(r["default_cycles"] for r in rows)
    total_best = sum(r["best_cycles"] for r in rows)
    slower = [i + 1 for i, r in enumerate(rows) if r["best_cycles"] > r["default_cycles"]]
    print(f"trials: {sum(r['trials'] for r in rows)}; tuning wall time {tune_s:.1f} s ({tune_s / 60:.2f} min) on "
          f"{args.workers} workers, extraction {extract_s:.1f} s")
    print(f"sum over tasks: default {total_default:,} cycles, tuned {total_best:,} cycles "
          f"({total_default / total_best:.3f}x); tasks slower than the default: {slower or 'none'}; log {log}")
    if args.cpu_sample:
        print_cpu_figures(rows, args)
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
