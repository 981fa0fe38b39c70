"""Build time of the int8 ResNet-18: ONNX import + ``vta.graph.compile``, cold and warm cache.

Run: ``python benchmarks/network_build.py [--runs 3] [--jobs N] [--profile FILE] [--config FILE]
[--model FILE] [--no-split]``.

The network is :func:`vta.models.resnet18` (seed 0, 224x224, batch 1) quantized once by
onnxruntime (:func:`vta.models.quantize`, QDQ, per-channel weights); quantization is not timed.
Printed figures, each the median of ``--runs`` runs:

* cold build: a fresh, empty cache directory (``VTA_CACHE_DIR``) for each run, so every
  accelerator function is lowered and compiled by the C compiler; ``from_onnx`` + ``compile``;
* warm build: the same build again on the cache the cold run filled;
* the split of one cold build done in this process (``VTA_BUILD_JOBS=1``, no worker
  processes): TE declaration and scheduling, lowering (ScheduleOps and the phase 0..3 passes),
  C code generation, the C compiler, and the rest (import, graph passes, packing the
  parameters). With worker processes the total is the cold figure above.

Every figure is given as wall time and as CPU time (this process and its reaped children: the
worker processes and the C compiler), with the load average: the machine is shared, so wall
times depend on the other users; CPU times much less. ``--profile FILE`` also writes a cProfile
(CPU clock) of one sequential cold build to ``FILE`` and prints the 25 functions with the
largest cumulative time.

Measured on the 2-core development machine at load average ~6 (``--runs 3``): before the speed
work, cold 19.1 s wall / 12.4 s CPU, warm 0.70 s; after it, cold 7.7 s wall / 5.2 s CPU
(sequential: 5.4 s wall / 4.1 s CPU, of which lowering 1.5, the C compiler 2.0, TE 0.2, the
rest 0.35), warm 0.56 s wall / 0.35 s CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vta.env import Environment, load_config  # noqa: E402


@contextlib.contextmanager
def _environ(**values: str | None) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (workers, the C compiler)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _build_once(model, env: Environment) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``from_onnx`` + ``vta.graph.compile``."""
    from vta.frontend import from_onnx
    from vta.graph import compile as compile_graph

    c0, t0 = _cpu(), time.perf_counter()
    graph, params = from_onnx(model)
    compile_graph(graph, params, env=env)
    return time.perf_counter() - t0, _cpu() - c0


class _Split:
    """Wall and CPU time (this process and its reaped children, the C compiler) spent inside a
    few functions, patched in place for one build."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner, attr: str, label: str) -> None:
        orig = getattr(owner, attr)

        def timed(*args, **kwargs):
            t0, c0 = time.perf_counter(), _cpu()
            try:
                return orig(*args, **kwargs)
            finally:
                acc = self.times.setdefault(label, [0.0, 0.0])
                acc[0] += time.perf_counter() - t0
                acc[1] += _cpu() - c0

        setattr(owner, attr, timed)
        self._undo.append(lambda: setattr(owner, attr, orig))

    def restore(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


def _split_build(model, env: Environment) -> tuple[tuple[float, float], dict[str, tuple[float, float]]]:
    """One sequential cold build: (wall, CPU) in total and of each step."""
    import vta.codegen as vcodegen
    from vta.topi import qnn

    vbuild = sys.modules["vta.build"]
    vcompile = sys.modules["vta.codegen.compile"]
    split = _Split()
    for name in ("build_qconv2d", "build_qdense", "build_qadd", "build_maxpool"):
        split.wrap(qnn, name, "operator builders")
    split.wrap(vbuild, "build", "vta.build")
    split.wrap(vbuild, "lower", "lowering")
    split.wrap(vcodegen, "emit_c", "codegen")
    split.wrap(vcompile.subprocess, "run", "cc")
    try:
        with tempfile.TemporaryDirectory() as cache, _environ(VTA_CACHE_DIR=cache, VTA_BUILD_JOBS="1"):
            total = _build_once(model, env)
    finally:
        split.restore()
    t = {k: tuple(v) for k, v in split.times.items()}
    zero = (0.0, 0.0)

    def minus(a, b):
        return (a[0] - b[0], a[1] - b[1])

    ops = t.get("operator builders", zero)
    return total, {
        "TE declare + schedule + arg layout": minus(ops, t.get("vta.build", zero)),
        "lowering (ScheduleOps + phases 0..3)": t.get("lowering", zero),
        "C codegen": t.get("codegen", zero),
        "cc": t.get("cc", zero),
        "other (import, graph passes, packing)": minus(total, ops),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="repetitions of each figure (median)")
    parser.add_argument("--jobs", type=int, default=None, help="VTA_BUILD_JOBS for the cold/warm builds")
    parser.add_argument("--config", type=Path, default=None, help="configuration file (default: the package's)")
    parser.add_argument("--profile", type=Path, default=None, help="write a cProfile of one sequential cold build")
    parser.add_argument("--no-split", action="store_true", help="skip the sequential split build")
    parser.add_argument("--model", type=Path, default=None,
                        help="an already quantized ONNX model to build instead of quantizing ResNet-18 here")
    parser.add_argument("--quick", action="store_true", help="smoke run: a 32x32 ResNet-18, one run, no split")
    ns = parser.parse_args()
    size = 224
    if ns.quick:
        ns.runs, ns.no_split, size = 1, True, 32

    if ns.model is not None:
        import onnx

        model = onnx.load(str(ns.model))
        print(f"model {ns.model}")
    else:
        from vta.models import quantize, resnet18

        rng = np.random.default_rng(0)
        t0 = time.perf_counter()
        model = quantize(resnet18(seed=0, image_size=size), rng.standard_normal((2, 3, size, size)).astype(np.float32))
        print(f"ResNet-18 quantized by onnxruntime in {time.perf_counter() - t0:.1f} s (not timed below)")
    env = Environment({**load_config(ns.config), "TARGET": "sim"})
    jobs = None if ns.jobs is None else str(ns.jobs)

    figures: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
    with env:
        for _ in range(ns.runs):
            with tempfile.TemporaryDirectory() as cache, _environ(VTA_CACHE_DIR=cache, VTA_BUILD_JOBS=jobs):
                figures["cold"].append(_build_once(model, env))
                figures["warm"].append(_build_once(model, env))
        load = os.getloadavg()[0]
        for what, runs in figures.items():
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            print(f"{what} build (import + compile): median {wall:.2f} s wall, {cpu:.2f} s CPU  "
                  f"(runs {', '.join(f'{w:.2f}' for w, _ in runs)} s; load average {load:.1f})")
        if not ns.no_split:
            total, parts = _split_build(model, env)
            print(f"one sequential cold build (VTA_BUILD_JOBS=1): {total[0]:.2f} s wall, {total[1]:.2f} s CPU")
            for label, (wall, cpu) in parts.items():
                print(f"  {label:<40} {wall:6.2f} s wall {cpu:6.2f} s CPU")
        if ns.profile is not None:
            prof = cProfile.Profile(time.process_time)
            with tempfile.TemporaryDirectory() as cache, _environ(VTA_CACHE_DIR=cache, VTA_BUILD_JOBS="1"):
                prof.enable()
                _build_once(model, env)
                prof.disable()
            prof.dump_stats(str(ns.profile))
            pstats.Stats(str(ns.profile)).sort_stats("cumulative").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
