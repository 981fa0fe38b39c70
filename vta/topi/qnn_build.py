"""Compiling the quantized operators of :mod:`vta.topi.qnn` for VTA.

Each builder declares the packed operator with tensor expressions — the GEMM core
(:func:`~vta.topi.conv2d_packed`, :func:`~vta.topi.dense_packed`) followed by element-wise
stages that the schedules run on the ALU in the accumulator — schedules it with the
``vta.topi`` schedules (or, for the add and the pooling that have no GEMM, a small schedule of
their own here and in :mod:`vta.topi.qnn_pool`), and compiles it with :func:`vta.build`. The
ALU program of a fused convolution:

=================================  ==========================================================
stage                              ALU
=================================  ==========================================================
``+ bias``                         ADD of the loaded bias vector (or bias + border map)
``>> pre_shift`` (fixed8/pow2)     SHR imm
clamp (fixed, M >= 1/2)            MIN imm, MAX imm (+-32767)
``* m`` (fixed8/pow2, fixed k=0)   MUL imm (SHR -k for m = 2**k, nothing for 1), or MUL of a
                                   loaded vector (per channel)
``* m >> 15`` (fixed, k=15)        copy to a second tile (MUL 0, ADD), SHR 1, ADD 2**13,
                                   SHR 14 (hi); SHL 17, SHR 17 (lo, in place); MUL, SHR 15;
                                   MUL (hi); ADD: 11 instructions
``* m >> 8`` (fixed, k=8)          copy (MUL 0, ADD), MUL ml, SHR 8; MUL mh; ADD: 6
``>> s1``                          SHR imm, or SHR of a loaded shift vector (per channel)
``+ 2**(s2-1)``, ``>> s2``         ADD imm, SHR imm (round half up)
intermediate (if any)              MIN imm, MAX imm (its own int8 clip), its rescale as above
residual ``r``                     ACC_8BIT load, ADD -z_r, MUL m_r, rounding as above, ADD;
                                   fixed after an intermediate: both operands MUL, SHR to F
                                   fraction bits, ADD, then one rounding ADD, SHR F
``+ z_out``, clip                  ADD imm, MIN imm, MAX imm; the store narrows to int8
=================================  ==========================================================

When the requantised value is clipped right after (the operator's output, or an intermediate's
own int8 clip) and the requant is per tensor, three shortcuts keep the same outputs:

* ``m = 2**a``: the multiply folds into the rounding shift (``s - a``);
* the split product becomes a clamp of the operand to ``[x_lo, x_hi]``
  (:func:`~vta.topi.qnn_requant.saturating_clamp`: beyond them the output saturates anyway) and
  one MUL when ``x * m`` then fits int32 (``s <= 24`` for an int8 clip), else the multiplier
  split (``|x| < 2**23``) instead of the 15-bit split; bounds beyond the 16-bit immediate are
  constant vectors built on the ALU per tile (MUL 0, ADD, SHL, ADD on one entry; the stages
  carry ``extra_vector`` and are budgeted like a bias);
* the clamp bounds requantise exactly to the clip bounds, so the clip (MIN, MAX) is dropped.

The split forms keep a second output-shaped tile in the accumulator (the stage carries the
``extra_tile`` attribute; the conv and dense tilers budget it like a residual).

Constants ride on a rounding step's ADD when the sum still fits the 16-bit immediate: the output
zero point (``z_out * 2**s2``, on the last rounding) and a residual's ``-z_r * m_r``
(:meth:`_Chain.requant`); both are exact rewrites of the same integer arithmetic.

A convolution whose input zero point is not 0 and which is padded cannot use the hardware's
zero padding as is: its bias argument is then a full map (``vta.topi.qnn_layout``), the bias
plus the border correction, loaded like a residual (int32).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import isa
from ..env import Environment, get_env
from ..errors import ScheduleError
from ..te import compute, create_schedule, placeholder
from ..te import max as te_max
from ..te import min as te_min
from ..te.tensor import Tensor
from ..tir import nodes as n
from ._traverse import LOAD_TAG
from .conv2d import conv2d_packed, schedule_conv2d_packed
from .dense import dense_packed, schedule_dense_packed
from .group_conv2d import group_conv2d_packed, schedule_group_conv2d_packed
from .epilogue import BROADCAST_TAG, ELEMWISE_TAG
from .qnn_layout import MIXED_ROLES, ArgLayout, ArgSpec, clamp_vectors
from .qnn_requant import (
    DIRECT_CLAMP,
    MAX_ROUND_SHIFT,
    MULTIPLIER_SPLIT,
    PRODUCT_SHIFT,
    QUAD_SPLIT,
    mixed_shift_form,
    saturating_clamp,
    sum_fraction_bits,
)

#: The TIR call of an ALU REQ (``InjectALUIntrin`` lowers it; option ``ALU_REQUANT``).
REQUANT_OP = "tir.vta.requant"

__all__ = ["REQUANT_OP", "alu_workload", "build_alu_op", "build_qadd", "build_qconv2d", "build_qdense", "declare_qadd",
           "declare_qconv2d", "declare_qdense", "qconv2d_workload", "schedule_alu_op"]


def _ceil_div(x: int, b: int) -> int:
    return -(-x // b)


def _ints(shape) -> tuple:
    return tuple(int(s) for s in shape)


class _Chain:
    """Element-wise int32 stages appended one after another (each a separate ALU stage)."""

    def __init__(self, x: Tensor, prefix: str, const_shape: tuple | None = None):
        self.x = x
        self.shape = x.shape
        self.prefix = prefix
        self.count = 0
        #: shape of the constant vectors (:meth:`constant`), None when the schedule budgets none
        self.const_shape = const_shape
        #: ``(lo, hi)`` when the last requantisation already lies in that range (clamped operand)
        self.clipped: tuple | None = None
        #: ``(x before, vector, index map, x after)`` of the last broadcast vector add (a bias)
        self._vector_add = None

    def constant(self, value: int) -> Tensor:
        """A vector of ``value`` in the accumulator (``const_shape``: broadcast over all but the
        lanes), built on the ALU from immediates: ``value >> k``, shifted left by ``k``, plus
        ``value & (2**k - 1)``, with the least ``k <= 15`` that fits (:func:`_constant_ok`). Its
        stages carry the ``extra_vector`` attribute so that the tiler budgets them like a bias
        vector.

        Raises
        ------
        ScheduleError
            If ``value`` is out of that range.
        """
        v = int(value)
        if not _constant_ok(v):
            raise ScheduleError(f"constant vector {v}: outside +-2**30")
        k = next(k for k in range(16) if _fits_imm(v >> k))
        dt, attrs = self.x.dtype, {"extra_vector": 1}
        c = compute(self.const_shape, lambda *i: n.const(v >> k, dt), name=self._name("const"), tag=ELEMWISE_TAG,
                    attrs=attrs)
        if k:
            c0 = c
            c = compute(self.const_shape, lambda *i: c0(*i) << k, name=self._name("const_shl"), tag=ELEMWISE_TAG,
                        attrs=attrs)
        rest = v & ((1 << k) - 1)
        if not rest:
            return c
        return compute(self.const_shape, lambda *i: c(*i) + n.const(rest, dt), name=self._name("const_add"),
                       tag=ELEMWISE_TAG, attrs=attrs)

    def _name(self, what: str) -> str:
        self.count += 1
        return f"{self.prefix}_{what}{self.count}"

    def imm(self, op: str, value: int) -> None:
        prev, v = self.x, int(value)
        dt = prev.dtype
        if op == "add" and self._vector_add is not None and self._vector_add[3] is prev:
            # x + t + v == x + (t + v) (int32 wraps alike): v is added to the vector once per tile
            # (an extra vector in the accumulator) instead of to every entry
            x0, t, idx, _ = self._vector_add
            tv = compute(t.shape, lambda *i: t(*i) + n.const(v, dt), name=self._name("vec_add"), tag=ELEMWISE_TAG,
                         attrs={"extra_vector": 1})
            self.x = compute(self.shape, lambda *i: x0(*i) + tv(*idx(i)), name=self._name("add_t"), tag=BROADCAST_TAG)
            self._vector_add = None
            return
        self._vector_add = None
        fns = {
            "add": lambda *i: prev(*i) + n.const(v, dt),
            "mul": lambda *i: prev(*i) * n.const(v, dt),
            "shr": lambda *i: prev(*i) >> v,
            "shl": lambda *i: prev(*i) << v,
            "min": lambda *i: te_min(prev(*i), n.const(v, dt)),
            "max": lambda *i: te_max(prev(*i), n.const(v, dt)),
        }
        self.x = compute(self.shape, fns[op], name=self._name(op), tag=ELEMWISE_TAG)

    def tensor(self, op: str, t: Tensor) -> None:
        prev = self.x
        bcast = [int(ts) == 1 and int(rs) != 1 for ts, rs in zip(t.shape, self.shape, strict=True)]

        def idx(i):
            return [n.IntImm(0) if bc else v for bc, v in zip(bcast, i, strict=True)]

        fns = {
            "add": lambda *i: prev(*i) + t(*idx(i)),
            "mul": lambda *i: prev(*i) * t(*idx(i)),
            "shr": lambda *i: prev(*i) >> t(*idx(i)),
            "min": lambda *i: te_min(prev(*i), t(*idx(i))),
            "max": lambda *i: te_max(prev(*i), t(*idx(i))),
            # ALU REQ (hardware option ALU_REQUANT): t packs the multiplier and the shift
            "req": lambda *i: n.Call(prev.dtype, REQUANT_OP, (prev(*i), t(*idx(i)))),
        }
        self.x = compute(self.shape, fns[op], name=self._name(op + "_t"),
                         tag=BROADCAST_TAG if any(bcast) else ELEMWISE_TAG)
        self._vector_add = (prev, t, idx, self.x) if op == "add" and any(bcast) else None

    def scale_imm(self, m: int) -> None:
        """``* m`` as MUL, a left shift (m a power of two) or nothing (m = 1)."""
        if m == 1:
            return
        if m > 1 and m & (m - 1) == 0:
            self.imm("shl", m.bit_length() - 1)
        else:
            self.imm("mul", m)

    def split_multiply(self, m: int | None, mult_t: Tensor | None) -> None:
        """``x = (x * m) >> 15`` exactly for any int32 ``x`` and ``0 <= m < 2**15`` (the ``fixed``
        mode), with one extra accumulator tile: ``hi = ((x >> 1) + 2**13) >> 14`` (that is
        ``floor((x + 2**14) / 2**15)``, without the overflow of ``x + 2**14``) in a second tile,
        ``lo = (x << 17) >> 17`` in place (``x - hi * 2**15``, in [-2**14, 2**14)), then
        ``hi * m + ((lo * m) >> 15)``. No step leaves int32: ``|hi| <= 2**16`` and ``m < 2**15``
        give ``|hi * m| < 2**31``, ``|lo * m| < 2**29``, the sum is ``floor(x * m / 2**15)``.
        The ``hi`` stage carries the ``extra_tile`` attribute so the tilers budget the tile."""
        hi = self._split_accumulator()
        self._scale(m, mult_t)
        self.imm("shr", PRODUCT_SHIFT)
        lo = self.x
        self.x = hi
        self._scale(m, mult_t)
        self._sum(lo)

    def _split_accumulator(self) -> Tensor:
        """``x = hi * 2**15 + lo``: ``hi = ((x >> 1) + 2**13) >> 14`` in a new tile (returned; its
        first stage carries ``extra_tile``), ``lo = (x << 17) >> 17`` in place (``x``)."""
        x0 = self.x
        self.x = compute(self.shape, lambda *i: x0(*i) >> 1, name=self._name("hi"), tag=ELEMWISE_TAG,
                         attrs={"extra_tile": 1})
        self.imm("add", 1 << 13)
        self.imm("shr", 14)
        hi = self.x
        self.x = x0
        self.imm("shl", 32 - PRODUCT_SHIFT)
        self.imm("shr", 32 - PRODUCT_SHIFT)
        return hi

    def split_multiplier(self, ms: tuple, mult_ts: tuple, k: int = MULTIPLIER_SPLIT) -> None:
        """``x = (x * m) >> k`` exactly for ``m = mh * 2**k + ml``: ``x * mh + ((x * ml) >> k)``
        with the second product in an extra tile. The ``fixed`` mode with a known accumulator
        bound: ``k = 8``, ``|x| < 2**23``, ``m < 2**15`` (``|x * ml| < 2**31``, ``|x * mh| <
        2**30``); the ``wide`` mode: ``k = min(15, 31 - acc_bits)`` and up to 24-bit ``m``
        (:func:`~vta.topi.qnn_requant.wide_bits` keeps both products inside int32). An
        immediate ``ml = 0`` or ``mh = 0`` drops its half."""
        mh, ml = ms
        th, tl = mult_ts
        if tl is None and ml == 0:
            self._scale(mh, th)
            return
        if th is None and mh == 0:
            self._scale(ml, tl)
            self.imm("shr", k)
            return
        x0 = self.x
        self._copy_scaled(x0, ml, tl, extra=True, what="low")
        self.imm("shr", k)
        low = self.x
        self.x = x0
        self._scale(mh, th)
        self._sum(low)

    def four_product(self, ms: tuple, mult_ts: tuple) -> None:
        """``x = floor(x * m / 2**24)`` exactly for any int32 ``x`` and ``0 <= m < 2**24`` (the
        ``wide`` mode's four-product form, :attr:`~vta.topi.qnn_requant.Requant.four_product`):
        ``x = hi * 2**15 + lo`` as in :meth:`split_multiply` (``|hi| <= 2**16``, ``lo`` in
        ``[-2**14, 2**14)``), ``m = mh * 2**9 + ml`` (``ms = (mh, ml)``: ``mh < 2**15``,
        ``ml < 2**9``), then from the lowest weight up, each floor shift taken of an exact value:
        ``c1 = lo * mh + ((lo * ml) >> 9)`` (``floor(lo m / 2**9)``, ``|.| < 2**30``),
        ``c2 = hi * ml + (c1 >> 6)`` (``floor((hi ml 2**15 + lo m) / 2**15)``, ``< 2**26``),
        ``hi * mh + (c2 >> 9)`` (``|hi * mh| < 2**31``). The three stages that open a tile besides
        ``x`` (``hi``, ``lo * ml``, ``hi * ml``) carry ``extra_tile`` (the storage planner does
        not always fold the last into the dead second); 15 instructions."""
        (mh, ml), (th, tl) = ms, mult_ts
        hi = self._split_accumulator()
        lo = self.x
        self._copy_scaled(lo, ml, tl, extra=True)
        self.imm("shr", QUAD_SPLIT)
        low = self.x
        self.x = lo
        self._scale(mh, th)
        self._sum(low)
        self.imm("shr", PRODUCT_SHIFT - QUAD_SPLIT)
        c1 = self.x
        self._copy_scaled(hi, ml, tl, extra=True)
        self._sum(c1)
        self.imm("shr", QUAD_SPLIT)
        c2 = self.x
        self.x = hi
        self._scale(mh, th)
        self._sum(c2)

    def _copy_scaled(self, src: Tensor, m: int | None, mult_t: Tensor | None, extra: bool,
                     what: str = "prod") -> None:
        """``x = src * m`` (an immediate, or the loaded vector ``mult_t``) in a new tile (``extra``:
        budgeted as one more live tile); ``what`` names the stage."""
        attrs = {"extra_tile": 1} if extra else None
        if mult_t is not None:
            bc = [int(ts) == 1 and int(rs) != 1 for ts, rs in zip(mult_t.shape, self.shape, strict=True)]

            def f(*i):
                return src(*i) * mult_t(*[n.IntImm(0) if b else v for b, v in zip(bc, i, strict=True)])
            tag = BROADCAST_TAG
        else:
            def f(*i):
                return src(*i) * n.const(m, src.dtype)
            tag = ELEMWISE_TAG
        self.x = compute(self.shape, f, name=self._name(what), tag=tag, attrs=attrs)

    def _sum(self, other: Tensor) -> None:
        """``x = x + other`` (two tiles of the output's shape)."""
        prev = self.x
        self.x = compute(self.shape, lambda *i: prev(*i) + other(*i), name=self._name("t"), tag=ELEMWISE_TAG)

    def _scale(self, m: int | None, mult_t: Tensor | None) -> None:
        if mult_t is not None:
            self.tensor("mul", mult_t)
        else:
            self.scale_imm(m)

    def scaled_term(self, rq, frac: int, pre_add: int = 0) -> None:
        """``x = floor((x + pre_add) * m / 2**(shift - frac))`` of a bounded operand: one term of a
        sum rounded once (:meth:`round_sum`)."""
        if pre_add:
            self.imm("add", pre_add)
        self.scale_imm(int(rq.multiplier[0]))
        if int(rq.shift[0]) > frac:
            self.imm("shr", int(rq.shift[0]) - frac)

    def round_sum(self, frac: int, post_add: int) -> int:
        """``(x + 2**(frac-1)) >> frac`` (+ ``post_add`` when it fits the same ADD); returns the part
        of ``post_add`` still to be added."""
        c = (1 << (frac - 1)) if frac else 0
        if _fits_imm(c + post_add * (1 << frac)):
            c, post_add = c + post_add * (1 << frac), 0
        if c:
            self.imm("add", c)
        if frac:
            self.imm("shr", frac)
        return post_add

    def one_op_requant(self, rq, out_range: tuple, saturate: tuple | None) -> bool:
        """``requantize(x)`` clipped to ``out_range`` as one ALU REQ (hardware option
        ``ALU_REQUANT``) with a constant operand vector, when that gives what the multi-op form
        and the clip to ``saturate`` right after give: a per-tensor ``fixed`` requantisation and
        ``saturate`` inside ``out_range`` (REQ's saturation then changes nothing the clip keeps).
        Returns whether it was emitted."""
        if (saturate is None or self.const_shape is None or rq.mode != "fixed" or rq.per_channel or rq.pre_shift
                or not (out_range[0] <= saturate[0] and saturate[1] <= out_range[1])):
            return False
        self.tensor("req", self.constant(isa.req_operand(int(rq.multiplier[0]), int(rq.shift[0]))))
        if tuple(saturate) == tuple(out_range):
            self.clipped = tuple(saturate)
        return True

    def requant(self, rq, mult_t, shift_t: Tensor | None, pre_add: int = 0, post_add: int = 0,
                bounded: bool = False, saturate: tuple | None = None, clamp: tuple | None = None) -> int:
        """``requantize(x + pre_add) + post_add`` without clip (``vta.topi.qnn`` module docstring).

        ``bounded``: ``|x + pre_add| < 2**16`` is known (an int8 operand), so the ``fixed`` mode
        multiplies once, without the split product or the clamp. ``mult_t``: None (immediate
        multipliers), or the tuple of loaded vectors of :meth:`Requant.alu_multipliers`.

        The constants ride on the rounding step when the result is exact and the sum fits the
        signed 16-bit immediate: ``pre_add * m`` when the multiply is an immediate and no shift
        comes before the rounding (``(x + a) m = x m + a m``), ``post_add * 2**s2`` always
        (adding a multiple of ``2**s2`` commutes with the floor shift). Returns the part of
        ``post_add`` still to be added (0 when folded).

        ``saturate``: ``(lo, hi)`` when the caller clips ``requantize(x) + post_add`` to
        ``[lo, hi]`` right after. A split product (:meth:`Requant.product_shift` > 0) is then
        replaced, when :func:`~vta.topi.qnn_requant.saturating_clamp` allows it with immediate
        bounds, by a clamp of ``x`` (MIN, MAX) and one multiply: same clipped values.
        ``clamp``: ``((lo_t, hi_t), exact)``, loaded per-channel bounds of that clamp
        (:func:`~vta.topi.qnn_layout.clamp_vectors`; ``mult_t`` then holds the whole multipliers).
        """
        x_mul = None  # (lo, hi) of x at the multiply, when a clamp sets them
        if clamp is not None:
            # per-channel bounds (loaded vectors, clamp_vectors): the operand then takes one multiply
            (lo_t, hi_t), exact = clamp
            self.tensor("min", hi_t)
            self.tensor("max", lo_t)
            bounded = True
            if exact:
                self.clipped = tuple(saturate)
        m0, sh0 = int(rq.multiplier[0]), int(rq.shift[0])
        a = m0.bit_length() - 1
        if (rq.mode == "fixed" and not rq.per_channel and not rq.pre_shift and mult_t is None and shift_t is None
                and not pre_add and not bounded and m0 > 1 and m0 == 1 << a and sh0 > a
                and (sh0 - a > MAX_ROUND_SHIFT or (rq.acc_bits is not None and rq.acc_bits <= 30))):
            # m = 2**a: floor((x 2**a + 2**(s-1)) / 2**s) = floor((x + 2**(s-a-1)) / 2**(s-a)), no
            # multiply (the rounding constant is added after a first shift, or |x| < 2**30)
            rq = replace(rq, multiplier=np.array([1], dtype=np.int32), shift=np.array([sh0 - a], dtype=np.int32))
            bounded = True
        k0 = rq.product_shift()
        if (saturate is not None and not bounded and not pre_add and mult_t is None and shift_t is None
                and k0 > 0 and not (rq.multiplier_split and 0 in [int(v[0]) for v in rq.alu_multipliers()])):
            # (a split multiplier with a zero half is one multiply already)
            lo_y, hi_y = saturate[0] - post_add, saturate[1] - post_add
            bounds = saturating_clamp(rq, lo_y, hi_y)
            narrowed = None
            if bounds is None and k0 == PRODUCT_SHIFT:
                # the clamped operand fits the multiplier split (|x| < 2**23): 6 steps instead of 11
                wide = saturating_clamp(rq, lo_y, hi_y, single_multiply=False)
                bits = max(abs(b) for b in wide).bit_length() if wide is not None else 32
                if bits <= 23:
                    bounds, narrowed = wide, replace(rq, acc_bits=bits)
            if bounds is not None and (all(_fits_imm(b) for b in bounds)
                                       or (self.const_shape is not None and all(_constant_ok(b) for b in bounds))):
                # each bound an immediate when it fits (e.g. the lower one of a ReLU's clip), else a
                # constant vector (a tensor operation, one cycle per entry like an immediate)
                for op, b in (("min", bounds[1]), ("max", bounds[0])):
                    if _fits_imm(b):
                        self.imm(op, b)
                    else:
                        self.tensor(op, self.constant(b))
                x_mul = (bounds[0] >> rq.pre_shift, bounds[1] >> rq.pre_shift)  # x at the multiply
                if narrowed is not None:
                    rq = narrowed
                else:
                    bounded = True
                if _exact_bounds(rq, bounds, lo_y, hi_y):
                    # y(x_lo) = lo and y(x_hi) = hi: the clip right after changes nothing
                    self.clipped = tuple(saturate)
        if rq.pre_shift and pre_add:
            self.imm("add", pre_add)
            pre_add = 0
        if rq.pre_shift:
            self.imm("shr", rq.pre_shift)
        # With a first shift anyway, s2 gives bits to s1 until post_add * 2**s2 fits (the shift
        # vector of a per-channel requant is packed with the same split: ArgLayout.post_add).
        s1, s2 = rq.split_shifts(post_add, bounded)
        k = rq.product_shift(bounded)
        msplit = rq.multiplier_split and k > 0
        ms = (int(rq.multiplier[0]),) if not msplit else tuple(int(v[0]) for v in rq.alu_multipliers())
        mts = tuple(mult_t) if mult_t is not None else (None,) * len(ms)
        m = None if mult_t is not None else ms[0]
        base = (1 << (s2 - 1)) if s2 else 0
        split = k > 0
        clamp = rq.needs_clamp(bounded)
        if clamp and rq.per_channel and any(
                int(sh) > PRODUCT_SHIFT
                for sh, mm in zip(rq.shift.tolist(), rq.multiplier.tolist(), strict=True) if mm):
            raise ScheduleError("fixed requantisation: per-channel shifts on both sides of 15 (multipliers "
                                "above and below 1/2) cannot share one ALU program")
        if pre_add and (split or clamp or m is None or shift_t is not None or int(s1[0])
                        or not _fits_imm(base + pre_add * m)):
            # not foldable: a split or clamped product, a tensor multiplier, a shift before the rounding, or too large
            self.imm("add", pre_add)
            pre_add = 0
        if clamp:
            self.imm("min", DIRECT_CLAMP)
            self.imm("max", -DIRECT_CLAMP)
            x_mul = (-DIRECT_CLAMP, DIRECT_CLAMP)
        if msplit and rq.four_product:
            self.four_product(ms, mts)
        elif msplit:
            self.split_multiplier(ms, mts, k)
        elif split:
            self.split_multiply(m, mts[0])
        else:
            self._scale(m, mts[0])
        if (x_mul is not None and not pre_add and mult_t is None and shift_t is None and int(s1[0]) and s2
                and self.const_shape is not None and int(rq.multiplier[0]) >= 0):
            # the product is y = floor(x m / 2**k); SHR s1, ADD 2**(s2-1) (+ post_add 2**s2), SHR s2
            # is floor((y + c) / 2**s) with s = s1 + s2 and c = 2**(s-1) (+ post_add 2**s) (nested
            # floors): when c is a constant vector and y + c stays inside int32 at both ends of
            # x's range, a tensor ADD and one SHR, a uop less per entry
            mf, sh = int(rq.multiplier[0]), int(s1[0]) + s2
            y_lo, y_hi = (x_mul[0] * mf) >> k, (x_mul[1] * mf) >> k

            def fits(c):
                return _constant_ok(c) and -(1 << 31) <= y_lo + c and y_hi + c < 1 << 31
            c, left = (1 << (sh - 1)) + (post_add << sh), 0
            if not fits(c):
                c, left = 1 << (sh - 1), post_add
            if sh <= 31 and fits(c):
                self.tensor("add", self.constant(c))
                self.imm("shr", sh)
                return left
        if shift_t is not None:
            self.tensor("shr", shift_t)
        elif int(s1[0]):
            self.imm("shr", int(s1[0]))
        if pre_add:
            base += pre_add * m
        c = base + post_add * (1 << s2)
        if _fits_imm(c):
            post_add = 0
        else:
            c = base
        if c:
            self.imm("add", c)
        if s2:
            self.imm("shr", s2)
        return post_add


def _constant_ok(v: int) -> bool:
    """Whether :meth:`_Chain.constant` builds ``v`` (``v >> 15`` fits the immediate)."""
    return _fits_imm(int(v) >> 15)


def _exact_bounds(rq, bounds: tuple, lo: int, hi: int) -> bool:
    """True when the requantised clamp bounds are exactly ``lo`` and ``hi`` (so every clamped
    operand already lands in ``[lo, hi]``)."""
    m, s = int(rq.multiplier[0]), int(rq.shift[0])
    return all(((b * m + (1 << (s - 1))) >> s) == v for b, v in zip(bounds, (lo, hi), strict=True))


def _fits_imm(v: int) -> bool:
    """The ALU's immediate is a signed 16-bit field."""
    return -(1 << 15) <= v < (1 << 15)


def _vector_kinds(rq) -> tuple[bool, bool]:
    """(multiplier needs a loaded vector, shift needs a loaded vector)."""
    s1, _ = rq.split_shifts()
    return len(set(rq.multiplier.tolist())) > 1, len(set(s1.tolist())) > 1


def _epilogue(acc: Tensor, spec, bias: Tensor | None, vec_shape: tuple, residual_shape: tuple, env: Environment,
              placeholders: list, const_shape: tuple | None = None) -> Tensor:
    """Bias, requantisation, residual, zero point, clip and cast after the GEMM stage ``acc``.

    Appends the placeholders it creates (with their roles) to ``placeholders``. ``const_shape``:
    the shape of constant vectors the epilogue may build on the ALU (None: none; the schedule
    must budget their ``extra_vector`` stages)."""
    ch = _Chain(acc, "rq", const_shape)
    if bias is not None:
        ch.tensor("add", bias)
    inter = getattr(spec, "intermediate", None)
    # The output zero point rides on the last rounding step: the residual's if there is one.
    z_out = spec.output_zero_point
    last = spec.residual is None and inter is None
    plan = clamp_vectors(spec)  # per-channel clamp bounds (then one multiply), shared with ArgLayout
    clamp_t = None
    rq_main = spec.requant
    if plan is not None:
        rq = spec.requant
        s1, _ = rq.split_shifts(z_out if last else 0, bounded=True)
        use_m, use_s = len(set(rq.multiplier.tolist())) > 1, len(set(s1.tolist())) > 1
        m_roles: tuple = ("multiplier",)
        clamp_t = tuple(placeholder(vec_shape, name=r, dtype=env.acc_dtype) for r in ("clamp_lo", "clamp_hi"))
        placeholders.extend(zip(("clamp_lo", "clamp_hi"), clamp_t, strict=True))
    else:
        mixed = mixed_shift_form(spec.requant)
        if mixed is not None:
            # shifts on both sides of 15: clamp and pre-shift per channel, then one split product
            rq_main = mixed[0]
            mixed_t = [placeholder(vec_shape, name=r, dtype=env.acc_dtype) for r in MIXED_ROLES]
            placeholders.extend(zip(MIXED_ROLES, mixed_t, strict=True))
            ch.tensor("min", mixed_t[1])
            ch.tensor("max", mixed_t[0])
            ch.tensor("shr", mixed_t[2])   # a negative shift: left
        use_m, use_s = _vector_kinds(rq_main)
        m_roles = ("multiplier", "multiplier_lo")[:len(rq_main.alu_multipliers())]
    mult_t = shift_t = None
    if use_m:
        mult_t = tuple(placeholder(vec_shape, name=r, dtype=env.acc_dtype) for r in m_roles)
        placeholders.extend(zip(m_roles, mult_t, strict=True))
    if use_s:
        shift_t = placeholder(vec_shape, name="shift", dtype=env.acc_dtype)
        placeholders.append(("shift", shift_t))
    if last:
        saturate = spec.clip
    elif inter is not None:
        saturate = (inter.clip[0] - inter.zero_point, inter.clip[1] - inter.zero_point)
    else:
        saturate = None  # a residual is added before the clip
    out_range = (-(1 << (env.OUT_WIDTH - 1)), (1 << (env.OUT_WIDTH - 1)) - 1)
    if (env.ALU_REQUANT and plan is None and mult_t is None and shift_t is None and not (z_out if last else 0)
            and ch.one_op_requant(rq_main, out_range, saturate)):
        z_left = 0
    else:
        z_left = ch.requant(rq_main, mult_t, shift_t, post_add=z_out if last else 0, saturate=saturate,
                            clamp=None if plan is None else (clamp_t, plan[2]))
    if inter is not None:
        # clip(y + z, lo, hi) - z == clip(y, lo - z, hi - z): the int8 output of the operator itself.
        if ch.clipped != saturate:
            ch.imm("min", inter.clip[1] - inter.zero_point)
            ch.imm("max", inter.clip[0] - inter.zero_point)
        ch.clipped = None
        if inter.fit is not None and spec.residual is not None:
            _fitted_residual(ch, inter, residual_shape, env, placeholders)
            return _finish(ch, 0, spec.clip, env)
        frac = sum_fraction_bits(inter.requant, spec.residual.requant) if spec.residual is not None else None
        if frac is not None:
            # both operands rescaled with frac fraction bits, then one rounding of the sum
            ch.scaled_term(inter.requant, frac)
            r = placeholder(residual_shape, name="residual", dtype=env.inp_dtype)
            placeholders.append(("residual", r))
            y = _term(r, spec.residual, frac, env, "res")
            x = ch.x
            ch.x = compute(x.shape, lambda *i: x(*i) + y(*i), name="res_add", tag=ELEMWISE_TAG)
            return _finish(ch, ch.round_sum(frac, z_out), spec.clip, env)
        z_left = ch.requant(inter.requant, None, None, post_add=z_out if spec.residual is None else 0, bounded=True)
    if spec.residual is not None:
        r = placeholder(residual_shape, name="residual", dtype=env.inp_dtype)
        placeholders.append(("residual", r))
        ch.x, z_left = _add_scaled(ch.x, r, spec.residual, env, "res", post_add=z_out)
    return _finish(ch, z_left, spec.clip, env)


def _scaled_operand(r: Tensor, res, env: Environment, prefix: str, post_add: int = 0) -> tuple[Tensor, int]:
    """``requant(r - z) + post_add`` of an int8 tensor ``r``: an ACC_8BIT load and ALU stages;
    returns the tensor and the part of ``post_add`` still to be added."""
    loaded = compute(r.shape, lambda *i: r(*i).astype(env.acc_dtype), name=f"{prefix}_load", tag=LOAD_TAG)
    rc = _Chain(loaded, prefix)
    left = rc.requant(res.requant, None, None, pre_add=-res.zero_point, post_add=post_add, bounded=True)
    return rc.x, left


def _term(r: Tensor, res, frac: int, env: Environment, prefix: str) -> Tensor:
    """``floor((r - z) * m / 2**(shift - frac))`` of an int8 tensor ``r`` (ACC_8BIT load, ALU)."""
    loaded = compute(r.shape, lambda *i: r(*i).astype(env.acc_dtype), name=f"{prefix}_load", tag=LOAD_TAG)
    rc = _Chain(loaded, prefix)
    rc.scaled_term(res.requant, frac, pre_add=-res.zero_point)
    return rc.x


def _add_scaled(x: Tensor, r: Tensor, res, env: Environment, prefix: str, post_add: int = 0) -> tuple[Tensor, int]:
    y, left = _scaled_operand(r, res, env, prefix, post_add)
    return compute(x.shape, lambda *i: x(*i) + y(*i), name=f"{prefix}_add", tag=ELEMWISE_TAG), left


def _finish(ch: _Chain, z_left: int, clip: tuple, env: Environment) -> Tensor:
    """The output zero point (what the rounding steps did not absorb), the clip and the cast."""
    if z_left:
        ch.imm("add", z_left)
    if ch.clipped != tuple(clip):
        ch.imm("min", clip[1])
        ch.imm("max", clip[0])
    last = ch.x
    return compute(last.shape, lambda *i: last(*i).astype(env.out_dtype), name="out", tag=ELEMWISE_TAG)


def _arg_specs(pairs: list) -> list:
    return [ArgSpec(t.name, role, _ints(t.shape), t.dtype) for role, t in pairs]


def declare_qconv2d(spec, env: Environment) -> tuple[Tensor, list]:
    """The tensor expressions of a fused convolution: ``(output, [(role, tensor), ...])`` in call
    order (the output last); a ``fold_width`` spec declares its :meth:`~QConv2DSpec.folded` form."""
    spec = spec.folded()
    nb = _ceil_div(spec.batch, env.BATCH)
    cib = _ceil_div(spec.in_channels, env.BLOCK_IN)
    cob = _ceil_div(spec.out_channels, env.BLOCK_OUT)
    oh, ow = spec.out_height, spec.out_width
    data = placeholder((nb, cib, spec.height, spec.width, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
    g = spec.groups
    if g > 1 and (cib % g or cob % g or spec.in_channels % env.BLOCK_IN or spec.out_channels % env.BLOCK_OUT):
        raise ScheduleError(f"declare_qconv2d: groups={g} must split {spec.in_channels} input and "
                            f"{spec.out_channels} output channels into whole blocks of {env.BLOCK_IN}/{env.BLOCK_OUT}")
    weight = placeholder((cob, cib // g, spec.kernel_h, spec.kernel_w, env.BLOCK_OUT, env.BLOCK_IN), name="weight",
                         dtype=env.wgt_dtype)
    border = spec.input_zero_point != 0 and any(spec.padding)
    bias_shape = (1, cob, oh, ow, env.BATCH, env.BLOCK_OUT) if border else (1, cob, 1, 1, env.BATCH, env.BLOCK_OUT)
    bias = placeholder(bias_shape, name="bias", dtype=env.acc_dtype)
    pairs = [("data", data), ("weight", weight), ("bias", bias)]
    if g > 1:
        conv = group_conv2d_packed(data, weight, spec.strides, spec.padding, (1, 1), g, env.acc_dtype)
    else:
        conv = conv2d_packed(data, weight, spec.strides, spec.padding, env.acc_dtype)
    out = _epilogue(conv, spec, bias, (1, cob, 1, 1, env.BATCH, env.BLOCK_OUT), _ints(conv.shape), env, pairs,
                    const_shape=(1, 1, 1, 1, env.BATCH, env.BLOCK_OUT))
    pairs.append(("out", out))
    return out, pairs


def declare_qdense(spec, env: Environment) -> tuple[Tensor, list]:
    """The tensor expressions of a fused dense layer (as :func:`declare_qconv2d`)."""
    nb = _ceil_div(spec.batch, env.BATCH)
    cib = _ceil_div(spec.in_features, env.BLOCK_IN)
    cob = _ceil_div(spec.out_features, env.BLOCK_OUT)
    data = placeholder((nb, cib, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
    weight = placeholder((cob, cib, env.BLOCK_OUT, env.BLOCK_IN), name="weight", dtype=env.wgt_dtype)
    bias = placeholder((1, cob, env.BATCH, env.BLOCK_OUT), name="bias", dtype=env.acc_dtype)
    pairs = [("data", data), ("weight", weight), ("bias", bias)]
    res = dense_packed(data, weight, env.acc_dtype)
    out = _epilogue(res, spec, bias, (1, cob, env.BATCH, env.BLOCK_OUT), _ints(res.shape), env, pairs)
    pairs.append(("out", out))
    return out, pairs


def _check_env(env: Environment, what: str) -> None:
    """The quantized operators compute on int8 tensors and int32 accumulators.

    Raises
    ------
    ScheduleError
        If the configuration's input, weight or accumulator width differs.
    """
    if (env.INP_WIDTH, env.WGT_WIDTH, env.ACC_WIDTH) != (8, 8, 32):
        raise ScheduleError(
            f"{what}: quantized operators need 8-bit inputs and weights and 32-bit accumulators; this configuration "
            f"has INP_WIDTH={env.INP_WIDTH}, WGT_WIDTH={env.WGT_WIDTH}, ACC_WIDTH={env.ACC_WIDTH}")


def _build(sched, pairs: list, name: str, env: Environment):
    from ..build import build

    return build(sched, [t for _, t in pairs], "ext_dev", name=name, env=env)


def _compile(kind: str, declare, schedule, spec, name: str, env: Environment | None, what: str, tiling=None):
    """Declare, schedule (with ``tiling`` when given) and build one GEMM operator; its module and
    ArgLayout."""
    env = env or get_env()
    _check_env(env, what)
    with env:
        out, pairs = declare(spec, env)
        mod = _build(schedule(out, tiling), pairs, name, env)
    return mod, ArgLayout.for_env(kind, spec, _arg_specs(pairs), env)


def qconv2d_workload(spec, env: Environment | None = None):
    """The :class:`~vta.topi.tiling.Conv2DWorkload` that :func:`~vta.topi.schedule_conv2d_packed`
    tiles for the fused convolution ``spec`` (epilogue inputs, extra tiles and ALU stages
    included), e.g. to enumerate its tilings with :func:`~vta.topi.tiling.conv2d_candidates`."""
    from ._traverse import classify
    from .conv2d import CONV2D_TAG, conv2d_workload, epilogue_workload

    env = env or get_env()
    with env:
        out, _ = declare_qconv2d(spec, env)
        graph = classify(out, CONV2D_TAG, "qconv2d_workload")
        return epilogue_workload(graph, conv2d_workload(graph.core))


def build_qconv2d(spec, name: str, env: Environment | None = None, tiling=None):
    """Compile a fused quantized convolution (:class:`~vta.topi.qnn.QConv2DSpec`).

    ``tiling`` (a :class:`~vta.topi.tiling.Conv2DTiling`, optional) overrides the chosen one.

    Returns
    -------
    (Module, ArgLayout)
        The host module (function ``name``) and its arguments.

    Raises
    ------
    ScheduleError
        If no tiling of the layer fits the configuration's buffers, or the configuration is not
        8-bit (inputs, weights) with 32-bit accumulators.
    """
    schedule = schedule_group_conv2d_packed if spec.groups > 1 else schedule_conv2d_packed
    return _compile("conv2d", declare_qconv2d, schedule, spec, name, env, "build_qconv2d", tiling)


def build_qdense(spec, name: str, env: Environment | None = None, tiling=None):
    """Compile a fused quantized dense layer (:class:`~vta.topi.qnn.QDenseSpec`).

    ``tiling`` (a :class:`~vta.topi.tiling.DenseTiling`, optional) overrides the chosen one.

    Returns
    -------
    (Module, ArgLayout)

    Raises
    ------
    ScheduleError
        If no tiling fits the configuration's buffers.
    """
    return _compile("dense", declare_qdense, schedule_dense_packed, spec, name, env, "build_qdense", tiling)


# -- element-wise operators without GEMM --------------------------------------------------------

def _ewise_schedule(out: Tensor, loads: list, alus: list, rows_axis: int, tile_rows: int, env: Environment,
                    tile_c: int = 1):
    """Every stage in the accumulator, computed per tile of ``tile_rows`` along ``rows_axis`` of
    the output (the axes before it are outer loops; with ``tile_c`` > 1 the channel-block axis 1
    is split too and ``tile_c`` blocks share a tile), loads by DMA, the rest on the ALU."""
    s = create_schedule(out.op)
    for t in loads:
        s[t].set_scope(env.acc_scope)
    for t in alus:
        s[t].set_scope(env.acc_scope)
    axes = list(s[out].op.axis)
    outer, inner = s[out].split(axes[rows_axis], factor=tile_rows)
    if tile_c > 1:
        c_outer, c_inner = s[out].split(axes[1], factor=tile_c)
        s[out].reorder(*axes[:1], c_outer, outer, c_inner, inner, *axes[rows_axis + 1:])
        store_at = c_inner
    else:
        s[out].reorder(*axes[:rows_axis], outer, inner, *axes[rows_axis + 1:])
        store_at = inner
    for t in loads + alus:
        s[t].compute_at(s[out], outer)
    for t in loads:
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    for t in alus:
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[out].pragma(store_at, env.dma_copy)
    return s


def _stages_below(out: Tensor) -> list:
    """Every compute stage below ``out`` (excluding it), producers first."""
    order: list = []
    seen: set = set()

    def visit(t: Tensor) -> None:
        if id(t.op) in seen or not hasattr(t.op, "body"):
            return
        seen.add(id(t.op))
        for u in t.op.input_tensors:
            visit(u)
        order.append(t)

    for u in out.op.input_tensors:
        visit(u)
    return order


def _row_tile(rows: int, entries_per_row: int, buffers: int, env: Environment, vectors: int = 0) -> int:
    """The largest divisor of ``rows`` whose tiles (``buffers`` copies, plus ``vectors`` entries
    of constant vectors) fit the accumulator."""
    cap = env.ACC_BUFF_DEPTH
    for t in range(rows, 0, -1):
        if rows % t == 0 and t * entries_per_row * buffers + vectors <= cap:
            return t
    raise ScheduleError(f"qadd: one row of {entries_per_row} entries x {buffers} operands overflows the "
                        f"accumulator ({cap} entries)")


def _times(ch: _Chain, m: int) -> None:
    """``x * m``: an immediate MUL (or shift), or a MUL of a constant vector built on the ALU
    when ``m`` does not fit the 16-bit immediate."""
    if _fits_imm(m) or (m > 0 and m & (m - 1) == 0):
        ch.scale_imm(m)
    else:
        ch.tensor("mul", ch.constant(m))


def _fitted_sum(a: Tensor, b: Tensor, spec, env: Environment) -> Tensor:
    """``clip(floor((a m_a + b m_b + c) / 2**s))`` of :attr:`QAddSpec.fit` on the ALU: ACC_8BIT
    loads, a MUL each (of a constant vector beyond the immediate), ADD, then the offset and the
    shift as ``((x + c_lo) >> k) + c_hi >> (s - k)`` with ``c = c_hi 2**k + c_lo``, ``0 <= c_lo <
    2**k``, ``k = min(s, 15)`` (nested floors: the same value), MIN, MAX."""
    f = spec.fit
    vec = (1, 1, 1, 1, env.BATCH, env.BLOCK_OUT)
    terms = []
    for t, m, prefix in ((a, f.lhs_multiplier, "lhs"), (b, f.rhs_multiplier, "rhs")):
        loaded = compute(t.shape, lambda *i, t=t: t(*i).astype(env.acc_dtype), name=f"{prefix}_load", tag=LOAD_TAG)
        ch = _Chain(loaded, prefix, vec)
        _times(ch, int(m))
        terms.append(ch.x)
    ta, tb = terms
    ch = _Chain(compute(ta.shape, lambda *i: ta(*i) + tb(*i), name="qadd_sum", tag=ELEMWISE_TAG), "qadd", vec)
    _fit_rounding(ch, f)
    return _finish(ch, 0, spec.clip, env)


def _fit_rounding(ch: _Chain, f) -> None:
    """``x = (x + offset) / 2**shift`` of an :class:`~vta.topi.qnn_fit.AffineSum`, rounded down
    (:func:`_offset_shift`) or, with ``even``, half to even: ``q = (x + offset) >> shift`` in an
    extra tile (the stage carries ``extra_tile``), its parity ``-(q << 31) >> 31``, then ``(x +
    parity + offset + 2**(shift-1) - 1) >> shift``."""
    offset, shift = int(f.offset), int(f.shift)
    if not (f.even and shift):
        _offset_shift(ch, offset, shift)
        return
    x = ch.x
    ch._copy_scaled(x, 1, None, extra=True, what="parity")
    _offset_shift(ch, offset, shift)
    ch.imm("shl", 31)
    ch.imm("shr", 31)
    ch.imm("mul", -1)
    parity = ch.x
    ch.x = compute(x.shape, lambda *i: x(*i) + parity(*i), name=ch._name("t"), tag=ELEMWISE_TAG)
    _offset_shift(ch, offset + (1 << (shift - 1)) - 1, shift)


def _offset_shift(ch: _Chain, offset: int, shift: int) -> None:
    """``x = floor((x + offset) / 2**shift)`` as ``((x + c_lo) >> k) + c_hi >> (shift - k)`` with
    ``offset = c_hi 2**k + c_lo``, ``0 <= c_lo < 2**k``, ``k = min(shift, 15)`` (nested floors:
    the same value); ``c_hi`` an immediate, or a constant vector beyond it."""
    k = min(shift, PRODUCT_SHIFT)
    c_hi, c_lo = offset >> k, offset & ((1 << k) - 1)
    if c_lo:
        ch.imm("add", c_lo)
    if k:
        ch.imm("shr", k)
    if c_hi and _fits_imm(c_hi):
        ch.imm("add", c_hi)
    elif c_hi:
        ch.tensor("add", ch.constant(c_hi))
    if shift > k:
        ch.imm("shr", shift - k)


def _fitted_residual(ch: _Chain, inter, residual_shape: tuple, env: Environment, placeholders: list) -> None:
    """The fitted sum of the operator's int8 output (``x + zero point``) and the residual
    (:attr:`IntermediateSpec.fit`), as :func:`_fitted_sum`.

    Raises
    ------
    ScheduleError
        If the epilogue has no constant vectors and a multiplier passes the immediate.
    """
    f = inter.fit
    if ch.const_shape is None and not all(_fits_imm(int(m)) for m in (f.lhs_multiplier, f.rhs_multiplier)):
        raise ScheduleError("a fitted residual sum with multipliers beyond the 16-bit immediate needs constant "
                            "vectors (a convolution's epilogue builds them; a dense layer's does not)")
    if inter.zero_point:
        ch.imm("add", inter.zero_point)
    _times(ch, int(f.lhs_multiplier))
    r = placeholder(residual_shape, name="residual", dtype=env.inp_dtype)
    placeholders.append(("residual", r))
    loaded = compute(r.shape, lambda *i: r(*i).astype(env.acc_dtype), name="res_load", tag=LOAD_TAG)
    rc = _Chain(loaded, "res", ch.const_shape)
    _times(rc, int(f.rhs_multiplier))
    x, y = ch.x, rc.x
    ch.x = compute(x.shape, lambda *i: x(*i) + y(*i), name="res_add", tag=ELEMWISE_TAG)
    _fit_rounding(ch, f)


def declare_qadd(spec, env: Environment) -> tuple[Tensor, list, list, list]:
    """The tensor expressions of a quantized add: ``(output, [(role, tensor), ...], loads, ALU
    stages)``."""
    nb = _ceil_div(spec.batch, env.BATCH)
    cb = _ceil_div(spec.channels, env.BLOCK_OUT)
    shape = (nb, cb, spec.height, spec.width, env.BATCH, env.BLOCK_OUT)
    a = placeholder(shape, name="lhs", dtype=env.inp_dtype)
    b = placeholder(shape, name="rhs", dtype=env.inp_dtype)
    frac = sum_fraction_bits(spec.lhs.requant, spec.rhs.requant)
    if spec.fit is not None:  # the sum fitted to onnxruntime's outputs
        out = _fitted_sum(a, b, spec, env)
    elif frac is not None:  # one rounding of the rescaled sum
        ta, tb = _term(a, spec.lhs, frac, env, "lhs"), _term(b, spec.rhs, frac, env, "rhs")
        ch = _Chain(compute(shape, lambda *i: ta(*i) + tb(*i), name="qadd_sum", tag=ELEMWISE_TAG), "qadd")
        out = _finish(ch, ch.round_sum(frac, spec.output_zero_point), spec.clip, env)
    else:
        ya, z_left = _scaled_operand(a, spec.lhs, env, "lhs", post_add=spec.output_zero_point)
        x, _ = _add_scaled(ya, b, spec.rhs, env, "rhs")
        ch = _Chain(x, "qadd")
        out = _finish(ch, z_left, spec.clip, env)
    stages = _stages_below(out)
    loads = [t for t in stages if t.op.tag == LOAD_TAG]
    alus = [t for t in stages if t.op.tag != LOAD_TAG]
    return out, [("lhs", a), ("rhs", b), ("out", out)], loads, alus


def alu_workload(kind: str, spec, declare, env: Environment | None = None):
    """The :class:`~vta.topi.alu_tiling.AluWorkload` of an ALU-only operator (``kind`` ``"add"``
    with :func:`declare_qadd`, ``"multiply"`` with :func:`vta.topi.qnn_mul.declare_qmul`)."""
    env = env or get_env()
    with env:
        _, _, _, alus = declare(spec, env)
        return _alu_workload(kind, spec, alus, env)


def _alu_workload(kind: str, spec, alus: list, env: Environment):
    """The workload of an ALU-only operator whose ALU stages are ``alus``: a fitted sum budgets
    its extra tile and every operator its constant vectors."""
    from .alu_tiling import AluWorkload

    vectors = sum(int(t.op.attrs.get("extra_vector", 0)) for t in alus if t.op.attrs)
    extra = sum(int(t.op.attrs.get("extra_tile", 0)) for t in alus if t.op.attrs) \
        if getattr(spec, "fit", None) is not None else 0
    return AluWorkload(kind, _ceil_div(spec.batch, env.BATCH), _ceil_div(spec.channels, env.BLOCK_OUT),
                       spec.height, spec.width, bool(getattr(spec, "rhs_broadcast", False)), len(alus),
                       extra, vectors)


def schedule_alu_op(kind: str, spec, declare, env: Environment, tiling=None) -> tuple:
    """``(schedule, [(role, tensor), ...])`` of an ALU-only operator; ``tiling`` (an
    :class:`~vta.topi.alu_tiling.AluTiling`) overrides the default one (most rows of one channel
    block whose two operands fit the accumulator).

    Raises
    ------
    ScheduleError
        If one row of the operands does not fit the accumulator, or ``tiling`` does not divide
        the channel blocks and rows or overflows the accumulator.
    """
    from .alu_tiling import alu_footprint, choose_alu_tiling

    with env:
        out, pairs, loads, alus = declare(spec, env)
        wl = _alu_workload(kind, spec, alus, env)
        if tiling is None:
            tiling = choose_alu_tiling(env, wl)
        elif wl.c_blocks % tiling.tile_c or wl.height % tiling.tile_h or \
                alu_footprint(wl, tiling) > env.ACC_BUFF_DEPTH:
            raise ScheduleError(f"{kind}: {tiling!r} does not divide {wl.c_blocks} channel blocks and "
                                f"{wl.height} rows, or its tiles ({alu_footprint(wl, tiling)} entries with "
                                f"{wl.extra_tiles} extra tiles and {wl.vectors} of constant vectors) overflow "
                                f"the accumulator ({env.ACC_BUFF_DEPTH} entries)")
        tile_c, tile_h = tiling.tile_c, tiling.tile_h
        return _ewise_schedule(out, loads, alus, 2, tile_h, env, tile_c), pairs


def build_alu_op(kind: str, spec, declare, name: str, env: Environment, tiling=None):
    """Declare, schedule (:func:`schedule_alu_op`) and build an ALU-only operator.

    Raises
    ------
    ScheduleError
        As :func:`schedule_alu_op`, or if the configuration is not 8-bit with 32-bit accumulators.
    """
    _check_env(env, "build_qadd" if kind == "add" else "build_qmul")
    with env:
        s, pairs = schedule_alu_op(kind, spec, declare, env, tiling)
        mod = _build(s, pairs, name, env)
    return mod, ArgLayout.for_env(kind, spec, _arg_specs(pairs), env)


def build_qadd(spec, name: str, env: Environment | None = None, tiling=None):
    """Compile a quantized add (:class:`~vta.topi.qnn.QAddSpec`) on the ALU.

    ``tiling`` (an :class:`~vta.topi.alu_tiling.AluTiling`, optional) overrides the default.

    Returns
    -------
    (Module, ArgLayout)

    Raises
    ------
    ScheduleError
        If one row of the operands does not fit the accumulator, or ``tiling`` does not fit.
    """
    return build_alu_op("add", spec, declare_qadd, name, env or get_env(), tiling)
