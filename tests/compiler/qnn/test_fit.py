"""Integer requantisations fitted to a table (vta.topi.qnn_fit) against brute force written here."""

from __future__ import annotations

import numpy as np
import pytest

from vta.topi.qnn_fit import AffineRequant, fit_affine


def _brute(x, m, c, s, lo, hi):
    out = []
    for v in x.tolist():
        t = v * m + c
        out.append(min(max(t // (1 << s), lo), hi))   # Python's // is the floor
    return np.array(out)


@pytest.mark.parametrize("seed", range(6))
def test_a_table_made_by_an_integer_form_is_fitted_exactly(seed):
    rng = np.random.default_rng(seed)
    x = np.arange(-128, 128)
    m, s = int(rng.integers(100, 30000)), int(rng.integers(8, 16))
    c = int(rng.integers(-(1 << (s + 6)), 1 << (s + 6)))
    y = _brute(x, m, c, s, -128, 127)
    fit = fit_affine(x, y, -128, 127)
    assert fit is not None
    np.testing.assert_array_equal(fit.apply(x, -128, 127), y)
    np.testing.assert_array_equal(_brute(x, fit.multiplier, fit.offset, fit.shift, -128, 127), y)
    assert abs(fit.multiplier) <= (1 << 15) - 1
    assert np.all(np.abs(x * fit.multiplier + fit.offset) < 1 << 31)


def test_ties_of_the_real_value_broken_downwards_are_fitted():
    # v = x * 0.75 + 0.5 ties at every x = 0 mod 4 ... and a float evaluation just below the tie
    # rounds them down, which the fixed-point round-half-up misses
    x = np.arange(0, 256)
    v = x * 0.375 + 0.5
    y = np.where(v % 1 == 0.5, np.floor(v), np.floor(v + 0.5)).astype(np.int64)
    fit = fit_affine(x, y, 0, 255)
    assert fit is not None
    np.testing.assert_array_equal(fit.apply(x, 0, 255), y)
    half_up = np.floor(v + 0.5).astype(np.int64)
    assert np.any(half_up != y)   # the fixed-point rounding differs on them


def test_saturated_entries_only_bound_the_fit():
    x = np.arange(0, 256)
    y = np.clip(np.floor(x * 3.7 - 40 + 0.5), 0, 255).astype(np.int64)
    fit = fit_affine(x, y, 0, 255)
    np.testing.assert_array_equal(fit.apply(x, 0, 255), y)


def test_a_constant_table_and_an_impossible_one():
    x = np.arange(-128, 128)
    assert fit_affine(x, np.full(256, 7), -128, 127) == AffineRequant(0, 7, 0)
    # not monotone: no affine form gives it
    y = np.where(x % 2 == 0, 1, 0)
    assert fit_affine(x, y, -128, 127) is None


def test_bad_tables_are_refused():
    with pytest.raises(ValueError, match="one length"):
        fit_affine(np.arange(3), np.arange(4), 0, 255)
    with pytest.raises(ValueError, match="distinct"):
        fit_affine(np.array([1, 1]), np.array([0, 0]), 0, 255)
    with pytest.raises(ValueError, match=r"lie in \[0, 255\]"):
        fit_affine(np.arange(2), np.array([0, 300]), 0, 255)


def _brute_sum(xa, xb, ma, mb, c, s, lo, hi):
    return np.array([[min(max((a * ma + b * mb + c) // (1 << s), lo), hi) for b in xb.tolist()] for a in xa.tolist()])


@pytest.mark.parametrize("seed", range(4))
def test_a_sum_table_made_by_an_integer_form_is_fitted_exactly(seed):
    from vta.topi.qnn_fit import fit_affine_sum

    rng = np.random.default_rng(seed)
    x = np.arange(-128, 128, 3)
    s = int(rng.integers(10, 20))
    ma, mb = (int(v) for v in rng.integers(1 << (s - 3), 1 << s, 2))
    c = int(rng.integers(-(1 << (s + 4)), 1 << (s + 4)))
    y = _brute_sum(x, x, ma, mb, c, s, -128, 127)
    fit = fit_affine_sum(x, x, y, -128, 127)
    assert fit is not None and fit.shift <= s
    np.testing.assert_array_equal(_brute_sum(x, x, fit.lhs_multiplier, fit.rhs_multiplier, fit.offset, fit.shift,
                                             -128, 127), y)


def test_a_sum_table_with_a_step_out_of_line_has_no_fit():
    from vta.topi.qnn_fit import fit_affine_sum

    x = np.arange(-20, 20)
    y = _brute_sum(x, x, 3, 5, 0, 3, -128, 127)
    y[7, 9] += 2                          # no monotone affine form has this jump
    assert fit_affine_sum(x, x, y, -128, 127) is None
    with pytest.raises(ValueError, match="increasing"):
        fit_affine_sum(x[::-1], x, y, -128, 127)
    with pytest.raises(ValueError, match="shape"):
        fit_affine_sum(x, x[:5], y, -128, 127)
