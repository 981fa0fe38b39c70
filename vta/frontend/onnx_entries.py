"""The entries the ONNX importer tracks per tensor while it visits the nodes.

:mod:`vta.frontend.onnx_importer` describes what each entry means; the converters
(:mod:`vta.frontend.onnx_qdq`, :mod:`vta.frontend.onnx_qop`, :mod:`vta.frontend.onnx_accel`) and the
region builder (:mod:`vta.frontend.onnx_partition`) read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..graph import Value

__all__ = ["Const", "Tensor", "Dequant", "Pending"]


@dataclass(frozen=True)
class Const:
    data: np.ndarray
    name: str


@dataclass(frozen=True)
class Tensor:
    value: Value


@dataclass(frozen=True)
class Dequant:
    src: Const | Tensor
    scale: np.ndarray          # float32, shape () or (C,)
    zero_point: np.ndarray     # int, same shape as scale
    axis: int | None


@dataclass
class Pending:
    kind: str                  # conv, dense, add, mul, avgpool, gap, concat
    node: Any                  # the ONNX NodeProto
    name: str
    inputs: list
    attrs: dict = field(default_factory=dict)
    lo: float | None = None    # fused activation bounds in the real domain
    hi: float | None = None


def _scalar(a: np.ndarray) -> bool:
    return np.size(a) == 1
