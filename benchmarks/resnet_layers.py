"""ResNet-18 conv layers C2-C11 as fused quantized convolutions: percent of the GEMM bound.

Run: ``python benchmarks/resnet_layers.py [--quick] [--tsim] [--layers C2,C4] [--config FILE]
[--vs configs/extended.json]``.

Every layer of upstream's workload table (:data:`vta.dse.workloads.RESNET18_CONV`) is compiled as
the graph layer compiles it: :func:`vta.topi.qnn.build_qconv2d` with an int32 bias, the precise
(``fixed``) requantisation with the accumulator bound of its weights, input and output zero
point 0, an int8 clip (the fused convolution of a network such as ``benchmarks/network.py``).
Batch 1 (one BATCH block), seeded random int8 data and weights in [-16, 16).

Per layer it prints the MACs, the GEMM bound (one GEMM micro-op per cycle: MACs / (BATCH x
BLOCK_IN x BLOCK_OUT)), the device cycles, the percent of the bound reached, the measured
reference of the same layer (:data:`BEFORE`, labelled with its date and the commit it was
measured on) side by side, and the total weighted by the number of times each layer occurs in
ResNet-18 (:data:`REPEATS`). ``busy%`` is the share of the cycles the compute unit works,
``ceil%`` the percent of the bound the layer would reach if it never waited (GEMM, reset and the
ALU epilogue share that unit, so the epilogue's cost caps it), ``alu/gemm`` the ALU micro-ops
per GEMM micro-op (a ``--vs`` configuration with ``COMPUTE_OVERLAP`` prints no ``ceil%``: its
busy counter adds the two lanes' cycles). ``--search`` instead runs every fitting tiling of each layer (or the
estimators' best ``--limit`` of the classic and of the rotated tilings) and prints how far the
chooser's pick is from the best. Cycles
come from the cycle model (``TARGET=model``, fast) by default, from tsim (the Verilated RTL,
ideal memory) with ``--tsim``. ``--quick`` runs two small
layers (C10 and C11) on the model. The output of every layer is checked against a NumPy oracle
written here (exit status 1 on a mismatch).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vta.dse.workloads import RESNET18_CONV  # noqa: E402
from vta.env import Environment, load_config  # noqa: E402
from vta.testing import Output, run_built  # noqa: E402
from vta.topi import qnn  # noqa: E402

#: Occurrences of each layer shape in ResNet-18 (the 3x3 convolutions of each stage's blocks
#: after the first share the stage's shape; C4, C7, C10 are the 1x1/2 projection shortcuts).
REPEATS = {"C2": 4, "C3": 1, "C4": 1, "C5": 3, "C6": 1, "C7": 1, "C8": 3, "C9": 1, "C10": 1, "C11": 3}

#: Layers of ``--quick``.
QUICK = ("C10", "C11")

#: MEASURED REFERENCE ("before"), not computed: cycles per layer of this very benchmark on the
#: code of main at commit ba8fa99 (2026-11-25; before the subsampled input of the 1x1 stride-2
#: projections C4, C7, C10: their loads moved every input row; model and tsim agreed on every
#: layer), default configuration, ideal memory. A layer missing from a level: not measured there.
BEFORE_DATE = "2026-11-25, main at ba8fa99"
_BEFORE_PER_TENSOR = {"C2": 549398, "C3": 280753, "C4": 66702, "C5": 501376, "C6": 254236, "C7": 52694,
                      "C8": 477716, "C9": 243363, "C10": 37368, "C11": 476573}
BEFORE: dict[str, dict[str, int]] = {"model": dict(_BEFORE_PER_TENSOR), "tsim": dict(_BEFORE_PER_TENSOR)}
#: The same with ``--per-channel`` (measured reference, same commit and date).
_BEFORE_CHANNEL = {"C2": 562385, "C3": 287769, "C4": 87718, "C5": 507916, "C6": 257696, "C7": 57906,
                   "C8": 497373, "C9": 253379, "C10": 43136, "C11": 486641}
BEFORE_PER_CHANNEL: dict[str, dict[str, int]] = {"model": dict(_BEFORE_CHANNEL), "tsim": dict(_BEFORE_CHANNEL)}


def layer_spec(name: str, weight: np.ndarray, env: Environment, per_channel: bool = False) -> qnn.QConv2DSpec:
    """The fused convolution of layer ``name`` for weights ``weight`` (module docstring); with
    ``per_channel``, one multiplier per output channel (the layer's scale times a seeded factor
    in [0.7, 1.3], as per-channel weight scales give)."""
    from vta.graph.passes.accumulator_bits import worst_accumulator_bits

    h, ci, co, k, p, s = RESNET18_CONV[name]
    bits = worst_accumulator_bits(weight, 0, None)
    # as benchmarks/network.py: the typical accumulator (sqrt(K) x 16 x 32) lands around +-32
    scale = 32.0 / (16 * 32 * np.sqrt(ci * k * k))
    if per_channel:
        scale = scale * np.random.default_rng(co + ci + k).uniform(0.7, 1.3, size=co)
    rq = qnn.Requant.from_scale(scale if per_channel else float(scale), mode="fixed", acc_bits=bits)
    return qnn.QConv2DSpec(env.BATCH, ci, co, h, h, k, k, (s, s), (p, p, p, p), 0, rq, 0, (-128, 127))


def macs(name: str, batch: int) -> int:
    h, ci, co, k, p, s = RESNET18_CONV[name]
    oh = (h + 2 * p - k) // s + 1
    return batch * co * oh * oh * ci * k * k


def _oracle(x, w, bias, spec) -> np.ndarray:
    """int32 convolution plus bias (NumPy, plain loops over the taps), then the fixed requant."""
    n = x.shape[0]
    co, _, kh, kw = w.shape
    pt, pl, pb, pr = spec.padding
    sh, sw = spec.strides
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh, ow = spec.out_height, spec.out_width
    acc = np.zeros((n, co, oh, ow), dtype=np.int64)
    wf = w.astype(np.int64)
    for di in range(kh):
        for dj in range(kw):
            win = xp[:, :, di:di + sh * (oh - 1) + 1:sh, dj:dj + sw * (ow - 1) + 1:sw]
            acc += np.einsum("nchw,oc->nohw", win, wf[:, :, di, dj])
    acc += bias.astype(np.int64)[None, :, None, None]
    # the fixed mode's definition (vta.topi.qnn): exact product, round half up, zero point, clip;
    # a multiplier of 1/2 or more (s <= 15) first clamps the accumulator to +-(2**15 - 1)
    m = np.broadcast_to(spec.requant.multiplier.astype(np.int64), (co,))[None, :, None, None]
    sh = np.broadcast_to(spec.requant.shift.astype(np.int64), (co,))[None, :, None, None]
    acc = np.where(sh <= 15, np.clip(acc, -(1 << 15) + 1, (1 << 15) - 1), acc)
    y = (acc * m + np.left_shift(1, sh - 1)) >> sh
    return np.clip(y + spec.output_zero_point, spec.clip[0], spec.clip[1])


def run_layer(name: str, env: Environment, tmp: Path, tiling=None, per_channel: bool = False) -> dict:
    """Compile (with ``tiling``, or the chosen one) and run layer ``name`` on ``env``'s target;
    its statistics and correctness."""
    rng = np.random.default_rng(sorted(RESNET18_CONV).index(name))
    h, ci, co, k, _, _ = RESNET18_CONV[name]
    w = rng.integers(-16, 16, size=(co, ci, k, k)).astype(np.int8)
    x = rng.integers(-32, 32, size=(env.BATCH, ci, h, h)).astype(np.int8)
    bias = rng.integers(-512, 512, size=co).astype(np.int32)
    with env:
        spec = layer_spec(name, w, env, per_channel)
        start = time.perf_counter()
        mod, layout = qnn.build_qconv2d(spec, f"resnet_{name}", **({} if tiling is None else {"tiling": tiling}))
        build_s = time.perf_counter() - start
        packed = layout.pack_args(data=x, weight=w, bias=bias)
        run = run_built(mod, [*packed, Output.like(layout.empty_output())], tmp, name=f"resnet_{name}_{env.BITSTREAM}")
    stats = dict(run.stats[0])
    got = layout.unpack(run.outputs[0])
    stats["correct"] = bool(np.array_equal(got, _oracle(x, w, bias, spec)))
    stats["build_s"], stats["run_s"] = build_s, run.seconds[0]
    return stats


def search(name: str, env: Environment, tmp: Path, limit: int | None = None) -> None:
    """Every fitting tiling of layer ``name`` on ``env``'s target (the first ``limit`` in the
    estimator's order when given): the best one against the chooser's pick."""
    from vta.errors import ScheduleError
    from vta.topi.qnn_build import qconv2d_workload
    from vta.topi.tiling import (
        choose_conv2d_tiling,
        conv2d_candidates,
        estimate_conv2d_cycles,
        estimate_rotated_cycles,
        rotated_candidates,
    )

    rng = np.random.default_rng(sorted(RESNET18_CONV).index(name))
    _, ci, co, k, _, _ = RESNET18_CONV[name]
    w = rng.integers(-16, 16, size=(co, ci, k, k)).astype(np.int8)
    wl = qconv2d_workload(layer_spec(name, w, env), env)
    chosen = choose_conv2d_tiling(env, wl)
    # the classic tilings by their estimate, then the rotated ones (vta.tir.transform.vthread_rotate) by theirs
    classic = sorted(conv2d_candidates(env, wl), key=lambda t: estimate_conv2d_cycles(env, wl, t))
    rotated = sorted(rotated_candidates(env, wl), key=lambda t: estimate_rotated_cycles(env, wl, t))
    cands = (classic[:limit] + rotated[:limit]) if limit else classic + rotated
    cands += [chosen] if chosen not in cands else []
    start = time.perf_counter()
    results = {}
    for t in cands:
        try:
            results[t] = int(run_layer(name, env, tmp, t)["cycle_count"])
        except ScheduleError:
            continue
    best = min(results, key=results.get)
    got = results.get(chosen)
    print(f"search {name}: {len(results)} tilings in {time.perf_counter() - start:.0f} s; best {results[best]:,} "
          f"cycles {best}; chooser {got:,} cycles {chosen} = {100.0 * (got / results[best] - 1):+.1f}% from the best",
          flush=True)


def _pct(bound: int, cycles: int | None) -> str:
    return f"{100.0 * bound / cycles:6.1f}%" if cycles else "     -"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    ap.add_argument("--tsim", action="store_true", help="cycles from tsim instead of the cycle model")
    ap.add_argument("--layers", default=None, help="comma-separated layer names (default: C2..C11)")
    ap.add_argument("--config", default=None, help="configuration file (default: the default one)")
    ap.add_argument("--per-channel", action="store_true", help="one requantisation multiplier per output channel")
    ap.add_argument("--vs", default=None, metavar="FILE",
                    help="also run every layer on this configuration (e.g. configs/extended.json, the hardware "
                         "options) and print its cycles side by side")
    ap.add_argument("--search", action="store_true",
                    help="run every fitting tiling of each layer and compare the chooser's pick with the best")
    ap.add_argument("--limit", type=int, default=None, help="with --search: only the estimator's best N tilings")
    args = ap.parse_args(argv)
    level = "tsim" if args.tsim else "model"
    layers = args.layers.split(",") if args.layers else (list(QUICK) if args.quick else list(RESNET18_CONV))
    for name in layers:
        if name not in RESNET18_CONV:
            ap.error(f"unknown layer {name!r}; accepted: {', '.join(RESNET18_CONV)}")
    cfg = load_config(args.config)
    cfg["TARGET"] = level
    env = Environment(cfg)
    vs_env = None
    if args.vs:
        vs_cfg = load_config(args.vs)
        vs_cfg["TARGET"] = level
        vs_env = Environment(vs_cfg)
        if (vs_env.BATCH, vs_env.BLOCK_IN, vs_env.BLOCK_OUT) != (env.BATCH, env.BLOCK_IN, env.BLOCK_OUT):
            ap.error(f"--vs {args.vs!r}: its GEMM core differs from the configuration's; the bound would differ")
    block = env.BATCH * env.BLOCK_IN * env.BLOCK_OUT
    if args.search:
        with tempfile.TemporaryDirectory(prefix="vta_resnet_layers_") as tmpdir:
            for name in layers:
                search(name, env, Path(tmpdir), args.limit)
        return 0
    before = (BEFORE_PER_CHANNEL if args.per_channel else BEFORE).get(level, {})
    print(f"ResNet-18 layers, fused qnn conv2d (bias + fixed requant"
          f"{', per-channel multipliers' if args.per_channel else ''}), {level}, "
          f"BATCH={env.BATCH} BLOCK_IN={env.BLOCK_IN} BLOCK_OUT={env.BLOCK_OUT}")
    print(f"before = measured reference ({BEFORE_DATE}); now = this run")
    print(f"{'layer':<6}{'x':>3}{'MACs':>13}{'bound':>11}{'before':>11}{'now':>11}{'before%':>9}{'now%':>8}"
          f"{'busy%':>7}{'ceil%':>7}{'alu/gemm':>9}  check"
          + (f"{'vs':>11}{'vs%':>8}{'ceil%':>7}  check" if vs_env else ""))
    if vs_env:
        print(f"vs = {args.vs} (options: {', '.join(vs_env.options) or 'none'})")
    tot = {"bound": 0, "now": 0, "before": 0, "bound_b": 0, "busy": 0, "vs": 0, "vs_busy": 0}
    ok = True
    with tempfile.TemporaryDirectory(prefix="vta_resnet_layers_") as tmpdir:
        for name in layers:
            st = run_layer(name, env, Path(tmpdir), per_channel=args.per_channel)
            m = macs(name, env.BATCH)
            bound = m // block
            cyc = int(st["cycle_count"])
            ref = before.get(name)
            r = REPEATS[name]
            tot["bound"] += r * bound
            tot["now"] += r * cyc
            tot["busy"] += r * int(st.get("compute_busy_cycles", 0))
            if ref:
                tot["before"] += r * ref
                tot["bound_b"] += r * bound
            ok &= st["correct"]
            print(f"{name:<6}{r:>3}{m:>13,}{bound:>11,}{(ref or 0):>11,}{cyc:>11,}{_pct(bound, ref):>9}"
                  f"{_pct(bound, cyc):>8}{100.0 * int(st.get('compute_busy_cycles', 0)) / cyc:>6.1f}%"
                  f"{_pct(bound, int(st.get('compute_busy_cycles', 0))):>7}"
                  f"{int(st.get('alu_counter', 0)) / max(int(st.get('gemm_counter', 0)), 1):>9.3f}"
                  f"  {'ok' if st['correct'] else 'WRONG'}", end="" if vs_env else "\n", flush=True)
            if vs_env:
                sv = run_layer(name, vs_env, Path(tmpdir), per_channel=args.per_channel)
                cv, bv = int(sv["cycle_count"]), int(sv.get("compute_busy_cycles", 0))
                tot["vs"] += r * cv
                tot["vs_busy"] += r * bv
                ok &= sv["correct"]
                ceil = _pct(bound, bv) if not vs_env.COMPUTE_OVERLAP else f"{'-':>7}"
                print(f"  {cv:>11,}{_pct(bound, cv):>8}{ceil:>7}  {'ok' if sv['correct'] else 'WRONG'}", flush=True)
    print(f"weighted total ({'+'.join(f'{REPEATS[n]}x{n}' for n in layers)}): bound {tot['bound']:,} cycles, "
          f"now {tot['now']:,} = {_pct(tot['bound'], tot['now']).strip()} of the GEMM bound; before "
          + (f"{tot['before']:,} = {_pct(tot['bound_b'], tot['before']).strip()}" if tot["before"] else "-")
          + f"; compute-bound ceiling {_pct(tot['bound'], tot['busy']).strip()}")
    if vs_env:
        # with COMPUTE_OVERLAP the busy counter adds both lanes' cycles: no ceiling follows from it
        ceiling = ("; compute-bound ceiling " + _pct(tot['bound'], tot['vs_busy']).strip()
                   if not vs_env.COMPUTE_OVERLAP else "")
        print(f"{args.vs}: {tot['vs']:,} cycles = {_pct(tot['bound'], tot['vs']).strip()} of the GEMM bound "
              f"({tot['vs'] / max(tot['now'], 1):.3f}x the cycles){ceiling}")
    print(f"outputs match the NumPy oracle: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
