"""Requant and requantize_np (pure Python): the fixed-point approximation, the rounding, the
pre-shift, the pow2 mode, and the documented distance from onnxruntime's float32 rint."""

from __future__ import annotations

import numpy as np
import pytest

from vta.topi import qnn

from .oracle import round_shift


@pytest.mark.parametrize("scale", [1e-5, 3.1e-4, 0.0123, 0.25, 0.5, 0.999, 1.0, 1.7, 37.0, 127.5])
def test_from_scale_keeps_8_significant_bits(scale):
    rq = qnn.Requant.from_scale(scale)
    m, s = int(rq.multiplier[0]), int(rq.shift[0])
    assert 128 <= m <= 255 and s >= 1 and rq.pre_shift == 0
    assert abs(m / 2 ** s - scale) <= scale * 2 ** -8


def test_per_channel_scales_and_bad_scales():
    rq = qnn.Requant.from_scale([0.001, 0.002, 0.5])
    assert rq.per_channel and rq.channels == 3 and rq.multiplier.dtype == np.int32
    np.testing.assert_allclose(rq.scale(), [0.001, 0.002, 0.5], rtol=2 ** -8)
    for bad in (-0.1, float("nan"), 200.0):
        with pytest.raises(ValueError):
            qnn.Requant.from_scale(bad)
    with pytest.raises(ValueError, match="mode"):
        qnn.Requant.from_scale(0.1, mode="float")
    assert qnn.Requant.from_scale(0.1) == qnn.Requant.from_scale(0.1)
    assert hash(qnn.Requant.from_scale(0.1)) == hash(qnn.Requant.from_scale(0.1))


def test_requantize_np_rounds_half_up_and_saturates():
    rq = qnn.Requant(np.array([1]), np.array([1]))  # y = round(acc / 2), ties up
    acc = np.array([-5, -3, -1, 1, 3, 5, 1000, -1000], dtype=np.int32)
    got = qnn.requantize_np(acc, rq, 0, 0, -128, 127)
    np.testing.assert_equal(got, [-2, -1, 0, 1, 2, 3, 127, -128])
    got = qnn.requantize_np(acc, rq, 0, 10, 0, 20)
    np.testing.assert_equal(got, [8, 9, 10, 11, 12, 13, 20, 0])


def test_requantize_np_equals_the_integer_definition():
    rng = np.random.default_rng(3)
    acc = rng.integers(-(1 << 23), 1 << 23, size=(4, 6, 5)).astype(np.int32)
    rq = qnn.Requant.from_scale(rng.uniform(1e-4, 0.3, size=6))
    want = np.clip(round_shift(acc, rq.multiplier.reshape(1, 6, 1), rq.shift.reshape(1, 6, 1)) - 3, -128, 127)
    np.testing.assert_equal(qnn.requantize_np(acc, rq, 1, -3), want)


def test_pre_shift_keeps_the_product_in_int32():
    rq = qnn.Requant.from_scale(1e-4, acc_bits=28)
    assert rq.pre_shift == 5
    acc = np.array([(1 << 27) - 1, -(1 << 27)], dtype=np.int32)
    want = round_shift(acc, int(rq.multiplier[0]), int(rq.shift[0]), 5)
    np.testing.assert_equal(qnn.requantize_np(acc, rq, 0, 0, -(1 << 31), (1 << 31) - 1), want)
    exact = ((1 << 27) - 1) * 1e-4
    assert abs(int(want[0]) - exact) <= exact * 2 ** -8 + 1  # 8 significant bits of m


def test_pow2_mode_has_no_multiplier():
    rq = qnn.Requant.from_scale([0.01, 0.3, 2.0], mode="pow2")
    np.testing.assert_equal(rq.multiplier, [1, 1, 4])
    np.testing.assert_equal(rq.shift, [7, 2, 1])  # 2**-7 ~ 0.0078, 2**-2, 4/2
    np.testing.assert_equal(qnn.requantize_np(np.array([[256, 256, 3]]), rq, 1), [[2, 64, 6]])


def test_difference_from_float32_rint_is_at_most_one():
    # onnxruntime: rint(float32(acc) * float32(M)) + z, ties to even. Ours differs by <= 1.
    rng = np.random.default_rng(4)
    worst = 0
    for scale in rng.uniform(1e-4, 2e-2, size=20):
        acc = rng.integers(-(1 << 14), 1 << 14, size=4000).astype(np.int32)
        ours = qnn.requantize_np(acc, qnn.Requant.from_scale(scale), 0)
        ref = np.clip(np.rint(acc.astype(np.float32) * np.float32(scale)), -128, 127)
        worst = max(worst, int(np.abs(ours - ref).max()))
    assert worst <= 1


def test_specs_reject_bad_input():
    rq = qnn.Requant.from_scale(0.01)
    with pytest.raises(ValueError, match="clip"):
        qnn.QConv2DSpec(1, 16, 16, 8, 8, 3, 3, (1, 1), (1, 1, 1, 1), 0, rq, 0, (0, 200))
    with pytest.raises(ValueError, match="zero point 128"):
        qnn.QConv2DSpec(1, 16, 16, 8, 8, 3, 3, (1, 1), (1, 1, 1, 1), 128, rq, 0)
    with pytest.raises(ValueError, match="3 per-channel multipliers for 16 output channels"):
        qnn.QConv2DSpec(1, 16, 16, 8, 8, 3, 3, requant=qnn.Requant.from_scale([0.1, 0.2, 0.3]))
    with pytest.raises(ValueError, match="smaller than the 7x7 kernel"):
        qnn.QConv2DSpec(1, 3, 16, 4, 4, 7, 7, (2, 2), (1, 1, 1, 1))
    with pytest.raises(ValueError, match="padding"):
        qnn.QConv2DSpec(1, 3, 16, 8, 8, 3, 3, (1, 1), (1, -1, 1, 1))
    with pytest.raises(ValueError, match="per tensor"):
        qnn.ResidualSpec(0, qnn.Requant.from_scale([0.1, 0.2]))
    with pytest.raises(ValueError, match="smaller than the pool"):
        qnn.MaxPoolSpec(1, 16, 8, 8, (3, 3), (2, 2), (3, 3, 3, 3))
    with pytest.raises(ValueError, match="multipliers must lie"):
        qnn.Requant(np.array([300]), np.array([8]))
    # Normalised forms: an int padding is four sides, a pair is symmetric.
    assert qnn.QConv2DSpec(1, 16, 16, 8, 8, 3, 3, 2, 1).padding == (1, 1, 1, 1)
    assert qnn.QConv2DSpec(1, 16, 16, 8, 8, 3, 3, (2, 2), (1, 2)).out_shape == (1, 16, 4, 5)


def test_host_references_reject_wrong_shapes():
    spec = qnn.QConv2DSpec(1, 16, 16, 8, 8, 3, 3)
    with pytest.raises(ValueError, match="data shape"):
        qnn.qconv2d_np(spec, np.zeros((1, 8, 8, 8), np.int8), np.zeros((16, 16, 3, 3), np.int8), None)
    res = qnn.ResidualSpec(0, qnn.Requant.identity())
    spec = qnn.QDenseSpec(2, 16, 4, residual=res)
    with pytest.raises(ValueError, match="no residual tensor"):
        qnn.qdense_np(spec, np.zeros((2, 16), np.int8), np.zeros((4, 16), np.int8), None)
