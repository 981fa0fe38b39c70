"""``tvm.relay.frontend``: model importers (``from_onnx``), backed by :mod:`vta.frontend`.

``from_onnx(model, shape)`` returns ``(graph, params)`` as TVM's returns ``(mod, params)``;
the graph goes to :func:`vta.tvm.relay.build`. The importer needs the ``onnx`` package, so it
is loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from .._missing import missing

__all__ = ["from_onnx"]


def from_onnx(model: Any, shape: Any = None, dtype: Any = "float32", opset: Any = None,
              freeze_params: bool = True, convert_config: Any = None, export_node_renamed_model_path: Any = None):
    """``relay.frontend.from_onnx``: import an int8 ONNX model (see :func:`vta.frontend.from_onnx`).

    Parameters
    ----------
    model : path, bytes or onnx.ModelProto
    shape : dict of str to tuple, optional
        Input shapes (needed for dynamic dimensions).
    dtype, opset, freeze_params, convert_config, export_node_renamed_model_path
        Accepted for compatibility: the input dtypes and opset come from the model, and weights
        are always frozen into the parameters.

    Returns
    -------
    (vta.graph.Graph, dict of str to numpy.ndarray)

    Raises
    ------
    ImportError
        If the ONNX importer (or the ``onnx`` package) is not installed.
    FrontendError
        As :func:`vta.frontend.from_onnx`.
    """
    del dtype, opset, freeze_params, convert_config, export_node_renamed_model_path
    # Loaded at call time: vta.frontend needs the optional onnx package.
    importer = importlib.import_module("vta.frontend")
    return importer.from_onnx(model, shape)


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
