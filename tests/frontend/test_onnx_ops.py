"""Each ONNX operator pattern on its own: built with onnx.helper, quantized by onnxruntime,
imported, evaluated by the test's NumPy oracle and compared with onnxruntime (at least 99.9%
of the int8 outputs equal, none more than one unit apart)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402

from vta.models import quantize  # noqa: E402

from .helpers import calib, compare, make_model, rand_w  # noqa: E402

X = (1, 16, 8, 8)


def _q(model, shape, rng, **kw):
    return quantize(model, calib(rng, shape), **kw)


def _feed(rng, shape, name="x"):
    return {name: rng.standard_normal(shape).astype(np.float32)}


def conv_relu(rng, stride=1, k=3, relu=True, cout=32, opset=13):
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[k, k],
                              pads=[k // 2] * 4, strides=[stride, stride])]
    out = "c"
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["r"], name="relu"))
        out = "r"
    oh = (X[2] + 2 * (k // 2) - k) // stride + 1
    return make_model(nodes, [("x", X)], [(out, (1, cout, oh, oh))],
                      {"w": rand_w(rng, cout, X[1], k, k), "b": rand_w(rng, cout, scale=0.1)}, opset=opset)


@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("act", ["uint8", "int8"])
def test_conv_relu(per_channel, act):
    rng = np.random.default_rng(0)
    q = _q(conv_relu(rng), X, rng, per_channel=per_channel, activation_type=act)
    g = compare(q, _feed(rng, X))
    ops = [n.op for n in g.nodes]
    assert ops.count("qnn.conv2d") == 1 and "qnn.requantize" in ops


def test_conv_stride2_1x1_uint8_weights():
    rng = np.random.default_rng(1)
    q = _q(conv_relu(rng, stride=2, k=1, relu=False), X, rng, weight_type="uint8")
    compare(q, _feed(rng, X))


@pytest.mark.parametrize("opset", [13, 17, 21])
def test_conv_opsets(opset):
    rng = np.random.default_rng(2)
    q = _q(conv_relu(rng, opset=opset), X, rng)
    compare(q, _feed(rng, X))


def test_conv_relu6_clip():
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("Clip", ["c", "lo", "hi"], ["r"], name="relu6")]
    m = make_model(nodes, [("x", X)], [("r", (1, 16, 8, 8))],
                   {"w": rand_w(rng, 16, 16, 3, 3), "b": rand_w(rng, 16, scale=0.1),
                    "lo": np.float32(0.0), "hi": np.float32(1.0)})
    compare(_q(m, X, rng), _feed(rng, X))


def test_gemm_after_flatten():
    rng = np.random.default_rng(4)
    nodes = [helper.make_node("Flatten", ["x"], ["f"], name="flatten", axis=1),
             helper.make_node("Gemm", ["f", "w", "b"], ["y"], name="fc", transB=1)]
    m = make_model(nodes, [("x", X)], [("y", (1, 10))],
                   {"w": rand_w(rng, 10, 1024), "b": rand_w(rng, 10, scale=0.1)})
    g = compare(_q(m, X, rng), _feed(rng, X))
    assert "qnn.dense" in [n.op for n in g.nodes]


def test_matmul_add():
    rng = np.random.default_rng(5)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b"], ["y"], name="bias")]
    m = make_model(nodes, [("x", (1, 64))], [("y", (1, 32))],
                   {"w": rand_w(rng, 64, 32), "b": rand_w(rng, 32, scale=0.1)})
    compare(_q(m, (1, 64), rng), _feed(rng, (1, 64)))


def test_residual_add():
    rng = np.random.default_rng(6)
    conv = dict(kernel_shape=[3, 3], pads=[1] * 4)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", **conv),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", **conv),
             helper.make_node("Add", ["c2", "x"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["y"], name="relu2")]
    m = make_model(nodes, [("x", X)], [("y", X)],
                   {"w1": rand_w(rng, 16, 16, 3, 3), "b1": rand_w(rng, 16, scale=0.1),
                    "w2": rand_w(rng, 16, 16, 3, 3), "b2": rand_w(rng, 16, scale=0.1)})
    g = compare(_q(m, X, rng), _feed(rng, X))
    assert "qnn.add" in [n.op for n in g.nodes]


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2])),
    ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1)),
])
def test_pooling_after_conv(op, attrs):
    rng = np.random.default_rng(7)
    k, s = attrs["kernel_shape"][0], attrs["strides"][0]
    p = attrs.get("pads", [0] * 4)[0]
    oh = (8 + 2 * p - k) // s + 1
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node(op, ["r"], ["y"], name="pool", **attrs)]
    m = make_model(nodes, [("x", X)], [("y", (1, 16, oh, oh))],
                   {"w": rand_w(rng, 16, 16, 3, 3), "b": rand_w(rng, 16, scale=0.1)})
    compare(_q(m, X, rng), _feed(rng, X))


@pytest.mark.parametrize("form", ["gap_flatten", "reducemean_reshape", "reducemean_opset18"])
def test_global_average_pool_forms(form):
    rng = np.random.default_rng(8)
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1] * 4)
    inits = {"w": rand_w(rng, 16, 16, 3, 3), "b": rand_w(rng, 16, scale=0.1)}
    opset = 13
    if form == "gap_flatten":
        tail = [helper.make_node("GlobalAveragePool", ["c"], ["g"], name="gap"),
                helper.make_node("Flatten", ["g"], ["y"], name="flatten")]
    elif form == "reducemean_reshape":
        tail = [helper.make_node("ReduceMean", ["c"], ["g"], name="mean", axes=[2, 3], keepdims=1),
                helper.make_node("Reshape", ["g", "shape"], ["y"], name="reshape")]
        inits["shape"] = np.array([1, -1])
    else:
        opset = 18
        tail = [helper.make_node("ReduceMean", ["c", "axes"], ["y"], name="mean", keepdims=0)]
        inits["axes"] = np.array([-1, -2])
    m = make_model([conv] + tail, [("x", X)], [("y", (1, 16))], inits, opset=opset)
    compare(_q(m, X, rng), _feed(rng, X))


def test_concat_of_two_convs():
    rng = np.random.default_rng(9)
    conv = dict(kernel_shape=[1, 1])
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], name="c1", **conv),
             helper.make_node("Conv", ["x", "w2", "b2"], ["b"], name="c2", **conv),
             helper.make_node("Concat", ["a", "b"], ["y"], name="cat", axis=1)]
    m = make_model(nodes, [("x", X)], [("y", (1, 32, 8, 8))],
                   {"w1": rand_w(rng, 16, 16, 1, 1), "b1": rand_w(rng, 16, scale=0.1),
                    "w2": rand_w(rng, 16, 16, 1, 1) * 3, "b2": rand_w(rng, 16, scale=0.1)})
    compare(_q(m, X, rng), _feed(rng, X))


def test_softmax_runs_in_float():
    rng = np.random.default_rng(10)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["l"], name="fc", transB=1),
             helper.make_node("Softmax", ["l"], ["y"], name="softmax", axis=1)]
    m = make_model(nodes, [("x", (1, 64))], [("y", (1, 10))],
                   {"w": rand_w(rng, 10, 64), "b": rand_w(rng, 10, scale=0.1)})
    q = _q(m, (1, 64), rng)
    from vta.frontend import from_onnx

    from .helpers import ort_run
    from .oracle import run_graph

    g, _ = from_onnx(q)
    assert "nn.softmax" in [n.op for n in g.nodes]
    feed = _feed(rng, (1, 64))
    ours, theirs = run_graph(g, feed)[0], ort_run(q, feed)[0]
    assert np.argmax(ours) == np.argmax(theirs)
    np.testing.assert_allclose(ours, theirs, atol=0.02)


def test_qoperator_network():
    """QLinearConv, QLinearAdd, QLinearGlobalAveragePool and QGemm (com.microsoft)."""
    rng = np.random.default_rng(11)
    conv = dict(kernel_shape=[3, 3], pads=[1] * 4)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", **conv),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", **conv),
             helper.make_node("Add", ["c2", "r1"], ["s"], name="add"),
             helper.make_node("GlobalAveragePool", ["s"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1)]
    m = make_model(nodes, [("x", X)], [("y", (1, 10))],
                   {"w1": rand_w(rng, 16, 16, 3, 3), "b1": rand_w(rng, 16, scale=0.1),
                    "w2": rand_w(rng, 16, 16, 3, 3), "b2": rand_w(rng, 16, scale=0.1),
                    "wf": rand_w(rng, 10, 16), "bf": rand_w(rng, 10, scale=0.1)})
    q = _q(m, X, rng, quant_format="QOperator")
    ops = {n.op_type for n in q.graph.node}
    assert {"QLinearConv", "QLinearAdd"} <= ops, ops
    compare(q, _feed(rng, X))


def test_qlinear_matmul():
    rng = np.random.default_rng(12)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    m = make_model(nodes, [("x", (1, 64))], [("y", (1, 32))], {"w": rand_w(rng, 64, 32)})
    q = _q(m, (1, 64), rng, quant_format="QOperator")
    assert "QLinearMatMul" in {n.op_type for n in q.graph.node}
    compare(q, _feed(rng, (1, 64)))


def test_conv_integer_and_matmul_integer():
    """The integer operators with explicit zero points (written by hand: quantize_static does not)."""
    from onnx import TensorProto, checker, numpy_helper

    rng = np.random.default_rng(13)
    w = rng.integers(-100, 100, (8, 4, 3, 3)).astype(np.int8)
    b = rng.integers(0, 255, (32, 6)).astype(np.uint8)
    nodes = [helper.make_node("ConvInteger", ["x", "w", "xz"], ["acc"], name="convi", kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["mm"], name="mmi")]
    graph = helper.make_graph(nodes, "ints",
                              [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 4, 6, 6]),
                               helper.make_tensor_value_info("a", TensorProto.UINT8, [2, 32])],
                              [helper.make_tensor_value_info("acc", TensorProto.INT32, [1, 8, 6, 6]),
                               helper.make_tensor_value_info("mm", TensorProto.INT32, [2, 6])],
                              initializer=[numpy_helper.from_array(w, "w"),
                                           numpy_helper.from_array(np.array(7, np.uint8), "xz"),
                                           numpy_helper.from_array(b, "b"),
                                           numpy_helper.from_array(np.array(3, np.uint8), "az"),
                                           numpy_helper.from_array(np.array(128, np.uint8), "bz")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    checker.check_model(model)
    from vta.frontend import from_onnx

    from .helpers import ort_run
    from .oracle import run_graph

    g, _ = from_onnx(model)
    feeds = {"x": rng.integers(0, 255, (1, 4, 6, 6)).astype(np.uint8), "a": rng.integers(0, 255, (2, 32)).astype(np.uint8)}
    for ours, theirs in zip(run_graph(g, feeds), ort_run(model, feeds), strict=True):
        np.testing.assert_array_equal(ours.astype(np.int64), theirs.astype(np.int64))
