"""Quantized operators for VTA: the integer requantisation shared by the accelerator and the host,
the specifications of the fused accelerator operators, and their NumPy references.

Integer semantics
-----------------
Every accelerator tensor is int8, accumulators are int32. An int32 accumulator ``acc`` (bias
already added) is brought to the output scale by a real multiplier ``M = s_in / s_out`` written
as ``M ~= m * 2**(p - s)`` (:class:`Requant`: ``m`` the multiplier, at most 8 bits, ``s`` the
shift, ``p`` the pre-shift)::

    a = acc >> p                               # arithmetic, only when |acc| may exceed 2**23
    t = a * m                                  # fits int32: |a| < 2**23 and m < 2**8
    y = (t + 2**(s - 1)) >> s                  # round half up (towards +inf), exact arithmetic
    out = clip(y + z_out, lo, hi)

:func:`requantize_np` computes exactly this. The accelerator computes ``y`` as
``((t >> s1) + 2**(s2 - 1)) >> s2`` with ``s1 + s2 = s`` and ``s2 <= 15`` (the rounding constant
must fit the ALU's signed 16-bit immediate); since ``2**(s - 1)`` is a multiple of ``2**s1`` the
two forms are equal for every ``t`` (``floor(floor(x / a) / b) == floor(x / (a b))``), and the
split form cannot overflow where ``t + 2**(s - 1)`` would. Per output channel, ``m`` and ``s``
are vectors; the accelerator then uses ``s1`` per channel (a loaded shift vector) and a common
``s2 = min(s)`` (capped at 15).

The ``pow2`` mode (upstream VTA's scheme, for configurations without MUL) uses ``m = 1`` and a
shift only (``M`` rounded to the nearest power of two; ``M >= 1`` gives ``m = 2**(k + 1), s =
1``, a left shift on the ALU).

Difference from onnxruntime
---------------------------
onnxruntime requantises in float32: ``rint(acc * M) + z_out`` with ``rint`` rounding half to
even, ``M`` a float32. Ours differs in three ways: (1) ``m / 2**s`` approximates ``M`` to 8
significant bits (relative error below ``2**-8``), (2) ties round up instead of to even,
(3) float32 has 24 bits of mantissa, so ``acc * M`` itself is rounded for ``|acc| > 2**24``.
For an accumulator whose exact product ``acc * M`` lies at most 127.5 away from zero (every value
that is not saturated) the 8-bit multiplier moves ``acc * M`` by less than ``|acc * M| * 2**-8
< 0.5``, so the two results differ by **at most 1 in the last place** (one int8 step); ties and
rounding near ``k + 0.5`` account for the rest, and saturated values agree. A fused residual add
rounds each operand separately (two roundings, onnxruntime's QLinearAdd rounds the float sum
once), which also differs by at most 1.

Operators
---------
:class:`QConv2DSpec`, :class:`QDenseSpec`, :class:`QAddSpec`, :class:`MaxPoolSpec` describe one
fused accelerator operator in plain NCHW sizes; ``build_qconv2d`` and friends (in
:mod:`vta.topi.qnn_build`, re-exported here) compile them with ``vta.build`` and return the
module with an :class:`~vta.topi.qnn_layout.ArgLayout`. ``qconv2d_np`` and friends are the NumPy
references of the same operators (the host semantics of the graph layer's CPU kernels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "INT8_RANGE",
    "IntermediateSpec",
    "MaxPoolSpec",
    "QAddSpec",
    "QConv2DSpec",
    "QDenseSpec",
    "Requant",
    "ResidualSpec",
    "accumulator_bits",
    "conv_out_size",
    "maxpool_np",
    "qadd_np",
    "qconv2d_np",
    "qdense_np",
    "requantize_np",
]

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
    if not np.issubdtype(a.dtype, np.integer):
        if not np.all(np.equal(np.round(a), a)):
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
    def from_scale(cls, scale: Any, *, mode: str = "fixed", acc_bits: int | None = None) -> "Requant":
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
    def identity(cls) -> "Requant":
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
    m = int(math.floor(M * 2.0 ** s + 0.5))
    if m >= 256:  # rounding reached the next power of two
        m, s = m // 2, s - 1
    if s < 1:
        s = 1
        m = int(math.floor(M * 2.0 + 0.5))
    if s > 62:
        s = 62
        m = int(math.floor(M * 2.0 ** 62 + 0.5))
    return m, s


def _pow2(M: float) -> tuple[int, int]:
    """``(1, s)`` with ``2**-s`` the power of two nearest ``M``; ``M >= 0.75`` -> ``(2**(k+1), 1)``."""
    if M == 0.0:
        return 0, 1
    k = int(round(math.log2(M)))
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


# -- operator specifications -------------------------------------------------------------------

def conv_out_size(size: int, kernel: int, stride: int, before: int, after: int) -> int:
    """Output extent of a convolution or pooling window along one axis."""
    return (size + before + after - kernel) // stride + 1


def _check_clip(clip: tuple, what: str) -> tuple[int, int]:
    lo, hi = (int(v) for v in clip)
    if not INT8_RANGE[0] <= lo <= hi <= INT8_RANGE[1]:
        raise ValueError(f"{what}: clip {clip!r} must satisfy -128 <= lo <= hi <= 127")
    return lo, hi


def _check_zp(z: int, what: str) -> int:
    if not -128 <= int(z) <= 127:
        raise ValueError(f"{what}: zero point {z!r} is outside the int8 domain [-128, 127]")
    return int(z)


@dataclass(frozen=True)
class ResidualSpec:
    """A second int8 operand added in the output scale: ``requantize(r - zero_point, requant)``
    (per-tensor ``requant``, no zero point, no clip) is added before the output zero point and
    the clip.

    Raises
    ------
    ValueError
        If ``requant`` is per channel or the zero point is outside int8.
    """

    zero_point: int
    requant: Requant

    def __post_init__(self):
        _check_zp(self.zero_point, "ResidualSpec")
        if self.requant.per_channel:
            raise ValueError("ResidualSpec: the residual's requant must be per tensor")
        if self.requant.pre_shift:
            raise ValueError("ResidualSpec: the residual's requant needs no pre-shift (|r - z| <= 255)")


@dataclass(frozen=True)
class IntermediateSpec:
    """The fused operator's own int8 output, kept exact inside a fusion with a residual add.

    ``conv -> requantize(z, clip) -> qnn.add`` rounds and saturates the convolution's output to
    int8 before the add rescales it. With an intermediate, the fused operator does the same:
    ``y = clip(requant(acc) + zero_point, *clip) - zero_point`` and then ``requantize(y,
    requant)`` into the add's output scale (``requant`` per tensor: the add's lhs scale over its
    output scale), so the fusion is bit-identical to the unfused graph. Without it the
    operator's requant goes straight to the output scale (one rounding, no intermediate clip).

    Raises
    ------
    ValueError
        If the zero point or clip is outside int8 or ``requant`` is per channel.
    """

    zero_point: int
    requant: Requant
    clip: tuple = INT8_RANGE

    def __post_init__(self):
        _check_zp(self.zero_point, "IntermediateSpec")
        object.__setattr__(self, "clip", _check_clip(self.clip, "IntermediateSpec"))
        if self.requant.per_channel or self.requant.pre_shift:
            raise ValueError("IntermediateSpec: the rescale must be per tensor without pre-shift")


@dataclass(frozen=True)
class QConv2DSpec:
    """One fused accelerator convolution: ``clip(requant(conv(x, w) + bias) [+ residual] + z_out)``.

    Sizes are NCHW before packing. ``padding`` is ``(top, left, bottom, right)``; padded pixels
    take ``input_zero_point`` (int8 domain). The bias (int32, one per output channel) already
    holds ``-input_zero_point * sum(w)`` (folded by the caller).

    Raises
    ------
    ValueError
        If a size is not positive, a stride not positive, a padding negative, the padded input
        smaller than the kernel, the clip outside int8, or a per-channel requant of the wrong
        length.
    """

    batch: int
    in_channels: int
    out_channels: int
    height: int
    width: int
    kernel_h: int
    kernel_w: int
    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    input_zero_point: int = 0
    requant: Requant = field(default_factory=Requant.identity)
    output_zero_point: int = 0
    clip: tuple = INT8_RANGE
    residual: ResidualSpec | None = None
    intermediate: IntermediateSpec | None = None

    def __post_init__(self):
        what = "QConv2DSpec"
        for name in ("batch", "in_channels", "out_channels", "height", "width", "kernel_h", "kernel_w"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"{what}: {name} must be positive, got {getattr(self, name)!r}")
        st = tuple(int(v) for v in (self.strides if not isinstance(self.strides, int) else (self.strides,) * 2))
        pd = self.padding
        pd = (pd,) * 4 if isinstance(pd, int) else tuple(int(v) for v in pd)
        if len(pd) == 2:
            pd = (pd[0], pd[1], pd[0], pd[1])
        if len(st) != 2 or min(st) <= 0:
            raise ValueError(f"{what}: strides must be two positive ints, got {self.strides!r}")
        if len(pd) != 4 or min(pd) < 0:
            raise ValueError(f"{what}: padding must be 4 non-negative ints (top, left, bottom, right), got {self.padding!r}")
        object.__setattr__(self, "strides", st)
        object.__setattr__(self, "padding", pd)
        object.__setattr__(self, "clip", _check_clip(self.clip, what))
        _check_zp(self.input_zero_point, what)
        _check_zp(self.output_zero_point, what)
        if self.height + pd[0] + pd[2] < self.kernel_h or self.width + pd[1] + pd[3] < self.kernel_w:
            raise ValueError(f"{what}: the padded input is smaller than the {self.kernel_h}x{self.kernel_w} kernel")
        if self.requant.per_channel and self.requant.channels != self.out_channels:
            raise ValueError(f"{what}: {self.requant.channels} per-channel multipliers for {self.out_channels} "
                             f"output channels")

    @property
    def out_height(self) -> int:
        return conv_out_size(self.height, self.kernel_h, self.strides[0], self.padding[0], self.padding[2])

    @property
    def out_width(self) -> int:
        return conv_out_size(self.width, self.kernel_w, self.strides[1], self.padding[1], self.padding[3])

    @property
    def out_shape(self) -> tuple:
        """NCHW output shape."""
        return (self.batch, self.out_channels, self.out_height, self.out_width)

    @property
    def macs(self) -> int:
        return (self.batch * self.out_channels * self.out_height * self.out_width * self.in_channels
                * self.kernel_h * self.kernel_w)


@dataclass(frozen=True)
class QDenseSpec:
    """One fused accelerator dense layer: ``clip(requant(x . w^T + bias) [+ residual] + z_out)``.

    Raises
    ------
    ValueError
        If a size is not positive, the clip is outside int8, or a per-channel requant has the
        wrong length.
    """

    batch: int
    in_features: int
    out_features: int
    input_zero_point: int = 0
    requant: Requant = field(default_factory=Requant.identity)
    output_zero_point: int = 0
    clip: tuple = INT8_RANGE
    residual: ResidualSpec | None = None
    intermediate: IntermediateSpec | None = None

    def __post_init__(self):
        what = "QDenseSpec"
        for name in ("batch", "in_features", "out_features"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"{what}: {name} must be positive, got {getattr(self, name)!r}")
        object.__setattr__(self, "clip", _check_clip(self.clip, what))
        _check_zp(self.input_zero_point, what)
        _check_zp(self.output_zero_point, what)
        if self.requant.per_channel and self.requant.channels != self.out_features:
            raise ValueError(f"{what}: {self.requant.channels} per-channel multipliers for {self.out_features} outputs")

    @property
    def out_shape(self) -> tuple:
        return (self.batch, self.out_features)

    @property
    def macs(self) -> int:
        return self.batch * self.in_features * self.out_features


@dataclass(frozen=True)
class QAddSpec:
    """``clip(requant_a(a - z_a) + requant_b(b - z_b) + z_out)`` of two int8 NCHW tensors (a dense
    activation ``(N, C)`` is ``height = width = 1``).

    Raises
    ------
    ValueError
        If a size is not positive or the clip is outside int8.
    """

    batch: int
    channels: int
    height: int
    width: int
    lhs: ResidualSpec
    rhs: ResidualSpec
    output_zero_point: int = 0
    clip: tuple = INT8_RANGE

    def __post_init__(self):
        for name in ("batch", "channels", "height", "width"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"QAddSpec: {name} must be positive, got {getattr(self, name)!r}")
        object.__setattr__(self, "clip", _check_clip(self.clip, "QAddSpec"))
        _check_zp(self.output_zero_point, "QAddSpec")

    @property
    def out_shape(self) -> tuple:
        return (self.batch, self.channels, self.height, self.width)


@dataclass(frozen=True)
class MaxPoolSpec:
    """Max pooling of an int8 NCHW tensor; padded pixels never win (they are ``-inf``).

    Raises
    ------
    ValueError
        If a size, pool size or stride is not positive, a padding negative, or a padding as large
        as the pool (a window with no input pixel).
    """

    batch: int
    channels: int
    height: int
    width: int
    pool_size: tuple = (2, 2)
    strides: tuple = (2, 2)
    padding: tuple = (0, 0, 0, 0)

    def __post_init__(self):
        ps = tuple(int(v) for v in ((self.pool_size,) * 2 if isinstance(self.pool_size, int) else self.pool_size))
        st = tuple(int(v) for v in ((self.strides,) * 2 if isinstance(self.strides, int) else self.strides))
        pd = self.padding
        pd = (pd,) * 4 if isinstance(pd, int) else tuple(int(v) for v in pd)
        if len(pd) == 2:
            pd = (pd[0], pd[1], pd[0], pd[1])
        for name in ("batch", "channels", "height", "width"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"MaxPoolSpec: {name} must be positive, got {getattr(self, name)!r}")
        if len(ps) != 2 or len(st) != 2 or min(ps) <= 0 or min(st) <= 0:
            raise ValueError(f"MaxPoolSpec: pool_size {self.pool_size!r} and strides {self.strides!r} must be positive pairs")
        if len(pd) != 4 or min(pd) < 0 or max(pd[0], pd[2]) >= ps[0] or max(pd[1], pd[3]) >= ps[1]:
            raise ValueError(f"MaxPoolSpec: padding {self.padding!r} must be non-negative and smaller than the pool {ps!r}")
        object.__setattr__(self, "pool_size", ps)
        object.__setattr__(self, "strides", st)
        object.__setattr__(self, "padding", pd)

    @property
    def out_height(self) -> int:
        return conv_out_size(self.height, self.pool_size[0], self.strides[0], self.padding[0], self.padding[2])

    @property
    def out_width(self) -> int:
        return conv_out_size(self.width, self.pool_size[1], self.strides[1], self.padding[1], self.padding[3])

    @property
    def out_shape(self) -> tuple:
        return (self.batch, self.channels, self.out_height, self.out_width)


# -- NumPy references (the host semantics) ------------------------------------------------------

def _residual_np(r: np.ndarray, res: ResidualSpec) -> np.ndarray:
    d = np.asarray(r).astype(np.int64) - res.zero_point
    return requantize_np(d, res.requant, 1, 0, -(1 << 31), (1 << 31) - 1).astype(np.int64)


def _finish(acc: np.ndarray, rq: Requant, z_out: int, clip: tuple, residual: ResidualSpec | None,
            r: np.ndarray | None, intermediate: IntermediateSpec | None = None) -> np.ndarray:
    y = requantize_np(acc, rq, 1, 0, -(1 << 31), (1 << 31) - 1).astype(np.int64)
    if intermediate is not None:
        zi, (lo, hi) = intermediate.zero_point, intermediate.clip
        y = np.clip(y + zi, lo, hi) - zi
        y = requantize_np(y, intermediate.requant, 1, 0, -(1 << 31), (1 << 31) - 1).astype(np.int64)
    if residual is not None:
        if r is None:
            raise ValueError("the spec has a residual but no residual tensor was given")
        if np.shape(r) != y.shape:
            raise ValueError(f"residual shape {np.shape(r)!r} differs from the output shape {y.shape!r}")
        y = y + _residual_np(r, residual)
    return np.clip(y + z_out, clip[0], clip[1]).astype(np.int8)


def qconv2d_np(spec: QConv2DSpec, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
               residual: np.ndarray | None = None) -> np.ndarray:
    """NumPy reference of the fused convolution, NCHW int8 -> NCHW int8.

    Raises
    ------
    ValueError
        If the shapes disagree with ``spec`` or a residual is missing.
    """
    x, w = np.asarray(x), np.asarray(w)
    s = spec
    if x.shape != (s.batch, s.in_channels, s.height, s.width):
        raise ValueError(f"qconv2d_np: data shape {x.shape!r} is not {(s.batch, s.in_channels, s.height, s.width)!r}")
    if w.shape != (s.out_channels, s.in_channels, s.kernel_h, s.kernel_w):
        raise ValueError(f"qconv2d_np: weight shape {w.shape!r} is not "
                         f"{(s.out_channels, s.in_channels, s.kernel_h, s.kernel_w)!r}")
    pt, pl, pb, pr = s.padding
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=s.input_zero_point)
    oh, ow = s.out_height, s.out_width
    sh, sw = s.strides
    acc = np.zeros((s.batch, s.out_channels, oh, ow), dtype=np.int64)
    wk = w.astype(np.int64)
    for dy in range(s.kernel_h):
        for dx in range(s.kernel_w):
            win = xp[:, :, dy:dy + sh * (oh - 1) + 1:sh, dx:dx + sw * (ow - 1) + 1:sw]
            acc += np.einsum("nchw,oc->nohw", win, wk[:, :, dy, dx])
    if bias is not None:
        acc += np.asarray(bias, dtype=np.int64).reshape(1, -1, 1, 1)
    return _finish(acc, s.requant, s.output_zero_point, s.clip, s.residual, residual, s.intermediate)


def qdense_np(spec: QDenseSpec, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
              residual: np.ndarray | None = None) -> np.ndarray:
    """NumPy reference of the fused dense layer, ``(N, I)`` int8 -> ``(N, O)`` int8.

    Raises
    ------
    ValueError
        If the shapes disagree with ``spec`` or a residual is missing.
    """
    x, w = np.asarray(x), np.asarray(w)
    if x.shape != (spec.batch, spec.in_features) or w.shape != (spec.out_features, spec.in_features):
        raise ValueError(f"qdense_np: data {x.shape!r} / weight {w.shape!r} disagree with {spec!r}")
    acc = x.astype(np.int64) @ w.astype(np.int64).T
    if bias is not None:
        acc = acc + np.asarray(bias, dtype=np.int64).reshape(1, -1)
    return _finish(acc, spec.requant, spec.output_zero_point, spec.clip, spec.residual, residual,
                   spec.intermediate)


def qadd_np(spec: QAddSpec, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy reference of the quantized add, NCHW int8 -> NCHW int8.

    Raises
    ------
    ValueError
        If a shape differs from ``spec.out_shape``.
    """
    for name, t in (("a", a), ("b", b)):
        if np.shape(t) != spec.out_shape:
            raise ValueError(f"qadd_np: {name} has shape {np.shape(t)!r}, expected {spec.out_shape!r}")
    y = _residual_np(a, spec.lhs) + _residual_np(b, spec.rhs) + spec.output_zero_point
    return np.clip(y, spec.clip[0], spec.clip[1]).astype(np.int8)


def maxpool_np(spec: MaxPoolSpec, x: np.ndarray) -> np.ndarray:
    """NumPy reference of max pooling (padded pixels never win), NCHW int8 -> NCHW int8.

    Raises
    ------
    ValueError
        If the shape of ``x`` is not the spec's input shape.
    """
    x = np.asarray(x)
    if x.shape != (spec.batch, spec.channels, spec.height, spec.width):
        raise ValueError(f"maxpool_np: input shape {x.shape!r} disagrees with {spec!r}")
    pt, pl, pb, pr = spec.padding
    xp = np.pad(x.astype(np.int32), ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=np.iinfo(np.int32).min)
    oh, ow = spec.out_height, spec.out_width
    sh, sw = spec.strides
    out = np.full((spec.batch, spec.channels, oh, ow), np.iinfo(np.int32).min, dtype=np.int32)
    for dy in range(spec.pool_size[0]):
        for dx in range(spec.pool_size[1]):
            out = np.maximum(out, xp[:, :, dy:dy + sh * (oh - 1) + 1:sh, dx:dx + sw * (ow - 1) + 1:sw])
    return out.astype(np.int8)


from .qnn_build import build_maxpool, build_qadd, build_qconv2d, build_qdense, maxpool_unsupported_reason  # noqa: E402
from .qnn_layout import ArgLayout, ArgSpec  # noqa: E402

__all__ += ["ArgLayout", "ArgSpec", "build_maxpool", "build_qadd", "build_qconv2d", "build_qdense",
            "maxpool_unsupported_reason"]
