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
