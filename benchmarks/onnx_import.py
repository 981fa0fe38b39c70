"""Time of the ONNX import alone: ``vta.frontend.from_onnx`` of the int8 ResNet-18.

Run: ``python benchmarks/onnx_import.py [--runs 5] [--quick]``.

The model is :func:`vta.models.resnet18` (seed 0, 224x224, batch 1) quantized once by onnxruntime
(QDQ, per-channel weights; not timed). Printed: the median of ``--runs`` imports in wall and CPU
seconds, with the load average (the machine is shared: CPU time is the steadier figure), against
the goal of an import under 10 s (the figure tests/frontend/test_onnx_models.py used to assert).
``--quick``: a 32x32 ResNet-18, one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: The import of the 224x224 model must stay under this many seconds of wall time.
GOAL_SECONDS = 10.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="imports to take the median of (default 5)")
    parser.add_argument("--quick", action="store_true", help="smoke run: a 32x32 ResNet-18, one run")
    ns = parser.parse_args()
    size = 32 if ns.quick else 224
    runs = 1 if ns.quick else ns.runs

    from vta.frontend import from_onnx
    from vta.models import quantize, resnet18

    rng = np.random.default_rng(0)
    model = quantize(resnet18(seed=0, image_size=size), rng.standard_normal((2, 3, size, size)).astype(np.float32))
    walls, cpus = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        graph, _ = from_onnx(model)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print(f"ResNet-18 {size}x{size} int8: from_onnx median of {runs}: {wall:.2f} s wall, {cpu:.2f} s CPU, "
          f"{len(graph.nodes)} nodes (load average {os.getloadavg()[0]:.1f})")
    verdict = "met" if wall < GOAL_SECONDS else "MISSED"
    print(f"goal: import under {GOAL_SECONDS:.0f} s wall: {verdict}" + (" (quick mode: 32x32)" if ns.quick else ""))


if __name__ == "__main__":
    main()
