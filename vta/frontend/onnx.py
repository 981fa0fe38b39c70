"""Import an ONNX model into a :class:`vta.graph.Graph`: quantized operators for the accelerator,
everything else for onnxruntime.

The quantized forms onnxruntime's quantizer writes are converted to integer operators, with
per-tensor or per-channel weight scales and int8 or uint8 activations with zero points:

* **QDQ**: QuantizeLinear/DequantizeLinear pairs around float operators (Conv, Gemm, MatMul,
  Add, Relu, Clip, MaxPool, AveragePool, GlobalAveragePool, ReduceMean, Flatten, Reshape,
  Transpose, Concat, ...). Each float operator whose inputs are dequantized and whose output is
  quantized becomes the integer operator of the graph IR (``qnn.conv2d`` + ``nn.bias_add`` +
  ``qnn.requantize`` + ``clip``, ``qnn.add``, ``qnn.global_avg_pool2d``, ...). Operators that do
  not change values (MaxPool, Flatten, Reshape, Relu, Clip) run on the integers directly.
* **QOperator**: QLinearConv, QLinearMatMul, QLinearAdd, QLinearAveragePool,
  QLinearGlobalAveragePool, QLinearConcat, QGemm (``com.microsoft``), ConvInteger and
  MatMulInteger.

Every other operator, and every pattern a converter declines, runs on the CPU through
onnxruntime: maximal regions of such nodes are cut out of the model as ONNX sub-models and
become ``onnx.region`` nodes (:mod:`vta.frontend.onnx_partition`, :mod:`vta.graph.onnx_region`).
Any opset the installed onnx knows is accepted; models older than opset 13 are converted with
``onnx.version_converter`` (logged on the ``vta.frontend`` logger). The translation of each
operator lives in :mod:`vta.frontend.onnx_qdq` and :mod:`vta.frontend.onnx_qop` (the table in
:mod:`vta.frontend.onnx_ops`, the visitor in :mod:`vta.frontend.onnx_importer`); this module loads
and checks the model.

Agreement with onnxruntime. The imported graph means exactly what onnxruntime computes: run by
an interpreter with onnxruntime's arithmetic (float32 multiplier ``s_x*s_w/s_y``, ``rint`` half to
even; tests/frontend/oracle.py) it gives the same int8 outputs on at least 99.9% of elements and
never one unit more. On the accelerator, requantization is fixed point (``vta.topi.qnn.Requant``,
``fixed`` mode: the float32 multiplier rounded to 15 significant bits, an exact integer product,
one rounding half up; the host kernels use the same definition), so an output moves by one unit
only where ``acc*M`` lies within about 2^-15 of a rounding boundary, or exactly on a tie (half
up against half to even): measured 99.90-100% of a convolution's outputs equal to onnxruntime's
and 99.97% on ResNet-like layers (``benchmarks/requant_precision.py``), never more than one
apart. A residual Add rescales both inputs and rounds their sum once; a residual block, two
requantizations in a row, measured 99.8-100% equal, never more than one apart.
Top-1 classes agree
(digits: the same accuracy as onnxruntime's, 0.9889, on all 360 test images; ResNet-18: the same
top-5).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Mapping, Sequence


from ..errors import FrontendError
from .onnx_importer import QUANTIZE_HINT, Importer
from .onnx_ops import SUPPORTED_OPS

__all__ = ["from_onnx", "from_onnx_traced", "load_model", "set_input_shapes", "SUPPORTED_OPSETS", "QUANTIZE_HINT"]

#: Default-domain opsets the converters are written for; older models are converted to the first
#: (``onnx.version_converter``), newer ones are taken as they are (any opset the installed onnx knows).
SUPPORTED_OPSETS = range(13, 22)

_log = logging.getLogger("vta.frontend")


#: Operators that mark a model as quantized.
_QUANT_OPS = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "QLinearAdd",
              "QLinearGlobalAveragePool", "QLinearAveragePool", "QLinearConcat", "QGemm",
              "ConvInteger", "MatMulInteger"}


def load_model(model: Any):
    """A checked ``onnx.ModelProto`` from a path, bytes or a ModelProto.

    Raises
    ------
    FrontendError
        If the file is missing, cannot be parsed (truncated or not ONNX), declares an ai.onnx
        opset the installed onnx does not know, or fails the onnx checker (the checker's finding is quoted).
    """
    import onnx
    from google.protobuf.message import DecodeError

    where = "the model"
    if isinstance(model, onnx.ModelProto):
        proto = model
    else:
        if isinstance(model, (bytes, bytearray)):
            data = bytes(model)
        else:
            path = Path(model)
            where = str(path)
            if not path.is_file():
                raise FrontendError(f"ONNX model file {str(path)!r} does not exist")
            data = path.read_bytes()
        proto = onnx.ModelProto()
        try:
            proto.ParseFromString(data)
        except DecodeError as exc:
            raise FrontendError(f"{where} is not a readable ONNX file (truncated or corrupt): {exc}") from exc
        if isinstance(model, (str, Path)) and any(
                t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer):
            onnx.load_external_data_for_model(proto, str(Path(model).resolve().parent))
    opset = _opset(proto)
    newest = onnx.defs.onnx_opset_version()
    if not 1 <= opset <= newest:
        raise FrontendError(f"{where} uses ai.onnx opset {opset}; the installed onnx {onnx.__version__} knows "
                            f"opsets 1 to {newest} (a newer onnx may know it)")
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as exc:
        finding = str(exc).strip().splitlines()
        raise FrontendError(f"{where} fails the onnx checker: {' '.join(finding)[:500]}") from exc
    except UnicodeDecodeError as exc:  # the checker decodes string fields itself (a damaged file)
        raise FrontendError(f"{where} holds a string field that is not UTF-8 (a corrupt file): {exc}") from exc
    if not proto.graph.node:
        raise FrontendError(f"{where} has no nodes (an empty or truncated graph)")
    return proto


def set_input_shapes(proto, shapes: Mapping[str, Sequence[int]]):
    """A copy of ``proto`` whose inputs named in ``shapes`` have those static shapes (the inferred
    shapes of inner tensors are dropped, to be inferred again).

    Raises
    ------
    FrontendError
        If a name is not an input of the model or a dimension is not positive.
    """
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(proto)
    names = [i.name for i in out.graph.input]
    for name, want in shapes.items():
        if name not in names:
            raise FrontendError(f"shape given for {name!r}, which is not an input of the model (inputs: {names!r})")
        want = tuple(int(d) for d in want)
        if any(d <= 0 for d in want):
            raise FrontendError(f"input {name!r}: dimensions must be positive, got {want!r}")
        shape = next(i for i in out.graph.input if i.name == name).type.tensor_type.shape
        shape.ClearField("dim")
        for d in want:
            shape.dim.add().dim_value = d
    del out.graph.value_info[:]
    return out


def _opset(proto) -> int:
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    raise FrontendError("the model imports no default-domain (ai.onnx) opset")


def _check_quantized(proto) -> None:
    """Say (in the log) when a model has no quantized operator: onnxruntime will run all of it."""
    ops = {n.op_type for n in proto.graph.node}
    if ops & _QUANT_OPS:
        return
    _log.warning("the model has no quantized operator, so onnxruntime runs all of it on the CPU; to use the "
                 "accelerator, %s", QUANTIZE_HINT)


def _convert_opset(proto, opset: int):
    """``proto`` converted to the first opset the converters know, when it is older (saying so)."""
    if opset >= SUPPORTED_OPSETS.start:
        return proto, opset
    import onnx

    target = SUPPORTED_OPSETS.start
    _log.warning("the model uses ai.onnx opset %d; converting it to opset %d with onnx.version_converter",
                 opset, target)
    try:
        converted = onnx.version_converter.convert_version(proto, target)
    except Exception as exc:  # noqa: BLE001 - the converter raises RuntimeError/ValueError/its C++ errors
        raise FrontendError(f"the model uses ai.onnx opset {opset} and onnx.version_converter cannot convert it to "
                            f"opset {target}: {str(exc).strip()[:400]}") from exc
    return converted, target


def _check_onnxruntime(proto) -> None:
    """Refuse a model onnxruntime itself refuses, quoting onnxruntime (and naming a node whose
    operator no schema knows)."""
    import onnx

    from ..errors import UnsupportedOperatorError
    from ..graph.onnx_region import make_session

    try:
        make_session(proto.SerializeToString())
    except UnsupportedOperatorError as exc:
        domains = {i.domain for i in proto.opset_import}
        local = {(f.domain, f.name) for f in proto.functions}
        for node in proto.graph.node:
            domain = node.domain or ""
            if (domain, node.op_type) in local or (domain not in ("", "ai.onnx") and domain in domains
                                                     and domain.startswith("com.microsoft")):
                continue
            if not onnx.defs.has(node.op_type, domain):
                raise FrontendError(
                    f"node {node.name!r}: operator {node.op_type!r} of domain {domain or 'ai.onnx'!r} is run neither "
                    f"by the importer nor by onnxruntime ({str(exc).split(': ', 1)[-1][:300]})",
                    node=node.name, op_type=node.op_type) from exc
        raise FrontendError(f"onnxruntime refuses the model: {str(exc).split(': ', 1)[-1]}") from exc


def _input_shapes(proto, shape: Any) -> dict[str, tuple[int, ...]]:
    inits = {t.name for t in proto.graph.initializer}
    inputs = [i for i in proto.graph.input if i.name not in inits]
    names = [i.name for i in inputs]
    if shape is None:
        given: dict[str, Any] = {}
    elif isinstance(shape, Mapping):
        given = dict(shape)
    else:
        if len(inputs) != 1:
            raise FrontendError(f"shape= as a tuple needs a model with one input; give a dict for {names!r}")
        given = {names[0]: shape}
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise FrontendError(f"shape= names {unknown!r}, which are not inputs of the model (inputs: {names!r})")
    out = {}
    for inp in inputs:
        ttype = inp.type.tensor_type
        dims = list(ttype.shape.dim) if ttype.HasField("shape") else None
        if inp.name in given:
            want = tuple(int(d) for d in given[inp.name])
            if dims is not None:
                if len(dims) != len(want):
                    raise FrontendError(f"shape= gives input {inp.name!r} rank {len(want)} {want}, "
                                        f"the model declares rank {len(dims)}")
                for k, (d, w) in enumerate(zip(dims, want, strict=True)):
                    if k and d.HasField("dim_value") and d.dim_value > 0 and d.dim_value != w:
                        raise FrontendError(f"shape= gives input {inp.name!r} shape {want}, which contradicts "
                                            f"the model's fixed dimension {d.dim_value}")
            if any(w <= 0 for w in want):
                raise FrontendError(f"shape= gives input {inp.name!r} non-positive dimensions {want}")
            out[inp.name] = want
            continue
        if dims is None:
            raise FrontendError(f"input {inp.name!r} has no declared shape; pass shape={{{inp.name!r}: (...)}}")
        fixed = []
        for k, d in enumerate(dims):
            if d.HasField("dim_value") and d.dim_value > 0:
                fixed.append(int(d.dim_value))
            else:
                label = d.dim_param or "?"
                raise FrontendError(
                    f"input {inp.name!r} has a dynamic dimension {k} ({label!r}); pass its shape, e.g. "
                    f"from_onnx(model, shape={{{inp.name!r}: (1, ...)}}), or --shape {inp.name}=1,... on the "
                    f"command line")
        out[inp.name] = tuple(fixed)
    return out


def from_onnx(model: Any, shape: Mapping[str, Sequence[int]] | Sequence[int] | None = None):
    """Import an ONNX model (quantized operators for the accelerator, the rest for onnxruntime).

    Parameters
    ----------
    model : str, pathlib.Path, bytes or onnx.ModelProto
        The model: quantized (QDQ or QOperator form, as ``onnxruntime.quantization`` writes it)
        for the accelerator to take part; a float model runs wholly on onnxruntime.
    shape : dict or tuple, optional
        Shapes of inputs whose dimensions are dynamic: ``{input name: shape}``, or one tuple for
        a single-input model. Fixed dimensions must agree, except the batch (first) dimension,
        which ``shape`` may change.

    Returns
    -------
    (vta.graph.Graph, dict of str to numpy.ndarray)
        The graph and its parameters (quantized weights, int32 biases).

    Raises
    ------
    FrontendError
        If the file is malformed or truncated (with the onnx checker's finding), the opset is
        unknown to the installed onnx or cannot be converted, an input dimension is dynamic and
        not given (naming the input and the dimension), onnxruntime refuses the model (quoting
        onnxruntime), or an operator is run neither by the importer nor by onnxruntime (naming
        the node and the operator).
    """
    graph, _ = _import(model, shape)
    return graph, dict(graph.params)


def _import(model: Any, shape: Any):
    """The imported graph and the importer that built it (which holds the entry of every ONNX
    tensor), with the checks of :func:`from_onnx`."""
    proto = load_model(model)
    proto, opset = _convert_opset(proto, _opset(proto))
    _check_quantized(proto)
    shapes = _input_shapes(proto, shape)
    _check_onnxruntime(proto)
    importer = Importer(set_input_shapes(proto, shapes), opset, shapes, SUPPORTED_OPS)
    return importer.run(), importer


def from_onnx_traced(model: Any, shape: Mapping[str, Sequence[int]] | Sequence[int] | None = None):
    """:func:`from_onnx`, also saying which graph value holds each integer tensor of the model.

    The integer tensors are the ones the graph computes in integers: ``QuantizeLinear`` outputs
    (the quantized result of a float operator), integer graph inputs, and the integer outputs
    of onnxruntime regions. A per-node comparison with onnxruntime reads them
    (:mod:`vta.models.divergence`).

    Returns
    -------
    (vta.graph.Graph, dict of str to numpy.ndarray, dict of str to str)
        The graph, its parameters, and ``{ONNX tensor name: graph value name}`` for every integer
        tensor the graph computes (tensors folded into constants or left unused are not listed).

    Raises
    ------
    FrontendError
        As :func:`from_onnx`.
    """
    from .onnx_entries import Tensor

    graph, importer = _import(model, shape)
    live = set(graph.values)
    names = {}
    for tensor, entry in importer.env.items():
        if isinstance(entry, Tensor) and not entry.value.type.is_float and entry.value.name in live:
            names[tensor] = entry.value.name
    return graph, dict(graph.params), names
