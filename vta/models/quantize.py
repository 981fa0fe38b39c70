"""Quantize a float ONNX model to int8 with onnxruntime's own static quantizer.

This module only adapts arguments: the calibration, the choice of scales and zero points and
the rewriting of the graph are all onnxruntime's (``onnxruntime.quantization.quantize_static``).
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

__all__ = ["quantize", "quantize_file", "random_feeds", "ArrayCalibrationReader"]

_TYPES = ("int8", "uint8")


class ArrayCalibrationReader:
    """A calibration reader over in-memory samples (onnxruntime's ``CalibrationDataReader``
    methods ``get_next`` and ``rewind``; onnxruntime only calls those).

    Parameters
    ----------
    samples : iterable of dict or of numpy.ndarray
        One entry per calibration batch: ``{input name: array}``, or a bare array when the model
        has a single input (``input_name`` names it).
    input_name : str, optional
        Input a bare array feeds.
    """

    def __init__(self, samples: Iterable, input_name: str | None = None):
        feeds = []
        for s in samples:
            if isinstance(s, Mapping):
                feeds.append({k: np.asarray(v) for k, v in s.items()})
            else:
                feeds.append({input_name: np.asarray(s)})
        self.feeds = feeds
        self._it = iter(self.feeds)

    def get_next(self):
        return next(self._it, None)

    def rewind(self):
        self._it = iter(self.feeds)

    def __len__(self):
        return len(self.feeds)


def _as_reader(model, calibration_data):
    """An object with onnxruntime's reader methods (``get_next``, ``rewind``) over the data."""
    if hasattr(calibration_data, "get_next"):
        return calibration_data
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    if isinstance(calibration_data, np.ndarray):
        if len(inputs) != 1:
            raise ValueError(f"a bare calibration array needs a model with one input, this one has {inputs!r}")
        # one batch per leading-axis slice keeps the model's batch dimension
        calibration_data = [calibration_data[i:i + 1] for i in range(calibration_data.shape[0])]
    reader = ArrayCalibrationReader(calibration_data, inputs[0] if len(inputs) == 1 else None)
    if len(reader) == 0:
        raise ValueError("calibration_data holds no samples")
    for feed in reader.feeds:
        if None in feed or set(feed) - set(inputs):
            raise ValueError(f"calibration samples must feed the model inputs {inputs!r}, "
                             f"got {sorted(map(str, feed))!r}")
    return reader


def quantize(model, calibration_data, per_channel: bool = True, quant_format: str = "QDQ",
             activation_type: str = "uint8", weight_type: str = "int8",
             calibrate_method: str = "MinMax", preprocess: bool = False,
             extra_options: dict | None = None):
    """Quantize a float model statically with onnxruntime (``quantize_static``).

    Parameters
    ----------
    model : onnx.ModelProto or path-like
        The float model.
    calibration_data : numpy.ndarray, iterable of dict, or CalibrationDataReader
        Representative inputs: an array whose leading axis lists samples (single-input models,
        each sample is fed with batch 1), a list of ``{input name: array}`` feeds, or any
        onnxruntime ``CalibrationDataReader``.
    per_channel : bool
        Per-output-channel weight scales (default) instead of one scale per tensor.
    quant_format : {"QDQ", "QOperator"}
        QuantizeLinear/DequantizeLinear pairs around float operators, or QLinear* operators.
    activation_type, weight_type : {"uint8", "int8"}
        Integer types of activations and weights (onnxruntime rejects int8 activations with
        uint8 weights).
    calibrate_method : {"MinMax", "Entropy", "Percentile", "Distribution"}
        onnxruntime's calibration method.
    preprocess : bool
        Run onnxruntime's ``quant_pre_process`` (shape inference and graph optimisation) first.
    extra_options : dict, optional
        Passed to ``quantize_static`` unchanged (e.g. ``{"ActivationSymmetric": True}``).

    Returns
    -------
    onnx.ModelProto
        The quantized model.

    Raises
    ------
    ValueError
        If a format, type or calibration method is not one of those accepted, or the
        calibration data does not match the model inputs.
    ImportError
        If onnxruntime is not installed (``pip install 'vta[onnx]'``).
    """
    import onnx
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    formats = {"QDQ": QuantFormat.QDQ, "QOperator": QuantFormat.QOperator}
    if quant_format not in formats:
        raise ValueError(f"quant_format must be one of {sorted(formats)!r}, got {quant_format!r}")
    for what, value in (("activation_type", activation_type), ("weight_type", weight_type)):
        if value not in _TYPES:
            raise ValueError(f"{what} must be one of {_TYPES!r}, got {value!r}")
    if activation_type == "int8" and weight_type == "uint8":
        raise ValueError("onnxruntime does not quantize int8 activations with uint8 weights")
    methods = {m.name: m for m in CalibrationMethod}
    if calibrate_method not in methods:
        raise ValueError(f"calibrate_method must be one of {sorted(methods)!r}, got {calibrate_method!r}")
    qtype = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8}
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(str(model))
    reader = _as_reader(model, calibration_data)
    with tempfile.TemporaryDirectory(prefix="vta-quantize-") as tmp:
        src = Path(tmp) / "float.onnx"
        dst = Path(tmp) / "int8.onnx"
        onnx.save(model, str(src))
        if preprocess:
            from onnxruntime.quantization.shape_inference import quant_pre_process

            pre = Path(tmp) / "pre.onnx"
            try:
                quant_pre_process(str(src), str(pre))
            except Exception as exc:  # noqa: BLE001 - onnxruntime's symbolic shape inference asserts
                # on some graphs (e.g. a Concat of shape values on axis 1); onnx's own shape
                # inference still runs with it skipped, so say so and go on without it.
                warnings.warn(f"onnxruntime's symbolic shape inference failed ({type(exc).__name__}: {exc}); "
                              "pre-processing with onnx's shape inference only", RuntimeWarning, stacklevel=2)
                quant_pre_process(str(src), str(pre), skip_symbolic_shape=True)
            src = pre
        quantize_static(str(src), str(dst), reader, quant_format=formats[quant_format],
                        per_channel=per_channel, activation_type=qtype[activation_type],
                        weight_type=qtype[weight_type], calibrate_method=methods[calibrate_method],
                        extra_options=dict(extra_options or {}))
        return onnx.load(str(dst))


def _calibration_from_dir(directory: Path, inputs: list[tuple[str, tuple]]) -> list[dict[str, np.ndarray]]:
    """Calibration feeds from ``.npy`` files: any name for a single-input model (one sample per
    file; a missing batch axis is added), ``NAME_*.npy`` per input otherwise (matched by suffix)."""
    from ..errors import FrontendError

    if not directory.is_dir():
        raise FrontendError(f"--calibration {str(directory)!r} is not a directory of .npy files")
    files = sorted(directory.glob("*.npy"))
    if not files:
        raise FrontendError(f"--calibration {str(directory)!r} holds no .npy file")

    def fit(arr: np.ndarray, shape: tuple) -> np.ndarray:
        return arr[None] if len(shape) == arr.ndim + 1 else arr

    if len(inputs) == 1:
        name, shape = inputs[0]
        return [{name: fit(np.load(f), shape)} for f in files]
    groups: dict[str, dict[str, np.ndarray]] = {}
    for name, shape in inputs:
        for f in files:
            if f.stem.startswith(name + "_"):
                groups.setdefault(f.stem[len(name) + 1:], {})[name] = fit(np.load(f), shape)
    feeds = [g for _, g in sorted(groups.items()) if len(g) == len(inputs)]
    if not feeds:
        raise FrontendError(f"--calibration {str(directory)!r}: no complete sample; name the files "
                            f"INPUT_k.npy for inputs {[n for n, _ in inputs]!r}")
    return feeds


def quantize_file(model: str | Path, out: str | Path, calibration_dir: str | Path | None = None,
                  random: int | None = None, shapes: Mapping[str, tuple] | None = None, seed: int = 0) -> str:
    """``python -m vta quantize``: fix input shapes, pre-process and quantize a float model file
    (QDQ, uint8 activations, int8 per-channel weights) and write it to ``out``.

    The file is written whole or not at all (a temporary file renamed into place).

    Returns
    -------
    str
        A one-line description of what was done.

    Raises
    ------
    FrontendError
        If the model cannot be read, an input dimension is left dynamic with ``random``, or the
        calibration directory does not fit the model.
    """
    import onnx

    from ..errors import FrontendError
    from ..frontend.onnx import load_model, set_input_shapes

    proto = load_model(model)
    if shapes:
        proto = set_input_shapes(proto, dict(shapes))
    inits = {t.name for t in proto.graph.initializer}
    inputs = []
    for inp in proto.graph.input:
        if inp.name in inits:
            continue
        dims = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in inp.type.tensor_type.shape.dim)
        inputs.append((inp.name, dims))
    if calibration_dir is not None:
        feeds = _calibration_from_dir(Path(calibration_dir), inputs)
        what = f"{len(feeds)} samples from {calibration_dir}"
    else:
        for name, dims in inputs:
            if any(d <= 0 for d in dims):
                k = next(i for i, d in enumerate(dims) if d <= 0)
                raise FrontendError(f"input {name!r} has a dynamic dimension {k}; give its shape, e.g. "
                                    f"--shape {name}={','.join(str(d if d > 0 else 1) for d in dims)}")
        feeds = random_feeds(proto, int(random or 8), seed)
        what = f"{len(feeds)} seeded random samples"
    q = quantize(proto, feeds, preprocess=True)
    out = Path(out)
    tmp = out.with_name(out.name + ".part")
    try:
        onnx.save(q, str(tmp))
        tmp.replace(out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return f"QDQ, uint8 activations, int8 per-channel weights, calibrated on {what}"


def random_feeds(proto, count: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """``count`` seeded feeds for every input of ``proto`` (floats uniform in [-1, 1], the range
    of a normalised image; integers over a small range), with the inputs' static shapes.

    Raises
    ------
    ValueError
        If an input has a dimension that is not fixed.
    """
    from onnx import helper

    rng = np.random.default_rng(seed)
    inits = {t.name for t in proto.graph.initializer}
    specs = []
    for inp in proto.graph.input:
        if inp.name in inits:
            continue
        tt = inp.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else 0 for d in tt.shape.dim]
        if any(d <= 0 for d in dims):
            raise ValueError(f"input {inp.name!r} has dynamic dimensions {dims}; fix its shape first")
        specs.append((inp.name, tuple(dims), np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))))
    feeds = []
    for _ in range(count):
        feed = {}
        for name, dims, dtype in specs:
            if np.issubdtype(dtype, np.floating):
                feed[name] = rng.uniform(-1.0, 1.0, dims).astype(dtype)
            else:
                feed[name] = rng.integers(0, 16, dims).astype(dtype)
        feeds.append(feed)
    return feeds
