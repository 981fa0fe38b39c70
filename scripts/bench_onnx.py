"""Figures of the ONNX path: ResNet-18 import and build time, wall time on fsim, cycles and wall
time on the cycle model (and tsim with ``--tsim``), digits accuracy and images per second.

    PYTHONPATH=. python scripts/bench_onnx.py [--tsim] [--config FILE]

Not a test: it prints numbers (the closing notes of issue 11 quote them).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tsim", action="store_true", help="also run ResNet-18 on tsim (minutes)")
    ap.add_argument("--config", type=Path, default=None)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import onnxruntime as ort

    from vta.env import Environment, load_config
    from vta.frontend import from_onnx
    from vta.graph import compile as compile_graph
    from vta.models import quantize, resnet18, runner

    def env(target):
        return Environment({**load_config(args.config), "TARGET": target})

    rng = np.random.default_rng(0)
    t = time.perf_counter()
    model = quantize(resnet18(seed=0), rng.standard_normal((4, 3, 224, 224)).astype(np.float32))
    print(f"ResNet-18: quantized by onnxruntime in {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    graph, params = from_onnx(model)
    t_import = time.perf_counter() - t
    with env("sim") as e:
        t = time.perf_counter()
        compile_graph(graph, params, env=e)
        t_build = time.perf_counter() - t
    print(f"ResNet-18: import {t_import:.2f} s, build {t_build:.2f} s (import + build {t_import + t_build:.2f} s)")
    x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"data": x})[0]
    for target in ("sim", "model") + (("tsim",) if args.tsim else ()):
        built = runner.build(model, env(target))
        runner.run(built, x)  # warm-up (first-call compilation of the simulators)
        built.layers.clear()
        built.runs = 0
        t = time.perf_counter()
        out = runner.run(built, x)[0]
        wall = time.perf_counter() - t
        cycles = sum(r.cycles for r in built.layers.values())
        built.close()
        same = int(np.argmax(out)) == int(np.argmax(ref))
        print(f"ResNet-18 on {target}: {wall:.2f} s wall, {cycles if cycles else 'n/a'} cycles, "
              f"top-1 {'equals' if same else 'differs from'} onnxruntime's")
    res = runner.run_digits(env("sim"), out=sys.stdout)
    res["built"].close()
    print(f"digits on fsim: top-1 {res['accuracy']:.4f} (onnxruntime int8 {res['onnxruntime_int8_accuracy']:.4f}), "
          f"{res['images']} images, {res['images_per_s']:.0f} images/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
