"""The fixed-point requantisation of :mod:`vta.topi.qnn` (``Requant``, ``requantize_np``,
``add_np``): the one integer definition the accelerator and the host share. The modes
(``fixed``: 15-bit multiplier and exact product, the default; ``fixed8``; ``pow2``), the ALU's
product forms, the split of the shift and the difference from onnxruntime are described in the
docstring of :mod:`vta.topi.qnn`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

__all__ = ["WIDE_BITS", "WIDE_MAX_ACC_BITS", "wide_bits", "QUAD_SPLIT", "QUAD_SHIFT", "four_product_ok",
           "FIXED_BITS", "INT8_RANGE", "MAX_ROUND_SHIFT", "MODES", "MULTIPLIER_BITS", "MULTIPLIER_SPLIT",
           "PRODUCT_SHIFT", "Requant", "accumulator_bits", "add_np", "channel_clamp", "mixed_shift_form",
           "requantize_np", "round_sum_np", "saturating_clamp", "scaled_np", "sum_fraction_bits"]

#: The int8 range every accelerator result is clipped to.
INT8_RANGE = (-128, 127)
#: Largest shift of the rounding step (its constant 2**(s2 - 1) is a signed 16-bit immediate).
MAX_ROUND_SHIFT = 15
#: Bits of the multiplier of the ``fixed8`` and ``pow2`` modes (acc * m inside int32 for |acc| < 2**23).
MULTIPLIER_BITS = 8
#: Significant bits of the multiplier of the ``fixed`` mode (m < 2**15: a signed 16-bit immediate).
FIXED_BITS = 15
#: The accumulator split of the ``fixed`` mode: acc = hi * 2**15 + lo, 0 <= lo < 2**15.
PRODUCT_SHIFT = 15
#: The requantisation modes: ``fixed`` (15-bit multiplier, exact product), ``wide`` (up to
#: :data:`WIDE_BITS` bits of the float32 multiplier for a bounded accumulator, exact product),
#: ``fixed8`` (8-bit multiplier, the first scheme), ``pow2`` (shift only).
MODES = ("fixed", "wide", "fixed8", "pow2")
#: Most significant bits of a ``wide`` multiplier: float32's 24, fewer for accumulator bounds
#: above 18 bits (:func:`wide_bits`).
WIDE_BITS = 24
#: Largest accumulator bound (bits) of the ``wide`` mode's two-product split (more bits than
#: ``fixed``: ``61 - 2 * acc_bits > 15``); above it only the four-product form is ``wide``.
WIDE_MAX_ACC_BITS = 22
#: The multiplier split of the ``wide`` mode's four-product form (any int32 accumulator, all 24
#: bits): ``m = mh * 2**9 + ml`` with the accumulator split ``x = hi * 2**15 + lo``.
QUAD_SPLIT = 9
#: The bits the four-product form drops before its rounding: ``floor(x * m / 2**24)``.
QUAD_SHIFT = PRODUCT_SHIFT + QUAD_SPLIT
#: The multiplier split of the ``fixed`` mode for accumulators below 2**23: m = mh * 2**8 + ml.
MULTIPLIER_SPLIT = 8
#: Where the ``fixed`` mode clamps the accumulator when a shift is at most PRODUCT_SHIFT (M >= 1/2).
DIRECT_CLAMP = (1 << 15) - 1


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
    acc_bits: int | None = None

    def __post_init__(self):
        m = _int_array(self.multiplier, "multiplier")
        s = _int_array(self.shift, "shift")
        if s.size == 1 and m.size > 1:
            s = np.full(m.shape, s[0], dtype=np.int32)
        if m.size == 1 and s.size > 1:
            m = np.full(s.shape, m[0], dtype=np.int32)
        if m.shape != s.shape:
            raise ValueError(f"Requant: multiplier {m.shape!r} and shift {s.shape!r} must have the same length")
        if self.mode not in MODES:
            raise ValueError(f"Requant: mode must be one of {MODES!r}, got {self.mode!r}")
        top = {"fixed": (1 << FIXED_BITS) - 1, "wide": (1 << WIDE_BITS) - 1}.get(self.mode, 1 << MULTIPLIER_BITS)
        if m.min() < 0 or m.max() > top:
            raise ValueError(f"Requant: multipliers must lie in [0, {top}] ({self.mode} mode), got {m.tolist()!r}")
        if s.min() < 0 or s.max() > 62:
            raise ValueError(f"Requant: shifts must lie in [0, 62], got {s.tolist()!r}")
        if not 0 <= int(self.pre_shift) <= 31:
            raise ValueError(f"Requant: pre_shift must lie in [0, 31], got {self.pre_shift!r}")
        if self.mode in ("fixed", "wide") and self.pre_shift:
            raise ValueError(f"Requant: the {self.mode} mode has an exact product and takes no pre_shift")
        if self.mode == "wide":
            if self.acc_bits is None or not 1 <= int(self.acc_bits) <= 32:
                raise ValueError(f"Requant: the wide mode needs acc_bits in [1, 32], got {self.acc_bits!r}")
            k, live = _wide_split(int(self.acc_bits)), m != 0
            if (live.any() and not four_product_ok(int(self.acc_bits), m, s)
                    and (int(self.acc_bits) > WIDE_MAX_ACC_BITS or int(s[live].min()) <= k
                         or int(m.max()) >= 1 << wide_bits(int(self.acc_bits)))):
                raise ValueError(f"Requant: a wide multiplier must be below 2**{wide_bits(int(self.acc_bits))} "
                                 f"and its shift above the split {k} (acc_bits {self.acc_bits} <= "
                                 f"{WIDE_MAX_ACC_BITS}), or be in the four-product form (a bound above 18 "
                                 f"bits, every live shift above {QUAD_SHIFT}: four_product_ok)")
        if self.acc_bits is not None:
            if not 1 <= int(self.acc_bits) <= 32:
                raise ValueError(f"Requant: acc_bits must lie in [1, 32], got {self.acc_bits!r}")
            object.__setattr__(self, "acc_bits", int(self.acc_bits))
        m.setflags(write=False)
        s.setflags(write=False)
        object.__setattr__(self, "multiplier", m)
        object.__setattr__(self, "shift", s)
        object.__setattr__(self, "pre_shift", int(self.pre_shift))

    # -- identity ---------------------------------------------------------------------------
    def _key(self) -> tuple:
        return (tuple(self.multiplier.tolist()), tuple(self.shift.tolist()), self.pre_shift, self.mode, self.acc_bits)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requant) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        m, s = self.multiplier.tolist(), self.shift.tolist()
        if len(m) == 1:
            m, s = m[0], s[0]
        bits = "" if self.acc_bits is None else f", acc_bits={self.acc_bits}"
        return f"Requant(multiplier={m!r}, shift={s!r}, pre_shift={self.pre_shift}, mode={self.mode!r}{bits})"

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def from_scale(cls, scale: Any, *, mode: str = "fixed", acc_bits: int | None = None) -> Requant:
        """The requantisation of real multiplier(s) ``scale`` (``s_in / s_out``; a float or one
        float per output channel).

        Parameters
        ----------
        scale : float or array of float
            Positive (or zero) real multipliers, at most 127.5. The ``fixed`` mode rounds each to
            float32 first (onnxruntime's multiplier is a float32).
        mode : {"fixed", "wide", "fixed8", "pow2"}
            ``fixed`` (default): 15-bit multiplier (``m`` in [2**14, 2**15) unless ``M`` is so
            small that the shift would pass 62), exact product for every int32 accumulator;
            ``wide``: all 24 bits of the float32 multiplier, exact product: for
            ``acc_bits <= 18`` with one multiplier split on the ALU (two products), above with
            the four-product form (:attr:`four_product`) when :func:`four_product_ok` holds
            (every ``M < 1/2``, about); otherwise :func:`wide_bits` ``(acc_bits)`` bits (17 at
            22) with the multiplier split; without ``acc_bits``, with ``acc_bits`` above
            :data:`WIDE_MAX_ACC_BITS` and no four-product form, or with a multiplier so large
            that its shift would not pass the split (``M >= 2**(bits - 1 - split)``), the
            ``fixed`` requantisation instead;
            ``fixed8``: 8-bit multiplier (``m`` in [128, 255]), the product wraps past 2**31;
            ``pow2``: the nearest power of two, no multiply.
        acc_bits : int, optional
            A bound on the accumulator, ``|acc| < 2**acc_bits``. ``fixed8`` and ``pow2``: when
            ``acc_bits + 8 > 31`` a pre-shift ``p = acc_bits + 8 - 31`` keeps ``(acc >> p) * m``
            inside int32 (it truncates ``p`` low bits of ``acc`` before the multiply). ``fixed``
            is exact without a bound; it records it (``acc_bits``) and the accelerator then uses a
            cheaper product form (:meth:`product_shift`), same results.

        Raises
        ------
        ValueError
            If a scale is negative, not finite, or larger than 127.5 (no shift >= 1 represents
            it), the mode is unknown, or ``acc_bits`` is not in [1, 32].
        """
        if mode not in MODES:
            raise ValueError(f"Requant.from_scale: mode must be one of {MODES!r}, got {mode!r}")
        scales = np.atleast_1d(np.asarray(scale, dtype=np.float64))
        if scales.ndim != 1 or scales.size == 0:
            raise ValueError(f"Requant.from_scale: scale must be a float or a 1-D array, got shape {scales.shape!r}")
        if not np.all(np.isfinite(scales)) or scales.min() < 0:
            raise ValueError(f"Requant.from_scale: scales must be finite and non-negative, got {scales.tolist()!r}")
        pre = 0
        if acc_bits is not None:
            if not 1 <= int(acc_bits) <= 32:
                raise ValueError(f"Requant.from_scale: acc_bits must lie in [1, 32], got {acc_bits!r}")
            if mode not in ("fixed", "wide"):
                pre = max(0, int(acc_bits) + MULTIPLIER_BITS - 31)
        if mode == "wide":
            wide = None if acc_bits is None else _wide(scales, int(acc_bits))
            if wide is not None:
                return cls(wide[0], wide[1], 0, "wide", int(acc_bits))
            mode = "fixed"
        if mode == "fixed":
            scales = scales.astype(np.float32).astype(np.float64)
        ms, ss = [], []
        for M in scales.tolist():
            Mp = M * (1 << pre)  # the multiplier applied to acc >> pre
            if Mp > 127.5:
                raise ValueError(f"Requant.from_scale: scale {M!r} times 2**pre_shift ({pre}) is larger than 127.5; "
                                 f"requantise in two steps")
            if mode == "pow2":
                m, s = _pow2(Mp)
            else:
                m, s = _fixed(Mp, FIXED_BITS if mode == "fixed" else MULTIPLIER_BITS)
            ms.append(m)
            ss.append(s)
        bits = int(acc_bits) if (acc_bits is not None and mode == "fixed") else None
        return cls(np.array(ms, dtype=np.int32), np.array(ss, dtype=np.int32), pre, mode, bits)

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

    @property
    def split(self) -> bool:
        """True when an accumulator's product needs more than one ALU multiply (``fixed`` mode,
        every shift of a nonzero multiplier above :data:`PRODUCT_SHIFT`, no bound below 2**16):
        :meth:`product_shift` is then 8 or 15. Otherwise (``fixed`` with a shift <= 15, i.e.
        ``M >= 1/2``) an unbounded accumulator is clamped to ``+-DIRECT_CLAMP`` and multiplied once,
        as the other modes do."""
        return self.product_shift() > 0

    def _live_shifts(self) -> np.ndarray:
        return self.shift[self.multiplier != 0]  # a zero multiplier (a padded channel) gives 0 at any shift

    @property
    def four_product(self) -> bool:
        """True for a ``wide`` requant in the four-product form (:func:`four_product_ok`; an
        accumulator bound above 18 bits): ``floor(x * m / 2**24)`` of any int32 ``x`` from
        ``x = hi * 2**15 + lo`` and ``m = mh * 2**9 + ml`` (:data:`QUAD_SPLIT`), four products,
        no step leaving int32 (:meth:`vta.topi.qnn_build._Chain.four_product`)."""
        return self.mode == "wide" and four_product_ok(self.acc_bits, self.multiplier, self.shift)

    def product_shift(self, bounded: bool = False) -> int:
        """The bits the accelerator's multiply step drops before the rounding (``fixed`` mode):

        * 0: one MUL, ``|x| < 2**16`` known (``bounded``: an int8 operand; or ``acc_bits <= 16``),
          or the clamped form (a shift <= 15);
        * 8: ``acc_bits <= 23``: ``m = mh * 2**8 + ml`` and ``x * mh + ((x * ml) >> 8)``;
        * 15: any int32 accumulator: ``x = hi * 2**15 + lo`` and ``hi * m + ((lo * m) >> 15)``.

        ``wide`` mode: the multiplier split ``x * mh + ((x * ml) >> k)`` with ``m = mh *
        2**k + ml`` and ``k = min(15, 31 - acc_bits)``, or :data:`QUAD_SHIFT` (24) in the
        four-product form (``bounded`` changes nothing: ``m`` has up to 24 bits).
        """
        live = self._live_shifts()
        if self.mode == "wide":
            if not live.size:
                return 0
            return QUAD_SHIFT if self.four_product else _wide_split(self.acc_bits)
        if self.mode != "fixed" or live.size == 0 or int(live.min()) <= PRODUCT_SHIFT:
            return 0
        if bounded or (self.acc_bits is not None and self.acc_bits <= 16):
            return 0
        if self.acc_bits is not None and self.acc_bits <= 23:
            return MULTIPLIER_SPLIT
        return PRODUCT_SHIFT

    def needs_clamp(self, bounded: bool = False) -> bool:
        """True when the accelerator clamps the operand to ``+-DIRECT_CLAMP`` before one multiply
        (``fixed`` mode, a shift <= 15, the operand possibly above 2**15)."""
        live = self._live_shifts()
        small = bounded or (self.acc_bits is not None and self.acc_bits <= 15)
        return self.mode == "fixed" and not small and live.size > 0 and int(live.min()) <= PRODUCT_SHIFT

    @property
    def multiplier_split(self) -> bool:
        """True when the accelerator splits the multiplier (``m = mh * 2**k + ml``, ``k`` =
        :meth:`product_shift`): ``fixed`` with ``k = 8``, and every ``wide`` requant."""
        k = self.product_shift()
        return (self.mode == "wide" and k > 0) or (self.mode == "fixed" and k == MULTIPLIER_SPLIT)

    def alu_multipliers(self) -> tuple[np.ndarray, ...]:
        """The multiplier vector(s) the accelerator multiplies an accumulator by: ``(mh, ml)`` with
        ``m = mh * 2**k + ml`` for a multiplier split (:attr:`multiplier_split`; ``k`` =
        :data:`QUAD_SPLIT` in the four-product form), else ``(m,)``."""
        if self.multiplier_split:
            k = QUAD_SPLIT if self.four_product else self.product_shift()
            return ((self.multiplier >> k).astype(np.int32), (self.multiplier & ((1 << k) - 1)).astype(np.int32))
        return (self.multiplier,)

    def split_shifts(self, post_add: int = 0, bounded: bool = False) -> tuple[np.ndarray, int]:
        """``(s1, s2)`` of the accelerator's rounding after the multiply step: ``s1`` (array) shifted
        first, then ``+ 2**(s2-1)`` and ``>> s2`` with one common ``s2 = min(min(shift - k), 15)``
        (0: no rounding step), ``k = product_shift(bounded)``; ``s1 + s2 + k == shift``, except
        that ``s1`` is at most 31 (the ALU's shift amount is 5 bits; an int32 shifted right by 31
        or more is 0 or -1, and the rounding step by ``s2 >= 1`` maps both to 0, as the exact
        value of so small a multiplier is).

        With ``post_add`` (a zero point to add after the rounding) and a first shift that exists
        anyway (some ``s1 > 0``), ``s2`` is lowered until ``2**(s2-1) + post_add * 2**s2`` fits
        the ALU's signed 16-bit immediate, so that one ADD does both.
        """
        rest = self.shift - self.product_shift(bounded)
        live = self.multiplier != 0
        if not live.any():
            live = np.ones_like(live)
        s2 = int(min(int(rest[live].min()), MAX_ROUND_SHIFT))
        if self.four_product and self.acc_bits > 30:
            # floor(x m / 2**24) may come within 2**(s2-1) of 2**31: a first shift of at least 1
            s2 = int(min(int(rest[live].min()) - 1, MAX_ROUND_SHIFT))
        if post_add and int(rest[live].max()) > s2:
            while s2 > 1 and not -(1 << 15) <= (1 << (s2 - 1)) + post_add * (1 << s2) < (1 << 15):
                s2 -= 1
        # a channel with a zero multiplier is 0 before and after any shift: none for it. The ALU
        # shifts by the low 5 bits of its operand: a first shift past 31 is 31, the same value for
        # every int32 (0 or -1, which the rounding step then takes to 0 either way)
        return np.where(live, np.minimum(rest - s2, 31), 0).astype(np.int32), s2


def saturating_clamp(rq: Requant, lo: int, hi: int, single_multiply: bool = True) -> tuple[int, int] | None:
    """Bounds ``(x_lo, x_hi)`` that an int32 operand can be clamped to before one multiply when
    its requantised value ``y`` is clipped to ``[lo, hi]`` afterwards (``fixed`` mode, one
    multiplier and shift, no pre-shift; None when the trick does not apply).

    ``y(x) = floor((x * m + 2**(s-1)) / 2**s)`` is non-decreasing in ``x``: every ``x >= x_hi``
    gives ``y >= hi`` and every ``x <= x_lo`` gives ``y <= lo``, so clamping ``x`` to
    ``[x_lo, x_hi]`` leaves ``clip(y, lo, hi)`` unchanged. When ``x * m`` then stays inside int32
    (and the rounding's first steps too), the product needs no split: one MUL instead of the
    split forms of :meth:`Requant.product_shift`. None when the product could leave int32 (only
    checked with ``single_multiply``; without it the bounds only bound the operand, e.g. below
    2**23 for the multiplier split), for a per-channel or non-``fixed`` requant, a pre-shift, or a
    zero multiplier.
    """
    if rq.mode != "fixed" or rq.per_channel or rq.pre_shift or int(lo) > int(hi):
        return None
    m, s = int(rq.multiplier[0]), int(rq.shift[0])
    if m <= 0 or s < 1:
        return None
    half = 1 << (s - 1)

    def y(x: int) -> int:
        return (x * m + half) >> s

    x_hi = -(-(int(hi) * (1 << s) - half) // m)            # smallest x with y(x) >= hi
    x_lo = ((int(lo) + 1) * (1 << s) - half - 1) // m      # largest x with y(x) <= lo
    if not (y(x_hi) >= hi and y(x_lo) <= lo and x_lo <= x_hi):
        return None
    limit = 1 << 31
    if not single_multiply:
        return (x_lo, x_hi) if -limit <= x_lo and x_hi < limit else None
    # the product; the rounding constant comes after a first shift (s1 >= 1) when s > 15 (the
    # rounding shift s2 is at most 15), else it is added to the product itself
    slack = 0 if s > MAX_ROUND_SHIFT else half
    if not (-limit <= x_lo * m - slack and x_hi * m + slack < limit):
        return None
    return x_lo, x_hi


def mixed_shift_form(rq: Requant) -> tuple[Requant, np.ndarray, np.ndarray, np.ndarray] | None:
    """One ALU program for a per-channel ``fixed`` requant whose live shifts lie on both sides of
    15 with an operand that may pass ``2**15`` (the channels with a shift ``s <= 15`` clamp it,
    the others do not): ``(rq2, lo, hi, shl)``. Clamping channel ``c`` to ``[lo[c], hi[c]]``
    (``+-DIRECT_CLAMP`` where ``s <= 15``, the int32 range elsewhere), shifting it left by
    ``shl[c] = 16 - s`` (0 elsewhere) and requantising with ``rq2`` (the same multipliers, shift
    ``max(s, 16)``, any int32 operand) gives exactly ``rq``'s values:
    ``floor((x m + 2**(s-1)) / 2**s) = floor((x 2**(16-s) m + 2**15) / 2**16)``, and
    ``|x| <= 2**15 - 1`` keeps the shifted operand below ``2**30``. None when ``rq`` is not such
    a requant."""
    if rq.mode != "fixed" or not rq.per_channel or rq.pre_shift or not rq.needs_clamp():
        return None
    live = rq._live_shifts()
    if not int(live.min()) <= PRODUCT_SHIFT < int(live.max()):
        return None
    s = rq.shift.astype(np.int64)
    small = (s <= PRODUCT_SHIFT) & (rq.multiplier != 0)
    lo = np.where(small, -DIRECT_CLAMP, -(1 << 31))
    hi = np.where(small, DIRECT_CLAMP, (1 << 31) - 1)
    shl = np.where(small, PRODUCT_SHIFT + 1 - s, 0)
    rq2 = replace(rq, shift=np.where(small, PRODUCT_SHIFT + 1, s).astype(np.int32), acc_bits=None)
    return rq2, lo, hi, shl


def channel_clamp(rq: Requant, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """Per-channel bounds ``(x_lo, x_hi, exact)`` of :func:`saturating_clamp` for a per-channel
    ``fixed`` requant whose product would be split (:meth:`Requant.product_shift` > 0): every
    channel's clamped operand then takes one multiply. A channel with a zero multiplier (a padded
    one) gets the bounds 0. ``exact``: every live channel's bounds requantise to exactly ``lo``
    and ``hi`` (and 0 lies in ``[lo, hi]`` for the dead ones), so the clip after is redundant.
    None when the requant does not qualify or some channel's product could leave int32.
    """
    if rq.mode != "fixed" or not rq.per_channel or rq.pre_shift or rq.product_shift() == 0:
        return None
    los, his, exact = [], [], True
    for m, s in zip(rq.multiplier.tolist(), rq.shift.tolist(), strict=True):
        if m == 0:
            los.append(0)
            his.append(0)
            exact = exact and lo <= 0 <= hi
            continue
        one = Requant(np.array([m], dtype=np.int32), np.array([s], dtype=np.int32))
        b = saturating_clamp(one, lo, hi)
        if b is None:
            return None
        los.append(b[0])
        his.append(b[1])
        half = 1 << (s - 1)
        exact = exact and ((b[0] * m + half) >> s) == lo and ((b[1] * m + half) >> s) == hi
    return np.array(los, dtype=np.int64), np.array(his, dtype=np.int64), exact


def wide_bits(acc_bits: int) -> int:
    """Significant bits of a ``wide`` multiplier for ``|acc| < 2**acc_bits``: ``min(24, 61 - 2 *
    acc_bits)`` (both halves of the split product and the rounding step stay inside int32)."""
    return min(WIDE_BITS, 61 - 2 * int(acc_bits))


def four_product_ok(acc_bits: int | None, multiplier, shift) -> bool:
    """Whether a ``wide`` requant takes the four-product form: an accumulator bound above 18 bits
    (below, the two-product split keeps all 24 bits), multipliers below 2**24, and every live
    shift at least 25 (``QUAD_SHIFT + 1``: the rounding step after ``floor(x m / 2**24)``); with
    a bound above 30 bits at least 26 (:meth:`Requant.split_shifts` then shifts by at least 1
    before the rounding constant, so that ``x m / 2**24 + 2**(s2-1)`` cannot leave int32)."""
    if acc_bits is None or int(acc_bits) <= 18:
        return False
    m, s = np.asarray(multiplier, np.int64), np.asarray(shift, np.int64)
    live = m != 0
    if not live.any() or int(m.max()) >= 1 << WIDE_BITS or int(m.min()) < 0:
        return False
    least = int(s[live].min())
    return least > QUAD_SHIFT + (1 if int(acc_bits) > 30 else 0)


def _wide_split(acc_bits: int) -> int:
    """The split ``k`` of a ``wide`` multiplier ``m = mh * 2**k + ml``: ``min(15, 31 - acc_bits)``
    (``|acc * ml| < 2**31``; ``ml`` a signed 16-bit immediate)."""
    return min(MAX_ROUND_SHIFT, 31 - int(acc_bits))


def _wide(scales: np.ndarray, acc_bits: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(m, s)`` of the ``wide`` mode for float scales: all 24 bits in the four-product form
    when :func:`four_product_ok` allows it, else the two-product split's bits; None when neither
    applies (a bound above :data:`WIDE_MAX_ACC_BITS`, or a shift that would not pass the split)."""
    if acc_bits > 18:
        full = [_fixed(M, WIDE_BITS) for M in scales.astype(np.float32).astype(np.float64).tolist()
                if M <= 127.5]
        if len(full) == scales.size:
            m24 = np.array([m for m, _ in full], dtype=np.int64)
            s24 = np.array([s for _, s in full], dtype=np.int64)
            if four_product_ok(acc_bits, m24, s24):
                return m24.astype(np.int32), s24.astype(np.int32)
    if acc_bits > WIDE_MAX_ACC_BITS:
        return None
    bits, k = wide_bits(acc_bits), _wide_split(acc_bits)
    ms, ss = [], []
    for M in scales.astype(np.float32).astype(np.float64).tolist():
        if M > 127.5:
            raise ValueError(f"Requant.from_scale: scale {M!r} is larger than 127.5; requantise in two steps")
        m, s = _fixed(M, bits)
        if m and s <= k:
            return None
        ms.append(m)
        ss.append(s)
    return np.array(ms, dtype=np.int32), np.array(ss, dtype=np.int32)


def _fixed(M: float, bits: int) -> tuple[int, int]:
    """``(m, s)`` with ``m`` in [2**(bits-1), 2**bits) and ``M ~= m / 2**s``, ``1 <= s <= 62``."""
    if M == 0.0:
        return 0, 1
    e = math.floor(math.log2(M))
    s = bits - 1 - e
    m = math.floor(M * 2.0 ** s + 0.5)
    if m >= 1 << bits:  # rounding reached the next power of two
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
    if rq.mode == "fixed":
        # exact product (|acc * m| < 2**46); the channels with a shift <= 15 clamp the accumulator first
        a = np.where(s > PRODUCT_SHIFT, a, np.clip(a, -DIRECT_CLAMP, DIRECT_CLAMP))
        t = a * m
    elif rq.mode == "wide":
        t = a * m  # exact (|acc * m| < 2**55)
    else:
        t = np.right_shift(a, rq.pre_shift) * m
        # acc * m wraps to int32 like the ALU (no wrap when |acc >> p| < 2**23).
        t = t.astype(np.int32).astype(np.int64)
    y = _round_shift(t, np.broadcast_to(s, t.shape)) + int(out_zero_point)
    return np.clip(y, lo, hi).astype(np.int32)


def sum_fraction_bits(*rqs: Requant) -> int | None:
    """The fraction bits ``F`` of a sum of rescaled int8 operands rounded once (``fixed`` mode):
    ``min(15, every shift)``; None when a requant is not ``fixed`` (the sum of separately rounded
    operands is used then). Every requant must be per tensor."""
    if any(rq.mode != "fixed" for rq in rqs):
        return None
    return min([PRODUCT_SHIFT] + [int(rq.shift[0]) for rq in rqs])


def scaled_np(x: Any, rq: Requant, frac: int) -> np.ndarray:
    """``floor(x * m / 2**(shift - frac))`` of a bounded operand (``|x| < 2**16``; per-tensor ``rq``):
    one term of a sum rounded once (:func:`round_sum_np`)."""
    t = np.asarray(x).astype(np.int64) * int(rq.multiplier[0])
    return np.right_shift(t, int(rq.shift[0]) - frac)


def round_sum_np(terms: list, frac: int) -> np.ndarray:
    """``floor((sum(terms) + 2**(frac-1)) / 2**frac)``: the one rounding of a rescaled sum."""
    total = sum(np.asarray(t, dtype=np.int64) for t in terms)
    return _round_shift(total, np.full(np.shape(total), frac))


def add_np(operands: list, out_zero_point: int = 0, lo: int = -128, hi: int = 127) -> np.ndarray:
    """A quantized sum of int8 operands, any shape: ``operands`` is a list of ``(x, zero_point,
    rq)`` (``rq`` per tensor, ``M = s_x / s_out``). With every ``rq`` in the ``fixed`` mode the
    operands are rescaled with :func:`sum_fraction_bits` fraction bits and the sum rounded once;
    otherwise each is requantised and rounded on its own. Returns int32, clipped to [lo, hi]
    (the host form of :func:`vta.topi.qnn.build_qadd`).

    Raises
    ------
    ValueError
        If a requant is per channel.
    """
    rqs = [rq for _, _, rq in operands]
    if any(rq.per_channel for rq in rqs):
        raise ValueError("add_np: the operands' requants must be per tensor")
    frac = sum_fraction_bits(*rqs)
    centred = [np.asarray(x).astype(np.int64) - int(z) for x, z, _ in operands]
    if frac is not None:
        y = round_sum_np([scaled_np(c, rq, frac) for c, rq in zip(centred, rqs, strict=True)], frac)
    else:
        y = sum(requantize_np(c, rq, 0, 0, -(1 << 31), (1 << 31) - 1).astype(np.int64)
                for c, rq in zip(centred, rqs, strict=True))
    return np.clip(y + int(out_zero_point), lo, hi).astype(np.int32)


def accumulator_bits(reduction: int, max_abs_bias: int = 0) -> int:
    """The smallest ``b`` with ``|acc| < 2**b`` for ``reduction`` int8 x int8 products plus a bias
    of at most ``max_abs_bias`` (the worst case; pass it as ``acc_bits`` to
    :meth:`Requant.from_scale` to get the pre-shift that keeps ``acc * m`` inside int32)."""
    bound = int(reduction) * 128 * 128 + abs(int(max_abs_bias))
    return max(1, bound.bit_length())
