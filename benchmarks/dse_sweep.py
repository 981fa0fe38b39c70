"""Design-space sweep throughput: points per second on a Dask LocalCluster of 1 and 2 workers.

Run from the repository root (``pip install vta[dse]``)::

    python benchmarks/dse_sweep.py [--workers 1 2] [--workloads resnet18.C7 resnet18.C10]
                                   [--levels model model-timing]

The space is a grid of 108 configurations (LOG_BATCH 0..1, LOG_BLOCK 4..5, three input, weight
and accumulator buffer sizes each) times the workloads (default: the two 1x1 ResNet-18 layers),
216 points. Every run starts with an empty result cache in a temporary directory, so every point
is evaluated; compiler and RTL caches are warm after the first run. Printed per worker count:
points, how many ran (the rest are infeasible or failed), the wall time of the sweep and, cluster start-up (and the
fresh clusters that points left over by workers whose
DRAM arena filled up need) included. Each worker count runs once per level, side by side: ``model``
(the cycle model, fsim's execution included) and ``model-timing`` (the timing-only cycle model:
the same cycles, no outputs; ``python -m vta sweep --timing-only``). The machine is shared: read
the figures as rough.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vta.dse.engine import run_points
from vta.dse.evaluate import Point
from vta.dse.space import Space
from vta.dse.store import ResultStore

SPACE = {"LOG_BATCH": [0, 1], "LOG_BLOCK": [4, 5], "LOG_INP_BUFF_SIZE": [14, 15, 16],
         "LOG_WGT_BUFF_SIZE": [17, 18, 19], "LOG_ACC_BUFF_SIZE": [16, 17, 18]}


def measure(points: list, workers: int) -> dict:
    """One sweep on an embedded cluster of ``workers`` (fresh clusters for the rounds a full
    worker arena needs are included in the time)."""
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        outcome = run_points(points, store=ResultStore(tmp), workers=workers)
        wall = time.perf_counter() - t0
    ok = sum(r["status"] == "ok" for r in outcome.rows)
    return {"workers": workers, "points": len(points), "ok": ok, "failed": outcome.failed, "sweep_s": wall,
            "points_per_s": len(points) / wall, "ok_points_per_s": ok / wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--workloads", nargs="+", default=["resnet18.C7", "resnet18.C10"])
    ap.add_argument("--levels", nargs="+", default=["model", "model-timing"], choices=["model", "model-timing"])
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 configurations, one workload, one worker")
    args = ap.parse_args()
    space = SPACE
    if args.quick:
        space = {"LOG_BATCH": [0], "LOG_BLOCK": [4], "LOG_INP_BUFF_SIZE": [15, 16], "LOG_WGT_BUFF_SIZE": [18],
                 "LOG_ACC_BUFF_SIZE": [17]}
        args.workers, args.workloads = [1], ["resnet18.C10"]
    configs = list(Space(space).grid())
    print(
        f"{len(configs) * len(args.workloads)} points ({len(configs)} configurations x {len(args.workloads)} workloads)"
    )
    print(f"{'workers':>7} {'points':>6} {'ok':>4} {'failed':>6} {'wall s':>8} {'points/s':>8} {'ok pts/s':>8}  level")
    for n in args.workers:
        for level in args.levels:
            points = [Point.make(cfg, w, level) for cfg in configs for w in args.workloads]
            r = measure(points, n)
            print(f"{r['workers']:>7} {r['points']:>6} {r['ok']:>4} {r['failed']:>6} {r['sweep_s']:>8.1f} "
                  f"{r['points_per_s']:>8.2f} {r['ok_points_per_s']:>8.2f}  {level}", flush=True)


if __name__ == "__main__":
    main()
