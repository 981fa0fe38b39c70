"""Share of the multiply-accumulates on the accelerator, per model of the zoo.

Run: ``python benchmarks/zoo_mac_share.py [NAME ...]``.

Each zoo model (:mod:`vta.models.zoo`: published float models from registry wheels, quantized by
onnxruntime's ``quantize_static``) is imported and run through the graph passes
(:func:`vta.graph.optimize`, the default configuration); :func:`vta.graph.mac_share` counts the
MACs per device (accelerator nodes: the logical MACs of the layers they fused; CPU nodes:
convolutions and dense layers from their shapes, onnxruntime regions their recorded MACs). For
the CPU side it lists the largest contributors with the reason each node gives, and it counts the
layout conversions (``layout_transform`` nodes at accelerator region borders). No simulation:
placement only (the figures do not depend on the simulator).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vta.env import get_env  # noqa: E402
from vta.frontend import from_onnx  # noqa: E402
from vta.graph import mac_share, optimize  # noqa: E402
from vta.graph.macs import node_macs  # noqa: E402
from vta.models import zoo  # noqa: E402


def measure(name: str) -> dict:
    """Placement of zoo model ``name``: the share and the CPU MACs by (operator, reason)."""
    graph, params = from_onnx(str(zoo.quantized_model(name)))
    g = optimize(graph.replace(params={**graph.params, **params}) if params else graph, get_env())
    share = mac_share(g)
    cpu = Counter()
    for n in g.nodes:
        if n.attrs.get("device") != "vta" and node_macs(n):
            cpu[(n.op, n.attrs.get("reason", ""))] += node_macs(n)
    ops = Counter(n.op for n in g.nodes if n.attrs.get("device") == "vta")
    transforms = sum(n.op == "layout_transform" for n in g.nodes)
    return {**share, "cpu": cpu, "vta_ops": ops, "layout_transforms": transforms, "nodes": len(g.nodes)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", default=sorted(zoo.ZOO), help="zoo model names (default: all)")
    ap.add_argument("--quick", action="store_true", help="ch_ppocr_cls only (a smoke run)")
    args = ap.parse_args(argv)
    if args.quick:
        args.names = ["ch_ppocr_cls"]
    print(f"{'model':<20}{'family':<14}{'vta MACs':>14}{'cpu MACs':>14}{'share':>8}")
    for name in args.names:
        r = measure(name)
        print(f"{name:<20}{zoo.ZOO[name].family:<14}{r['vta_macs']:>14,}{r['cpu_macs']:>14,}{100 * r['share']:>7.1f}%")
        print("    on the accelerator: " + ", ".join(f"{op} x{k}" for op, k in sorted(r["vta_ops"].items())))
        print(f"    layout conversions: {r['layout_transforms']} of {r['nodes']} nodes")
        for (op, reason), macs in r["cpu"].most_common(4):
            print(f"    cpu {macs:>12,} MACs  {op}: {reason[:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
