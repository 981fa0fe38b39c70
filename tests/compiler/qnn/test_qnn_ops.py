"""The fused quantized operators on fsim, for the default and the BATCH=2 configurations, against
the tests' own integer oracle (``oracle.py``): convolutions (3x3 s1/s2, 1x1 s2, 7x7 s2 p3 with 3
input channels, channels that are not multiples of the block, asymmetric padding, input zero
points), per-tensor and per-channel multipliers, residual adds with their own scale, relu and
clip, dense, the quantized add and max pooling.
"""

from __future__ import annotations

import numpy as np
import pytest

from vta.topi import qnn

from . import oracle
from .conftest import run_op

RNG_SEED = 11


def _conv(env, tmp_path, *, n=1, ci=16, co=16, h=8, w=8, k=3, stride=1, pad=(1, 1, 1, 1), z_in=0, scale=0.002,
          z_out=0, clip=(-128, 127), residual=None, seed=0):
    rng = np.random.default_rng(seed)
    spec = qnn.QConv2DSpec(n, ci, co, h, w, k, k, (stride, stride), pad, z_in, qnn.Requant.from_scale(scale), z_out,
                           clip, residual)
    x = rng.integers(-128, 128, size=(n, ci, h, w)).astype(np.int8)
    wt = rng.integers(-128, 128, size=(co, ci, k, k)).astype(np.int8)
    bias = rng.integers(-5000, 5000, size=co).astype(np.int32)
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
    ya = oracle.round_shift(a.astype(np.int64) - 3, int(lhs.requant.multiplier[0]), int(lhs.requant.shift[0]))
    yb = oracle.round_shift(b.astype(np.int64) + 7, int(rhs.requant.multiplier[0]), int(rhs.requant.shift[0]))
    want = np.clip(ya + yb - 2, -128, 120).astype(np.int8)
    np.testing.assert_array_equal(layout.unpack(out), want)
    np.testing.assert_array_equal(qnn.qadd_np(spec, a, b), want)
    assert stats["gemm_counter"] == 0


@pytest.mark.parametrize("pool,stride,pad,hw", [((3, 3), (2, 2), (1, 1, 1, 1), (9, 9)),
                                                ((3, 3), (2, 2), (1, 1, 1, 1), (32, 32)),
                                                ((2, 2), (2, 2), (0, 0, 0, 0), (8, 6))])
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
    from vta.topi.qnn_build import maxpool_unsupported_reason

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
    lhs = oracle.round_shift(conv_int8 + 10, int(inter.requant.multiplier[0]), int(inter.requant.shift[0]))
    want = oracle.finish(lhs, -128, (-128, 127), r, res)
    np.testing.assert_array_equal(layout.unpack(out), want)
    np.testing.assert_array_equal(qnn.qconv2d_np(spec, x, w, bias, r), want)


def test_conv_with_a_pre_shift(qenv, tmp_path):
    rng = np.random.default_rng(17)
    assert qnn.accumulator_bits(16 * 9, 5000) == 22  # 144 * 2**14 + 5000 < 2**22
    rq = qnn.Requant.from_scale(0.0009, acc_bits=25)  # a larger bound: 25 + 8 - 31 = 2 bits pre-shifted
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
    ya = oracle.round_shift(a.astype(np.int64), int(lhs.requant.multiplier[0]), int(lhs.requant.shift[0]))
    yb = oracle.round_shift(b.astype(np.int64) + 128, int(rhs.requant.multiplier[0]), int(rhs.requant.shift[0]))
    want = np.clip(ya + yb, 0, 127).astype(np.int8)
    np.testing.assert_array_equal(layout.unpack(out)[:, :, 0, 0], want)
