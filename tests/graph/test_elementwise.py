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


@pytest.mark.parametrize("factors,dtype", [((2, 2), "uint8"), ((4, 8), "int8"), ((1, 3), "uint8")])
def test_nearest_upsampling_on_the_accelerator(env, factors, dtype):
    """Every pixel repeated fh x fw times (NumPy indexing as the oracle), read by an accelerator
    operator without a layout conversion; alone between a graph input and output it stays on the
    CPU (it would only add layout conversions there), with the same values."""
    fh, fw = factors
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    b = GraphBuilder()
    x = b.input("x", (1, 24, 3, 5), dtype, scale=0.04, zero_point=7)
    y = b.input("y", (1, 24, 3 * fh, 5 * fw), dtype, scale=0.04, zero_point=7)
    u = b.nn.upsampling(x, fh, fw, name="up")
    g = b.finish(b.qnn.add(u, y, output_scale=0.05, output_zero_point=3, out_dtype=dtype, name="add"))
    rng = np.random.default_rng(fh * 10 + fw)
    xv = rng.integers(lo, hi + 1, (1, 24, 3, 5)).astype(dtype)
    yv = rng.integers(lo, hi + 1, (1, 24, 3 * fh, 5 * fw)).astype(dtype)
    m = run_graph(g, {"x": xv, "y": yv}, env)
    rows, cols = np.arange(3 * fh) // fh, np.arange(5 * fw) // fw
    up = xv[:, :, rows][:, :, :, cols]
    np.testing.assert_array_equal(evaluate(g, {"x": xv, "y": yv})[0], m.get_output(0))
    recs = {r.name: r for r in m.node_records()}
    assert recs["up"].device == "vta" and recs["up"].op == "vta.upsampling" and recs["add"].device == "vta"
    # nothing converts the layout between the two accelerator operators
    opt = optimize(g, env)
    producer = {n.output.name: n for n in opt.nodes}
    assert producer[opt.node("add").inputs[0].name].op == "vta.upsampling"
    # the upsampled values alone, as the graph's output
    b = GraphBuilder()
    x = b.input("x", (1, 24, 3, 5), dtype, scale=0.04, zero_point=7)
    m = run_graph(b.finish(b.nn.upsampling(x, fh, fw, name="up")), {"x": xv}, env)
    np.testing.assert_array_equal(m.get_output(0), up)
    rec = {r.name: r for r in m.node_records()}["up"]
    assert rec.device == "cpu" and "layout conversions" in rec.reason


def _qdq_resize_model(shape, scales, ctm="asymmetric", nearest="floor", mode="nearest"):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.array(v, dt), n) for v, dt, n in (
        (0.05, np.float32, "s"), (9, np.uint8, "z"), (np.array(scales, np.float32), np.float32, "scales"),
        (np.array([], np.float32), np.float32, "roi"))]
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xd"]),
             helper.make_node("Resize", ["xd", "roi", "scales"], ["y"], mode=mode, nearest_mode=nearest,
                              coordinate_transformation_mode=ctm),
             helper.make_node("QuantizeLinear", ["y", "s", "z"], ["yq"]),
             # an add of the resized tensor and a second input: a reader on the accelerator
             helper.make_node("DequantizeLinear", ["yq", "s", "z"], ["yd"]),
             helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wd"]),
             helper.make_node("Add", ["yd", "wd"], ["t"]),
             helper.make_node("QuantizeLinear", ["t", "s2", "z"], ["tq"])]
    inits.append(numpy_helper.from_array(np.array(0.08, np.float32), "s2"))
    out = [int(d * f) for d, f in zip(shape, scales, strict=True)]
    graph = helper.make_graph(nodes, "qdq_resize", [helper.make_tensor_value_info("x", TensorProto.UINT8, shape),
                                                    helper.make_tensor_value_info("w", TensorProto.UINT8, out)],
                              [helper.make_tensor_value_info("yq", TensorProto.UINT8, out),
                               helper.make_tensor_value_info("tq", TensorProto.UINT8, out)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("scales,ctm,nearest,device", [
    ([1, 1, 2, 2], "asymmetric", "floor", "vta"),               # the zoo's detectors
    ([1, 1, 4, 4], "half_pixel", "round_prefer_floor", "vta"),  # onnx's defaults
    ([1, 1, 3, 3], "asymmetric", "round_prefer_floor", "cpu"),  # i/3 rounds up at 2/3: not a repeat
    ([1, 1, 2, 2], "align_corners", "floor", "cpu"),
])
def test_qdq_resize_imported_and_equal_to_onnxruntime(env, scales, ctm, nearest, device):
    ort = pytest.importorskip("onnxruntime")
    from vta.frontend import from_onnx

    shape = [1, 32, 5, 6]
    model = _qdq_resize_model(shape, scales, ctm, nearest)
    rng = np.random.default_rng(6)
    x = rng.integers(0, 256, shape).astype(np.uint8)
    w = rng.integers(0, 256, [int(d * f) for d, f in zip(shape, scales, strict=True)]).astype(np.uint8)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x, "w": w})
    graph, params = from_onnx(model)
    m = run_graph(graph, {"x": x, "w": w}, env, params=params)
    np.testing.assert_array_equal(m.get_output(0), ref[0])      # the resized tensor: the same bits
    assert np.abs(m.get_output(1).astype(np.int64) - ref[1]).max() <= 1   # the add: fixed point vs float
    ops = {r.op: r.device for r in m.node_records()}
    if device == "vta":
        assert ops.get("vta.upsampling") == "vta"
    else:
        assert "vta.upsampling" not in ops and ops.get("onnx.region") == "cpu"


def _rescaled(x, z, scale, z_out):
    """``round((x - z) * scale) + z_out`` in the accelerator's fixed point (the NumPy oracle's)."""
    return fixed_point(x.astype(np.int64) - z, scale, acc_bits=9) + z_out


@pytest.mark.parametrize("op,scales,clip", [
    ("qnn.maximum", (0.05, 0.05, 0.05), None),          # one scale: exact on the integers
    ("qnn.minimum", (0.05, 0.07, 0.06), None),          # each operand rescaled to the output scale
    ("qnn.maximum", (0.04, 0.09, 0.05), (10, 200)),     # and a clip folded in
])
def test_quantized_maximum_and_minimum_on_the_accelerator(env, op, scales, clip):
    sa, sb, so = scales
    za, zb, zo = 12, 140, 100
    shape = (1, 24, 5, 7)
    b = GraphBuilder()
    x = b.input("a", shape, "uint8", scale=sa, zero_point=za)
    y = b.input("b", shape, "uint8", scale=sb, zero_point=zb)
    r = b.op(op, [x, y], dict(lhs_scale=sa, lhs_zero_point=za, rhs_scale=sb, rhs_zero_point=zb, output_scale=so,
                              output_zero_point=zo, out_dtype="uint8"), "mm")
    if clip:
        r = b.clip(r, clip[0], clip[1], name="clip")
    g = b.finish(r)
    rng = np.random.default_rng(17)
    av = rng.integers(0, 256, shape).astype(np.uint8)
    bv = rng.integers(0, 256, shape).astype(np.uint8)
    m = run_graph(g, {"a": av, "b": bv}, env)
    lo, hi = clip or (0, 255)
    pick = np.maximum if op == "qnn.maximum" else np.minimum
    want = np.clip(pick(_rescaled(av, za, sa / so, zo), _rescaled(bv, zb, sb / so, zo)), lo, hi).astype(np.uint8)
    if sa == sb == so:
        assert np.array_equal(want, np.clip(pick(av.astype(int) - za, bv.astype(int) - zb) + zo, lo, hi))
    np.testing.assert_array_equal(m.get_output(0), want)
    np.testing.assert_array_equal(evaluate(g, {"a": av, "b": bv})[0], want)
    rec = {r.name: r for r in m.node_records()}["mm"]
    assert rec.device == "vta" and rec.op == "vta.minmax" and rec.reason == "supported"


@pytest.mark.parametrize("op,scales", [("Max", (0.05, 0.05, 0.05)), ("Min", (0.0517, 0.0733, 0.0611)),
                                       ("Max", (0.031, 0.11, 0.09))])
def test_qdq_max_min_imported_and_against_onnxruntime(env, op, scales):
    """Equal scales: the same bits as onnxruntime; rescaled operands: within one unit (fixed point
    against float32), the share of equal outputs asserted. (Scale ratios such as 5/6 put many
    products exactly on a half, where onnxruntime rounds to even and the accelerator up: measured
    95% equal for 0.05/0.06, every output still within one.)"""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    from vta.frontend import from_onnx

    shape = [1, 32, 6, 6]
    (sa, sb, so), (za, zb, zo) = scales, (12, 140, 100)
    inits = [numpy_helper.from_array(np.array(v, dt), n) for v, dt, n in (
        (sa, np.float32, "sa"), (za, np.uint8, "za"), (sb, np.float32, "sb"), (zb, np.uint8, "zb"),
        (so, np.float32, "so"), (zo, np.uint8, "zo"))]
    nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["ad"]),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bd"]),
             helper.make_node(op, ["ad", "bd"], ["y"]),
             helper.make_node("QuantizeLinear", ["y", "so", "zo"], ["yq"])]
    graph = helper.make_graph(nodes, "qdq_minmax", [helper.make_tensor_value_info(n, TensorProto.UINT8, shape)
                                                    for n in ("a", "b")],
                              [helper.make_tensor_value_info("yq", TensorProto.UINT8, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    rng = np.random.default_rng(23)
    a = rng.integers(0, 256, shape).astype(np.uint8)
    bv = rng.integers(0, 256, shape).astype(np.uint8)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"a": a, "b": bv})[0].astype(np.int64)
    g, params = from_onnx(model)
    m = run_graph(g, {"a": a, "b": bv}, env, params=params)
    d = np.abs(m.get_output(0).astype(np.int64) - ref)
    if sa == sb == so:
        assert d.max() == 0
    assert d.max() <= 1 and (d == 0).mean() >= 0.99, (d.max(), (d == 0).mean())
    assert [(r.op, r.device) for r in m.node_records() if "minmax" in r.op] == [("vta.minmax", "vta")]


def _concat_net(c1, c2, dtype):
    """Two 3x3 convolutions of one input (c1 and c2 channels), concatenated along the channels,
    then a 1x1 convolution: [conv -> requantize] x 2 -> concatenate -> conv -> requantize."""
    rng = np.random.default_rng(c1 * 100 + c2)
    b = GraphBuilder()
    x = b.input("x", (1, 16, 6, 6), "uint8", scale=0.05, zero_point=120)
    parts = []
    for i, c in enumerate((c1, c2)):
        w = b.const(f"w{i}", rng.integers(-20, 21, (c, 16, 3, 3)).astype(np.int8), scale=0.01)
        a = b.qnn.conv2d(x, w, padding=(1, 1, 1, 1), name=f"conv{i}")
        parts.append(b.qnn.requantize(a, output_scale=0.3, output_zero_point=128 if dtype == "uint8" else 0,
                                      out_dtype=dtype, name=f"rq{i}"))
    cat = b.concatenate(parts, axis=1, name="cat")
    w = b.const("w2", rng.integers(-20, 21, (16, c1 + c2, 1, 1)).astype(np.int8), scale=0.01)
    y = b.qnn.requantize(b.qnn.conv2d(cat, w, name="conv2"), output_scale=0.5, output_zero_point=3, name="rq2")
    return b.finish([y, cat])


@pytest.mark.parametrize("c1,c2,dtype,packed", [(16, 16, "uint8", True), (32, 24, "int8", True),
                                                 (24, 16, "uint8", False)])
def test_channel_concatenation_of_accelerator_results_stays_packed(env, c1, c2, dtype, packed):
    """Inputs of whole channel blocks (all but the last): the concatenation joins the packed
    blocks, with no layout conversion or offset between the convolutions; otherwise it runs on
    plain tensors. Either way the result equals the host evaluation of the unfused graph."""
    g = _concat_net(c1, c2, dtype)
    x = np.random.default_rng(3).integers(0, 256, (1, 16, 6, 6)).astype(np.uint8)
    m = run_graph(g, {"x": x}, env)
    want = evaluate(g, {"x": x})
    np.testing.assert_array_equal(m.get_output(0), want[0])
    np.testing.assert_array_equal(m.get_output(1), want[1])
    opt = optimize(g, env)
    producer = {n.output.name: n for n in opt.nodes}
    cat = next(n for n in opt.nodes if n.op == "concatenate")
    conv2 = opt.node("conv2")
    if packed:
        assert producer[conv2.inputs[0].name] is cat and cat.output_type.ndim == 6
        assert all(producer[v.name].op == "vta.conv2d" for v in cat.inputs)
        assert "packed layout" in cat.attrs["reason"] and cat.attrs["device"] == "cpu"
    else:
        assert cat.output_type.ndim == 4 and producer[conv2.inputs[0].name].op == "layout_transform"
