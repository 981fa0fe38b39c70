"""onnxruntime's own outputs of a quantized element-wise operator over every 8-bit input, and the
integer requantisation fitted to them (:func:`vta.topi.qnn_fit.fit_affine`).

A ``qnn.add`` with one operand a single value is a function of the other, 8-bit operand: 256
inputs. :func:`scalar_add_fit` runs onnxruntime on the QDQ form of that very sum (DequantizeLinear
of both operands, Add, QuantizeLinear: onnxruntime fuses it into its QLinearAdd, as in the
user's model) for all 256 values and fits ``clip(floor((x * m + c) / 2**s), lo, hi)`` to the
table, so that the host kernel gives onnxruntime's values bit for bit with the integer operations
of an ALU requantisation. The fit is cached per operator. Without onnxruntime (the ``onnx``
extra) there is no table and the caller keeps its fixed-point form.

A ``qnn.add`` of two 8-bit tensors is a function of 65,536 input pairs: :func:`pair_add_table`
runs onnxruntime on the QDQ sum over every pair (a 256 x 256 table), which tells whether the
accelerator's fixed-point sum equals onnxruntime's on every input (:func:`sum_mismatches`), and
is the host kernel of a sum that does not (a lookup per element: each output of onnxruntime's
QLinearAdd depends on its own pair of inputs only). :func:`pair_add_fit` fits the ALU's integer
form ``floor((a m_a + b m_b + c) / 2**s)`` (or the division rounded half to even) of the
accelerator's int8 operands to that table
(:func:`vta.topi.qnn_fit.fit_affine_sum`): where one exists the sum stays on the accelerator and
equals onnxruntime's on every input.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np

from ..topi.qnn_fit import AffineRequant, AffineSum, fit_affine, fit_affine_sum

__all__ = ["available", "int8_offset", "pair_add_fit", "pair_add_table", "scalar_add_fit", "scalar_add_table",
           "sum_mismatches"]

_ONNX_TYPES = {"uint8": 2, "int8": 3}


def available() -> bool:
    """Whether onnx and onnxruntime are installed (the tables need both)."""
    return all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxruntime"))


def _check_dtypes(*dtypes: str) -> None:
    for dt in dtypes:
        if dt not in _ONNX_TYPES:
            raise ValueError(f"onnxruntime tables: 8-bit dtypes only (uint8, int8), got {dt!r}")


def _all_values(dtype: str) -> np.ndarray:
    info = np.iinfo(np.dtype(dtype))
    return np.arange(info.min, info.max + 1).astype(dtype)


def _qdq_add(feeds: dict, qparams: dict, consts: dict, order: tuple[str, str], out_dtype: str) -> np.ndarray:
    """onnxruntime's ``Q(DQ(p) + DQ(q))`` (``order = (p, q)``) of one-dimensional ``feeds`` and
    single-valued ``consts``: ``qparams`` maps every operand name to its ``(scale, zero_point)``
    (the output's is ``"y"``), int64 result."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    def vtype(name):
        return _ONNX_TYPES[str((feeds.get(name) if name in feeds else consts[name]).dtype)]

    inits, nodes = [], []
    for name, (scale, zp) in qparams.items():
        t = _ONNX_TYPES[out_dtype] if name == "y" else vtype(name)
        inits += [helper.make_tensor(f"{name}_s", TensorProto.FLOAT, [], [np.float32(scale)]),
                  helper.make_tensor(f"{name}_z", t, [], [int(zp)])]
        if name != "y":
            nodes.append(helper.make_node("DequantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_f"]))
    inits += [helper.make_tensor(name, vtype(name), [], [int(v)]) for name, v in consts.items()]
    nodes += [helper.make_node("Add", [f"{order[0]}_f", f"{order[1]}_f"], ["sum"]),
              helper.make_node("QuantizeLinear", ["sum", "y_s", "y_z"], ["y"])]
    size = len(next(iter(feeds.values())))
    graph = helper.make_graph(nodes, "qdq_add", [helper.make_tensor_value_info(k, vtype(k), [size]) for k in feeds],
                              [helper.make_tensor_value_info("y", _ONNX_TYPES[out_dtype], [size])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = min(model.ir_version, onnx.IR_VERSION)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, feeds)
    return np.asarray(y).astype(np.int64)


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
    _check_dtypes(x_dtype, out_dtype)
    xs = _all_values(x_dtype)
    qparams = {"x": (x_scale, x_zero_point), "v": (v_scale, v_zero_point), "y": (out_scale, out_zero_point)}
    return _qdq_add({"x": xs}, qparams, {"v": np.array(value, x_dtype)}, ("v", "x") if value_first else ("x", "v"),
                    out_dtype)


@functools.lru_cache(maxsize=128)
def pair_add_table(lhs: tuple, rhs: tuple, out: tuple) -> np.ndarray:
    """onnxruntime's ``Q(DQ(a) + DQ(b))`` for every pair of 8-bit values: a ``(256, 256)`` int16
    table (128 KiB; read-only) whose entry ``[i, j]`` is the sum of the ``i``-th value of the
    left operand's dtype and the ``j``-th of the right one's, in increasing order. ``lhs``,
    ``rhs``, ``out``: ``(dtype, scale, zero_point)``.

    Raises
    ------
    ValueError
        If a dtype is not uint8 or int8.
    """
    _check_dtypes(lhs[0], rhs[0], out[0])
    a, b = _all_values(lhs[0]), _all_values(rhs[0])
    feeds = {"a": np.repeat(a, b.size), "b": np.tile(b, a.size)}
    qparams = {"a": lhs[1:], "b": rhs[1:], "y": out[1:]}
    table = _qdq_add(feeds, qparams, {}, ("a", "b"), out[0]).astype(np.int16).reshape(a.size, b.size)
    table.flags.writeable = False      # cached: shared by every caller
    return table


def sum_mismatches(lhs: tuple, rhs: tuple, out: tuple, ours) -> int:
    """How many of the 65,536 input pairs of a sum give another output than onnxruntime's
    (:func:`pair_add_table`); ``ours(a, b)`` computes the candidate on the two ``(256, 256)``
    grids of input values (``lhs``, ``rhs`` dtypes) and returns the outputs in the output dtype."""
    a, b = _all_values(lhs[0]).astype(np.int64), _all_values(rhs[0]).astype(np.int64)
    grid_a, grid_b = np.broadcast_arrays(a[:, None], b[None, :])
    table = pair_add_table(lhs, rhs, out)
    return int(np.count_nonzero(np.asarray(ours(grid_a, grid_b), np.int64) != table))


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


def int8_offset(dtype: str) -> int:
    """What moves a value of ``dtype`` to the accelerator's int8 domain (``vta.to_int8``)."""
    return -128 if dtype == "uint8" else 0


@functools.lru_cache(maxsize=256)
def pair_add_fit(lhs: tuple, rhs: tuple, out: tuple) -> AffineSum | None:
    """The integer sum of the accelerator's int8 operands (uint8 values moved by -128, as
    ``vta.to_int8`` does) whose output, in the int8 domain, is onnxruntime's
    (:func:`pair_add_table`, moved alike) on every input pair; None when there is none within the
    ALU's limits, or without onnxruntime. Arguments as :func:`pair_add_table`."""
    if not available():
        return None
    table = pair_add_table(lhs, rhs, out)
    xa = _all_values(lhs[0]).astype(np.int64) + int8_offset(lhs[0])
    xb = _all_values(rhs[0]).astype(np.int64) + int8_offset(rhs[0])
    y = table.astype(np.int64) + int8_offset(out[0])
    # rounded down first (fewer ALU instructions), else half to even (real ties of the sum)
    return fit_affine_sum(xa, xb, y, -128, 127) or fit_affine_sum(xa, xb, y, -128, 127, even=True)
