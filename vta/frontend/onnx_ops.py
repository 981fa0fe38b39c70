"""The table of ONNX operators the importer converts: ``(domain, op_type) -> converter``.

A converter is a function ``(importer, node, name, input entries) -> output entry`` used at every
opset, or a :class:`~vta.frontend.onnx_importer.OpsetConverter` subclass whose ``_impl_vN``
methods cover the opsets where the operator's meaning changed (models older than opset 13 are
converted to 13 first). A converter that raises ``FrontendError`` (``importer.fail``) declines the
node, which then runs on onnxruntime; so does one whose result is only a float computation.
Operators missing here run on onnxruntime too.
"""

from __future__ import annotations

from typing import Callable

from .onnx_qdq import (_add, _avgpool, _binary_float, _cast, _clip, _concat, _constant, _conv, _dequantize_linear,
                       _flatten, _gap, _gemm, _identity, _matmul, _maxpool, _quantize_linear, ReduceMean,
                       _relu, _reshape, _softmax, _squeeze_like, _transpose)
from .onnx_accel import _max, _min, _mul
from .onnx_resize import Resize
from .onnx_qop import (_conv_integer, _matmul_integer, _qgemm, _qlinear_add, _qlinear_avgpool, _qlinear_concat,
                       _qlinear_conv, _qlinear_gap, _qlinear_matmul)

__all__ = ["SUPPORTED_OPS"]

#: (domain, op_type) -> converter.
SUPPORTED_OPS: dict[tuple[str, str], Callable | type] = {
    ("", "QuantizeLinear"): _quantize_linear,
    ("", "DequantizeLinear"): _dequantize_linear,
    ("", "Conv"): _conv,
    ("", "Gemm"): _gemm,
    ("", "MatMul"): _matmul,
    ("", "Add"): _add,
    ("", "Sub"): _binary_float("subtract"),
    ("", "Mul"): _mul,
    ("", "Max"): _max,
    ("", "Min"): _min,
    ("", "Relu"): _relu,
    ("", "Clip"): _clip,
    ("", "MaxPool"): _maxpool,
    ("", "AveragePool"): _avgpool,
    ("", "GlobalAveragePool"): _gap,
    ("", "ReduceMean"): ReduceMean,
    ("", "Flatten"): _flatten,
    ("", "Reshape"): _reshape,
    ("", "Squeeze"): _squeeze_like(False),
    ("", "Unsqueeze"): _squeeze_like(True),
    ("", "Transpose"): _transpose,
    ("", "Concat"): _concat,
    ("", "Resize"): Resize,
    ("", "Softmax"): _softmax,
    ("", "Identity"): _identity,
    ("", "Constant"): _constant,
    ("", "Cast"): _cast,
    ("", "QLinearConv"): _qlinear_conv,
    ("", "QLinearMatMul"): _qlinear_matmul,
    ("", "ConvInteger"): _conv_integer,
    ("", "MatMulInteger"): _matmul_integer,
    ("com.microsoft", "QLinearAdd"): _qlinear_add,
    ("com.microsoft", "QLinearGlobalAveragePool"): _qlinear_gap,
    ("com.microsoft", "QLinearAveragePool"): _qlinear_avgpool,
    ("com.microsoft", "QLinearConcat"): _qlinear_concat,
    ("com.microsoft", "QGemm"): _qgemm,
}
for _domain, _op in list(SUPPORTED_OPS):
    if _domain == "":
        SUPPORTED_OPS[("ai.onnx", _op)] = SUPPORTED_OPS[(_domain, _op)]
