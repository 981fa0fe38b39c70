"""A ResNet-18-shaped int8 network, end to end: build, fsim, the cycle model, tsim.

Run: ``python benchmarks/network.py [--quick] [--tsim] [--size N] [--config FILE] [--csv FILE]
[--vs configs/extended.json]``.

The network is built in code with :class:`vta.graph.GraphBuilder` (seeded random int8 weights,
int32 biases, batch 1, 224x224 by default): the 7x7/2 stem with its 3x3/2 max pool, four
stages of two basic blocks (64, 128, 256, 512 channels, 1x1/2 projections on the shortcut
where the shape changes, residual adds), global average pooling and a 512 -> 1000 classifier.
It goes through ``vta.graph.build`` and the graph executor exactly as a deployed network does.

Printed figures:

* build time (``vta.graph.build``: passes, every accelerator operator compiled; object cache
  cold unless ``--warm``, then the same build again with the cache warm) and the size of the
  exported ``net.so``;
* fsim: wall time of one run (after a warm-up run that loads the library) and the outputs;
* the cycle model (``TARGET=model``): total device cycles, the per-layer table of the debug
  executor (node, operator, device, shapes, MACs, instructions, cycles, % of the GEMM bound,
  wall time) and the network's share of the GEMM bound;
* with ``--tsim``: tsim cycles (Verilated RTL; slow: minutes for 224x224), against upstream's
  7.73 M cycles for ResNet-18 on its Chisel tsim with ideal memory. Upstream offloaded only the
  four residual stages (its graph packing started after the max pool and stopped at the average
  pool; the 7x7 stem, the max pool and the classifier ran on the CPU), so the cycles of those
  stages are printed separately for the comparison.

With ``--vs FILE`` the model (and tsim) also run on a second configuration and the cycles of the
four stages are printed side by side; its outputs must be identical too (the hardware options
keep the arithmetic bit for bit). The outputs of fsim, the model and tsim must be identical (the same instructions on the same
semantics); the script says so and exits with status 1 if they are not.
``--quick`` uses a 32x32 input (the same layers, small feature maps) for a fast smoke run.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vta.env import Environment, load_config  # noqa: E402
from vta.graph import GraphBuilder  # noqa: E402
from vta.graph.build_module import build  # noqa: E402
from vta.graph.debug_executor import create as debug_create  # noqa: E402
from vta.runtime import ext_dev  # noqa: E402

#: Upstream's figure: ResNet-18 on the Chisel tsim with ideal memory (DESIGN, Performance).
UPSTREAM_TSIM_CYCLES = 7.73e6
#: Activation scale used throughout (int8 activations around +-32).
ACT_SCALE = 2.0 ** -3
W_SCALE = 2.0 ** -7


class ResNetBuilder:
    """Builds the ResNet-18-shaped graph with seeded random int8 weights."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.b = GraphBuilder()

    def conv(self, x, cout: int, k: int, stride: int, name: str, relu: bool = True, residual=None):
        cin = x.type.shape[1]
        w = self.b.const(f"{name}.w", self.rng.integers(-16, 16, size=(cout, cin, k, k)).astype(np.int8),
                         scale=W_SCALE)
        bias = self.b.const(f"{name}.b", self.rng.integers(-512, 512, size=(cout,)).astype(np.int32))
        p = k // 2
        acc = self.b.qnn.conv2d(x, w, strides=(stride, stride), padding=(p, p, p, p), name=name)
        acc = self.b.nn.bias_add(acc, bias)
        # Requantize so that the typical accumulator (sqrt(K) * 16 * 32) lands around +-32.
        k_terms = cin * k * k
        out_scale = x.type.scale * W_SCALE * 16 * 32 * np.sqrt(k_terms) / 32
        y = self.b.qnn.requantize(acc, output_scale=float(out_scale), output_zero_point=0, out_dtype="int8")
        if residual is not None:
            y = self.b.qnn.add(y, residual, output_scale=ACT_SCALE, output_zero_point=0)
        return self.b.nn.relu(y) if relu else y

    def basic_block(self, x, cout: int, stride: int, name: str):
        shortcut = x
        if stride != 1 or x.type.shape[1] != cout:
            shortcut = self.conv(x, cout, 1, stride, f"{name}.downsample", relu=False)
        h = self.conv(x, cout, 3, stride, f"{name}.conv1")
        return self.conv(h, cout, 3, 1, f"{name}.conv2", residual=shortcut)

    def network(self, size: int = 224, classes: int = 1000):
        b = self.b
        x = b.input("data", (1, 3, size, size), "int8", scale=ACT_SCALE, zero_point=0)
        h = self.conv(x, 64, 7, 2, "conv1")
        h = b.nn.max_pool2d(h, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1), name="maxpool")
        for stage, cout in enumerate((64, 128, 256, 512), start=1):
            for block in range(2):
                stride = 2 if (stage > 1 and block == 0) else 1
                h = self.basic_block(h, cout, stride, f"layer{stage}.{block}")
        h = b.qnn.global_avg_pool2d(h, output_scale=ACT_SCALE, output_zero_point=0, name="avgpool")
        h = b.nn.batch_flatten(h)
        w = b.const("fc.w", self.rng.integers(-16, 16, size=(classes, 512)).astype(np.int8), scale=W_SCALE)
        bias = b.const("fc.b", self.rng.integers(-512, 512, size=(classes,)).astype(np.int32))
        acc = b.nn.bias_add(b.qnn.dense(h, w, name="fc"), bias)
        out_scale = ACT_SCALE * W_SCALE * 16 * 32 * np.sqrt(512) / 32
        logits = b.qnn.requantize(acc, output_scale=float(out_scale), output_zero_point=0, out_dtype="int8")
        return b.finish([logits])


def make_network(size: int = 224, seed: int = 0):
    """The ResNet-18-shaped graph for a ``size`` x ``size`` input."""
    return ResNetBuilder(seed).network(size)


def _env(config: str | None, target: str) -> Environment:
    cfg = load_config(config)
    cfg["TARGET"] = target
    return Environment(cfg)


def _run_once(lib, x: np.ndarray):
    """A debug executor over ``lib``: one warm-up run, then the measured run and its report."""
    m = debug_create(lib.get_graph_json(), lib.get_lib(), ext_dev(0))
    m.set_input(**lib.params)
    m.set_input("data", x)
    m.profile()                      # warm-up: loads the library, allocates the device arrays
    start = time.perf_counter()
    report = m.profile()
    wall = time.perf_counter() - start
    return report, wall, m.get_output(0).numpy()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="32x32 input instead of 224x224")
    ap.add_argument("--size", type=int, default=None, help="input height and width (default 224)")
    ap.add_argument("--tsim", action="store_true", help="also run on tsim (slow)")
    ap.add_argument("--no-model", action="store_true", help="skip the cycle-model run")
    ap.add_argument("--config", default=None, help="configuration file (default: the default one)")
    ap.add_argument("--warm", action="store_true", help="keep the object cache warm (default: cold build)")
    ap.add_argument("--csv", default=None, help="write the per-layer table of the model run to this file")
    ap.add_argument("--vs", default=None, metavar="FILE",
                    help="also run the model (and tsim with --tsim) on this configuration (e.g. "
                         "configs/extended.json, the hardware options) and print the cycles side by side")
    args = ap.parse_args(argv)
    size = args.size or (32 if args.quick else 224)

    graph = make_network(size)
    x = np.random.default_rng(1).integers(-32, 32, size=(1, 3, size, size)).astype(np.int8)
    print(f"ResNet-18-shaped network, batch 1, {size}x{size}, {len(graph.nodes)} graph nodes")

    outputs = {}
    main_reports = {}
    with tempfile.TemporaryDirectory(prefix="vta_net_") as tmp:
        saved_cache = os.environ.get("VTA_CACHE_DIR")
        if not args.warm:
            os.environ["VTA_CACHE_DIR"] = str(Path(tmp) / "cache")
        try:
            with _env(args.config, "sim") as env:
                print(f"configuration: {env.TARGET} BATCH={env.BATCH} BLOCK_IN={env.BLOCK_IN} BLOCK_OUT={env.BLOCK_OUT}")
                start = time.perf_counter()
                lib = build(graph)
                build_s = time.perf_counter() - start
                start = time.perf_counter()
                lib = build(graph)
                warm_s = time.perf_counter() - start
                so = lib.export_library(Path(tmp) / "net.so")
                n_acc = sum(1 for n in _nodes(lib) if n.get("attrs", {}).get("device") == "vta")
                n_cpu = sum(1 for n in _nodes(lib) if n.get("op") == "tvm_op") - n_acc
                print(f"build: {build_s:.2f} s ({'cold' if not args.warm else 'warm'} object cache), "
                      f"{warm_s:.2f} s again (warm), "
                      f"{n_acc} accelerator nodes, {n_cpu} CPU nodes, net.so {so.stat().st_size / 1e6:.2f} MB")
                report, wall, outputs["fsim"] = _run_once(lib, x)
                print(f"fsim: {wall:.2f} s wall for one run "
                      f"({sum(r.seconds for r in report.nodes if r.device == 'vta'):.2f} s in accelerator nodes, "
                      f"{sum(r.seconds for r in report.nodes if r.device == 'cpu'):.2f} s in CPU nodes), "
                      f"{report.total_instructions:,} instructions, {report.total_macs / 1e9:.3f} GMACs")
        finally:
            if saved_cache is None:
                os.environ.pop("VTA_CACHE_DIR", None)
            else:
                os.environ["VTA_CACHE_DIR"] = saved_cache

        if not args.no_model:
            with _env(args.config, "model"):
                lib = build(graph)
                report, wall, outputs["model"] = _run_once(lib, x)
            main_reports["model"] = report
            print(f"\ncycle model: {report.total_cycles:,} cycles, {wall:.2f} s wall\n")
            print(report.table())
            _print_bound(report)
            _print_upstream_part(report, "cycle model")
            if args.csv:
                _write_csv(report, args.csv)

        if args.tsim:
            with _env(args.config, "tsim"):
                lib = build(graph)
                start = time.perf_counter()
                report, wall, outputs["tsim"] = _run_once(lib, x)
            main_reports["tsim"] = report
            cyc = report.total_cycles or 0
            print(f"\ntsim: {cyc:,} cycles ({cyc / 1e6:.2f} M; upstream Chisel tsim, ideal memory: "
                  f"{UPSTREAM_TSIM_CYCLES / 1e6:.2f} M for ResNet-18 at 224x224), {wall:.1f} s wall")
            _print_upstream_part(report, "tsim")

        if args.vs:
            side = {}
            for level in (["model"] if not args.no_model else []) + (["tsim"] if args.tsim else []):
                with _env(args.vs, level) as vs_env:
                    lib = build(graph)
                    report, wall, outputs[f"{level} ({Path(args.vs).name})"] = _run_once(lib, x)
                side[level] = (report, vs_env.options)
            print(f"\nside by side, the four residual stages (upstream: {UPSTREAM_TSIM_CYCLES / 1e6:.2f} M):")
            for level, (report, options) in side.items():
                mine = main_reports.get(level)
                theirs = _stage_cycles(report)
                base = _stage_cycles(mine) if mine is not None else None
                print(f"  {level}: {args.config or 'default configuration'} "
                      f"{'-' if base is None else f'{base:,}'} cycles; {args.vs} (options: "
                      f"{', '.join(options) or 'none'}) {theirs:,} cycles = {theirs / 1e6:.2f} M"
                      + ("" if not base else f" ({theirs / base:.3f}x)")
                      + f"; whole network {report.total_cycles:,}")

    ref = outputs["fsim"]
    same = {k: bool(np.array_equal(v, ref)) for k, v in outputs.items()}
    print("\noutputs identical across levels: " + ", ".join(f"{k}={v}" for k, v in same.items()))
    return 0 if all(same.values()) else 1


def _nodes(lib) -> list[dict]:
    import json

    return json.loads(lib.get_graph_json())["nodes"]


def _print_bound(report) -> None:
    acc = [r for r in report.nodes if r.device == "vta" and r.macs]
    cyc = sum(r.cycles or 0 for r in acc)
    if acc and cyc:
        block = acc[0].block
        print(f"\nconv/dense nodes: {sum(r.macs for r in acc) / 1e9:.3f} GMACs in {cyc:,} cycles = "
              f"{100.0 * sum(r.macs for r in acc) / block / cyc:.1f}% of the GEMM bound "
              f"(one {block}-MAC GEMM uop per cycle); all accelerator nodes: {report.total_cycles:,} cycles")


def _stage_cycles(report) -> int:
    """Cycles of the four residual stages (the accelerator nodes named ``layer*``)."""
    return sum(r.cycles or 0 for r in report.nodes if r.device == "vta" and r.name.startswith("layer"))


def _print_upstream_part(report, level: str) -> None:
    """Cycles of the part upstream ran on VTA: the four stages (its stem, max pool and classifier
    ran on the CPU: graph packing started after the max pool and stopped at the average pool)."""
    stages = sum(r.cycles or 0 for r in report.nodes if r.device == "vta" and r.name.startswith("layer"))
    print(f"{level}: the four residual stages (what upstream offloaded) take {stages:,} cycles = "
          f"{stages / 1e6:.2f} M against upstream's {UPSTREAM_TSIM_CYCLES / 1e6:.2f} M "
          f"({stages / UPSTREAM_TSIM_CYCLES:.2f}x)")


def _write_csv(report, path: str) -> None:
    rows = report.as_dicts()
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
