"""The fixed-point requantisation of :mod:`vta.topi.qnn` (``Requant``, ``requantize_np``): the one
integer definition the accelerator and the host share. The semantics, the split of the shift
and the difference from onnxruntime are described in the docstring of :mod:`vta.topi.qnn`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["INT8_RANGE", "MAX_ROUND_SHIFT", "MULTIPLIER_BITS", "Requant", "accumulator_bits", "requantize_np"]

#: The int8 range every accelerator result is clipped to.
INT8_RANGE = (-128, 127)
#: Largest shift of the rounding step (its constant 2**(s2 - 1) is a signed 16-bit immediate).
MAX_ROUND_SHIFT = 15
#: Bits of the multiplier (so that acc * m stays inside int32 for |acc| < 2**23).
MULTIPLIER_BITS = 8


def _int_array(v: Any, what: str) -> np.ndarray:
    a = np.atleast_1d(np.asarray(v))
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"Requant: {what} must be a scalar or a non-empty 1-D array, got shape {a.shape!r}")
    if not np.issubdtype(a.dtype, np.integer) and not np.all(np.equal(np.round(a), a)):
        raise ValueError(f"Requant: {what} must hold integers, got {v!r}")
    return a.astype(np.int32)


@dataclass(frozen=True, eq=False)
class Requant:
    """A fixed-point requantisation ``M ~= multiplier * 2**(pre_shift - shift)`` (module docstring).

    ``multiplier`` and ``shift`` are int32 arrays of shape ``(1,)`` (per tensor) or ``(C,)`` (per
    output channel, one entry each); ``0 <= multiplier < 2**8``, ``0 <= shift <= 62``,
    ``0 <= pre_shift <= 31``.

    Raises
    ------
    ValueError
        (on construction) If a field is out of its range or the two arrays disagree in length.
    """

    multiplier: np.ndarray
    shift: np.ndarray
    pre_shift: int = 0
    mode: str = field(default="fixed")

    def __post_init__(self):
        m = _int_array(self.multiplier, "multiplier")
        s = _int_array(self.shift, "shift")
        if s.size == 1 and m.size > 1:
            s = np.full(m.shape, s[0], dtype=np.int32)
        if m.size == 1 and s.size > 1:
            m = np.full(s.shape, m[0], dtype=np.int32)
        if m.shape != s.shape:
            raise ValueError(f"Requant: multiplier {m.shape!r} and shift {s.shape!r} must have the same length")
        if m.min() < 0 or m.max() >= (1 << MULTIPLIER_BITS) + 1:
            raise ValueError(f"Requant: multipliers must lie in [0, {1 << MULTIPLIER_BITS}], got {m.tolist()!r}")
        if s.min() < 0 or s.max() > 62:
            raise ValueError(f"Requant: shifts must lie in [0, 62], got {s.tolist()!r}")
        if not 0 <= int(self.pre_shift) <= 31:
            raise ValueError(f"Requant: pre_shift must lie in [0, 31], got {self.pre_shift!r}")
        if self.mode not in ("fixed", "pow2"):
            raise ValueError(f"Requant: mode must be 'fixed' or 'pow2', got {self.mode!r}")
        m.setflags(write=False)
        s.setflags(write=False)
        object.__setattr__(self, "multiplier", m)
        object.__setattr__(self, "shift", s)
        object.__setattr__(self, "pre_shift", int(self.pre_shift))

    # -- identity ---------------------------------------------------------------------------
    def _key(self) -> tuple:
        return (tuple(self.multiplier.tolist()), tuple(self.shift.tolist()), self.pre_shift, self.mode)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requant) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        m, s = self.multiplier.tolist(), self.shift.tolist()
        if len(m) == 1:
            m, s = m[0], s[0]
        return f"Requant(multiplier={m!r}, shift={s!r}, pre_shift={self.pre_shift}, mode={self.mode!r})"

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def from_scale(cls, scale: Any, *, mode: str = "fixed", acc_bits: int | None = None) -> Requant:
        """The requantisation of real multiplier(s) ``scale`` (``s_in / s_out``; a float or one
        float per output channel).

        Parameters
        ----------
        scale : float or array of float
            Positive (or zero) real multipliers, at most 127.5.
        mode : {"fixed", "pow2"}
            ``fixed``: 8-bit multiplier and shift (``m`` in [128, 255] unless ``M`` is so small
            that the shift would pass 62); ``pow2``: the nearest power of two, no multiply.
        acc_bits : int, optional
            A bound on the accumulator, ``|acc| < 2**acc_bits``. When ``acc_bits + 8 > 31`` a
            pre-shift ``p = acc_bits + 8 - 31`` keeps ``(acc >> p) * m`` inside int32 (it
            truncates ``p`` low bits of ``acc`` before the multiply).

        Raises
        ------
        ValueError
            If a scale is negative, not finite, or larger than 127.5 (no shift >= 1 represents
            it), the mode is unknown, or ``acc_bits`` is not in [1, 32].
        """
        if mode not in ("fixed", "pow2"):
            raise ValueError(f"Requant.from_scale: mode must be 'fixed' or 'pow2', got {mode!r}")
        scales = np.atleast_1d(np.asarray(scale, dtype=np.float64))
        if scales.ndim != 1 or scales.size == 0:
            raise ValueError(f"Requant.from_scale: scale must be a float or a 1-D array, got shape {scales.shape!r}")
        if not np.all(np.isfinite(scales)) or scales.min() < 0:
            raise ValueError(f"Requant.from_scale: scales must be finite and non-negative, got {scales.tolist()!r}")
        pre = 0
        if acc_bits is not None:
            if not 1 <= int(acc_bits) <= 32:
                raise ValueError(f"Requant.from_scale: acc_bits must lie in [1, 32], got {acc_bits!r}")
            pre = max(0, int(acc_bits) + MULTIPLIER_BITS - 31)
        ms, ss = [], []
        for M in scales.tolist():
            Mp = M * (1 << pre)  # the multiplier applied to acc >> pre
            if Mp > 127.5:
                raise ValueError(f"Requant.from_scale: scale {M!r} times 2**pre_shift ({pre}) is larger than 127.5; "
                                 f"requantise in two steps")
            m, s = (_pow2(Mp) if mode == "pow2" else _fixed(Mp))
            ms.append(m)
            ss.append(s)
        return cls(np.array(ms, dtype=np.int32), np.array(ss, dtype=np.int32), pre, mode)

    @classmethod
    def identity(cls) -> Requant:
        """``M = 1`` (``m = 2, s = 1``: exact)."""
        return cls(np.array([2], dtype=np.int32), np.array([1], dtype=np.int32))

    # -- views --------------------------------------------------------------------------------
    @property
    def per_channel(self) -> bool:
        """True when there is more than one multiplier."""
        return self.multiplier.size > 1

    @property
    def channels(self) -> int:
        """Number of multipliers (1 per tensor)."""
        return int(self.multiplier.size)

    def scale(self) -> np.ndarray:
        """The real multipliers represented, ``m * 2**(pre_shift - shift)`` (float64 array)."""
        return self.multiplier.astype(np.float64) * np.exp2(self.pre_shift - self.shift.astype(np.float64))

    def split_shifts(self) -> tuple[np.ndarray, int]:
        """``(s1, s2)`` of the accelerator's rounding: ``s1`` (array) shifted first, then ``+ 2**(s2-1)``
        and ``>> s2`` with one common ``s2 = min(min(shift), 15)`` (0: no rounding step)."""
        s2 = int(min(int(self.shift.min()), MAX_ROUND_SHIFT))
        return (self.shift - s2).astype(np.int32), s2


def _fixed(M: float) -> tuple[int, int]:
    """``(m, s)`` with ``m`` in [128, 255] and ``M ~= m / 2**s``, ``1 <= s <= 62``."""
    if M == 0.0:
        return 0, 1
    e = math.floor(math.log2(M))
    s = 7 - e
    m = math.floor(M * 2.0 ** s + 0.5)
    if m >= 256:  # rounding reached the next power of two
        m, s = m // 2, s - 1
    if s < 1:
        s = 1
        m = math.floor(M * 2.0 + 0.5)
    if s > 62:
        s = 62
        m = math.floor(M * 2.0 ** 62 + 0.5)
    return m, s


def _pow2(M: float) -> tuple[int, int]:
    """``(1, s)`` with ``2**-s`` the power of two nearest ``M``; ``M >= 0.75`` -> ``(2**(k+1), 1)``."""
    if M == 0.0:
        return 0, 1
    k = round(math.log2(M))
    if k >= 0:
        return 1 << (k + 1), 1
    return 1, min(-k, 62)


def _round_shift(t: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``floor((t + 2**(s-1)) / 2**s)`` exactly (int64), ``t`` unchanged where ``s == 0``."""
    s = s.astype(np.int64)
    half = np.where(s > 0, np.left_shift(np.int64(1), np.maximum(s - 1, 0)), 0)
    return np.right_shift(t + half, s)


def requantize_np(acc: Any, rq: Requant, axis: int = 1, out_zero_point: int = 0, lo: int = -128,
                  hi: int = 127) -> np.ndarray:
    """The requantisation of int32 accumulators (module docstring), as int32 (before the cast).

    Parameters
    ----------
    acc : array of int
        Accumulators; wrapped to int32 first (the accumulator width).
    rq : Requant
    axis : int
        The channel axis of ``acc`` a per-channel ``rq`` runs along (ignored per tensor).
    out_zero_point : int
        Added after rounding.
    lo, hi : int
        The clip bounds (relu / clip folded), applied last.

    Raises
    ------
    ValueError
        If a per-channel ``rq`` does not have one entry per channel of ``acc`` along ``axis``.
    """
    a = np.asarray(acc).astype(np.int64).astype(np.int32).astype(np.int64)
    m, s = rq.multiplier.astype(np.int64), rq.shift.astype(np.int64)
    if rq.per_channel:
        if a.ndim == 0 or a.shape[axis] != rq.channels:
            raise ValueError(f"requantize_np: {rq.channels} per-channel multipliers for an accumulator of shape "
                             f"{a.shape!r} along axis {axis!r}")
        shape = [1] * a.ndim
        shape[axis] = rq.channels
        m, s = m.reshape(shape), s.reshape(shape)
    else:
        m, s = m[0], s[0]
    t = np.right_shift(a, rq.pre_shift) * m
    # acc * m wraps to int32 like the ALU (no wrap when |acc >> p| < 2**23).
    t = t.astype(np.int32).astype(np.int64)
    y = _round_shift(t, np.broadcast_to(s, t.shape)) + int(out_zero_point)
    return np.clip(y, lo, hi).astype(np.int32)


def accumulator_bits(reduction: int, max_abs_bias: int = 0) -> int:
    """The smallest ``b`` with ``|acc| < 2**b`` for ``reduction`` int8 x int8 products plus a bias
    of at most ``max_abs_bias`` (the worst case; pass it as ``acc_bits`` to
    :meth:`Requant.from_scale` to get the pre-shift that keeps ``acc * m`` inside int32)."""
    bound = int(reduction) * 128 * 128 + abs(int(max_abs_bias))
    return max(1, bound.bit_length())
