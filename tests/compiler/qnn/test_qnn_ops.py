"""The fused quantized operators on fsim, for the default and the BATCH=2 configurations, against
the tests' own integer oracle (``oracle.py``): convolutions (3x3 s1/s2, 1x1 s2, 7x7 s2 p3 with 3
input channels, channels that are not multiples of the block, asymmetric padding, input zero
points), per-tensor and per-channel multipliers, residual adds with their own scale, relu and
clip, dense, the quantized add and max pooling.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vta.topi import qnn, qnn_requant

from . import oracle
from .conftest import run_op

RNG_SEED = 11


def _conv(env, tmp_path, *, n=1, ci=16, co=16, h=8, w=8, k=3, stride=1, pad=(1, 1, 1, 1), z_in=0, scale=0.002,
          z_out=0, clip=(-128, 127), residual=None, seed=0, bias_range=5000, acc_bits=None, value_range=128,
          mode="fixed"):
    rng = np.random.default_rng(seed)
    spec = qnn.QConv2DSpec(n, ci, co, h, w, k, k, (stride, stride), pad, z_in,
                           qnn.Requant.from_scale(scale, acc_bits=acc_bits, mode=mode), z_out, clip, residual)
    x = rng.integers(-value_range, value_range, size=(n, ci, h, w)).astype(np.int8)
    wt = rng.integers(-value_range, value_range, size=(co, ci, k, k)).astype(np.int8)
    bias = rng.integers(-bias_range, bias_range, size=co).astype(np.int32)
    r = rng.integers(-128, 128, size=spec.out_shape).astype(np.int8) if residual else None
    mod, layout = qnn.build_qconv2d(spec, "qconv")
    out, stats = run_op(mod, layout, layout.pack_args(data=x, weight=wt, bias=bias, residual=r), tmp_path)
    got = layout.unpack(out)
    acc = oracle.conv_acc(x, wt, bias, (stride, stride), pad, z_in)
    want = oracle.finish(oracle.requant(acc, spec.requant), z_out, clip, r, residual)
    assert got.shape == want.shape == spec.out_shape
    np.testing.assert_array_equal(got, want)
    # The host reference agrees with the oracle too (G's CPU kernels reuse it).
    np.testing.assert_array_equal(qnn.qconv2d_np(spec, x, wt, bias, r), want)
    return spec, layout, stats


def test_conv3x3_stride1_pad1_with_input_zero_point(qenv, tmp_path):
    _, layout, stats = _conv(qenv, tmp_path, z_in=-37, z_out=5)
    assert layout.needs_border_map and layout.arg("bias").shape[2:4] == (8, 8)
    assert stats["gemm_counter"] > 0 and stats["alu_counter"] > 0


def test_conv3x3_stride1_pad1_zero_input_zero_point_uses_a_bias_vector(qenv, tmp_path):
    _, layout, _ = _conv(qenv, tmp_path, z_in=0)
    assert not layout.needs_border_map and layout.arg("bias").shape[2:4] == (1, 1)


def test_conv3x3_stride2(qenv, tmp_path):
    _conv(qenv, tmp_path, co=32, stride=2, z_in=12, scale=0.0013, seed=1)


def test_conv1x1_stride2_downsample(qenv, tmp_path):
    _conv(qenv, tmp_path, co=32, k=1, stride=2, pad=(0, 0, 0, 0), z_in=-128, scale=0.004, seed=2)


def test_conv7x7_stride2_pad3_three_input_channels(qenv, tmp_path):
    _, layout, _ = _conv(qenv, tmp_path, ci=3, h=16, w=16, k=7, stride=2, pad=(3, 3, 3, 3), z_in=-128,
                            scale=0.003, seed=3)
    assert layout.arg("data").shape[1] == 1 and layout.arg("weight").shape[-1] == qenv.BLOCK_IN


def test_conv_channels_not_multiple_of_block_asymmetric_padding(qenv, tmp_path):
    _, layout, _ = _conv(qenv, tmp_path, ci=20, co=24, h=6, w=7, pad=(0, 1, 2, 1), z_in=9, seed=4)
    assert layout.arg("out").shape[1] == 2 and layout.unpack(layout.empty_output()).shape == (1, 24, 6, 7)


def test_conv_batch_padded_to_the_batch_block(qenv, tmp_path):
    _conv(qenv, tmp_path, n=3, h=4, w=4, z_in=-3, seed=5)


@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_per_channel_and_per_tensor_multipliers(qenv, tmp_path, per_channel):
    rng = np.random.default_rng(RNG_SEED)
    scale = rng.uniform(4e-4, 8e-3, size=32) if per_channel else 0.002
    _, layout, _ = _conv(qenv, tmp_path, co=32, scale=scale, z_out=-4, seed=6)
    assert layout.has("multiplier") == per_channel and layout.has("shift") == per_channel


@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_fixed_split_product_over_the_whole_int32_range(qenv, tmp_path, per_channel):
    # Biases near +-2**31 and tiny multipliers: the split product's halves reach their bounds, and
    # the outputs still spread over int8 (the 8-bit scheme would wrap here).
    rng = np.random.default_rng(RNG_SEED + 1)
    scale = rng.uniform(30.0, 120.0, size=16) / 2 ** 31 if per_channel else 90.0 / 2 ** 31
    spec, _, _ = _conv(qenv, tmp_path, scale=scale, z_out=2, seed=10, bias_range=(1 << 31) - (1 << 22))
    assert spec.requant.split and spec.requant.mode == "fixed"


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("form", ["direct", "multiplier_split"])
def test_conv_fixed_with_an_accumulator_bound(qenv, tmp_path, per_channel, form):
    # A known bound selects a cheaper product form: one MUL below 2**16, the multiplier split in
    # bytes below 2**23 (an extra per-channel vector); the results are the same integers.
    rng = np.random.default_rng(RNG_SEED + 2)
    if form == "direct":
        bits = qnn.accumulator_bits(16 * 9, 1000)  # with |x|, |w| <= 8: far below this bound
        kw = dict(value_range=8, bias_range=1000, acc_bits=16)
        scale = rng.uniform(0.01, 0.04, size=16) if per_channel else 0.02
        assert bits > 16  # (the worst case of full-range int8 would not qualify)
    else:
        kw = dict(acc_bits=qnn.accumulator_bits(16 * 9, 5000))
        scale = rng.uniform(1.6e-4, 4.7e-3, size=16) if per_channel else 0.0021
    spec, layout, _ = _conv(qenv, tmp_path, scale=scale, z_out=1, seed=12, **kw)
    rq = spec.requant
    assert rq.product_shift() == (0 if form == "direct" else 8)
    assert layout.has("multiplier_lo") == (per_channel and form == "multiplier_split")


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("value_range,bias_range", [(128, 5000), (16, 300)])
def test_conv_wide_multiplier(qenv, tmp_path, per_channel, value_range, bias_range):
    # The wide mode: all 24 bits of the float32 multiplier; below 2**19 split at k = min(15, 31 -
    # acc_bits) on the ALU (two products), above in the four-product form (floor(x m / 2**24));
    # the oracle's exact product agrees.
    rng = np.random.default_rng(RNG_SEED + 5)
    bits = qnn.accumulator_bits(16 * 9 * value_range * value_range // (128 * 128), bias_range)
    scale = rng.uniform(1.6e-4, 4.7e-3, size=16) * (128 / value_range) ** 2 if per_channel else 0.0021
    spec, layout, _ = _conv(qenv, tmp_path, scale=scale, z_out=3, seed=14, acc_bits=bits, mode="wide",
                            value_range=value_range, bias_range=bias_range)
    rq = spec.requant
    four = bits > 18
    assert rq.mode == "wide" and rq.four_product == four
    assert rq.product_shift() == (qnn_requant.QUAD_SHIFT if four else min(15, 31 - bits))
    assert int(rq.multiplier.max()) >= 1 << 23
    assert layout.has("multiplier_lo") == per_channel


@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_wide_four_products_over_the_whole_int32_range(qenv, tmp_path, per_channel):
    # Biases near +-2**31 (an accumulator bound of 31 bits) and small multipliers: the four-product
    # form's halves reach their bounds, a first shift comes before the rounding constant, and the
    # outputs still spread over int8.
    rng = np.random.default_rng(RNG_SEED + 6)
    scale = rng.uniform(30.0, 120.0, size=16) / 2 ** 31 if per_channel else 90.0 / 2 ** 31
    bias_range = (1 << 31) - (1 << 22)
    bits = qnn.accumulator_bits(16 * 9, bias_range)
    spec, layout, _ = _conv(qenv, tmp_path, scale=scale, z_out=2, seed=16, bias_range=bias_range, acc_bits=bits,
                            mode="wide")
    rq = spec.requant
    assert bits == 31 and rq.four_product and np.all(rq.split_shifts()[0][rq.multiplier != 0] >= 1)
    assert layout.has("multiplier_lo") == per_channel


@pytest.mark.parametrize("mode", ["fixed", "wide"])
def test_conv_per_channel_with_a_vanishing_multiplier(qenv, tmp_path, mode):
    # A channel whose weight scale is ~0 (a dead channel of a published model: shift 58, its first
    # shift past the ALU's 5-bit shift amount) requantises to the zero point like the oracle.
    scale = np.full(16, 0.0021)
    scale[5] = 1e-13
    spec, layout, _ = _conv(qenv, tmp_path, scale=scale, z_out=4, seed=15, mode=mode,
                            acc_bits=qnn.accumulator_bits(16 * 9, 5000))
    # (the wide mode's four-product form drops 24 bits before its shifts: a first shift of 23)
    assert int(spec.requant.shift[5]) - spec.requant.product_shift() > (31 + 15 if mode == "fixed" else 31)


def test_conv_fixed_with_padded_channels_keeps_the_split(qenv, tmp_path):
    # The graph layer pads per-channel requants with multiplier 0, shift 1 (dataclasses.replace);
    # those channels give 0 and must not turn the split product off for the others.
    rng = np.random.default_rng(RNG_SEED + 3)
    rq = qnn.Requant.from_scale(rng.uniform(1.6e-4, 4.7e-3, size=32))
    m, s = rq.multiplier.copy(), rq.shift.copy()
    m[24:], s[24:] = 0, 1
    padded = dataclasses.replace(rq, multiplier=m, shift=s)
    assert padded.split
    spec = qnn.QConv2DSpec(1, 16, 32, 6, 6, 3, 3, (1, 1), 1, 0, padded, 3)
    x = rng.integers(-128, 128, size=(1, 16, 6, 6)).astype(np.int8)
    w = rng.integers(-128, 128, size=(32, 16, 3, 3)).astype(np.int8)
    bias = rng.integers(-5000, 5000, size=32).astype(np.int32)
    mod, layout = qnn.build_qconv2d(spec, "qconv_padded")
    out, _ = run_op(mod, layout, layout.pack_args(data=x, weight=w, bias=bias), tmp_path)
    want = oracle.finish(oracle.requant(oracle.conv_acc(x, w, bias, (1, 1), (1, 1, 1, 1), 0), padded), 3, (-128, 127))
    assert (want[:, 24:] == 3).all()
    np.testing.assert_array_equal(layout.unpack(out), want)
    np.testing.assert_array_equal(qnn.qconv2d_np(spec, x, w, bias), want)


def test_conv_fixed_large_multiplier_clamps(qenv, tmp_path):
    # M >= 1/2: the accumulator is clamped to +-32767 and multiplied once (every result saturates
    # or is small); fixed8 and pow2 keep their single multiply.
    spec, _, _ = _conv(qenv, tmp_path, scale=0.7, z_out=-1, seed=11, bias_range=40)
    assert not spec.requant.split


def test_conv_residual_with_its_own_scale_and_relu(qenv, tmp_path):
    res = qnn.ResidualSpec(zero_point=-20, requant=qnn.Requant.from_scale(0.61))
    _, layout, _ = _conv(qenv, tmp_path, z_in=-128, z_out=-128, clip=(-128, 127), residual=res, seed=7)
    assert layout.roles == ["data", "weight", "bias", "residual", "out"]
    res = qnn.ResidualSpec(zero_point=7, requant=qnn.Requant.from_scale(1.9))
    _conv(qenv, tmp_path, z_in=0, z_out=3, clip=(3, 127), residual=res, seed=8)  # relu at z_out = 3


def test_conv_clip(qenv, tmp_path):
    _conv(qenv, tmp_path, scale=0.01, clip=(-20, 40), seed=9)


def test_conv_pow2_requant(qenv, tmp_path):
    rng = np.random.default_rng(12)
    spec = qnn.QConv2DSpec(1, 16, 16, 6, 6, 3, 3, (1, 1), (1, 1, 1, 1), 0,
                           qnn.Requant.from_scale(0.001, mode="pow2"), 0, (-128, 127))
    x = rng.integers(-128, 128, size=(1, 16, 6, 6)).astype(np.int8)
    wt = rng.integers(-128, 128, size=(16, 16, 3, 3)).astype(np.int8)
    bias = np.zeros(16, dtype=np.int32)
    mod, layout = qnn.build_qconv2d(spec, "qconv_pow2")
    out, _ = run_op(mod, layout, layout.pack_args(data=x, weight=wt, bias=bias), tmp_path)
    acc = oracle.conv_acc(x, wt, bias, (1, 1), (1, 1, 1, 1), 0)
    want = np.clip(oracle.round_shift(acc, 1, 10), -128, 127).astype(np.int8)  # 0.001 ~ 2**-10
    np.testing.assert_array_equal(layout.unpack(out), want)


@pytest.mark.parametrize("per_channel", [False, True])
def test_dense(qenv, tmp_path, per_channel):
    rng = np.random.default_rng(13)
    n, fi, fo = 3, 40, 20
    scale = rng.uniform(5e-4, 5e-3, size=fo) if per_channel else 0.0021
    res = qnn.ResidualSpec(-3, qnn.Requant.from_scale(1.3)) if per_channel else None
    spec = qnn.QDenseSpec(n, fi, fo, 0, qnn.Requant.from_scale(scale), 5, (0, 127), res)
    x = rng.integers(-128, 128, size=(n, fi)).astype(np.int8)
    w = rng.integers(-128, 128, size=(fo, fi)).astype(np.int8)
    bias = rng.integers(-3000, 3000, size=fo).astype(np.int32)
    r = rng.integers(-128, 128, size=(n, fo)).astype(np.int8) if res else None
    mod, layout = qnn.build_qdense(spec, "qdense")
    out, _ = run_op(mod, layout, layout.pack_args(data=x, weight=w, bias=bias, residual=r), tmp_path)
    acc = x.astype(np.int64) @ w.astype(np.int64).T + bias
    want = oracle.finish(oracle.requant(acc, spec.requant), 5, (0, 127), r, res)
    np.testing.assert_array_equal(layout.unpack(out), want)
    np.testing.assert_array_equal(qnn.qdense_np(spec, x, w, bias, r), want)


def test_qadd(qenv, tmp_path):
    rng = np.random.default_rng(14)
    lhs = qnn.ResidualSpec(3, qnn.Requant.from_scale(0.8))
    rhs = qnn.ResidualSpec(-7, qnn.Requant.from_scale(0.45))
    spec = qnn.QAddSpec(1, 24, 6, 5, lhs, rhs, -2, (-128, 120))
    a = rng.integers(-128, 128, size=spec.out_shape).astype(np.int8)
    b = rng.integers(-128, 128, size=spec.out_shape).astype(np.int8)
    mod, layout = qnn.build_qadd(spec, "qadd")
    out, stats = run_op(mod, layout, layout.pack_args(lhs=a, rhs=b), tmp_path)
    # fixed mode: both operands rescaled, one rounding of the sum
    want = oracle.rounded_sum([a.astype(np.int64) - 3, b.astype(np.int64) + 7], [lhs.requant, rhs.requant], -2,
                              (-128, 120))
    np.testing.assert_array_equal(layout.unpack(out), want)
    np.testing.assert_array_equal(qnn.qadd_np(spec, a, b), want)
    assert stats["gemm_counter"] == 0


@pytest.mark.parametrize("pool,stride,pad,hw", [((3, 3), (2, 2), (1, 1, 1, 1), (9, 9)),
                                                ((3, 3), (2, 2), (1, 1, 1, 1), (32, 32)),
                                                ((2, 2), (2, 2), (0, 0, 0, 0), (8, 6)),
                                                # separable (rows, then columns): a spatial pyramid's
                                                # 13x13 window, a 3x3 of stride 1, an unpadded 5x5 and
                                                # a rectangular window with unequal strides
                                                ((13, 13), (1, 1), (6, 6, 6, 6), (13, 13)),
                                                ((3, 3), (1, 1), (1, 1, 1, 1), (10, 12)),
                                                ((5, 5), (1, 1), (0, 0, 0, 0), (9, 9)),
                                                ((3, 5), (1, 2), (1, 2, 1, 2), (8, 11))])
def test_maxpool(qenv, tmp_path, pool, stride, pad, hw):
    rng = np.random.default_rng(15)
    spec = qnn.MaxPoolSpec(1, 20, hw[0], hw[1], pool, stride, pad)
    x = rng.integers(-128, 128, size=(1, 20) + hw).astype(np.int8)
    x[0, 0] = -128  # all-minimum plane: padded pixels must not win
    built = qnn.build_maxpool(spec, "maxpool")
    assert built is not None
    mod, layout = built
    out, stats = run_op(mod, layout, layout.pack_args(data=x), tmp_path)
    want = oracle.maxpool(x, pool, stride, pad)
    np.testing.assert_array_equal(layout.unpack(out), want)
    np.testing.assert_array_equal(qnn.maxpool_np(spec, x), want)
    assert stats["gemm_counter"] == 0


def test_maxpool_too_wide_for_the_accumulator_returns_none(env):
    from vta.topi.qnn_pool import maxpool_unsupported_reason

    spec = qnn.MaxPoolSpec(1, 16, 8, 2000, (3, 3), (2, 2), (1, 1, 1, 1))
    assert qnn.build_maxpool(spec, "mp") is None
    assert "accumulator" in maxpool_unsupported_reason(spec, env)


def test_conv_intermediate_int8_output_then_residual_add(qenv, tmp_path):
    # conv -> requantize to (s_c, z_c) with relu -> qnn.add(lhs = that, rhs = r) -> relu, fused.
    rng = np.random.default_rng(16)
    rq_c = qnn.Requant.from_scale(0.004)
    inter = qnn.IntermediateSpec(zero_point=-10, requant=qnn.Requant.from_scale(0.57), clip=(-10, 127))
    res = qnn.ResidualSpec(5, qnn.Requant.from_scale(0.33))
    spec = qnn.QConv2DSpec(1, 16, 16, 6, 6, 3, 3, (1, 1), (1, 1, 1, 1), -2, rq_c, -128, (-128, 127), res, inter)
    x = rng.integers(-128, 128, size=(1, 16, 6, 6)).astype(np.int8)
    w = rng.integers(-128, 128, size=(16, 16, 3, 3)).astype(np.int8)
    bias = rng.integers(-5000, 5000, size=16).astype(np.int32)
    r = rng.integers(-128, 128, size=spec.out_shape).astype(np.int8)
    mod, layout = qnn.build_qconv2d(spec, "qconv_inter")
    out, _ = run_op(mod, layout, layout.pack_args(data=x, weight=w, bias=bias, residual=r), tmp_path)
    # The unfused graph, step by step: the conv's own int8 output first, then the add.
    conv_int8 = np.clip(oracle.requant(oracle.conv_acc(x, w, bias, (1, 1), (1, 1, 1, 1), -2), rq_c) - 10, -10, 127)
    want = oracle.rounded_sum([conv_int8 + 10, r.astype(np.int64) - 5], [inter.requant, res.requant], -128,
                              (-128, 127))
    np.testing.assert_array_equal(layout.unpack(out), want)
    np.testing.assert_array_equal(qnn.qconv2d_np(spec, x, w, bias, r), want)


def test_conv_with_a_pre_shift(qenv, tmp_path):
    rng = np.random.default_rng(17)
    assert qnn.accumulator_bits(16 * 9, 5000) == 22  # 144 * 2**14 + 5000 < 2**22
    rq = qnn.Requant.from_scale(0.0009, mode="fixed8", acc_bits=25)  # 25 + 8 - 31 = 2 bits pre-shifted
    assert rq.pre_shift == 2
    spec = qnn.QConv2DSpec(1, 16, 16, 5, 5, 3, 3, (1, 1), (1, 1, 1, 1), 0, rq, 1, (-128, 127))
    x = rng.integers(-128, 128, size=(1, 16, 5, 5)).astype(np.int8)
    w = rng.integers(-128, 128, size=(16, 16, 3, 3)).astype(np.int8)
    bias = rng.integers(-5000, 5000, size=16).astype(np.int32)
    mod, layout = qnn.build_qconv2d(spec, "qconv_pre")
    out, _ = run_op(mod, layout, layout.pack_args(data=x, weight=w, bias=bias), tmp_path)
    acc = oracle.conv_acc(x, w, bias, (1, 1), (1, 1, 1, 1), 0)
    want = np.clip(oracle.round_shift(acc, int(rq.multiplier[0]), int(rq.shift[0]), 2) + 1, -128, 127)
    np.testing.assert_array_equal(layout.unpack(out), want.astype(np.int8))


def test_qadd_of_dense_activations(qenv, tmp_path):
    rng = np.random.default_rng(18)
    lhs = qnn.ResidualSpec(0, qnn.Requant.from_scale(1.0))
    rhs = qnn.ResidualSpec(-128, qnn.Requant.from_scale(0.25))
    spec = qnn.QAddSpec(3, 40, 1, 1, lhs, rhs, 0, (0, 127))
    a = rng.integers(-128, 128, size=(3, 40)).astype(np.int8)
    b = rng.integers(-128, 128, size=(3, 40)).astype(np.int8)
    mod, layout = qnn.build_qadd(spec, "qadd2d")
    out, _ = run_op(mod, layout, layout.pack_args(lhs=a, rhs=b), tmp_path)
    want = oracle.rounded_sum([a.astype(np.int64), b.astype(np.int64) + 128], [lhs.requant, rhs.requant], 0,
                              (0, 127))
    np.testing.assert_array_equal(layout.unpack(out)[:, :, 0, 0], want)


@pytest.mark.parametrize("z_r,scale,z_out", [(-128, 0.998, -128), (127, 0.998, 127), (0, 1.0, -128)])
def test_conv_residual_zero_points_at_the_immediate_limits(qenv, tmp_path, z_r, scale, z_out):
    # -z_r * m_r and z_out * 2**s ride on the rounding constant only when they fit 16 bits.
    res = qnn.ResidualSpec(zero_point=z_r, requant=qnn.Requant.from_scale(scale))
    _conv(qenv, tmp_path, h=4, w=4, z_in=-128, z_out=z_out, residual=res, seed=19)


def test_dense_intermediate_then_residual(qenv, tmp_path):
    rng = np.random.default_rng(20)
    inter = qnn.IntermediateSpec(zero_point=3, requant=qnn.Requant.from_scale(0.9))
    res = qnn.ResidualSpec(-128, qnn.Requant.from_scale(0.45))
    rq = qnn.Requant.from_scale(rng.uniform(1e-3, 4e-3, size=24))
    spec = qnn.QDenseSpec(2, 32, 24, 0, rq, -128, (-128, 127), res, inter)
    x = rng.integers(-128, 128, size=(2, 32)).astype(np.int8)
    w = rng.integers(-128, 128, size=(24, 32)).astype(np.int8)
    bias = rng.integers(-3000, 3000, size=24).astype(np.int32)
    r = rng.integers(-128, 128, size=(2, 24)).astype(np.int8)
    mod, layout = qnn.build_qdense(spec, "qdense_inter")
    out, _ = run_op(mod, layout, layout.pack_args(data=x, weight=w, bias=bias, residual=r), tmp_path)
    own = np.clip(oracle.requant(x.astype(np.int64) @ w.astype(np.int64).T + bias, rq) + 3, -128, 127)
    want = oracle.rounded_sum([own - 3, r.astype(np.int64) + 128], [inter.requant, res.requant], -128, (-128, 127))
    np.testing.assert_array_equal(layout.unpack(out), want)
    np.testing.assert_array_equal(qnn.qdense_np(spec, x, w, bias, r), want)


def test_conv7x7_first_layer_with_the_kernel_width_folded(qenv, tmp_path):
    rng = np.random.default_rng(22)
    common = (1, 3, 16, 16, 16, 7, 7, (2, 2), (3, 3, 3, 3), -128, qnn.Requant.from_scale(0.002), -5, (-128, 127))
    x = rng.integers(-128, 128, size=(1, 3, 16, 16)).astype(np.int8)
    w = rng.integers(-128, 128, size=(16, 3, 7, 7)).astype(np.int8)
    bias = rng.integers(-5000, 5000, size=16).astype(np.int32)
    want = oracle.finish(oracle.requant(oracle.conv_acc(x, w, bias, (2, 2), (3, 3, 3, 3), -128),
                                        qnn.Requant.from_scale(0.002)), -5, (-128, 127))
    gemm = {}
    for fold in (False, True):
        spec = qnn.QConv2DSpec(*common, fold_width=fold)
        mod, layout = qnn.build_qconv2d(spec, f"c1_{int(fold)}")
        out, stats = run_op(mod, layout, layout.pack_args(data=x, weight=w, bias=bias), tmp_path)
        np.testing.assert_array_equal(layout.unpack(out), want)
        gemm[fold] = stats["gemm_counter"]
    # 21 folded channels fill two 16-wide blocks: 2 x 7 kernel rows against 1 x 49 taps.
    assert gemm[True] * 49 == gemm[False] * 14
    assert layout.arg("data").shape[1:4] == (2, 22, 8) and layout.folds and not layout.needs_border_map


def _rounded(t: int, s: int, even: bool) -> int:
    """``t / 2**s`` rounded down, or half to even (Python's integers)."""
    if not (even and s):
        return t >> s
    q, r = t >> s, t - ((t >> s) << s)
    return q + (r > (1 << (s - 1)) or (r == (1 << (s - 1)) and q % 2 == 1))


@pytest.mark.parametrize("fit", [(288971, 436527, 6749993 - 128 * (288971 + 436527), 19, False),
                                 (700, -300, 1 << 27, 10, False), (1, 1, 0, 1, True), (8385, 8192, 15226, 14, True),
                                 (288971, 436527, -3 << 20, 19, True)],
                         ids=["vector-multipliers", "vector-offset", "halves-even", "even", "even-vectors"])
def test_qadd_fitted_sum_on_every_pair(qenv, tmp_path, fit):
    """``QAddSpec.fit`` on the ALU: ``clip(floor((a m_a + b m_b + c) / 2**s))`` (or rounded half
    to even) on all 65,536 pairs of int8 operands, against Python's integers (multipliers beyond
    the 16-bit immediate: constant vectors; an offset whose high part passes it: a constant vector
    added)."""
    from vta.topi.qnn_fit import AffineSum

    f = AffineSum(*fit)
    unused = qnn.ResidualSpec(0, qnn.Requant.from_scale(0.5))
    spec = qnn.QAddSpec(1, 256, 16, 16, unused, unused, 0, (-128, 120), fit=f)
    g = np.arange(-128, 128)
    a = np.repeat(g, 256).astype(np.int8).reshape(spec.out_shape)
    b = np.tile(g, 256).astype(np.int8).reshape(spec.out_shape)
    mod, layout = qnn.build_qadd(spec, "qadd_fit")
    out, stats = run_op(mod, layout, layout.pack_args(lhs=a, rhs=b), tmp_path)
    want = [min(max(_rounded(int(x) * f.lhs_multiplier + int(y) * f.rhs_multiplier + f.offset, f.shift, f.even),
                    -128), 120) for x, y in zip(a.ravel().tolist(), b.ravel().tolist(), strict=True)]
    np.testing.assert_array_equal(layout.unpack(out).ravel(), np.array(want))
    np.testing.assert_array_equal(qnn.qadd_np(spec, a, b).ravel(), np.array(want))
    assert stats["gemm_counter"] == 0


def test_every_offered_tiling_of_a_fitted_sum_fits_its_constant_vectors(tmp_path):
    """A fitted sum whose multipliers pass the 16-bit immediate builds constant vectors in the
    accumulator: the tilings tuning is offered (``alu_candidates``) leave room for them, so the
    largest one builds and matches the sum written here on every pair."""
    from vta.env import get_env
    from vta.topi.alu_tiling import alu_candidates
    from vta.topi.qnn_build import alu_workload, declare_qadd
    from vta.topi.qnn_fit import AffineSum

    f = AffineSum(288971, 436527, 6749993 - 128 * (288971 + 436527), 19)
    unused = qnn.ResidualSpec(0, qnn.Requant.from_scale(0.5))
    spec = qnn.QAddSpec(1, 256, 16, 16, unused, unused, 0, (-128, 127), fit=f)
    env = get_env()
    biggest = max(alu_candidates(env, alu_workload("add", spec, declare_qadd, env)),
                  key=lambda t: t.tile_c * t.tile_h)
    assert biggest.tile_c * biggest.tile_h * spec.width * 2 >= env.ACC_BUFF_DEPTH // 2   # not a small tile
    g = np.arange(-128, 128)
    a = np.repeat(g, 256).astype(np.int8).reshape(spec.out_shape)
    b = np.tile(g, 256).astype(np.int8).reshape(spec.out_shape)
    mod, layout = qnn.build_qadd(spec, "qadd_fit_tiled", tiling=biggest)
    out, _ = run_op(mod, layout, layout.pack_args(lhs=a, rhs=b), tmp_path)
    want = [min(max((int(x) * f.lhs_multiplier + int(y) * f.rhs_multiplier + f.offset) >> f.shift, -128), 127)
            for x, y in zip(a.ravel().tolist(), b.ravel().tolist(), strict=True)]
    np.testing.assert_array_equal(layout.unpack(out).ravel(), np.array(want))
