"""Build and fsim run time of every ResNet-18 layer scheduled by ``vta.topi``.

Run: ``python benchmarks/resnet18_build.py [--config batch2.json] [--runs 3]`` (``--quick``: the
C11 and classifier layers only, once each). For each layer
(conv2d C2...C11 of reference section 7.3 with the bias epilogue, the 512 -> 1000 classifier
padded to a multiple of BLOCK_OUT, and the 128 x 128 x 128 dense of the upstream benchmark) the
table gives:

* the tiling chosen for the active configuration;
* ``vta.build`` time, median of ``runs``, each on a freshly declared and scheduled layer with a
  cold object cache (the C compiler runs every time; the bar is < 2 s) and with a warm one;
* fsim time of one call (median of ``runs`` calls on the same loaded module), and the GEMM
  count, so the time per GEMM instruction can be compared across layers.

The batch is BATCH of the configuration (1 on the default, 2 on batch2.json); the 128-wide dense
uses batch 128. The machine is shared and noisy: read medians, not single runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vta import nd, rpc, topi  # noqa: E402
from vta.build import build  # noqa: E402
from vta.testing import simulator  # noqa: E402
from vta.topi.conv2d import conv2d_workload  # noqa: E402
from vta.topi.dense import dense_workload  # noqa: E402
from tests.conftest import make_env  # noqa: E402
from tests.compiler.workloads.resnet import RESNET18_CONV, conv_layer, dense_layer  # noqa: E402

LAYERS = list(RESNET18_CONV) + ["fc1000", "dense128"]
#: The layers of ``--quick``: the smallest convolution and the classifier.
QUICK_LAYERS = ["C11", "fc1000"]


def _make(env, name: str, rng):
    if name == "fc1000":
        return dense_layer(env, env.BATCH, 512, 1000, rng)
    if name == "dense128":
        return dense_layer(env, 128, 128, 128, rng)
    return conv_layer(env, name, env.BATCH, rng)


def _timed_build(env, name: str, runs: int, cold: bool) -> float:
    times = []
    saved = os.environ.get("VTA_CACHE_DIR")
    try:
        for k in range(runs):
            with tempfile.TemporaryDirectory() as cache:
                if cold:
                    os.environ["VTA_CACHE_DIR"] = cache
                sched, args, _, _ = _make(env, name, np.random.default_rng(k))
                t0 = time.perf_counter()
                build(sched, args, "ext_dev", name=name)
                times.append(time.perf_counter() - t0)
    finally:
        if saved is None:
            os.environ.pop("VTA_CACHE_DIR", None)
        else:
            os.environ["VTA_CACHE_DIR"] = saved
    return statistics.median(times)


def _timed_run(env, name: str, runs: int) -> tuple[float, int, bool]:
    sched, args, inputs, expect = _make(env, name, np.random.default_rng(0))
    mod = build(sched, args, "ext_dev", name=name)
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        obj = Path(tmp) / f"{name}.o"
        mod.save(obj)
        remote = stack.enter_context(rpc.LocalSession())
        remote.upload(str(obj))
        f = remote.load_module(obj.name)
        dev = remote.ext_dev(0)
        arrays = [stack.enter_context(nd.array(inputs[t.name], dev) if t.name in inputs
                                      else nd.empty(tuple(int(s) for s in t.shape), t.dtype, dev)) for t in args]
        times, gemm = [], 0
        for _ in range(runs):
            simulator.clear_stats()
            t0 = time.perf_counter()
            f(*arrays)
            times.append(time.perf_counter() - t0)
            gemm = simulator.stats()["gemm_counter"]
        out = arrays[-1].numpy()
    got = topi.unpack_nc(out)[:, :expect.shape[1]] if out.ndim == 4 else topi.unpack_nchw(out)
    return statistics.median(times), gemm, bool(np.array_equal(got, expect))


def _tiling(env, name: str) -> str:
    sched, args, _, _ = _make(env, name, np.random.default_rng(0))
    core = next(st.op for st in sched.stages if st.op.tag in (topi.CONV2D_TAG, topi.DENSE_TAG))
    if core.tag == topi.CONV2D_TAG:
        t = topi.choose_conv2d_tiling(env, conv2d_workload(core, bias=len(args) == 4))
        return f"h{t.tile_h} w{t.tile_w} co{t.tile_co} ci{t.tile_ci} t{t.threads}"
    t = topi.choose_dense_tiling(env, dense_workload(core))
    return f"b{t.tile_b} co{t.tile_co} ci{t.tile_ci} t{t.threads}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="vta_config.json", help="a file of configs/ (default: vta_config.json)")
    parser.add_argument("--runs", type=int, default=3, help="repetitions per figure (median)")
    parser.add_argument("--quick", action="store_true", help=f"layers {', '.join(QUICK_LAYERS)}, one repetition")
    ns = parser.parse_args()
    layers = QUICK_LAYERS if ns.quick else LAYERS
    if ns.quick:
        ns.runs = 1
    with make_env(ns.config) as env:
        print(f"configuration {ns.config}: BATCH={env.BATCH} BLOCK={env.BLOCK_IN}x{env.BLOCK_OUT}; "
              f"median of {ns.runs}")
        header = (f"{'layer':<9} {'tiling':<24} {'build cold':>11} {'build warm':>11} {'fsim run':>10} "
                  f"{'GEMMs':>9} {'ns/GEMM':>8}  ok")
        print(header)
        print("-" * len(header))
        worst = 0.0
        for name in layers:
            cold = _timed_build(env, name, ns.runs, cold=True)
            warm = _timed_build(env, name, ns.runs, cold=False)
            run, gemm, ok = _timed_run(env, name, ns.runs)
            worst = max(worst, cold)
            print(f"{name:<9} {_tiling(env, name):<24} {cold * 1e3:>9.0f}ms {warm * 1e3:>9.0f}ms {run * 1e3:>8.0f}ms "
                  f"{gemm:>9} {run / max(gemm, 1) * 1e9:>8.0f}  {'yes' if ok else 'NO'}")
        print(f"slowest cold build: {worst * 1e3:.0f} ms (bar < 2000 ms)")


if __name__ == "__main__":
    main()
