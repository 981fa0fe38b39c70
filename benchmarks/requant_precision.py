"""Requantisation modes side by side: agreement with onnxruntime's float32 rint and cycles.

Run: ``python benchmarks/requant_precision.py [--size 56] [--channels 64]``. For a ResNet-like
3x3 convolution (stride 1, pad 1, per-channel multipliers drawn from ResNet-18's range
1.6e-4 .. 4.7e-3) and each mode (``fixed``, ``fixed8``, ``pow2``) it prints

* the share of int8 outputs equal to onnxruntime's ``clip(rint(float32(acc) * float32(M)) + z)``
  and the largest difference (host reference ``qconv2d_np``, which the accelerator matches bit
  for bit), for the convolution alone and for a residual block (``conv -> requantize -> add``,
  the add rescaling both operands as QLinearAdd does: one float32 rounding of the sum);
* the cycles and ALU instructions of one call on the cycle model (``TARGET`` ``model``), for
  ``fixed8``, ``fixed`` without a bound (split accumulator) and ``fixed`` with the graph layer's
  worst-case bound ``255 * sum|w| + |bias|`` (multiplier split when it is below 2**23).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vta import nd, rpc  # noqa: E402
from vta.env import Environment  # noqa: E402
from vta.testing import simulator  # noqa: E402
from vta.topi import qnn  # noqa: E402
from tests.conftest import make_env  # noqa: E402


def _ort(acc, scale, z):
    y = np.rint(acc.astype(np.float32) * np.asarray(scale, dtype=np.float32)[None, :, None, None])
    return np.clip(y.astype(np.int64) + z, -128, 127)


def _layer(c, hw, seed=0):
    rng = np.random.default_rng(seed)
    x = np.clip(np.rint(rng.standard_normal((1, c, hw, hw)) * 40), -128, 127).astype(np.int8)
    w = np.clip(np.rint(rng.standard_normal((c, c, 3, 3)) * 30), -127, 127).astype(np.int8)
    bias = rng.integers(-20000, 20000, size=c).astype(np.int32)
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    acc = np.zeros((1, c, hw, hw), np.int64)
    for dy in range(3):
        for dx in range(3):
            acc += np.einsum("nchw,oc->nohw", xp[:, :, dy:dy + hw, dx:dx + hw], w[:, :, dy, dx].astype(np.int64))
    acc += bias.reshape(1, -1, 1, 1)
    # multipliers that spread the outputs over int8 (std ~ 35 steps), inside ResNet-18's range
    scale = np.clip(35.0 / acc.std(axis=(0, 2, 3)), 1.6e-4, 4.7e-3) * rng.uniform(0.8, 1.2, size=c)
    return x, w, bias, acc, scale, rng


def agreement(c, hw):
    x, w, bias, acc, scale, rng = _layer(c, hw)
    r = np.clip(np.rint(rng.standard_normal((1, c, hw, hw)) * 40), -128, 127).astype(np.int8)
    s_y, s_r, s_o = 0.05, 0.04, 0.07  # conv output, residual and add output scales (ratios 0.71, 0.57)
    rows = []
    for mode in ("fixed", "fixed8", "pow2"):
        rq = qnn.Requant.from_scale(scale, mode=mode)
        spec = qnn.QConv2DSpec(1, c, c, hw, hw, 3, 3, (1, 1), 1, 0, rq, 0)
        got = qnn.qconv2d_np(spec, x, w, bias).astype(np.int64)
        ref = _ort(acc, scale, 0)
        d = np.abs(got - ref)
        # residual block: y = conv int8 (onnxruntime's), then QLinearAdd in float32
        inter = qnn.IntermediateSpec(0, qnn.Requant.from_scale(s_y / s_o, mode=mode))
        res = qnn.ResidualSpec(0, qnn.Requant.from_scale(s_r / s_o, mode=mode))
        bspec = qnn.QConv2DSpec(1, c, c, hw, hw, 3, 3, (1, 1), 1, 0, rq, 0, residual=res, intermediate=inter)
        bgot = qnn.qconv2d_np(bspec, x, w, bias, r).astype(np.int64)
        bref = np.clip(np.rint((ref.astype(np.float32) * np.float32(s_y) + r.astype(np.float32) * np.float32(s_r))
                               / np.float32(s_o)), -128, 127)
        bd = np.abs(bgot - bref)
        rows.append((mode, (d == 0).mean() * 100, int(d.max()), (bd == 0).mean() * 100, int(bd.max())))
    return rows


def cycles(c, hw, mode, per_channel, bound=False):
    env = Environment({**make_env().cfg_dict, "TARGET": "model"})
    x, w, bias, _, scale, _ = _layer(c, hw)
    if not per_channel:
        scale = float(np.median(scale))
    # the graph layer's bound: |x - z| <= 255 on every tap, plus the bias
    worst = int((np.abs(w.astype(np.int64)).reshape(c, -1).sum(axis=1) * 255 + np.abs(bias)).max())
    bits = worst.bit_length() if bound else None
    rq = qnn.Requant.from_scale(scale, mode=mode, acc_bits=bits)
    spec = qnn.QConv2DSpec(1, c, c, hw, hw, 3, 3, (1, 1), 1, 0, rq, 0)
    with env, tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        mod, layout = qnn.build_qconv2d(spec, "qconv")
        obj = Path(tmp) / "qconv.o"
        mod.save(obj)
        remote = stack.enter_context(rpc.LocalSession())
        remote.upload(str(obj))
        f = remote.load_module(obj.name)
        dev = remote.ext_dev(0)
        args = [stack.enter_context(nd.array(a, dev)) for a in layout.pack_args(data=x, weight=w, bias=bias)]
        out = stack.enter_context(nd.array(layout.empty_output(), dev))
        simulator.clear_stats()
        f(*args, out)
        st = simulator.stats()
        got = layout.unpack(out.numpy())
    assert np.array_equal(got, qnn.qconv2d_np(spec, x, w, bias)), "accelerator differs from the host reference"
    return st, rq.product_shift()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=56)
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="smoke run: a 16-channel 8x8 layer")
    a = ap.parse_args(argv)
    if a.quick:
        a.size, a.channels = 8, 16
    print(f"3x3 conv {a.channels}->{a.channels}, {a.size}x{a.size}, per-channel multipliers")
    print(f"{'mode':8} {'conv equal %':>13} {'max':>4} {'block equal %':>14} {'max':>4}")
    for mode, eq, mx, beq, bmx in agreement(a.channels, a.size):
        print(f"{mode:8} {eq:13.3f} {mx:4d} {beq:14.3f} {bmx:4d}")
    print("\ncycle model, one call:")
    for mode, bound in (("fixed8", False), ("fixed", False), ("fixed", True)):
        for pc in (False, True):
            st, k = cycles(a.channels, a.size, mode, pc, bound)
            label = f"{mode}{' + acc_bits' if bound else ''}"
            print(f"{label:17} {'per-channel' if pc else 'per-tensor ':12} product_shift {k:>2}  cycles "
                  f"{st['cycle_count']:>9}  ALU ops {st['alu_counter']:>8}  ALU insns {st['insn_alu']:>5}  "
                  f"GEMM insns {st['insn_gemm']:>4}")


if __name__ == "__main__":
    main()
