"""Requant and requantize_np (pure Python): the fixed-point approximation, the rounding, the
pre-shift, the pow2 mode, and the documented distance from onnxruntime's float32 rint."""

from __future__ import annotations

import numpy as np
import pytest

from vta.topi import qnn

from .oracle import _i32, alu_multiplier_split, alu_split_product, ort_requant, round_shift, rounded_sum

SCALES = [1e-5, 3.1e-4, 0.0123, 0.25, 0.5, 0.999, 1.0, 1.7, 37.0, 127.5]


@pytest.mark.parametrize("scale", SCALES)
def test_fixed8_keeps_8_significant_bits(scale):
    rq = qnn.Requant.from_scale(scale, mode="fixed8")
    m, s = int(rq.multiplier[0]), int(rq.shift[0])
    assert 128 <= m <= 255 and s >= 1 and rq.pre_shift == 0
    assert abs(m / 2 ** s - scale) <= scale * 2 ** -8


@pytest.mark.parametrize("scale", SCALES)
def test_fixed_keeps_15_significant_bits(scale):
    rq = qnn.Requant.from_scale(scale)
    m, s = int(rq.multiplier[0]), int(rq.shift[0])
    assert rq.mode == "fixed" and 1 << 14 <= m < 1 << 15 and s >= 1 and rq.pre_shift == 0
    m32 = float(np.float32(scale))  # onnxruntime's multiplier is a float32
    assert abs(m / 2 ** s - m32) <= m32 * 2 ** -15
    assert rq.split == (scale < 0.5)  # shift above 15: the split product; else the clamped one


def test_per_channel_scales_and_bad_scales():
    rq = qnn.Requant.from_scale([0.001, 0.002, 0.5])
    assert rq.per_channel and rq.channels == 3 and rq.multiplier.dtype == np.int32
    np.testing.assert_allclose(rq.scale(), [0.001, 0.002, 0.5], rtol=2 ** -15)
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


@pytest.mark.parametrize("mode,bits", [("fixed", 31), ("fixed8", 23)])
def test_requantize_np_equals_the_integer_definition(mode, bits):
    # fixed: exact for every int32 accumulator; fixed8: while |acc| < 2**23
    rng = np.random.default_rng(3)
    acc = rng.integers(-(1 << bits), 1 << bits, size=(4, 6, 5)).astype(np.int64)
    acc[0, 0, :2] = [-(1 << bits), (1 << bits) - 1]
    rq = qnn.Requant.from_scale(rng.uniform(1e-4, 0.3, size=6), mode=mode)
    want = np.clip(round_shift(acc, rq.multiplier.reshape(1, 6, 1), rq.shift.reshape(1, 6, 1)) - 3, -128, 127)
    np.testing.assert_equal(qnn.requantize_np(acc, rq, 1, -3), want)
    wide = round_shift(acc, rq.multiplier.reshape(1, 6, 1), rq.shift.reshape(1, 6, 1))
    np.testing.assert_equal(qnn.requantize_np(acc, rq, 1, 0, -(1 << 31), (1 << 31) - 1), wide)


def test_alu_split_product_is_the_exact_product():
    # The ALU's steps (oracle model, int32 checked) give floor(acc * m / 2**15) for every int32 acc.
    rng = np.random.default_rng(6)
    acc = np.concatenate([rng.integers(-(1 << 31), 1 << 31, size=3000), [-(1 << 31), (1 << 31) - 1, 0, -1, 32767]])
    m = rng.integers(0, 1 << 15, size=acc.size)
    m[:4] = (1 << 15) - 1
    got = alu_split_product(acc, m)
    want = np.array([(int(a) * int(b)) >> 15 for a, b in zip(acc, m, strict=True)], dtype=np.int64)
    np.testing.assert_array_equal(got, want)
    # ... and the rounding that follows gives requantize_np
    rq = qnn.Requant.from_scale(rng.uniform(1.6e-4, 4.7e-3, size=8))
    a = rng.integers(-(1 << 31), 1 << 31, size=(8, 100)).astype(np.int64)
    t = alu_split_product(a, rq.multiplier[:, None])
    y = round_shift(t, 1, rq.shift[:, None] - 15)
    np.testing.assert_array_equal(qnn.requantize_np(a, rq, 0, 0, -(1 << 31), (1 << 31) - 1), y)


def test_alu_multiplier_split_below_2_pow_23():
    rng = np.random.default_rng(8)
    acc = np.concatenate([rng.integers(-(1 << 23) + 1, 1 << 23, size=3000), [-(1 << 23) + 1, (1 << 23) - 1]])
    m = rng.integers(0, 1 << 15, size=acc.size)
    m[-2:] = (1 << 15) - 1
    want = np.array([(int(a) * int(b)) >> 8 for a, b in zip(acc, m, strict=True)], dtype=np.int64)
    np.testing.assert_array_equal(alu_multiplier_split(acc, m), want)


@pytest.mark.parametrize("bits,k,clamp", [(None, 15, False), (31, 15, False), (23, 8, False), (17, 8, False),
                                          (16, 0, False), (9, 0, False)])
def test_product_forms_follow_the_accumulator_bound(bits, k, clamp):
    rq = qnn.Requant.from_scale([0.001, 0.003], acc_bits=bits)
    assert rq.acc_bits == bits and rq.product_shift() == k and rq.needs_clamp() == clamp
    assert rq.product_shift(bounded=True) == 0 and len(rq.alu_multipliers()) == (2 if k == 8 else 1)
    if k == 8:
        mh, ml = rq.alu_multipliers()
        np.testing.assert_array_equal(mh * 256 + ml, rq.multiplier)
    big = qnn.Requant.from_scale(0.7, acc_bits=bits)
    assert big.product_shift() == 0 and big.needs_clamp() == (bits is None or bits > 15)
    assert qnn.Requant.from_scale(0.001, mode="fixed8", acc_bits=bits).acc_bits is None


def test_fixed_clamps_the_accumulator_for_large_multipliers():
    # M >= 1/2 (shift <= 15): acc is clamped to +-32767 before a single multiply; only saturated
    # results change.
    rq = qnn.Requant.from_scale(0.7)
    assert not rq.split and rq.product_shift() == 0
    acc = np.array([(1 << 31) - 1, -(1 << 31), 100, -100, 40000])
    got = qnn.requantize_np(acc, rq, 0, 0, -(1 << 31), (1 << 31) - 1)
    want = round_shift(np.clip(acc, -32767, 32767), int(rq.multiplier[0]), int(rq.shift[0]))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(qnn.requantize_np(acc, rq, 0), [127, -128, 70, -70, 127])


def test_padded_channels_keep_the_split():
    # A zero multiplier (a channel padded to the block) does not count against the split.
    rq = qnn.Requant(np.array([20000, 0, 30000]), np.array([25, 1, 24]))
    assert rq.split
    s1, s2 = rq.split_shifts()
    assert s2 == 9 and s1.tolist() == [1, 0, 0]


def test_pre_shift_keeps_the_product_in_int32():
    assert qnn.Requant.from_scale(1e-4, acc_bits=28).pre_shift == 0  # fixed: exact without
    rq = qnn.Requant.from_scale(1e-4, mode="fixed8", acc_bits=28)
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
        ours = qnn.requantize_np(acc, qnn.Requant.from_scale(scale, mode="fixed8"), 0)
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
        qnn.Requant(np.array([300]), np.array([8]), mode="fixed8")
    with pytest.raises(ValueError, match="multipliers must lie"):
        qnn.Requant(np.array([1 << 15]), np.array([20]))
    with pytest.raises(ValueError, match="no pre_shift"):
        qnn.Requant(np.array([100]), np.array([20]), pre_shift=2)
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


@pytest.mark.parametrize("post_add", [0, 5, -128, 127])
@pytest.mark.parametrize("mode", ["fixed", "fixed8"])
def test_split_shifts_reproduce_the_rounding(post_add, mode):
    # The accelerator's form (((t >> k) >> s1) + 2**(s2-1) + post_add * 2**s2) >> s2 equals the
    # definition (k = 15 for the split product of the fixed mode, else 0).
    rng = np.random.default_rng(5)
    rq = qnn.Requant.from_scale(rng.uniform(1e-5, 0.45, size=8), mode=mode)
    k = rq.product_shift()
    assert k == (15 if mode == "fixed" else 0) and rq.product_shift(bounded=True) == 0
    s1, s2 = rq.split_shifts(post_add)
    assert 1 <= s2 <= 15 and (s1 >= 0).all() and (s1 + s2 + k == rq.shift).all()
    c = (1 << (s2 - 1)) + post_add * (1 << s2)
    if s1.max() > 0:
        assert -(1 << 15) <= c < (1 << 15)
    t = rng.integers(-(1 << 45), 1 << 45, size=(50, 8))
    got = (((t >> k) >> s1) + c) >> s2
    want = round_shift(t, 1, rq.shift) + post_add
    np.testing.assert_array_equal(got, want)


def test_fixed_agrees_with_onnxruntime_rounding():
    # Random accumulators, realistic per-channel multipliers (ResNet-18: 1.6e-4 .. 4.7e-3):
    # >= 99.9% equal to onnxruntime's float32 rint and never more than 1 apart (fixed8: ~96%).
    rng = np.random.default_rng(7)
    stats = {}
    for mode in ("fixed", "fixed8"):
        equal = total = worst = 0
        for _ in range(3):
            scales = np.exp(rng.uniform(np.log(1.6e-4), np.log(4.7e-3), size=64))
            # outputs spread over the int8 range (std 40 steps), a few saturated
            acc = np.rint(rng.standard_normal((16, 64, 32)) * (40.0 / scales)[None, :, None]).astype(np.int64)
            ours = qnn.requantize_np(acc, qnn.Requant.from_scale(scales, mode=mode), 1, 3)
            ref = ort_requant(acc, scales[None, :, None], 3)
            d = np.abs(ours.astype(np.int64) - ref)
            equal, total, worst = equal + int((d == 0).sum()), total + d.size, max(worst, int(d.max()))
        stats[mode] = (equal / total, worst)
    assert stats["fixed"][0] >= 0.999 and stats["fixed"][1] <= 1, stats
    assert stats["fixed8"][0] < stats["fixed"][0] and stats["fixed8"][1] <= 1, stats


@pytest.mark.parametrize("mode", ["fixed", "fixed8"])
def test_add_np_is_the_quantized_add_of_any_shape(mode):
    rng = np.random.default_rng(9)
    a = rng.integers(-128, 128, size=(3, 7)).astype(np.int8)
    b = rng.integers(-128, 128, size=(3, 7)).astype(np.int8)
    ra, rb = qnn.Requant.from_scale(0.71, mode=mode), qnn.Requant.from_scale(1.37, mode=mode)
    got = qnn.add_np([(a, 4, ra), (b, -9, rb)], 2, -128, 120)
    if mode == "fixed":  # one rounding of the sum: the oracle's rounded_sum
        want = rounded_sum([a.astype(np.int64) - 4, b.astype(np.int64) + 9], [ra, rb], 2, (-128, 120))
    else:
        ya = round_shift(a.astype(np.int64) - 4, int(ra.multiplier[0]), int(ra.shift[0]))
        yb = round_shift(b.astype(np.int64) + 9, int(rb.multiplier[0]), int(rb.shift[0]))
        want = np.clip(ya + yb + 2, -128, 120)
    np.testing.assert_array_equal(got, want)
    # onnxruntime's QLinearAdd: one float32 rounding of the rescaled sum; within 1, mostly equal
    ref = np.clip(np.rint((a.astype(np.float32) - 4) * np.float32(0.71) + (b.astype(np.float32) + 9)
                          * np.float32(1.37)) + 2, -128, 120)
    assert np.abs(got - ref).max() <= (1 if mode == "fixed" else 2)
    with pytest.raises(ValueError, match="per tensor"):
        qnn.add_np([(a, 0, qnn.Requant.from_scale([0.1, 0.2, 0.3]))], 0)


@pytest.mark.parametrize("bits", [9, 16, 18])
def test_wide_keeps_the_float32_bits_the_bound_leaves(bits):
    # m carries all 24 significant bits of float32(M) (min(24, 61 - 2 * bits)); the ALU's split
    # product (int32 asserted at every step by the oracle) and rounding give requantize_np's exact
    # value. Above 18 bits the four-product form keeps the 24 (tests/graph/test_requant_exact.py).
    rng = np.random.default_rng(bits)
    scales = rng.uniform(1.6e-4, 4.7e-3, size=6)
    rq = qnn.Requant.from_scale(scales, mode="wide", acc_bits=bits)
    b, k = min(24, 61 - 2 * bits), min(15, 31 - bits)
    assert rq.mode == "wide" and rq.acc_bits == bits and rq.product_shift() == k == rq.product_shift(bounded=True)
    assert np.all(rq.multiplier >= 1 << (b - 1)) and np.all(rq.multiplier < 1 << b)
    m32 = scales.astype(np.float32).astype(np.float64)
    assert np.all(np.abs(rq.scale() - m32) <= m32 * 2.0 ** -b)
    mh, ml = rq.alu_multipliers()
    np.testing.assert_array_equal(mh.astype(np.int64) * (1 << k) + ml, rq.multiplier)
    acc = rng.integers(-(1 << bits) + 1, 1 << bits, size=(6, 300)).astype(np.int64)
    acc[:, :2] = [-(1 << bits) + 1, (1 << bits) - 1]
    t = np.empty(acc.shape, dtype=np.int64)
    for c in range(6):
        for j in range(acc.shape[1]):
            a = int(acc[c, j])
            low = _i32(_i32(a * int(ml[c])) >> k)
            t[c, j] = _i32(_i32(a * int(mh[c])) + low)
    y = round_shift(t, 1, rq.shift[:, None] - k)
    np.testing.assert_array_equal(qnn.requantize_np(acc, rq, 0, 0, -(1 << 31), (1 << 31) - 1), y)
    want = np.array([[(int(a) * int(m) + (1 << (int(s) - 1))) >> int(s) for a in row]
                     for row, m, s in zip(acc, rq.multiplier, rq.shift, strict=True)])
    np.testing.assert_array_equal(y, want)


def test_wide_falls_back_to_fixed_without_a_usable_bound():
    # no bound, or a multiplier too large for the four-product form with a bound above 22 bits
    for bits, scale in ((None, 0.003), (23, 0.7), (31, 0.3)):
        rq = qnn.Requant.from_scale(scale, mode="wide", acc_bits=bits)
        assert rq == qnn.Requant.from_scale(scale, mode="fixed", acc_bits=bits)
    # the largest multiplier still passes the two-product split (shift 10 > 9 at 17 bits)
    big = qnn.Requant.from_scale(127.5, mode="wide", acc_bits=22)
    assert big.mode == "wide" and not big.four_product and int(big.shift[0]) > big.product_shift()
    with pytest.raises(ValueError, match="wide mode needs acc_bits"):
        qnn.Requant(np.array([1 << 20]), np.array([30]), mode="wide")
    with pytest.raises(ValueError, match="below 2\\*\\*17"):
        qnn.Requant(np.array([1 << 20]), np.array([20]), mode="wide", acc_bits=22)


def test_wide_matches_onnxruntimes_float_rounding_far_more_often_than_fixed():
    rng = np.random.default_rng(12)
    scales = rng.uniform(1.6e-4, 4.7e-3, size=16).astype(np.float32)
    acc = np.clip(np.rint(rng.standard_normal((16, 20000)) * (35.0 / scales[:, None])), -(1 << 19) + 1,
                  (1 << 19) - 1).astype(np.int64)
    ref = ort_requant(acc, scales[:, None], 3)
    miss = {}
    for mode in ("fixed", "wide"):
        rq = qnn.Requant.from_scale(scales, mode=mode, acc_bits=19)
        miss[mode] = int((qnn.requantize_np(acc, rq, 0, 3) != ref).sum())
    assert miss["fixed"] > 20 * max(miss["wide"], 1)
