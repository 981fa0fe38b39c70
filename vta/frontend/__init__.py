"""Model import: ONNX models quantized to int8 by onnxruntime become a :class:`vta.graph.Graph`.

``onnx`` is needed only when a model is imported (the optional extra ``vta[onnx]``).
"""

from .onnx import QUANTIZE_HINT, SUPPORTED_OPSETS, from_onnx, load_model

__all__ = ["from_onnx", "load_model", "QUANTIZE_HINT", "SUPPORTED_OPSETS"]
