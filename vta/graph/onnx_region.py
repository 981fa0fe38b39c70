"""The ``onnx.region`` operator: a region of an ONNX model run on the CPU by onnxruntime.

The frontend cuts every region of operators it does not convert out of the model as an ONNX
sub-model (:mod:`vta.frontend.onnx_partition`). A region with ``k`` outputs becomes ``k`` graph
nodes (the graph IR has one output per node) that carry the same sub-model and inputs, each with
the ``index`` of the output it returns. The sub-model travels in the node's attributes (the
serialised ``ModelProto`` in base64), so it is part of the graph JSON and of an exported library.

:func:`run_region` is the host kernel. It keeps one ``onnxruntime.InferenceSession`` per
sub-model (created on first use, reused by every run and by every output node of the region) and
the outputs of its last run with the run token the graph executor passed
(:class:`vta.graph.executor.GraphModule` draws a new one for every graph run), so the ``k``
nodes of a region run the session once per graph run. Outputs are reused only for the same
token (and the same input objects): a new run always runs the session again, whatever became
of the input buffers; a call without a token always runs it.
"""

from __future__ import annotations

import base64
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import GraphError, UnsupportedOperatorError

__all__ = ["OP", "ATTRS", "encode_model", "decode_model", "run_region", "make_session"]

#: The operator name in the graph IR.
OP = "onnx.region"
#: The attributes of an ``onnx.region`` node and their defaults.
ATTRS = {"model": None, "inputs": (), "outputs": (), "index": 0, "shape": None, "dtype": None, "ops": (),
         "macs": 0}
#: Sessions kept at most (least recently used dropped first).
MAX_SESSIONS = 64


def encode_model(data: bytes) -> str:
    """A serialised ModelProto as the ``model`` attribute (base64 text)."""
    return base64.b64encode(data).decode("ascii")


def decode_model(text: str) -> bytes:
    """The serialised ModelProto of a ``model`` attribute.

    Raises
    ------
    GraphError
        If the text is not base64.
    """
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as exc:
        raise GraphError(f"onnx.region: the model attribute is not base64 text ({exc})") from exc


def make_session(data: bytes):
    """An onnxruntime session over a serialised model: CPU, one thread (the machine is shared
    with the simulator; a region's operators are small next to it).

    Raises
    ------
    UnsupportedOperatorError
        If onnxruntime refuses the model (its message is quoted).
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    try:
        return ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own unexported exception types
        raise UnsupportedOperatorError(f"onnxruntime cannot run the sub-model: {str(exc).strip()[:600]}") from exc


class _Region:
    def __init__(self, text: str):
        self.text = text
        self.session = make_session(decode_model(text))
        self.last_token: Any = None
        self.last_inputs: list[np.ndarray] | None = None
        self.last_outputs: list[np.ndarray] | None = None


_REGIONS: OrderedDict[int, list[_Region]] = OrderedDict()
_LOCK = threading.Lock()


def _region(text: str) -> _Region:
    key = hash(text)  # a str caches its hash: O(1) after the first call on the same object
    with _LOCK:
        bucket = _REGIONS.get(key)
        if bucket is not None:
            _REGIONS.move_to_end(key)
            for r in bucket:
                if r.text is text or r.text == text:
                    return r
    region = _Region(text)
    with _LOCK:
        _REGIONS.setdefault(key, []).append(region)
        while len(_REGIONS) > MAX_SESSIONS:
            _REGIONS.popitem(last=False)
    return region


def run_region(attrs: Mapping[str, Any], ins: Sequence[np.ndarray], run_token: Any = None) -> np.ndarray:
    """Output ``attrs["index"]`` of the sub-model ``attrs["model"]`` on ``ins`` (fed to the
    sub-model's inputs ``attrs["inputs"]`` in order).

    Parameters
    ----------
    attrs : mapping
        The node's attributes (:data:`ATTRS`).
    ins : sequence of ndarray
    run_token : hashable, optional
        The graph run this call belongs to (a value never reused for another run). The other
        output nodes of the region in the same run, with the same input objects, reuse the
        outputs of the first; None: no reuse, the session runs.

    Raises
    ------
    GraphError
        If the inputs do not match the sub-model or onnxruntime fails while running it.
    UnsupportedOperatorError
        If onnxruntime refuses the sub-model.
    """
    names = list(attrs["inputs"])
    if len(names) != len(ins):
        raise GraphError(f"onnx.region takes {len(names)} inputs {names}, got {len(ins)}")
    region = _region(attrs["model"])
    same = (run_token is not None and region.last_token == run_token and region.last_inputs is not None
            and len(region.last_inputs) == len(ins)
            and all(a is b for a, b in zip(region.last_inputs, ins, strict=True)))
    if not same:
        try:
            outs = region.session.run(list(attrs["outputs"]), dict(zip(names, ins, strict=True)))
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own unexported exception types
            raise GraphError(f"onnxruntime failed on the sub-model of operators {list(attrs.get('ops', ()))}: "
                             f"{str(exc).strip()[:600]}") from exc
        region.last_token, region.last_inputs = run_token, list(ins)
        region.last_outputs = [np.asarray(o) for o in outs]
    return region.last_outputs[int(attrs["index"])]
