"""onnxruntime's own outputs of a quantized element-wise operator over every 8-bit input, and the
integer requantisation fitted to them (:func:`vta.topi.qnn_fit.fit_affine`).

A ``qnn.add`` with one operand a single value is a function of the other, 8-bit operand: 256
inputs. :func:`scalar_add_fit` runs onnxruntime on the QDQ form of that very sum (DequantizeLinear
of both operands, Add, QuantizeLinear: onnxruntime fuses it into its QLinearAdd, as in the
user's model) for all 256 values and fits ``clip(floor((x * m + c) / 2**s), lo, hi)`` to the
table, so that the host kernel gives onnxruntime's values bit for bit with the integer operations
of an ALU requantisation. The fit is cached per operator. Without onnxruntime (the ``onnx``
extra) there is no table and the caller keeps its fixed-point form.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np

from ..topi.qnn_fit import AffineRequant, fit_affine

__all__ = ["available", "scalar_add_fit", "scalar_add_table"]

_ONNX_TYPES = {"uint8": 2, "int8": 3}


def available() -> bool:
    """Whether onnx and onnxruntime are installed (the tables need both)."""
    return all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxruntime"))


@functools.lru_cache(maxsize=1024)
def scalar_add_table(x_dtype: str, x_scale: float, x_zero_point: int, value: int, v_scale: float,
                     v_zero_point: int, out_scale: float, out_zero_point: int, out_dtype: str,
                     value_first: bool) -> np.ndarray:
    """onnxruntime's output of ``Q(DQ(x) + DQ(value))`` (``DQ(value) + DQ(x)`` when
    ``value_first``) for every ``x`` of ``x_dtype`` in increasing order (int64, 256 entries).

    Raises
    ------
    ValueError
        If a dtype is not uint8 or int8.
    """
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    for dt in (x_dtype, out_dtype):
        if dt not in _ONNX_TYPES:
            raise ValueError(f"scalar_add_table: 8-bit dtypes only (uint8, int8), got {dt!r}")
    info = np.iinfo(np.dtype(x_dtype))
    xs = np.arange(info.min, info.max + 1).astype(x_dtype)
    vt = _ONNX_TYPES[x_dtype]
    inits = [
        helper.make_tensor("xs", TensorProto.FLOAT, [], [np.float32(x_scale)]),
        helper.make_tensor("xz", vt, [], [int(x_zero_point)]),
        helper.make_tensor("v", vt, [], [int(value)]),
        helper.make_tensor("vs", TensorProto.FLOAT, [], [np.float32(v_scale)]),
        helper.make_tensor("vz", vt, [], [int(v_zero_point)]),
        helper.make_tensor("ys", TensorProto.FLOAT, [], [np.float32(out_scale)]),
        helper.make_tensor("yz", _ONNX_TYPES[out_dtype], [], [int(out_zero_point)]),
    ]
    pair = ["fv", "fx"] if value_first else ["fx", "fv"]
    nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["fx"]),
             helper.make_node("DequantizeLinear", ["v", "vs", "vz"], ["fv"]),
             helper.make_node("Add", pair, ["s"]),
             helper.make_node("QuantizeLinear", ["s", "ys", "yz"], ["y"])]
    graph = helper.make_graph(nodes, "scalar_add", [helper.make_tensor_value_info("x", vt, [xs.size])],
                              [helper.make_tensor_value_info("y", _ONNX_TYPES[out_dtype], [xs.size])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = min(model.ir_version, onnx.IR_VERSION)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": xs})
    return np.asarray(y).astype(np.int64)


@functools.lru_cache(maxsize=1024)
def scalar_add_fit(x_dtype: str, x_scale: float, x_zero_point: int, value: int, v_scale: float,
                   v_zero_point: int, out_scale: float, out_zero_point: int, out_dtype: str,
                   value_first: bool = False) -> AffineRequant | None:
    """The integer requantisation of ``x`` equal to onnxruntime's sum with the single value
    ``value`` on every input (:func:`scalar_add_table`), or None (no onnxruntime, or no fit within
    the ALU's limits)."""
    if not available():
        return None
    args = (x_dtype, x_scale, x_zero_point, value, v_scale, v_zero_point, out_scale, out_zero_point, out_dtype,
            value_first)
    table = scalar_add_table(*args)
    info = np.iinfo(np.dtype(x_dtype))
    lo, hi = (int(v) for v in (np.iinfo(np.dtype(out_dtype)).min, np.iinfo(np.dtype(out_dtype)).max))
    return fit_affine(np.arange(info.min, info.max + 1), table, lo, hi)
