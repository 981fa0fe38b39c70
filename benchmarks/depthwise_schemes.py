"""Depthwise and grouped convolutions on VTA: which scheme takes the fewest cycles.

Run: ``python benchmarks/depthwise_schemes.py [--tsim] [--config FILE]``.

Each layer (MobileNet-style depthwise layers and two grouped layers) is compiled as a fused
quantized convolution (:func:`vta.topi.qnn.build_qconv2d`: int32 bias, per-channel ``fixed``
requantisation, int8 clip) in three GEMM schemes, run on the cycle model (or tsim with
``--tsim``), and its output checked against a NumPy oracle of the grouped convolution written
here:

``blocks``    the graph layer's scheme (:mod:`vta.topi.qnn_group`): consecutive groups gathered
              into accelerator groups of whole channel blocks, block-diagonal weights; a
              depthwise layer is ``C / BLOCK`` groups of one block;
``per-group`` each original group its own GEMM, its channels padded to whole blocks (a
              depthwise layer: ``C`` groups of one block, one useful channel each);
``dense``     one dense convolution with the block-diagonal weight of all groups.

The fourth scheme, depthwise on the ALU (per tap: MUL of the shifted input by a per-channel
weight vector and ADD into the accumulator, exact int32), is not compiled: its lower bound is
printed instead, from the cost the cycle model and the RTL give an ALU micro-op (one per cycle,
like a GEMM micro-op, :mod:`vta.sim.model.costs`): at least two ALU micro-ops per output pixel,
tap and channel block (``2 x OH x OW x C/BLOCK x KH x KW`` cycles, before any load, copy or
requantisation), plus the ALU micro-ops of the same requantisation epilogue (counted in
``blocks``), against one GEMM micro-op per output pixel, tap and block in ``blocks``. The GEMM
scheme's compute is therefore at most half the ALU scheme's for any layer; the printed ``alu>=``
column is that bound (compute micro-ops only: no load, no copy of the shifted input, no wait).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vta.env import Environment, load_config  # noqa: E402
from vta.testing import Output, run_built  # noqa: E402
from vta.topi import qnn  # noqa: E402
from vta.topi.qnn_group import AccelGrouping, accel_grouping, expand_group_weight  # noqa: E402

#: name -> (channels in, channels out, groups, height = width, kernel, stride)
LAYERS = {
    "dw3x3/1 32ch 28x28": (32, 32, 32, 28, 3, 1),
    "dw3x3/2 64ch 28x28": (64, 64, 64, 28, 3, 2),
    "dw5x5/1 96ch 14x14": (96, 96, 96, 14, 5, 1),
    "dw3x3/1 72ch 14x14": (72, 72, 72, 14, 3, 1),
    "g4 3x3/1 64->64 14x14": (64, 64, 4, 14, 3, 1),
    "g8 3x3/1 64->64 14x14": (64, 64, 8, 14, 3, 1),
}


def _round_up(n: int, b: int) -> int:
    return -(-n // b) * b


def schemes(cin: int, cout: int, groups: int, env: Environment) -> dict[str, AccelGrouping]:
    """The accelerator grouping of each scheme (see the module docstring)."""
    per_in, per_out = _round_up(cin // groups, env.BLOCK_IN), _round_up(cout // groups, env.BLOCK_OUT)
    return {
        "blocks": accel_grouping(cin, cout, groups, env.BLOCK_IN, env.BLOCK_OUT),
        "per-group": AccelGrouping(groups, 1, groups * per_in, groups * per_out),
        "dense": AccelGrouping(1, groups, _round_up(cin, env.BLOCK_IN), _round_up(cout, env.BLOCK_OUT)),
    }


def scheme_weight(w: np.ndarray, groups: int, grouping: AccelGrouping,
                  env: Environment) -> tuple[np.ndarray, np.ndarray]:
    """The scheme's weight and, per scheme output channel, the original channel (-1: padding)."""
    cout, ci, kh, kw = w.shape
    co = cout // groups
    if grouping.per_group == 1 and grouping.groups == groups and (ci % env.BLOCK_IN or co % env.BLOCK_OUT):
        pin, pout = grouping.in_channels // groups, grouping.out_channels // groups
        out = np.zeros((grouping.out_channels, pin, kh, kw), w.dtype)
        src = np.full(grouping.out_channels, -1)
        for g in range(groups):
            out[g * pout:g * pout + co, :ci] = w[g * co:(g + 1) * co]
            src[g * pout:g * pout + co] = np.arange(g * co, (g + 1) * co)
        return out, src
    if grouping.groups == 1:   # dense block-diagonal over every channel
        full = np.zeros((grouping.out_channels, grouping.in_channels, kh, kw), w.dtype)
        for g in range(groups):
            full[g * co:(g + 1) * co, g * ci:(g + 1) * ci] = w[g * co:(g + 1) * co]
        src = np.where(np.arange(grouping.out_channels) < cout, np.arange(grouping.out_channels), -1)
        return full, src
    e = expand_group_weight(w, groups, grouping)
    return e, np.where(np.arange(grouping.out_channels) < cout, np.arange(grouping.out_channels), -1)


def scheme_input(x: np.ndarray, groups: int, grouping: AccelGrouping, env: Environment) -> np.ndarray:
    """The input in the scheme's channel order (each group's channels padded for ``per-group``)."""
    n, cin, h, wd = x.shape
    ci = cin // groups
    if grouping.per_group == 1 and grouping.groups == groups and ci % env.BLOCK_IN:
        pin = grouping.in_channels // groups
        out = np.zeros((n, grouping.in_channels, h, wd), x.dtype)
        for g in range(groups):
            out[:, g * pin:g * pin + ci] = x[:, g * ci:(g + 1) * ci]
        return out
    return np.pad(x, ((0, 0), (0, grouping.in_channels - cin), (0, 0), (0, 0)))


def oracle(x, w, bias, groups, stride, pad, m, s) -> np.ndarray:
    """The grouped convolution, bias, fixed-point requantisation and int8 clip (int64)."""
    n, cin, h, wd = x.shape
    cout, ci, kh, kw = w.shape
    co = cout // groups
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    acc = np.zeros((n, cout, oh, ow), np.int64)
    for g in range(groups):
        for di in range(kh):
            for dj in range(kw):
                win = xp[:, g * ci:(g + 1) * ci,
                         di:di + stride * (oh - 1) + 1:stride, dj:dj + stride * (ow - 1) + 1:stride]
                acc[:, g * co:(g + 1) * co] += np.einsum("nchw,oc->nohw", win, w[g * co:(g + 1) * co, :, di, dj]
                                                         .astype(np.int64))
    acc += bias.astype(np.int64)[None, :, None, None]
    m, s = m[None, :, None, None], s[None, :, None, None]
    acc = np.where(s <= 15, np.clip(acc, -(1 << 15) + 1, (1 << 15) - 1), acc)
    return np.clip((acc * m + np.left_shift(1, s - 1)) >> s, -128, 127)


def run(name: str, scheme: str, env: Environment, tmp: Path) -> tuple[dict, bool]:
    """Statistics of ``name`` in ``scheme`` and whether its output equals the oracle's."""
    cin, cout, groups, hw, k, stride = LAYERS[name]
    rng = np.random.default_rng(sorted(LAYERS).index(name))
    w = rng.integers(-60, 61, (cout, cin // groups, k, k)).astype(np.int8)
    x = rng.integers(-64, 64, (env.BATCH, cin, hw, hw)).astype(np.int8)
    bias = rng.integers(-2000, 2000, cout).astype(np.int32)
    scale = rng.uniform(0.002, 0.01, cout)
    grouping = schemes(cin, cout, groups, env)[scheme]
    ws, src = scheme_weight(w, groups, grouping, env)
    cs = ws.shape[0]
    full_scale = np.where(src >= 0, scale[np.maximum(src, 0)], 1e-3)
    full_bias = np.where(src >= 0, bias[np.maximum(src, 0)], 0).astype(np.int32)
    pad = k // 2
    rq = qnn.Requant.from_scale(full_scale, acc_bits=24)
    spec = qnn.QConv2DSpec(env.BATCH, grouping.in_channels, cs, hw, hw, k, k, (stride, stride), pad, 0, rq, 0,
                           groups=grouping.groups)
    with env:
        mod, layout = qnn.build_qconv2d(spec, f"dw_{scheme.replace('-', '_')}")
        packed = layout.pack_args(data=scheme_input(x, groups, grouping, env), weight=ws, bias=full_bias)
        run = run_built(mod, [*packed, Output.like(layout.empty_output())], tmp, name=f"dw_{scheme}")
    stats = dict(run.stats[0])
    got = layout.unpack(run.outputs[0])[:, src >= 0]
    m = rq.multiplier.astype(np.int64) * np.ones(cs, np.int64)
    s = rq.shift.astype(np.int64) * np.ones(cs, np.int64)
    keep = src >= 0
    ref = oracle(x, w, bias, groups, stride, pad, m[keep][np.argsort(src[keep])], s[keep][np.argsort(src[keep])])
    return stats, bool(np.array_equal(got[:, np.argsort(src[keep])], ref))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tsim", action="store_true", help="cycles from tsim instead of the cycle model")
    ap.add_argument("--config", default=None, help="configuration file (default: the default one)")
    ap.add_argument("--layers", default=None, help="comma-separated layer names (default: all)")
    ap.add_argument("--quick", action="store_true", help="the first layer only (a smoke run)")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    cfg["TARGET"] = "tsim" if args.tsim else "model"
    env = Environment(cfg)
    layers = args.layers.split(",") if args.layers else list(LAYERS)
    if args.quick:
        layers = layers[:1]
    print(f"grouped convolutions, {cfg['TARGET']}, BATCH={env.BATCH} BLOCK_IN={env.BLOCK_IN} "
          f"BLOCK_OUT={env.BLOCK_OUT}; cycles per scheme (ok = equal to the NumPy oracle)")
    print(f"{'layer':<24}{'blocks':>12}{'per-group':>12}{'dense':>12}{'alu>=':>12}  best")
    bad = 0
    with tempfile.TemporaryDirectory(prefix="vta_depthwise_") as tmpdir:
        for name in layers:
            _, cout, groups, hw, k, stride = LAYERS[name]
            row = {}
            for scheme in ("blocks", "per-group", "dense"):
                stats, ok = run(name, scheme, env, Path(tmpdir))
                bad += not ok
                row[scheme] = (int(stats["cycle_count"]), ok)
                if scheme == "blocks":
                    epilogue = int(stats["alu_counter"])
            oh = (hw + 2 * (k // 2) - k) // stride + 1
            # two ALU micro-ops per output pixel, tap and block, plus the same requantisation epilogue
            alu = (2 * oh * oh * _round_up(cout, env.BLOCK_OUT) // env.BLOCK_OUT * k * k + epilogue
                   if groups == cout == LAYERS[name][0] else None)
            cells = "".join(f"{c:>10,}{'  ' if ok else ' !'}" for c, ok in row.values())
            best = min(row, key=lambda sch: row[sch][0])
            print(f"{name:<24}{cells}{(f'{alu:,}' if alu else '-'):>12}  {best}")
    if bad:
        print(f"{bad} result(s) differ from the oracle")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
