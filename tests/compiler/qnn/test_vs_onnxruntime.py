"""One QDQ convolution run by onnxruntime against the fused accelerator convolution.

The model is written with ``onnx.helper`` (fixed scales and zero points, no quantizer):
QuantizeLinear -> DequantizeLinear on the uint8 input, per-channel int8 weights and int32 bias
through DequantizeLinear, Conv, QuantizeLinear to uint8 (onnxruntime fuses it into QLinearConv).
The accelerator computes in the int8 domain (``v - 128``, zero points - 128, ``-z_x * sum(w)``
folded into the bias); its output must equal onnxruntime's on at least 99.9% of the elements and
never differ by more than 1 (the ``fixed`` requantisation; the 8-bit ``fixed8`` is reported for
comparison).
"""

from __future__ import annotations

import numpy as np
import pytest

from vta.topi import qnn

from .conftest import run_op

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

CI, CO, H, W = 32, 32, 16, 16
S_X, Z_X, S_Y, Z_Y = 0.02, 131, 0.05, 7


def _model(wq, sw, bq):
    inits = [
        numpy_helper.from_array(np.array(S_X, np.float32), "sx"),
        numpy_helper.from_array(np.array(Z_X, np.uint8), "zx"),
        numpy_helper.from_array(wq, "wq"),
        numpy_helper.from_array(sw.astype(np.float32), "sw"),
        numpy_helper.from_array(np.zeros(CO, np.int8), "zw"),
        numpy_helper.from_array(bq, "bq"),
        numpy_helper.from_array((np.float32(S_X) * sw.astype(np.float32)).astype(np.float32), "sb"),
        numpy_helper.from_array(np.zeros(CO, np.int32), "zb"),
        numpy_helper.from_array(np.array(S_Y, np.float32), "sy"),
        numpy_helper.from_array(np.array(Z_Y, np.uint8), "zy"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
        helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["wd"], axis=0),
        helper.make_node("DequantizeLinear", ["bq", "sb", "zb"], ["bd"], axis=0),
        helper.make_node("Conv", ["xd", "wd", "bd"], ["y"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("QuantizeLinear", ["y", "sy", "zy"], ["yq"]),
    ]
    graph = helper.make_graph(nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, CI, H, W])],
                              [helper.make_tensor_value_info("yq", TensorProto.UINT8, [1, CO, H, W])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def test_qdq_conv_matches_onnxruntime(env, tmp_path):
    rng = np.random.default_rng(30)
    q = np.clip(np.rint(rng.normal(Z_X, 45, size=(1, CI, H, W))), 0, 255).astype(np.uint8)
    wq = np.clip(np.rint(rng.normal(0, 35, size=(CO, CI, 3, 3))), -127, 127).astype(np.int8)
    sw = rng.uniform(0.002, 0.01, size=CO)
    bq = rng.integers(-20000, 20000, size=CO).astype(np.int32)
    sess = ort.InferenceSession(_model(wq, sw, bq).SerializeToString(), providers=["CPUExecutionProvider"])
    x = ((q.astype(np.float32) - Z_X) * np.float32(S_X)).astype(np.float32)
    ref = sess.run(None, {"x": x})[0].astype(np.int64)
    # the same layer in the accelerator's int8 domain
    z_in = Z_X - 128
    bias = bq.astype(np.int64) - z_in * wq.astype(np.int64).reshape(CO, -1).sum(axis=1)
    x8 = (q.astype(np.int16) - 128).astype(np.int8)
    scale = (np.float32(S_X) * sw.astype(np.float32)).astype(np.float64) / S_Y
    figures = {}
    for mode in ("fixed", "fixed8"):
        spec = qnn.QConv2DSpec(1, CI, CO, H, W, 3, 3, (1, 1), 1, z_in, qnn.Requant.from_scale(scale, mode=mode),
                               Z_Y - 128)
        host = qnn.qconv2d_np(spec, x8, wq, bias).astype(np.int64) + 128
        d = np.abs(host - ref)
        figures[mode] = (float((d == 0).mean()), int(d.max()))
        if mode == "fixed":
            mod, layout = qnn.build_qconv2d(spec, "qdq_conv")
            out, _ = run_op(mod, layout, layout.pack_args(data=x8, weight=wq, bias=bias), tmp_path)
            np.testing.assert_array_equal(layout.unpack(out).astype(np.int64) + 128, host)
    assert figures["fixed"][0] >= 0.999 and figures["fixed"][1] <= 1, figures
    assert figures["fixed8"][0] < figures["fixed"][0], figures
