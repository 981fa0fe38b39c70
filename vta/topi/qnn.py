"""Quantized operators for VTA: the integer requantisation shared by the accelerator and the host,
the specifications of the fused accelerator operators, and their NumPy references.

Integer semantics
-----------------
Every accelerator tensor is int8, accumulators are int32. An int32 accumulator ``acc`` (bias
already added) is brought to the output scale by a real multiplier ``M = s_in / s_out`` written
as ``M ~= m * 2**(p - s)`` (:class:`Requant`: ``m`` the multiplier, at most 8 bits, ``s`` the
shift, ``p`` the pre-shift)::

    a = acc >> p                               # arithmetic, only when |acc| may exceed 2**23
    t = a * m                                  # fits int32: |a| < 2**23 and m < 2**8 (else it
                                               # wraps mod 2**32, on the host as on the ALU)
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
even and ``M`` a float32. Ours differs in four ways: (1) ``m / 2**s`` approximates ``M`` to 8
significant bits (``m >= 128`` is rounded to nearest: relative error at most ``2**-8``), (2) ties
round up instead of to even, (3) a pre-shift ``p`` drops the ``p`` low bits of ``acc`` first (an
error below ``2**p * M`` output steps), (4) float32 has a 24-bit mantissa, so onnxruntime's
``acc * M`` is itself rounded for ``|acc| > 2**24``. For a value that is not saturated,
``|acc * M| <= 127.5``, so (1) moves ``acc * M`` by at most ``127.5 * 2**-8 < 0.5``; two reals less
than 0.5 + the small terms (3), (4) apart round to integers at most one apart: the results
differ by **at most 1 in the last place** (one int8 step), and saturated values agree. With
``p = 0`` the bound holds for every accumulator; with a pre-shift it holds while ``2**p * M``
stays below about 0.002 (e.g. ``p = 4`` and ``M < 1.25e-4``; typical ResNet layers have ``M``
near ``1e-4 .. 1e-3`` and ``p <= 4``, where the extra error is at most 0.016 steps).

A fused residual add rounds the two operands separately and adds integers (error below 1 + the
terms above against the exact sum); onnxruntime's QLinearAdd rounds the float sum once (error at
most 0.5): the results again differ by at most 1. A fusion ``conv -> requantize -> add`` that
maps the convolution straight to the add's output scale skips the convolution's own int8
saturation; :class:`IntermediateSpec` keeps it (the operator's int8 output, then the add's
rescale), which makes the fused operator bit-identical to the unfused graph on the host.

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

from .qnn_build import (
    build_maxpool,
    build_qadd,
    build_qconv2d,
    build_qdense,
    maxpool_unsupported_reason,
)
from .qnn_layout import ArgLayout, ArgSpec
from .qnn_ref import maxpool_np, qadd_np, qconv2d_np, qdense_np
from .qnn_requant import INT8_RANGE, Requant, accumulator_bits, requantize_np
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
