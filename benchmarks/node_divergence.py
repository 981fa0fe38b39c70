"""Which node diverges from onnxruntime: every integer tensor of a quantized model, end to end and
in isolation (:mod:`vta.models.divergence`).

Run: ``python benchmarks/node_divergence.py [NAME|MODEL.onnx ...] [--requant-mode fixed|wide]
[--all] [--seed 21] [--profile F ...] [--quick]`` (default: every model of :data:`vta.models.zoo.ZOO` on its sample
page of seed 21; ``--quick``: the text-direction classifier).

Per model it prints the tensors that are not wholly equal to onnxruntime's (``--all``: every
tensor), in the model's topological order, with the operator that computes it in the ONNX model,
our node, its device, and per run the share of equal elements, the largest difference in
quantized units and the cosine similarity:

* ``e2e``: our run as it is (the difference accumulated up to the tensor);
* ``iso``: teacher-forced, every node fed onnxruntime's values of its inputs (the node's own
  arithmetic).

Then per operator of ours the isolated agreement over all its tensors, the first tensor that
differs end to end, and the model outputs' cosines; with ``--profile 0.2 0.4 ...`` also the
outputs' cosines when the first 20%, 40%, ... of the tensors are forced to onnxruntime's (where
along the depth the outputs' error is made).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vta.errors import ModelFetchError  # noqa: E402


def summary(rows, out=sys.stdout) -> None:
    """Per operator: isolated equal share; the first divergence; the outputs."""
    by_op: dict = {}
    for r in rows:
        if r.onnx_op == "output" or r.iso_equal is None:
            continue
        t = by_op.setdefault((r.op, r.device), [0.0, 0, 0, 0, 0.0])
        t[0] += r.iso_equal * r.size
        t[1] += r.size
        t[2] += int(r.iso_equal == 1.0)
        t[3] += 1
        t[4] = max(t[4], r.iso_max_diff)
    for (op, dev), (eq, size, whole, count, mx) in sorted(by_op.items(), key=lambda kv: kv[1][0] / kv[1][1]):
        print(f"  isolated {op:24s} {dev:3s}: {100 * eq / size:9.5f}% of {size} elements equal, "
              f"{whole}/{count} tensors wholly equal, largest difference {mx:.0f}", file=out)
    first = next((r for r in rows if r.onnx_op != "output" and r.equal < 1.0), None)
    if first is not None:
        print(f"  first tensor differing end to end: {first.tensor} ({first.onnx_op} -> {first.op}, "
              f"{100 * first.equal:.4f}% equal)", file=out)
    for r in rows:
        if r.onnx_op == "output":
            print(f"  output {r.tensor}: cosine {r.cosine:.5f}, {100 * r.equal:.2f}% equal, "
                  f"largest difference {r.max_diff:.4g}", file=out)


def prefix_profile(path, feeds, env, mode: str, fractions, out=sys.stdout) -> None:
    """The outputs' cosines when the first part of the model's tensors (a fraction of them, in
    topological order) is replaced by onnxruntime's: where along the depth the outputs' error is
    made."""
    import onnx

    from vta.models.divergence import node_divergence

    order = [o for n in onnx.load(str(path)).graph.node for o in n.output]
    pos = {t: i for i, t in enumerate(order)}
    for frac in fractions:
        cut = int(frac * len(order))
        rows = node_divergence(path, feeds, env, requant_mode=mode, force=lambda t, cut=cut: pos.get(t, 0) < cut)
        cosines = " ".join(f"{r.iso_cosine:.5f}" for r in rows if r.onnx_op == "output")
        print(f"  first {100 * frac:3.0f}% of the tensors forced to onnxruntime's: output cosines {cosines}", file=out)


def measure(name: str, mode: str, seed: int, show_all: bool, profile=(), out=sys.stdout) -> list:
    from vta.env import Environment, get_env
    from vta.models import zoo
    from vta.models.divergence import format_divergence, node_divergence

    env = Environment({**get_env().cfg_dict, "TARGET": "sim"})
    if name.endswith(".onnx"):
        import onnxruntime as ort

        path = name
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        import numpy as np

        rng = np.random.default_rng(seed)
        feeds = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
                 for i in sess.get_inputs()}
    else:
        path = zoo.quantized_model(name, calibration=2)
        feeds = zoo.sample_feeds(name, 1, seed=seed)[0]
    t0 = time.process_time()
    rows = node_divergence(path, feeds, env, requant_mode=mode)
    print(f"== {name} (requant_mode {mode}, seed {seed}): {sum(r.iso_equal is not None for r in rows)} tensors "
          f"compared, {time.process_time() - t0:.1f} s CPU", file=out)
    print(format_divergence(rows, only_changed=not show_all), file=out)
    summary(rows, out)
    if profile:
        prefix_profile(path, feeds, env, mode, profile, out)
    return rows


def main(argv=None) -> int:
    from vta.models import zoo

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=None, help="zoo names or quantized .onnx files")
    ap.add_argument("--requant-mode", default="fixed", choices=("fixed", "wide"))
    ap.add_argument("--seed", type=int, default=21, help="the sample page (zoo models) or random input seed")
    ap.add_argument("--all", action="store_true", help="every tensor, not only those that differ")
    ap.add_argument("--profile", type=float, nargs="*", default=(), metavar="FRACTION",
                    help="also the outputs' cosines with the first FRACTION of the tensors forced "
                         "(e.g. --profile 0.2 0.4 0.6 0.8)")
    ap.add_argument("--quick", action="store_true", help="the text-direction classifier only")
    args = ap.parse_args(argv)
    names = ["ch_ppocr_cls"] if args.quick else (args.names or list(zoo.ZOO))
    for name in names:
        try:
            measure(name, args.requant_mode, args.seed, args.all, args.profile)
        except ModelFetchError as exc:
            print(f"{name}: skipped ({exc})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
