"""Integer requantisations fitted to a table: ``clip(floor((x * m + c) / 2**s), lo, hi)`` equal to
given outputs on every input of a small domain.

An element-wise quantized operator with one varying 8-bit operand (a sum or product with a
constant, a rescale) is a function of 256 inputs. onnxruntime evaluates it in float32 (its
QLinearAdd folds the zero points into a float constant and uses fused multiply-adds), so an exact
tie of the real result may come out either way, and the fixed-point rounding of
:func:`vta.topi.qnn.add_np` (half up) differs from it on such ties: up to a few percent of the
outputs of a ``x + 3`` in a hard-swish. :func:`fit_affine` finds a multiplier ``m``, an offset
``c`` and a shift ``s`` for which the integer form (one MUL, one ADD, one SHR, MIN, MAX on the
ALU: the ops of a per-tensor requantisation, with ``c`` in place of its rounding constant and
zero point) gives exactly the table, or reports that none exists within the ALU's limits.

Each input ``x_i`` with output ``y_i`` asks ``y_i 2**s <= x_i m + c < (y_i + 1) 2**s`` (only the
upper half of that for ``y_i == lo`` and the lower half for ``y_i == hi``: the clip after takes
the rest). For a fixed ``s`` this is a convex set of ``(m, c)``; the pairs of inputs bound ``m``
(``(x_j - x_i) m <= U_j - L_i``), then ``c`` follows. The smallest ``s`` with an integer solution
wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["AffineRequant", "fit_affine", "MAX_FIT_MULTIPLIER", "MAX_FIT_SHIFT"]

#: The multiplier is an ALU immediate (signed 16-bit): at most 2**15 - 1 in magnitude.
MAX_FIT_MULTIPLIER = (1 << 15) - 1
#: Largest shift tried (``x * m + c`` must stay inside int32).
MAX_FIT_SHIFT = 24


@dataclass(frozen=True)
class AffineRequant:
    """``clip(floor((x * multiplier + offset) / 2**shift), lo, hi)`` of integer ``x``."""

    multiplier: int
    offset: int
    shift: int

    def apply(self, x: Any, lo: int, hi: int) -> np.ndarray:
        """The fitted outputs of ``x`` (any shape), int64."""
        t = np.asarray(x).astype(np.int64) * self.multiplier + self.offset
        return np.clip(np.right_shift(t, self.shift), int(lo), int(hi))


def _bounds(y: np.ndarray, s: int, lo: int, hi: int, even: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The values ``t`` with ``t / 2**s`` rounded down (``even``: half to even) to ``y``, open
    at a clipped end."""
    big = 1 << 60
    if even and s:
        half, odd = 1 << (s - 1), y & 1
        return np.where(y <= lo, -big, (y << s) - half + odd), np.where(y >= hi, big, (y << s) + half - odd)
    low = np.where(y <= lo, -big, y << s)
    up = np.where(y >= hi, big, ((y + 1) << s) - 1)
    return low, up


def fit_affine(x: Any, y: Any, lo: int, hi: int, max_multiplier: int = MAX_FIT_MULTIPLIER,
               max_shift: int = MAX_FIT_SHIFT) -> AffineRequant | None:
    """Integers ``(m, c, s)`` with ``clip(floor((x_i m + c) / 2**s), lo, hi) == y_i`` for every
    ``i``, ``|m| <= max_multiplier`` and ``|x_i m + c| < 2**31``; None when there are none.

    Parameters
    ----------
    x, y : 1-D arrays of int
        The inputs (distinct) and the outputs wanted (inside ``[lo, hi]``).
    lo, hi : int
        The clip applied after.
    max_multiplier, max_shift : int
        The search limits.

    Raises
    ------
    ValueError
        If ``x`` and ``y`` differ in length, are empty, ``x`` repeats a value, or a ``y`` lies
        outside ``[lo, hi]``.
    """
    x = np.asarray(x).astype(np.int64).ravel()
    y = np.asarray(y).astype(np.int64).ravel()
    if x.size != y.size or x.size == 0:
        raise ValueError(f"fit_affine: x and y must be non-empty and of one length, got {x.size} and {y.size}")
    if np.unique(x).size != x.size:
        raise ValueError("fit_affine: the inputs x must be distinct")
    if y.min() < lo or y.max() > hi:
        raise ValueError(f"fit_affine: outputs must lie in [{lo}, {hi}], got [{int(y.min())}, {int(y.max())}]")
    if np.all(y == y[0]):
        return AffineRequant(0, int(y[0]), 0)
    dx = x[None, :] - x[:, None]                              # x_j - x_i
    for s in range(0, max_shift + 1):
        low, up = _bounds(y, s, lo, hi)
        rhs = up[None, :] - low[:, None]                      # U_j - L_i
        pos, neg = dx > 0, dx < 0
        m_hi = np.floor_divide(rhs[pos], dx[pos]).min() if pos.any() else max_multiplier
        # (x_j - x_i) m <= U_j - L_i with x_j < x_i: m >= (L_i - U_j) / (x_i - x_j)
        m_lo = -np.floor_divide(rhs[neg], -dx[neg]).min() if neg.any() else -max_multiplier
        m_lo, m_hi = max(int(m_lo), -max_multiplier), min(int(m_hi), max_multiplier)
        for m in (range(m_lo, m_hi + 1) if m_hi - m_lo < 64 else (m_lo, (m_lo + m_hi) // 2, m_hi)):
            c_lo, c_hi = int((low - x * m).max()), int((up - x * m).min())
            if c_lo > c_hi:
                continue
            # the offset nearest the middle of the feasible range, inside int32 with every product
            c = min(max((c_lo + c_hi) // 2, c_lo), c_hi)
            t = x * m + c
            if t.min() < -(1 << 31) or t.max() >= 1 << 31:
                continue
            return AffineRequant(int(m), int(c), int(s))
    return None


#: Largest shift tried for a sum of two operands (the multipliers stay near ``r * 2**shift``).
MAX_SUM_SHIFT = 24
#: The ALU builds a constant vector up to this magnitude (:meth:`vta.topi.qnn_build._Chain.constant`).
MAX_SUM_CONSTANT = 1 << 30


@dataclass(frozen=True)
class AffineSum:
    """``clip(floor((a * lhs_multiplier + b * rhs_multiplier + offset) / 2**shift), lo, hi)`` of
    integers ``a``, ``b``; with ``even`` the division rounds half to even instead of down
    (``floor((x + 2**(shift-1) - 1 + q % 2) / 2**shift)``, ``q = floor(x / 2**shift)``: what a
    sum whose real value ties, as onnxruntime's ``rint`` rounds it, needs)."""

    lhs_multiplier: int
    rhs_multiplier: int
    offset: int
    shift: int
    even: bool = False

    def apply(self, a: Any, b: Any, lo: int, hi: int) -> np.ndarray:
        """The fitted outputs of ``a`` and ``b`` (broadcast), int64."""
        t = (np.asarray(a).astype(np.int64) * self.lhs_multiplier
             + np.asarray(b).astype(np.int64) * self.rhs_multiplier + self.offset)
        if self.even and self.shift:
            t = t + (1 << (self.shift - 1)) - 1 + (np.right_shift(t, self.shift) & 1)
        return np.clip(np.right_shift(t, self.shift), int(lo), int(hi))


def _slope_range(x: np.ndarray, low: np.ndarray, up: np.ndarray) -> tuple[int, int]:
    """The integers ``m`` for which some ``c`` gives ``low[i] <= x[i] m + c <= up[i]`` for every
    ``i`` (``x`` increasing): ``(x_p - x_q) m <= up_p - low_q`` for every pair; an empty range
    has ``lo > hi``."""
    dx = x[:, None] - x[None, :]
    rhs = up[:, None] - low[None, :]
    pos = dx > 0
    m_hi = np.floor_divide(rhs[pos], dx[pos]).min()
    m_lo = -np.floor_divide(rhs.T[pos], dx[pos]).min()      # pairs with x_p < x_q
    return int(m_lo), int(m_hi)


def _lhs_range(x: np.ndarray, low: np.ndarray, up: np.ndarray) -> tuple[int, int]:
    """The range of the left multiplier allowed by every column (a necessary condition): each
    column ``j`` (one right operand) is a one-operand fit of its own."""
    dx = x[:, None] - x[None, :]
    pos = dx > 0
    d = dx[pos][:, None]
    m_lo, m_hi = -(1 << 62), 1 << 62
    for j in range(0, low.shape[1], 32):
        rhs = up[:, None, j:j + 32] - low[None, :, j:j + 32]
        m_hi = min(m_hi, int(np.floor_divide(rhs[pos], d).min()))
        m_lo = max(m_lo, int(-np.floor_divide(rhs.transpose(1, 0, 2)[pos], d).min()))
        if m_lo > m_hi:
            break
    return m_lo, m_hi


def _span(xa: np.ndarray, xb: np.ndarray, f: AffineSum) -> int:
    """The largest ``|a m_a + b m_b + c|`` bound of a fit."""
    return int(np.abs(xa).max() * abs(f.lhs_multiplier) + np.abs(xb).max() * abs(f.rhs_multiplier) + abs(f.offset))


def _sum_at(xa: np.ndarray, xb: np.ndarray, low: np.ndarray, up: np.ndarray, candidates: list) -> AffineSum | None:
    """The first left multiplier of ``candidates`` with a right multiplier and offset meeting
    ``low <= a m_a + b m_b + c <= up`` everywhere (shift 0 here) inside the ALU's limits."""
    for ma in candidates:
        col_low = (low - ma * xa[:, None]).max(axis=0)
        col_up = (up - ma * xa[:, None]).min(axis=0)
        mb_lo, mb_hi = _slope_range(xb, col_low, col_up)
        if mb_lo > mb_hi:
            continue
        mb = (mb_lo + mb_hi) // 2
        c_lo, c_hi = int((col_low - mb * xb).max()), int((col_up - mb * xb).min())
        f = AffineSum(int(ma), int(mb), (c_lo + c_hi) // 2, 0)
        if max(abs(ma), abs(mb), abs(f.offset)) < MAX_SUM_CONSTANT and _span(xa, xb, f) < 1 << 31:
            return f
    return None


def _middle_out(lo: int, hi: int, count: int) -> list[int]:
    """At most ``count`` integers of ``[lo, hi]``, from its middle outwards (a wide range's
    feasible multipliers lie inside it; the middle ones first)."""
    mid = (lo + hi) // 2
    out = [mid]
    for d in range(1, count):
        out += [v for v in (mid - d, mid + d) if lo <= v <= hi]
        if len(out) >= count or (mid - d < lo and mid + d > hi):
            break
    return out[:count]


def fit_affine_sum(xa: Any, xb: Any, y: Any, lo: int, hi: int, max_shift: int = MAX_SUM_SHIFT,
                   max_candidates: int = 4096, even: bool = False) -> AffineSum | None:
    """Integers with ``clip(floor((a_i m_a + b_j m_b + c) / 2**s), lo, hi) == y[i, j]`` for every
    pair (``even``: the division rounded half to even, :class:`AffineSum`), the smallest shift
    ``s <= max_shift`` that has them, multipliers and offset below ``2**30`` and every ``a m_a +
    b m_b + c`` inside int32; None when there are none.

    The shifts are tried in increasing order. A solution at shift ``s`` doubled is one at
    ``s + 1``, so the left multiplier's range at ``max_shift`` (from the columns, one right
    operand each, as :func:`fit_affine`) scaled down bounds it at every shift; for each candidate
    in it the right multiplier's range comes from the rows' bounds.

    Parameters
    ----------
    xa, xb : 1-D arrays of int
        The left and right inputs, increasing.
    y : 2-D array of int
        ``y[i, j]``, the output wanted for ``(xa[i], xb[j])`` (inside ``[lo, hi]``).
    lo, hi : int
        The clip applied after.
    max_shift, max_candidates : int
        The search limits (shift; left multipliers tried per shift, from the middle of their
        range outwards).

    Raises
    ------
    ValueError
        If the shapes disagree, an input is not increasing, or an output is outside ``[lo, hi]``.
    """
    xa = np.asarray(xa).astype(np.int64).ravel()
    xb = np.asarray(xb).astype(np.int64).ravel()
    y = np.asarray(y).astype(np.int64)
    if y.shape != (xa.size, xb.size) or xa.size < 2 or xb.size < 2:
        raise ValueError(f"fit_affine_sum: y must have shape ({xa.size}, {xb.size}) with two inputs or more a side, "
                         f"got {y.shape}")
    if np.any(np.diff(xa) <= 0) or np.any(np.diff(xb) <= 0):
        raise ValueError("fit_affine_sum: the inputs xa and xb must be increasing")
    if y.min() < lo or y.max() > hi:
        raise ValueError(f"fit_affine_sum: outputs must lie in [{lo}, {hi}], got [{int(y.min())}, {int(y.max())}]")

    top = _lhs_range(xa, *_bounds(y, max_shift, lo, hi, even))

    def solve(s: int) -> AffineSum | None:
        # the range at s is the top range scaled down (solutions at s doubled are solutions at max_shift)
        k = max_shift - s
        m_lo, m_hi = -((-top[0]) >> k), top[1] >> k
        if m_lo > m_hi:
            return None
        found = _sum_at(xa, xb, *_bounds(y, s, lo, hi, even), _middle_out(m_lo, m_hi, max_candidates))
        return None if found is None else AffineSum(found.lhs_multiplier, found.rhs_multiplier, found.offset, s, even)

    for s in range(max_shift + 1):
        found = solve(s)
        if found is not None:
            return found
    return None
