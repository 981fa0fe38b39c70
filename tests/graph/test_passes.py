"""The graph passes: constant folding, fusion (bias folding, uint8 -> int8), channel padding,
layout packing with transforms only at region borders, device placement with reasons."""

from __future__ import annotations

import numpy as np
import pytest

from vta.errors import UnsupportedOperatorError
from vta.graph import GraphBuilder, optimize
from vta.graph.ir import Graph, Node, TensorType, Value
from vta.graph.passes import FoldConstants, FuseAccelerator, PlaceDevices

from .nets import basic_block, conv_relu_conv, dense_head


def ops(g):
    return [n.op for n in g.nodes]


def test_fold_constants_evaluates_constant_subgraphs():
    b = GraphBuilder()
    x = b.input("x", (1, 4), "float32")
    w = b.cast(b.const("w_u8", np.arange(4, dtype=np.uint8)), "float32", name="wf")
    g = FoldConstants()(b.finish(b.add(x, w, name="sum")))
    assert ops(g) == ["add"]
    np.testing.assert_array_equal(g.params["wf"], np.arange(4, dtype=np.float32))


def test_fusion_folds_the_input_zero_point_into_the_bias(env):
    g = FuseAccelerator(env, fold_first_layer=False)(conv_relu_conv(np.random.default_rng(0)))
    assert ops(g) == ["vta.to_int8", "vta.conv2d", "vta.conv2d"]
    conv1 = g.node("conv1")
    spec = conv1.attrs["spec"]
    w1 = g.params["conv1.weight"].astype(np.int64)
    orig = conv_relu_conv(np.random.default_rng(0))
    b1 = orig.params["b1"].astype(np.int64)
    # uint8 zero point 120 is int8 zero point -8
    assert spec.input_zero_point == -8
    np.testing.assert_array_equal(g.params["conv1.bias"], b1 + 8 * w1.sum(axis=(1, 2, 3)))
    assert spec.output_zero_point == -128 and spec.clip == (-128, 127)   # uint8 output, zp 0
    spec2 = g.node("conv2").attrs["spec"]
    assert spec2.input_zero_point == -128 and spec2.clip == (0, 127)     # relu: max(x, 0) in the integers
    assert conv1.output_type.dtype == "int8"


def test_residual_add_is_fused_into_the_second_convolution(env):
    g = FuseAccelerator(env)(basic_block(np.random.default_rng(1)))
    assert ops(g) == ["vta.conv2d", "vta.conv2d", "vta.conv2d"]
    conv2 = g.node("conv2")
    assert [v.name for v in conv2.inputs][3] == "down"
    spec = conv2.attrs["spec"]
    assert spec.residual is not None and spec.intermediate is not None
    assert spec.clip == (0, 127) and spec.output_zero_point == -4 and spec.intermediate.zero_point == 2


def test_pipeline_packs_regions_and_places_every_node(env):
    g = optimize(basic_block(np.random.default_rng(1)), env)
    assert ops(g) == ["layout_transform", "vta.conv2d", "vta.conv2d", "vta.conv2d", "layout_transform"]
    assert g.node("conv1").output_type.shape == (1, 2, 4, 4, 1, 16)
    assert all(n.attrs["device"] == ("vta" if n.op.startswith("vta.") else "cpu") for n in g.nodes)
    assert g.node("conv1").attrs["reason"] == "supported"
    first = optimize(conv_relu_conv(np.random.default_rng(0)), env, fold_first_layer=False).node("conv1")
    assert "3 input channels padded to 16" in first.attrs["reason"]
    folded = optimize(conv_relu_conv(np.random.default_rng(0)), env)
    assert [n.op for n in folded.nodes][:3] == ["vta.to_int8", "vta.fold_width", "layout_transform"]
    assert folded.node("conv1").attrs["spec"].fold_width
    assert "kernel width folded into the channels (3x3 = 9 channels padded to 16)" in \
        folded.node("conv1").attrs["reason"]


def test_dense_head_pads_features_and_leaves_softmax_on_the_cpu(env):
    g = optimize(dense_head(np.random.default_rng(2)), env)
    devices = {n.name: (n.op, n.attrs["device"]) for n in g.nodes}
    assert devices["fc"] == ("vta.dense", "vta")
    assert devices["gap"] == ("vta.avg_pool2d", "vta") and devices["softmax"][1] == "cpu"
    assert "float operator" in g.node("softmax").attrs["reason"]
    assert g.node("fc").attrs["spec"].out_features == 16 and g.node("fc").attrs["channels"] == 10


def test_unsupported_convolutions_stay_on_the_cpu_with_the_reason(env):
    b = GraphBuilder()
    x = b.input("x", (1, 16, 8, 8), "int8", scale=0.1)
    a = b.qnn.conv2d(x, b.const("w", np.ones((16, 16, 3, 3), np.int8), scale=0.1), padding=(2, 2, 2, 2),
                     dilation=2, name="dilated")
    y = b.qnn.requantize(a, output_scale=1.0, name="rq")
    g = optimize(b.finish(y), env)
    node = g.node("dilated")
    assert node.op == "qnn.conv2d" and node.attrs["device"] == "cpu"
    assert node.attrs["reason"] == "dilation=(2, 2) not supported"


def test_an_operator_nothing_runs_is_named(env):
    t = TensorType((1, 4), "float32")
    x = Value("x", t, "input")
    g = Graph([x], [Value("mystery", t)], [Node("nn.lstm", (x,), {}, "mystery", t)])
    with pytest.raises(UnsupportedOperatorError, match=r"'mystery'.*'nn.lstm'"):
        PlaceDevices(env)(g)


def test_pad_limit_keeps_an_expensive_first_layer_on_the_cpu(env):
    g = optimize(conv_relu_conv(np.random.default_rng(0)), env, pad_limit=2.0)
    conv1 = g.node("conv1")
    assert conv1.op == "qnn.conv2d" and conv1.attrs["device"] == "cpu"
    assert conv1.attrs["reason"] == ("channels 3->16 padded to 16->16 would cost 5.3x the MACs "
                                     "(more than pad_limit=2): on the CPU")
    assert g.node("conv2").attrs["device"] == "vta"



@pytest.mark.native
def test_per_channel_multipliers_on_both_sides_of_a_half_run_on_the_accelerator(env):
    from .oracle import conv_int, requant, worst_bits
    from .test_e2e_fsim import run_graph

    b = GraphBuilder()
    x = b.input("x", (1, 16, 4, 4), "int8", scale=1.0)
    w = np.random.default_rng(2).integers(-100, 101, (16, 16, 3, 3)).astype(np.int8)  # |acc| past 2**15
    scales = np.where(np.arange(16) < 8, 0.8, 0.001)    # M = 0.8 and 0.001 in one layer
    a = b.qnn.conv2d(x, b.const("w", w, scale=scales, axis=0), name="conv")
    g = b.finish(b.qnn.requantize(a, output_scale=1.0, name="rq"))
    assert optimize(g, env).node("conv").attrs["device"] == "vta"
    xv = np.random.default_rng(3).integers(-128, 128, (1, 16, 4, 4)).astype(np.int8)
    got = run_graph(g, {"x": xv}, env).get_output(0)
    want = requant(conv_int(xv, w, 0, 1, (0, 0, 0, 0)), scales, 0, -128, 127, acc_bits=worst_bits(w, np.zeros(16)))
    np.testing.assert_array_equal(got, want)
