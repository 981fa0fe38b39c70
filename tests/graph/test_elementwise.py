"""Element-wise operators between quantized tensors on the accelerator, against NumPy oracles
written here."""

from __future__ import annotations

import numpy as np
import pytest

from vta.graph import GraphBuilder, optimize
from vta.graph.host import evaluate

from .oracle import fixed_point
from .test_e2e_fsim import run_graph

pytestmark = pytest.mark.native


def _mul_net(sa, za, sb, zb, so, zo, relu):
    """uint8 a * int8 b -> uint8 product [-> relu]."""
    b = GraphBuilder()
    x = b.input("a", (1, 24, 5, 6), "uint8", scale=sa, zero_point=za)
    y = b.input("b", (1, 24, 5, 6), "int8", scale=sb, zero_point=zb)
    p = b.op("qnn.mul", [x, y], dict(lhs_scale=sa, lhs_zero_point=za, rhs_scale=sb, rhs_zero_point=zb,
                                     output_scale=so, output_zero_point=zo, out_dtype="uint8"), "mul")
    return b.finish(b.nn.relu(p, name="relu") if relu else p)


@pytest.mark.parametrize("relu", [False, True])
def test_quantized_product_on_the_accelerator(env, relu):
    sa, za, sb, zb, so, zo = 0.21, 133, 0.013, -5, 0.09, 117
    g = _mul_net(sa, za, sb, zb, so, zo, relu)
    rng = np.random.default_rng(8)
    a = rng.integers(0, 256, (1, 24, 5, 6)).astype(np.uint8)
    b = rng.integers(-128, 128, (1, 24, 5, 6)).astype(np.int8)
    m = run_graph(g, {"a": a, "b": b}, env)
    p = (a.astype(np.int64) - za) * (b.astype(np.int64) - zb)
    want = np.clip(fixed_point(p, sa * sb / so, acc_bits=17) + zo, 0, 255).astype(np.uint8)  # relu: max(q, 0)
    np.testing.assert_array_equal(m.get_output(0), want)
    np.testing.assert_array_equal(evaluate(g, {"a": a, "b": b})[0], want)
    rec = {r.name: r for r in m.node_records()}["mul"]
    assert rec.device == "vta" and rec.reason == "supported"
    assert [n.op for n in optimize(g, env).nodes].count("vta.multiply") == 1


def test_product_with_a_per_channel_gate_on_the_accelerator_and_other_shapes_on_the_cpu(env):
    rng = np.random.default_rng(9)
    for gate_first in (False, True):
        b = GraphBuilder()
        x = b.input("a", (1, 20, 4, 5), "int8", scale=0.1, zero_point=2)
        y = b.input("b", (1, 20, 1, 1), "uint8", scale=1 / 255, zero_point=0)
        ins = [y, x] if gate_first else [x, y]
        attrs = dict(lhs_scale=ins[0].type.scale, lhs_zero_point=ins[0].type.zero_point,
                     rhs_scale=ins[1].type.scale, rhs_zero_point=ins[1].type.zero_point, output_scale=0.08,
                     output_zero_point=-4, out_dtype="int8")
        g = b.finish(b.op("qnn.mul", ins, attrs, "mul"))
        av = rng.integers(-128, 128, (1, 20, 4, 5)).astype(np.int8)
        bv = rng.integers(0, 256, (1, 20, 1, 1)).astype(np.uint8)
        m = run_graph(g, {"a": av, "b": bv}, env)
        p = (av.astype(np.int64) - 2) * bv.astype(np.int64)
        want = np.clip(fixed_point(p, 0.1 / 255 / 0.08, acc_bits=17) - 4, -128, 127)
        np.testing.assert_array_equal(m.get_output(0), want)
        assert {r.name: r for r in m.node_records()}["mul"].device == "vta"
    b = GraphBuilder()
    x = b.input("a", (1, 16, 4, 4), "int8", scale=0.1, zero_point=0)
    y = b.input("b", (1, 1, 4, 4), "int8", scale=0.1, zero_point=0)
    g = optimize(b.finish(b.op("qnn.mul", [x, y], dict(lhs_scale=0.1, rhs_scale=0.1, output_scale=0.1), "mul")), env)
    node = g.node("mul")
    assert node.attrs["device"] == "cpu" and "products of two NCHW tensors of the same shape" in node.attrs["reason"]

def _qdq_mul_model(shape_a, shape_b, sa=0.21, za=133, sb=1 / 255, zb=0, sy=0.11, zy=120):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.array(v, dt), n) for v, dt, n in (
        (sa, np.float32, "sa"), (za, np.uint8, "za"), (sb, np.float32, "sb"), (zb, np.uint8, "zb"),
        (sy, np.float32, "sy"), (zy, np.uint8, "zy"))]
    nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["ad"]),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bd"]),
             helper.make_node("Mul", ["ad", "bd"], ["y"]),
             helper.make_node("QuantizeLinear", ["y", "sy", "zy"], ["yq"])]
    out = list(np.broadcast_shapes(tuple(shape_a), tuple(shape_b)))
    graph = helper.make_graph(nodes, "qdq_mul", [helper.make_tensor_value_info("a", TensorProto.UINT8, shape_a),
                                                 helper.make_tensor_value_info("b", TensorProto.UINT8, shape_b)],
                              [helper.make_tensor_value_info("yq", TensorProto.UINT8, out)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("shape_b,device", [([1, 32, 6, 6], "vta"), ([1, 32, 1, 1], "vta"), ([1, 1, 6, 6], "cpu")])
def test_qdq_mul_imported_and_within_one_of_onnxruntime(env, shape_b, device):
    ort = pytest.importorskip("onnxruntime")
    from vta.frontend import from_onnx

    model = _qdq_mul_model([1, 32, 6, 6], shape_b)
    rng = np.random.default_rng(4)
    a = rng.integers(0, 256, (1, 32, 6, 6)).astype(np.uint8)
    b = rng.integers(0, 256, shape_b).astype(np.uint8)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"a": a, "b": b})[0].astype(np.int64)
    graph, params = from_onnx(model)
    m = run_graph(graph, {"a": a, "b": b}, env, params=params)
    d = np.abs(m.get_output(0).astype(np.int64) - ref)
    assert d.max() <= 1 and (d == 0).mean() > 0.99
    recs = [r for r in m.node_records() if r.op in ("vta.multiply", "qnn.mul")]
    assert len(recs) == 1 and recs[0].device == device


def _pool_oracle(x, z_in, pool, strides, s_in, s_out, z_out, lo, hi):
    """Window sums of ``x - z_in`` (int64), each rounded as ``sum * s_in / (s_out * count)`` in
    the accelerator's fixed point, plus ``z_out``, clipped."""
    kh, kw = pool
    sh, sw = strides
    c = x.astype(np.int64) - z_in
    oh, ow = (x.shape[2] - kh) // sh + 1, (x.shape[3] - kw) // sw + 1
    sums = np.stack([np.stack([c[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw].sum(axis=(2, 3)) for j in range(ow)], -1)
                     for i in range(oh)], -2)
    return np.clip(fixed_point(sums, s_in / (s_out * kh * kw)) + z_out, lo, hi)


@pytest.mark.parametrize("kind", ["global", "window", "global_relu"])
def test_average_pool_on_the_accelerator(env, kind):
    shape = (1, 40, 3, 24) if kind != "window" else (1, 24, 3, 40)
    s_in, z_in, s_out, z_out = 0.031, 13, 0.0045, 61
    b = GraphBuilder()
    x = b.input("x", shape, "uint8", scale=s_in, zero_point=z_in)
    if kind == "window":
        p = b.qnn.avg_pool2d(x, (3, 2), (3, 2), output_scale=s_out, output_zero_point=z_out, out_dtype="uint8",
                             name="pool")
        pool, strides = (3, 2), (3, 2)
    else:
        p = b.qnn.global_avg_pool2d(x, output_scale=s_out, output_zero_point=z_out, out_dtype="uint8", name="pool")
        pool, strides = shape[2:], (1, 1)
    lo = 0
    if kind == "global_relu":
        p = b.clip(p, 70, 255, name="clip")
        lo = 70
    g = b.finish(p)
    xv = np.random.default_rng(11).integers(0, 256, shape).astype(np.uint8)
    m = run_graph(g, {"x": xv}, env)
    want = _pool_oracle(xv, z_in, pool, strides, s_in, s_out, z_out, lo, 255).astype(np.uint8)
    np.testing.assert_array_equal(m.get_output(0), want)
    np.testing.assert_array_equal(evaluate(g, {"x": xv})[0], want)   # the host kernel: the same bits
    rec = {r.name: r for r in m.node_records()}["pool"]
    assert rec.device == "vta" and rec.reason == "supported" and rec.op == "vta.avg_pool2d"


def test_padded_or_oversized_average_pools_stay_on_the_cpu_with_the_reason(env):
    b = GraphBuilder()
    x = b.input("x", (1, 16, 6, 6), "int8", scale=0.1, zero_point=0)
    y = b.input("y", (1, 16, 64, 64), "int8", scale=0.1, zero_point=0)
    p = b.qnn.avg_pool2d(x, (3, 3), (1, 1), padding=(1, 1, 1, 1), name="padded")
    q = b.qnn.global_avg_pool2d(y, name="big")
    g = optimize(b.finish([p, q]), env)
    assert g.node("padded").attrs["device"] == "cpu" and "padding" in g.node("padded").attrs["reason"]
    assert g.node("big").attrs["device"] == "cpu" and "accumulator" in g.node("big").attrs["reason"]


def _qdq_pool_model(op, shape, out, s_in=0.029, z_in=13, s_out=0.0039, z_out=61, **attrs):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.array(v, dt), n) for v, dt, n in (
        (s_in, np.float32, "si"), (z_in, np.uint8, "zi"), (s_out, np.float32, "so"), (z_out, np.uint8, "zo"))]
    nodes = [helper.make_node("DequantizeLinear", ["x", "si", "zi"], ["xd"]),
             helper.make_node(op, ["xd"], ["y"], **attrs),
             helper.make_node("QuantizeLinear", ["y", "so", "zo"], ["yq"])]
    graph = helper.make_graph(nodes, "qdq_pool", [helper.make_tensor_value_info("x", TensorProto.UINT8, shape)],
                              [helper.make_tensor_value_info("yq", TensorProto.UINT8, out)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("op,out,attrs", [("GlobalAveragePool", [1, 48, 1, 1], {}),
                                          ("AveragePool", [1, 48, 1, 20], dict(kernel_shape=[3, 2], strides=[3, 2]))])
def test_qdq_average_pool_imported_on_the_accelerator_and_against_onnxruntime(env, op, out, attrs):
    """onnxruntime pools in float and rounds half to even; the accelerator's fixed point differs
    only where the mean lies within about 2^-15 of a rounding boundary: every output within one,
    and the share of equal outputs measured here."""
    ort = pytest.importorskip("onnxruntime")
    from vta.frontend import from_onnx

    shape = [1, 48, 3, 40]
    model = _qdq_pool_model(op, shape, out, **attrs)
    x = np.random.default_rng(5).integers(0, 256, shape).astype(np.uint8)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0].astype(np.int64)
    graph, params = from_onnx(model)
    m = run_graph(graph, {"x": x}, env, params=params)
    d = np.abs(m.get_output(0).astype(np.int64) - ref)
    assert d.max() <= 1 and (d == 0).mean() >= 0.99, (d.max(), (d == 0).mean())
    recs = [r for r in m.node_records() if "pool" in r.op]
    assert [(r.op, r.device) for r in recs] == [("vta.avg_pool2d", "vta")]
