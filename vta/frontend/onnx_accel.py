"""Converters of ONNX operators the accelerator runs between quantized tensors.

``Mul`` of two dequantized tensors (per-tensor scales) followed by a QuantizeLinear becomes
``qnn.mul`` (:func:`emit_mul`; the accelerator's ``vta.multiply`` when the shapes agree or one
operand is a per-channel gate, the exact integer host kernel otherwise); any other ``Mul`` is a
float product, which the importer leaves to onnxruntime.

``Max``/``Min`` of two dequantized tensors (per-tensor scales) followed by a QuantizeLinear
become ``qnn.maximum``/``qnn.minimum`` (:func:`emit_minmax`; the accelerator's ``vta.minmax``:
each operand requantised to the output scale, then the ALU's MAX/MIN); other ``Max``/``Min``
nodes (more than two inputs, float tensors) are declined and left to onnxruntime.
"""

from __future__ import annotations

import numpy as np

from .onnx_entries import Dequant, Pending, Tensor, _scalar

__all__ = ["emit_minmax", "emit_mul", "finish_minmax_float"]


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


def _minmax(kind: str):
    def conv(im, node, name, ins):
        if len(ins) != 2 or not all(isinstance(e, Dequant) and isinstance(e.src, Tensor) and _scalar(e.scale)
                                    for e in ins):
            raise im.fail(name, f"{node.op_type} of {len(ins)} inputs that are not all dequantized per-tensor "
                                "integer tensors (two are converted): onnxruntime runs it")
        return Pending(kind, node, name, list(ins))
    return conv


_max = _minmax("max")
_min = _minmax("min")


def emit_minmax(im, p: Pending, s_y: float, z_y: int, dtype: str):
    """The ``qnn.maximum``/``qnn.minimum`` of pending ``p`` quantized to ``s_y``, ``z_y``, ``dtype``."""
    (a, sa, za), (c, sc, zc) = (im.as_quant(e, p.name, "an input") for e in p.inputs)
    attrs = dict(lhs_scale=float(np.ravel(sa)[0]), lhs_zero_point=int(np.ravel(za)[0]),
                 rhs_scale=float(np.ravel(sc)[0]), rhs_zero_point=int(np.ravel(zc)[0]),
                 output_scale=s_y, output_zero_point=z_y, out_dtype=dtype)
    op = "qnn.maximum" if p.kind == "max" else "qnn.minimum"
    return im.b.op(op, [a, c], attrs, im.unique(p.name))


def finish_minmax_float(im, p: Pending):
    """The float maximum/minimum of pending ``p`` that no QuantizeLinear consumes."""
    op = "maximum" if p.kind == "max" else "minimum"
    return im.b.op(op, [im.as_float(p.inputs[0]), im.as_float(p.inputs[1])], {}, im.unique(p.name))
