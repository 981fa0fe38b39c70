"""Host kernels against onnxruntime running the same quantized operator (a QDQ model written here)."""

from __future__ import annotations

import numpy as np
import pytest

from vta.graph.host import run_kernel

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402


def _ort_scalar_add(x, sx, zx, value, sv, zv, sy, zy, value_first=False):
    f, u = TensorProto.FLOAT, TensorProto.UINT8
    inits = [helper.make_tensor(n, t, [], [v]) for n, t, v in (
        ("sx", f, sx), ("zx", u, zx), ("v", u, value), ("sv", f, sv), ("zv", u, zv), ("sy", f, sy), ("zy", u, zy))]
    nodes = [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["fx"]),
             helper.make_node("DequantizeLinear", ["v", "sv", "zv"], ["fv"]),
             helper.make_node("Add", ["fv", "fx"] if value_first else ["fx", "fv"], ["s"]),
             helper.make_node("QuantizeLinear", ["s", "sy", "zy"], ["y"])]
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, list(x.shape))], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = min(m.ir_version, onnx.IR_VERSION)
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


# the scales of a hard-swish's x + 3 in the text-direction classifier (3 quantized as 255 * 3/255),
# where the real sum ties on a few percent of the inputs, and arbitrary ones
CASES = [(0.08488345146179199, 114, 255, 0.0117647061124444, 0, 0.0235294122248888, 0),
         (0.05, 128, 255, 3.0 / 255, 0, 0.05, 60),
         (0.031, 7, 200, 0.02, 3, 0.047, 131)]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("value_first", [False, True])
def test_a_sum_with_a_single_value_equals_onnxruntimes_bit_for_bit(case, value_first):
    sx, zx, value, sv, zv, sy, zy = case
    rng = np.random.default_rng(3)
    x = np.concatenate([np.arange(256), rng.integers(0, 256, 256)]).astype(np.uint8).reshape(1, 8, 8, 8)
    theirs = _ort_scalar_add(x, sx, zx, value, sv, zv, sy, zy, value_first)
    side, other = ("rhs", "lhs") if value_first else ("lhs", "rhs")
    attrs = {f"{side}_scale": sx, f"{side}_zero_point": zx, f"{other}_scale": sv, f"{other}_zero_point": zv,
             "output_scale": sy, "output_zero_point": zy, "out_dtype": "uint8"}
    v = np.array(value, np.uint8)
    ins = [v, x] if value_first else [x, v]
    ours = run_kernel("qnn.add", attrs, ins)
    assert ours.dtype == np.uint8 and ours.shape == x.shape
    np.testing.assert_array_equal(ours, theirs)
