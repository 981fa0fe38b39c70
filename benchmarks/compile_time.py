"""Compile time of vta.build on the matrix-multiply tutorial (median of 5; the bar is < 1 s).

Run: ``python benchmarks/compile_time.py [--runs 5]`` (``--quick``: one run of each). Each run declares and
schedules the tutorial afresh
(so no lowering is shared) and measures ``vta.build`` alone: lowering through the phase 0..3
pipeline, C emission and the object-file step. The C compiler's output is cached by content; the
figures are given both with a cold cache (every run invokes ``cc``, via a fresh
``VTA_CACHE_DIR``) and with a warm one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import vta  # noqa: E402
from vta.build import build, lower  # noqa: E402
from tests.compiler.workloads import tutorials  # noqa: E402


def main(runs: int = 5) -> None:
    env = vta.get_env()
    cold, warm = [], []
    saved = os.environ.get("VTA_CACHE_DIR")
    try:
        for k in range(runs):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["VTA_CACHE_DIR"] = cache
                case = tutorials.matrix_multiply(env, np.random.default_rng(k))
                t0 = time.perf_counter()
                build(case.schedule, case.args, "ext_dev", name="my_gemm")
                cold.append(time.perf_counter() - t0)
                case = tutorials.matrix_multiply(env, np.random.default_rng(k))
                t0 = time.perf_counter()
                build(case.schedule, case.args, "ext_dev", name="my_gemm")
                warm.append(time.perf_counter() - t0)
    finally:
        if saved is None:
            os.environ.pop("VTA_CACHE_DIR", None)
        else:
            os.environ["VTA_CACHE_DIR"] = saved
    lower_times = []
    for k in range(runs):
        case = tutorials.matrix_multiply(env, np.random.default_rng(k))
        t0 = time.perf_counter()
        lower(case.schedule, case.args, name="my_gemm")
        lower_times.append(time.perf_counter() - t0)
    print(f"vta.build(matrix multiply), cold object cache: median of {runs} "
          f"{statistics.median(cold) * 1e3:.1f} ms (bar < 1000 ms)")
    print(f"vta.build(matrix multiply), warm object cache: median of {runs} {statistics.median(warm) * 1e3:.1f} ms")
    print(f"vta.lower(matrix multiply): median of {runs} {statistics.median(lower_times) * 1e3:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="repetitions per figure (median)")
    parser.add_argument("--quick", action="store_true", help="one repetition (a smoke run)")
    opts = parser.parse_args()
    main(1 if opts.quick else opts.runs)
