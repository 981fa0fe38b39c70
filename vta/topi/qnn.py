"""Quantized operators for VTA: the integer requantisation shared by the accelerator and the host,
the specifications of the fused accelerator operators, and their NumPy references.

Integer semantics
-----------------
Every accelerator tensor is int8, accumulators are int32. An int32 accumulator ``acc`` (bias
already added) is brought to the output scale by a real multiplier ``M = s_in / s_out`` written
as ``M ~= m * 2**(p - s)`` (:class:`Requant`: ``m`` the multiplier, ``s`` the shift, ``p`` the
pre-shift). Three modes:

``fixed`` (the default): ``m`` has 15 significant bits (``2**14 <= m < 2**15``, from the float32
value of ``M``), ``p = 0``, and the product is exact::

    y = floor((acc * m + 2**(s - 1)) / 2**s)      # exact integers (|acc * m| < 2**46), half up
    out = clip(y + z_out, lo, hi)

except that a multiplier of 1/2 or more (``s <= 15``) first clamps ``acc`` to ``+-(2**15 - 1)``
(there every clamped value saturates anyway). The ALU (all operations wrap to int32, immediates
are signed 16-bit) computes ``floor(acc * m / 2**k)`` in one of three forms
(:meth:`Requant.product_shift`), all equal to the exact value, then the rounding shift by
``s - k`` below:

* ``k = 15`` (any int32 ``acc``): ``hi = ((acc >> 1) + 2**13) >> 14`` in a second accumulator
  tile, ``lo = (acc << 17) >> 17`` in place (so ``acc = hi * 2**15 + lo``, ``|lo| <= 2**14``),
  ``t = hi * m + ((lo * m) >> 15)``; no step leaves int32 (``|hi| <= 2**16``);
* ``k = 8`` (the spec's requant records ``acc_bits <= 23``, a bound on ``|acc|``):
  ``m = mh * 2**8 + ml`` and ``t = acc * mh + ((acc * ml) >> 8)``;
* ``k = 0`` (``|acc| < 2**16`` known, e.g. an int8 operand): one multiply.

``wide`` (the graph's ``requant_mode="wide"`` for convolutions, dense layers and products): the
multiplier keeps all 24 bits of the float32 multiplier (``m * 2**-s`` is onnxruntime's float32
``M`` itself), the same exact product and rounding as ``fixed``, for an operand with a known
bound ``|acc| < 2**B`` (``acc_bits``):

* ``B <= 18``: the ALU splits the multiplier, ``m = mh * 2**k + ml`` with ``k = min(15, 31 - B)``:
  ``t = acc * mh + ((acc * ml) >> k)``, both products inside int32 (6 instructions, like the
  ``k = 8`` form; the clamped one-multiply forms of ``fixed`` do not apply);
* ``B > 18`` (any int32 accumulator): the four-product form, ``k = 24``: ``acc = hi * 2**15 + lo``
  as in the ``k = 15`` form and ``m = mh * 2**9 + ml``, then ``c1 = lo * mh + ((lo * ml) >> 9)``,
  ``c2 = hi * ml + (c1 >> 6)``, ``t = hi * mh + (c2 >> 9)`` (``floor(acc * m / 2**24)``, no step
  leaving int32; 15 instructions, three extra tiles budgeted), when every live shift is at
  least 25 (every ``M`` below about 1/2; 26 for ``B > 30``, where a first shift then comes
  before the rounding constant);
* otherwise (no bound, or ``M`` too large for the four-product form) ``wide_bits(B) = min(24,
  61 - 2 B)`` bits with the multiplier split up to ``B = 22``, else the ``fixed`` form.

It differs from onnxruntime's ``nearbyint(float32(acc) * M)`` only where the float32 rounding of
the product lands exactly on a half and the tie then goes to the even neighbour (9 of the 42.5 M
convolution outputs of ``layout_cdla``; ``benchmarks/requant_exactness.py``).

``fixed8``: ``m`` at most 8 bits (the first scheme), and ``pow2`` (upstream VTA's, for
configurations without MUL: ``m = 1`` and a shift, ``M >= 1`` gives ``m = 2**(k + 1), s = 1``, a
left shift)::

    a = acc >> p                               # only when |acc| may exceed 2**23 (acc_bits)
    t = a * m                                  # int32, wraps past 2**31 like the ALU
    y = (t + 2**(s - 1)) >> s

:func:`requantize_np` computes exactly these. The accelerator rounds ``t`` as
``((t >> s1) + 2**(s2 - 1)) >> s2`` with ``s1 + s2 = s - k`` and ``s2 <= 15`` (the rounding
constant must fit the immediate); since ``2**(s - 1)`` is a multiple of ``2**(s1 + k)``, nested
floors give the same value for every ``t``. Per output channel, ``m`` and ``s`` are vectors
(loaded like the bias: ``multiplier``, ``multiplier_lo`` for ``k = 8``, ``shift`` = ``s1``), and
``s2 = min(s - k)`` is common.

Sums (a fused residual add after an :class:`IntermediateSpec`, and :func:`build_qadd`): in the
``fixed`` mode both int8 operands are rescaled with ``F = min(15, s_a, s_b)`` fraction bits and
the sum is rounded once (onnxruntime's QLinearAdd rounds the float sum once)::

    T_x = floor((x - z_x) * m_x / 2**(s_x - F))
    out = clip(floor((T_a + T_b + 2**(F - 1)) / 2**F) + z_out, lo, hi)

The other modes, and a residual added straight to an accumulator's requantisation (no
intermediate), round each operand separately and add the integers. :func:`add_np` is this sum
for host kernels (any shape), so that an add on the CPU equals ``vta.add``.

Difference from onnxruntime
---------------------------
onnxruntime requantises in float32. Its QLinearConv (and the QDQ convolutions it fuses into it)
computes ``M = float32(s_x * s_w[c]) / s_y`` in float32, then ``float32(acc) * M``, clamps that
to ``[lo - z_out, hi - z_out]``, rounds half to even and adds ``z_out``; QLinearMul rounds
``float32(acc) * M + z_out`` half to even; QLinearAdd evaluates ``z_c - (r_a z_a + r_b z_b) +
a r_a + b r_b`` on the raw 8-bit values with fused multiply-adds (``r = s / s_c``) and rounds half
to even (measured: these float32 models reproduce every output of the five zoo models,
``benchmarks/requant_exactness.py``). With a ``wide`` multiplier holding all 24 bits of ``M`` the
exact product equals ``float32(acc) * M`` before float32's own rounding, so the two differ only
where that rounding moves the product across a half (or onto one): 0.0000 - 0.0002% of the
outputs of the zoo's convolutions; the 15-bit ``fixed`` multiplier misses 0.009 - 0.022%. A sum
with a single-valued operand (``x + 3``) is fitted to onnxruntime's own outputs on the host
(:mod:`vta.topi.qnn_fit`). What follows describes the ``fixed`` mode.

onnxruntime's requantisation is ``rint(float32(acc) * M) + z_out`` with ``rint`` rounding
half to even and ``M`` a float32. The ``fixed`` mode differs in three ways: (1) ``m / 2**s`` is
``M`` to 15 significant bits (relative error at most ``2**-15``), so for an unsaturated output
(``|acc * M| <= 128``) the exact products differ by less than ``0.004`` output steps; (2) exact
ties round up instead of to even; (3) float32 rounds ``acc`` itself above ``2**24`` and the
product to 24 bits (below ``1e-5`` steps here). Two reals less than 0.5 apart round to integers
at most 1 apart, so every output is **within 1** of onnxruntime's, and equal unless a rounding
boundary falls between the two reals: measured on ResNet-like 3x3 layers with per-channel
multipliers in 1.6e-4 .. 4.7e-3 and outputs spread over int8, 99.95 - 99.97% of outputs are
equal (``benchmarks/requant_precision.py``; a QDQ convolution run by onnxruntime itself: 100% of
8192 outputs, ``tests/compiler/qnn/test_vs_onnxruntime.py``), and a residual block (conv, then
the add with one rounding) 99.97 - 99.98%. ``fixed8`` has a relative multiplier error up to
``2**-8`` (up to 0.5 steps; about 95 - 97% equal, within 1) and, for residual blocks, two
roundings (about 73% equal, up to 2 apart); its pre-shift ``p`` also drops ``p`` low bits of
``acc``. ``pow2`` is off by up to a factor 1.41 and is not meant to match.

A fusion ``conv -> requantize -> add`` that maps the convolution straight to the add's output
scale skips the convolution's own int8 saturation; :class:`IntermediateSpec` keeps it (the
operator's int8 output, then the add's rescale), which makes the fused operator bit-identical to
the unfused graph on the host.

Padding with the input zero point
---------------------------------
VTA's padded loads write zeros. A convolution whose input zero point ``z`` is not 0 is computed
on the zero-padded input, and the missing ``z * sum(w)`` over the padded taps of each output pixel
is added back through its bias argument, then a full ``(1, CO/BO, OH, OW, BATCH, BO)`` int32 map
(:func:`vta.topi.qnn_layout.border_correction`; one extra accumulator load per output tile).
Max pooling loads a ``mask`` of ones with the same zero padding so padded pixels never win.

Operators
---------
:class:`QConv2DSpec`, :class:`QDenseSpec`, :class:`QAddSpec`, :class:`MaxPoolSpec` describe one
fused accelerator operator in plain NCHW sizes; ``build_qconv2d`` and friends (in
:mod:`vta.topi.qnn_build`, re-exported here) compile them with ``vta.build`` and return the
module with an :class:`~vta.topi.qnn_layout.ArgLayout`. ``qconv2d_np`` and friends are the NumPy
references of the same operators (the host semantics of the graph layer's CPU kernels).
"""

from __future__ import annotations

from .qnn_build import build_qadd, build_qconv2d, build_qdense
from .qnn_layout import ArgLayout, ArgSpec
from .qnn_pool import build_maxpool, maxpool_unsupported_reason
from .qnn_ref import maxpool_np, qadd_np, qconv2d_np, qdense_np
from .qnn_requant import INT8_RANGE, Requant, accumulator_bits, add_np, requantize_np
from .qnn_spec import (
    IntermediateSpec,
    MaxPoolSpec,
    QAddSpec,
    QConv2DSpec,
    QDenseSpec,
    ResidualSpec,
    conv_out_size,
)

__all__ = [
    "INT8_RANGE",
    "ArgLayout",
    "ArgSpec",
    "IntermediateSpec",
    "MaxPoolSpec",
    "QAddSpec",
    "QConv2DSpec",
    "QDenseSpec",
    "Requant",
    "ResidualSpec",
    "accumulator_bits",
    "add_np",
    "build_maxpool",
    "build_qadd",
    "build_qconv2d",
    "build_qdense",
    "conv_out_size",
    "maxpool_np",
    "maxpool_unsupported_reason",
    "qadd_np",
    "qconv2d_np",
    "qdense_np",
    "requantize_np",
]
