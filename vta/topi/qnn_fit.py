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


def _bounds(y: np.ndarray, s: int, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    big = 1 << 60
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
