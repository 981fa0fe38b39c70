"""Tuning a real zoo model with AutoTVM on the cycle model: per layer the default chooser's cycles
against the tuned build's, and the whole model's.

Run: ``python benchmarks/tune_zoo.py [MODEL] [--trials 32] [--tuner xgb] [--workers 2]
[--ops nn.conv2d,nn.dense,add,multiply] [--tsim-check] [--log FILE] [--quick]``.

MODEL is a name of :data:`vta.models.zoo.ZOO` (default ``ch_ppocr_cls``, the PP-OCR text
direction classifier: plain, grouped and depthwise convolutions, squeeze-and-excitation products
on the ALU, one dense layer). :func:`vta.autotvm.extract_from_program` on the quantized ONNX model
gives one task per distinct accelerator operator of the kinds ``--ops`` (``conv2d_packed.vta``,
``group_conv2d_packed.vta``, ``dense_packed.vta``, ``add.vta``, ``multiply.vta``); each is tuned for
``--trials`` candidates (fewer when its space is smaller), each built and run once on the cycle
model, its output checked against NumPy. The default chooser's tiling is always the first
candidate. Then the model is built twice (``TARGET=model``): with the default chooser, and under
``apply_history_best(log)``; both run one inference on the zoo's sample input. Printed: per
accelerator layer its cycles in both builds and where the tuned build's schedule came from; the
totals; whether the two builds' outputs are identical; ``--tsim-check`` re-measures the best
candidate of the most improved task on tsim (the Verilated RTL) and prints both cycle counts.
``--quick``: only the ``multiply`` tasks, 6 trials each.

Measured (2026-12-07, this branch, default configuration, a 2-core machine shared with other
jobs at load average ~10), ``ch_ppocr_cls --trials 32 --workers 2 --tsim-check``:

* 56 tasks (32 ``conv2d_packed.vta``, 7 ``group_conv2d_packed.vta``, 1 ``dense_packed.vta``,
  16 ``multiply.vta``), 983 trials in 940 s of wall time; 18 tasks found faster than the
  default chooser (0.2-1.4%), none slower. (2 error records: a concurrent CPU-sampling run of
  ``tune_resnet18.py`` deleted candidates' objects from the shared cache, which it no longer does.)
* the whole model, one inference on the cycle model: default 1,901,050 cycles, tuned 1,897,412
  (-0.19%); 26 of the 83 accelerator layers faster (Mul@19 16,510 -> 16,284, Conv@9 12,229 ->
  12,105, Conv@1 24,763 -> 24,583), none slower; the outputs of both builds identical.
* tsim: the tuned Conv@16 (``conv2d_packed.vta``) 4,868 cycles on the model and on tsim; the
  quick mode's tuned Mul@4 (``multiply.vta``) 7,053 on both.

The default chooser is near the optimum of these spaces: the products are ALU-bound (9 ALU
stages per element) and the tilings only move the loads and stores around them.

``ch_ppocr_det --ops add,multiply --trials 16 --workers 2 --tsim-check`` (the PP-OCRv4 text
detector's ALU-only operators): 26 tasks (9 ``add.vta``, 17 ``multiply.vta``), 336 trials in 188 s,
0 errors; 24 tasks faster. The whole model: default 1,767,433 cycles, tuned 1,751,622 (-0.89%);
42 of its ALU layers faster, none slower, outputs identical. The small late layers gain most:
their default tiles hold one channel block of a few rows, while two to four blocks per tile halve
the instructions (p2o.Mul.124 3,808 -> 2,799, -26.5%; p2o.Mul.114 and its 6 twins 4,370 -> 3,375;
p2o.Add.228 1,351 -> 1,072). tsim: the tuned p2o.Mul.164 352 cycles on both.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from vta import autotvm  # noqa: E402
from vta.autotvm.cli import format_summary, tune_tasks  # noqa: E402
from vta.autotvm.measure import CLOCK_HZ, measure_candidate  # noqa: E402
from vta.env import Environment, get_env  # noqa: E402
from vta.models import runner, zoo  # noqa: E402

logging.getLogger("distributed").setLevel(logging.WARNING)

ALL_OPS = "nn.conv2d,nn.dense,add,multiply"


def run_model(path, feeds, env, log=None):
    """``(per-layer rows, outputs, decisions)`` of one inference of the model built with the
    default chooser (``log`` None) or under ``apply_history_best(log)``."""
    decisions = []
    if log is None:
        built = runner.build(path, env)
    else:
        with autotvm.apply_history_best(log) as ctx:
            built = runner.build(path, env)
        decisions = ctx.decisions
    try:
        outs = runner.run(built, feeds)
        rows = {name: r for name, r in built.layers.items() if r.device == "vta"}
    finally:
        built.close()
    return rows, outs, decisions


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default="ch_ppocr_cls", choices=sorted(zoo.ZOO))
    ap.add_argument("--trials", type=int, default=32)
    ap.add_argument("--tuner", default="xgb")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--ops", default=ALL_OPS)
    ap.add_argument("--tsim-check", action="store_true")
    ap.add_argument("--log", default=None)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    ops = ("multiply",) if args.quick else tuple(args.ops.split(","))
    trials = 6 if args.quick else args.trials
    env = Environment({**get_env().cfg_dict, "TARGET": "model"})
    log = args.log or os.path.join(tempfile.mkdtemp(), f"{args.model}.log")
    path = zoo.quantized_model(args.model)
    feeds = zoo.sample_feeds(args.model, 1, seed=21)[0]

    t0 = time.perf_counter()
    with env:
        tasks = autotvm.extract_from_program(str(path), ops=ops, env=env)
    kinds = {}
    for t in tasks:
        kinds[t.name] = kinds.get(t.name, 0) + 1
    print(f"{args.model}: {len(tasks)} tasks extracted in {time.perf_counter() - t0:.1f} s "
          f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}); valid points per task: "
          f"{[len(t.config_space) for t in tasks]}", flush=True)
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                    runner=autotvm.LocalRunner(target="model", n_parallel=args.workers))
    t1 = time.perf_counter()
    rows = tune_tasks(tasks, option, tuner=args.tuner, n_trial=trials, log_filename=log, progress=not args.quick)
    autotvm.measure.close_clusters()
    tune_s = time.perf_counter() - t1
    print(format_summary(rows))
    errors = sum(r["errors"] for r in rows)
    for i, r in enumerate(rows):
        if r["first_error"]:
            print(f"task {i + 1} {r['task'].name}: {r['errors']} error records, the first: {r['first_error'][:300]}")
    print(f"trials: {sum(r['trials'] for r in rows)} ({errors} error records); tuning wall time {tune_s:.1f} s "
          f"on {args.workers} workers; log {log}", flush=True)

    default_rows, default_outs, _ = run_model(path, feeds, env)
    tuned_rows, tuned_outs, decisions = run_model(path, feeds, env, log)
    task_of = {layer: t for t in tasks for layer in t.layers}
    tuned_tasks = {(d["task"], repr(d["args"]), repr(d["kwargs"])) for d in decisions if d["source"] == "tuned"}
    print(f"{'layer':<34} {'op':<14} {'task':<24} {'default':>9} {'tuned':>9} {'change':>8}  schedule")
    slower, faster = [], []
    for name, d in default_rows.items():
        t = tuned_rows.get(name)
        if t is None:
            continue
        task = task_of.get(name)
        source = "-"
        if task is not None:
            source = "tuned" if (task.name, repr(task.args), repr(task.kwargs)) in tuned_tasks else "default"
        change = (t.cycles - d.cycles) / d.cycles if d.cycles else 0.0
        if t.cycles > d.cycles:
            slower.append(name)
        elif t.cycles < d.cycles:
            faster.append(name)
        print(f"{name[:34]:<34} {d.op[:14]:<14} {(task.name if task else '-')[:24]:<24} {d.cycles:>9,} "
              f"{t.cycles:>9,} {change:+8.2%}  {source}")
    total_d = sum(r.cycles for r in default_rows.values())
    total_t = sum(r.cycles for r in tuned_rows.values())
    identical = all(np.array_equal(a, b) for a, b in zip(default_outs, tuned_outs, strict=True))
    print(f"total on the accelerator: default {total_d:,} cycles, tuned {total_t:,} cycles "
          f"({(total_t - total_d) / total_d:+.2%}, {total_d / total_t:.3f}x); layers faster: {len(faster)}, "
          f"slower: {len(slower)} {slower or ''}; outputs identical: {identical}")
    if args.tsim_check:
        gains = [i for i, r in enumerate(rows) if r["best_cycles"] and r["default_cycles"]
                 and r["best_cycles"] < r["default_cycles"]]
        pick = min(gains or range(len(rows)), key=lambda i: rows[i]["best_cycles"])
        task, cfg = rows[pick]["task"], rows[pick]["best_config"]
        res = measure_candidate(task, cfg, level="tsim")
        tsim_cycles = round(res.costs[0] * CLOCK_HZ) if res.error_no == 0 else None
        print(f"tsim check, task {pick + 1} {task.name} ({','.join(rows[pick]['layers'])[:40]}), best config "
              f"{cfg.index}: model {rows[pick]['best_cycles']:,} cycles, tsim {tsim_cycles} cycles "
              f"({'equal' if tsim_cycles == rows[pick]['best_cycles'] else 'DIFFERENT: ' + str(res)})")
    return 1 if slower or not identical else 0


if __name__ == "__main__":
    sys.exit(main())
