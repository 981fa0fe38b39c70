"""The clamp-then-multiply form of the ``fixed`` requantisation: when the result is clipped right
after, an operand beyond the bounds of ``saturating_clamp`` saturates anyway, so clamping it first
keeps every output and lets one multiply replace the split product. Checked with Python integers
over the whole int32 range and end to end on fsim against the tests' oracle."""

from __future__ import annotations

import numpy as np
import pytest

from vta.topi import qnn
from vta.topi.qnn_requant import saturating_clamp

from . import oracle
from .conftest import run_op


def _out(x: int, m: int, s: int, z: int, lo: int, hi: int) -> int:
    return min(max(((x * m + (1 << (s - 1))) >> s) + z, lo), hi)


@pytest.mark.parametrize("scale", [0.0041, 0.0123, 0.05, 0.26, 0.45, 0.0026, 0.0013])
@pytest.mark.parametrize("z,lo,hi", [(0, -128, 127), (-128, -128, 127), (5, 0, 127), (-3, -128, 30)])
def test_clamped_operand_gives_the_same_clipped_output(scale, z, lo, hi):
    rq = qnn.Requant.from_scale(scale)
    m, s = int(rq.multiplier[0]), int(rq.shift[0])
    bounds = saturating_clamp(rq, lo - z, hi - z)
    if bounds is None:  # 2**24 x 255 output steps do not fit int32
        assert scale < 0.002 and hi - lo > 200 and z != 0
        return
    x_lo, x_hi = bounds
    assert -(1 << 31) <= x_lo * m and x_hi * m < 1 << 31  # the product stays inside int32
    rng = np.random.default_rng(int(scale * 1e4) + z + 200)
    xs = [int(v) for v in rng.integers(-(1 << 31), 1 << 31, size=2000)]
    xs += [int(v) for v in rng.integers(x_lo - 300, x_hi + 300, size=2000)]
    xs += [-(1 << 31), (1 << 31) - 1, x_lo - 1, x_lo, x_lo + 1, x_hi - 1, x_hi, x_hi + 1]
    for x in xs:
        assert _out(min(max(x, x_lo), x_hi), m, s, z, lo, hi) == _out(x, m, s, z, lo, hi), x


def test_no_clamp_when_the_product_would_leave_int32():
    # y * 2**s above 2**31 at the saturation point: the split product stays.
    assert saturating_clamp(qnn.Requant.from_scale(1.0e-4), -128, 127) is None
    assert saturating_clamp(qnn.Requant.from_scale([0.01, 0.02]), -128, 127) is None  # per channel
    assert saturating_clamp(qnn.Requant.from_scale(0.01, mode="fixed8"), -128, 127) is None


@pytest.mark.parametrize("scale,z_out,clip,uops", [(0.006, 3, (-128, 127), 7), (0.031, -7, (0, 127), 7),
                                                   (0.3, 0, (-20, 20), 7), (0.0026, -1, (-128, 127), 7),
                                                   (0.0013, 0, (-128, 127), 7), (0.00092, 2, (-128, 127), 12),
                                                   (0.0026, 0, (0, 127), 7)])
def test_conv_with_a_clamped_single_multiply(qenv, tmp_path, scale, z_out, clip, uops):
    # 0.0026: bounds beyond the 16-bit immediate, compared with constant vectors (with a ReLU's
    # clip only the upper one); 0.00092: the
    # product of the clamped operand leaves int32, but the operand fits the multiplier split
    rng = np.random.default_rng(31)
    spec = qnn.QConv2DSpec(1, 32, 16, 6, 6, 3, 3, (1, 1), (1, 1, 1, 1), 0, qnn.Requant.from_scale(scale), z_out,
                           clip)
    assert spec.requant.product_shift() > 0  # without the clip knowledge: a split product
    x = rng.integers(-128, 128, size=(1, 32, 6, 6)).astype(np.int8)
    w = rng.integers(-128, 128, size=(16, 32, 3, 3)).astype(np.int8)
    bias = rng.integers(-20000, 20000, size=16).astype(np.int32)
    mod, layout = qnn.build_qconv2d(spec, "qconv_clamped")
    out, stats = run_op(mod, layout, layout.pack_args(data=x, weight=w, bias=bias), tmp_path)
    want = oracle.finish(oracle.requant(oracle.conv_acc(x, w, bias, (1, 1), (1, 1, 1, 1), 0), spec.requant), z_out,
                         clip)
    got = layout.unpack(out)
    np.testing.assert_array_equal(got, want)
    assert (got == clip[0]).any() and (got == clip[1]).any() and ((got > clip[0]) & (got < clip[1])).any()
    # bias, clamp (2; bounds beyond 16 bits: constant vectors built per tile), multiply (or the
    # multiplier split: 6), rounding (at most 3), no clip: fewer ALU uops than the full split
    # product (at least 16 per entry)
    entries = 36
    assert stats["alu_counter"] <= uops * entries + 12


@pytest.mark.parametrize("scale,acc_bits,z_out", [(2.0 ** -7, 24, 4), (2.0 ** -19, None, -3), (2.0 ** -9, 28, 0)])
def test_conv_with_a_power_of_two_multiplier(qenv, tmp_path, scale, acc_bits, z_out):
    # m = 2**a: the multiply folds into the rounding shift (no MUL, no split product)
    rng = np.random.default_rng(32)
    spec = qnn.QConv2DSpec(1, 16, 16, 5, 5, 1, 1, (1, 1), (0, 0, 0, 0), 0,
                           qnn.Requant.from_scale(scale, acc_bits=acc_bits), z_out)
    x = rng.integers(-128, 128, size=(1, 16, 5, 5)).astype(np.int8)
    w = rng.integers(-128, 128, size=(16, 16, 1, 1)).astype(np.int8)
    bias = rng.integers(-(1 << 22), 1 << 22, size=16).astype(np.int32)
    mod, layout = qnn.build_qconv2d(spec, "qconv_pow2")
    out, stats = run_op(mod, layout, layout.pack_args(data=x, weight=w, bias=bias), tmp_path)
    want = oracle.finish(oracle.requant(oracle.conv_acc(x, w, bias, (1, 1), (0, 0, 0, 0), 0), spec.requant), z_out,
                         (-128, 127))
    np.testing.assert_array_equal(layout.unpack(out), want)
    # bias, rounding (at most 3), clip (2)
    assert stats["alu_counter"] <= 6 * 25


@pytest.mark.parametrize("z_out,clip", [(0, (-128, 127)), (3, (0, 127))])
def test_conv_per_channel_clamped_single_multiply(qenv, tmp_path, z_out, clip):
    # per-channel multipliers: loaded clamp bounds (clamp_lo, clamp_hi), one tensor multiply
    rng = np.random.default_rng(33)
    rq = qnn.Requant.from_scale(rng.uniform(1.5e-3, 0.05, size=16))
    spec = qnn.QConv2DSpec(1, 32, 16, 6, 6, 3, 3, (1, 1), (1, 1, 1, 1), 0, rq, z_out, clip)
    x = rng.integers(-128, 128, size=(1, 32, 6, 6)).astype(np.int8)
    w = rng.integers(-128, 128, size=(16, 32, 3, 3)).astype(np.int8)
    bias = rng.integers(-20000, 20000, size=16).astype(np.int32)
    mod, layout = qnn.build_qconv2d(spec, "qconv_pc_clamped")
    assert layout.has("clamp_lo") and not layout.has("multiplier_lo")
    out, stats = run_op(mod, layout, layout.pack_args(data=x, weight=w, bias=bias), tmp_path)
    want = oracle.finish(oracle.requant(oracle.conv_acc(x, w, bias, (1, 1), (1, 1, 1, 1), 0), rq), z_out, clip)
    got = layout.unpack(out)
    np.testing.assert_array_equal(got, want)
    assert (got == clip[0]).any() and (got == clip[1]).any()
    # bias, clamp (2), multiply, rounding (at most 3), no clip
    assert stats["alu_counter"] <= 7 * 36


def test_dense_per_channel_with_an_intermediate_clamped(qenv, tmp_path):
    # the intermediate's own int8 clip bounds the clamp; the residual follows
    rng = np.random.default_rng(34)
    rq = qnn.Requant.from_scale(rng.uniform(2e-3, 0.03, size=32))
    inter = qnn.IntermediateSpec(-5, qnn.Requant.from_scale(0.8))
    res = qnn.ResidualSpec(7, qnn.Requant.from_scale(0.6))
    spec = qnn.QDenseSpec(2, 64, 32, 0, rq, 4, (-128, 127), res, inter)
    x = rng.integers(-128, 128, size=(2, 64)).astype(np.int8)
    w = rng.integers(-128, 128, size=(32, 64)).astype(np.int8)
    bias = rng.integers(-30000, 30000, size=32).astype(np.int32)
    r = rng.integers(-128, 128, size=(2, 32)).astype(np.int8)
    mod, layout = qnn.build_qdense(spec, "qdense_pc_clamped")
    assert layout.has("clamp_hi")
    out, _ = run_op(mod, layout, layout.pack_args(data=x, weight=w, bias=bias, residual=r), tmp_path)
    # the unfused graph: the dense layer's own int8 output, then the add rounded once
    acc = x.astype(np.int64) @ w.astype(np.int64).T + bias
    dense_int8 = np.clip(oracle.requant(acc, rq) - 5, -128, 127)
    want = oracle.rounded_sum([dense_int8 + 5, r.astype(np.int64) - 7], [inter.requant, res.requant], 4, (-128, 127))
    np.testing.assert_array_equal(layout.unpack(out), want)
