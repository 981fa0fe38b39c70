"""Converters of ONNX operators the accelerator runs between quantized tensors.

``Mul`` of two dequantized tensors (per-tensor scales) followed by a QuantizeLinear becomes
``qnn.mul`` (:func:`emit_mul`; the accelerator's ``vta.multiply`` when the shapes agree or one
operand is a per-channel gate, the exact integer host kernel otherwise); any other ``Mul`` is a
float product, which the importer leaves to onnxruntime.
"""

from __future__ import annotations

import numpy as np

from .onnx_entries import Dequant, Pending, Tensor, _scalar

__all__ = ["emit_mul"]


def _mul(im, node, name, ins):
    a, c = ins
    if all(isinstance(e, Dequant) and isinstance(e.src, Tensor) and _scalar(e.scale) for e in ins):
        return Pending("mul", node, name, [a, c])
    return Tensor(im.b.op("multiply", [im.as_float(a), im.as_float(c)], {}, im.unique(name)))


def emit_mul(im, p: Pending, s_y: float, z_y: int, dtype: str):
    """The ``qnn.mul`` of pending product ``p`` quantized to ``s_y``, ``z_y``, ``dtype``."""
    (a, sa, za), (c, sc, zc) = (im.as_quant(e, p.name, "an input") for e in p.inputs)
    attrs = dict(lhs_scale=float(np.ravel(sa)[0]), lhs_zero_point=int(np.ravel(za)[0]),
                 rhs_scale=float(np.ravel(sc)[0]), rhs_zero_point=int(np.ravel(zc)[0]),
                 output_scale=s_y, output_zero_point=z_y, out_dtype=dtype)
    return im.b.op("qnn.mul", [a, c], attrs, im.unique(p.name))


def finish_mul_float(im, p: Pending):
    """The float product of pending ``p`` that no QuantizeLinear consumes."""
    return im.b.op("multiply", [im.as_float(p.inputs[0]), im.as_float(p.inputs[1])], {}, im.unique(p.name))
