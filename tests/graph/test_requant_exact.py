"""The ``wide`` requantisation's four-product form against two oracles written here: Python's exact
integers (the form is ``floor(x * m / 2**24)`` for every int32 ``x``, no step leaving int32), and
onnxruntime's float32 formula ``nearbyint(float32(acc) * float32(M))`` (the two differ exactly where
float32's rounding of the product carries it across a half, and by 1 there)."""

from __future__ import annotations

import numpy as np
import pytest

from vta.topi import qnn_requant
from vta.topi.qnn_requant import QUAD_SHIFT, QUAD_SPLIT, Requant, requantize_np

I32 = (-(1 << 31), (1 << 31) - 1)


def _i32(v: int, what: str) -> int:
    assert I32[0] <= v <= I32[1], f"{what} = {v} leaves int32"
    return v


def _four_product_steps(x: int, m: int) -> int:
    """The ALU program of ``_Chain.four_product`` step by step on Python integers, each value
    checked to stay inside int32 (``>>`` is the ALU's arithmetic shift)."""
    mh, ml = m >> QUAD_SPLIT, m & ((1 << QUAD_SPLIT) - 1)
    hi = _i32((_i32(x >> 1, "x >> 1") + (1 << 13)) >> 14, "hi")
    lo = x - (hi << 15)                                   # (x << 17) >> 17 on int32: the low 15 bits, signed
    assert -(1 << 14) <= lo < (1 << 14)
    low = _i32(lo * ml, "lo * ml") >> QUAD_SPLIT
    c1 = _i32(_i32(lo * mh, "lo * mh") + low, "c1") >> (15 - QUAD_SPLIT)
    c2 = _i32(_i32(hi * ml, "hi * ml") + c1, "c2") >> QUAD_SPLIT
    return _i32(_i32(hi * mh, "hi * mh") + c2, "u")


def _shl17_shr17(x: int) -> int:
    """``(x << 17) >> 17`` in int32 (the low 15 bits, sign-extended)."""
    v = (x << 17) & 0xFFFFFFFF
    v = v - (1 << 32) if v >> 31 else v
    return v >> 17


@pytest.mark.parametrize("m", [1 << 23, (1 << 24) - 1, 0x800000 | 0x1FF, 0xABCDEF, 0xFFFE00, 511, 1])
def test_four_product_steps_are_the_exact_product_over_the_int32_range(m):
    rng = np.random.default_rng(m)
    xs = [I32[0], I32[0] + 1, I32[1], I32[1] - 1, 0, 1, -1, (1 << 14) - 1, -(1 << 14), 1 << 30, -(1 << 30)]
    xs += [int(v) for v in rng.integers(I32[0], I32[1], size=2000, endpoint=True)]
    xs += [int(v) for v in rng.integers(-(1 << 20), 1 << 20, size=2000)]
    for x in xs:
        hi = ((x >> 1) + (1 << 13)) >> 14
        assert x - (hi << 15) == _shl17_shr17(x)          # the in-place lo is x - hi * 2**15
        assert _four_product_steps(x, m) == (x * m) >> QUAD_SHIFT, x


@pytest.mark.parametrize("acc_bits", [19, 22, 26, 31, 32])
def test_wide_takes_all_24_bits_of_the_float32_multiplier_for_any_bound(acc_bits):
    rng = np.random.default_rng(acc_bits)
    scales = rng.uniform(2e-6, 0.24, size=32)  # below 1/4: a shift of 26 at least
    rq = Requant.from_scale(scales, mode="wide", acc_bits=acc_bits)
    assert rq.mode == "wide" and rq.four_product and rq.product_shift() == QUAD_SHIFT
    # m * 2**-s is the float32 multiplier itself (24 significant bits)
    np.testing.assert_array_equal(rq.scale(), scales.astype(np.float32).astype(np.float64))
    s1, s2 = rq.split_shifts()
    assert s2 >= 1 and np.all(s1 + s2 + QUAD_SHIFT == rq.shift)
    if acc_bits > 30:                                      # a first shift before the rounding constant
        assert np.all(s1 >= 1)
    mh, ml = rq.alu_multipliers()
    np.testing.assert_array_equal(mh.astype(np.int64) * (1 << QUAD_SPLIT) + ml, rq.multiplier)


def test_wide_keeps_the_two_product_split_below_19_bits_and_fixed_for_large_multipliers():
    rq = Requant.from_scale(0.003, mode="wide", acc_bits=18)
    assert not rq.four_product and rq.product_shift() == 13
    # M >= 1/2 has a shift of 24 at most: no rounding step after floor(x m / 2**24)
    big = Requant.from_scale(0.7, mode="wide", acc_bits=24)
    assert big.mode == "fixed"
    with pytest.raises(ValueError, match="four-product form"):
        Requant(np.array([(1 << 24) - 1]), np.array([24]), mode="wide", acc_bits=24)


def _onnxruntime(acc: np.ndarray, scale32: np.float32) -> np.ndarray:
    """QLinearConv's requantisation (MLAS): the float32 product, rounded half to even."""
    return np.rint(acc.astype(np.float32) * np.float32(scale32)).astype(np.int64)


@pytest.mark.parametrize("scale,acc_bits", [(0.00173, 20), (4.1e-5, 22), (0.0213, 19), (1.3e-4, 23)])
def test_wide_equals_onnxruntime_except_where_float32_rounds_the_product_across_a_half(scale, acc_bits):
    # every accumulator of the bound (a sweep of 2**acc_bits values around 0, below 2**24 where
    # float32(acc) is exact); outputs kept inside +-300 (beyond, an int8 output saturates either way)
    s32 = np.float32(scale)
    rq = Requant.from_scale(float(s32), mode="wide", acc_bits=acc_bits)
    assert rq.four_product
    reach = min(1 << acc_bits, int(300 / float(s32)))
    acc = np.arange(-reach, reach + 1, dtype=np.int64)
    ours = requantize_np(acc, rq, lo=-(1 << 30), hi=1 << 30).astype(np.int64)
    theirs = _onnxruntime(acc, s32)
    exact = acc.astype(np.float64) * np.float64(s32)       # exact in float64: 24 x 24 bits
    # float32's rounding of the exact product: a half-ulp of the product's binade
    ulp = np.exp2(np.floor(np.log2(np.maximum(np.abs(exact), 1e-30))) - 23)
    frac = exact - np.floor(exact)
    near_half = np.abs(frac - 0.5) <= ulp / 2
    differ = ours != theirs
    assert np.all(np.abs(ours - theirs) <= 1)
    assert not np.any(differ & ~near_half)                 # only where the float32 product moves
    assert np.array_equal(ours[~near_half], theirs[~near_half])
    # and there, onnxruntime's value is the float32 product's rounding, ours the exact one's
    assert np.array_equal(ours, np.floor(exact + 0.5).astype(np.int64))
    assert differ.mean() < 1e-4


def test_the_accumulator_bound_no_longer_limits_the_multiplier():
    assert qnn_requant.wide_bits(22) == 17                 # the two-product split's bits at 22 ...
    rq = Requant.from_scale(0.0021, mode="wide", acc_bits=22)
    assert int(rq.multiplier[0]).bit_length() == 24        # ... the four-product form keeps 24
