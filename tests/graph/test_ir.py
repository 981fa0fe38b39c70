"""The graph IR: types, builder inference, printer, and the errors of inconsistent graphs."""

from __future__ import annotations

import numpy as np
import pytest

from vta.errors import GraphError, UnsupportedOperatorError
from vta.graph import Graph, GraphBuilder, TensorType
from vta.graph.ir import Node, Value


def small_graph():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 8, 8), "int8", scale=0.05, zero_point=0)
    w = b.const("w", np.ones((32, 16, 3, 3), np.int8), scale=0.01)
    acc = b.qnn.conv2d(x, w, strides=2, padding=(1, 1, 1, 1), name="conv")
    acc = b.nn.bias_add(acc, b.const("b", np.zeros(32, np.int32)), name="bias")
    y = b.qnn.requantize(acc, output_scale=0.1, output_zero_point=-3, name="rq")
    return b, b.finish(b.nn.relu(y, name="relu"))


def test_types_are_normalised_and_immutable():
    t = TensorType([1, 2], np.int8, scale=np.array([0.5]), zero_point=np.int64(3))
    assert t.shape == (1, 2) and t.dtype == "int8" and t.scale == 0.5 and t.zero_point == 3
    per = TensorType((4,), "int32", scale=[0.1, 0.2], zero_point=[0, 0], axis=0)
    assert per.scale == (0.1, 0.2) and per.zero_point == (0, 0)
    with pytest.raises(AttributeError):
        t.shape = (3,)  # type: ignore[misc]
    with pytest.raises(GraphError, match="dtype"):
        TensorType((1,), "complex64")


def test_builder_infers_shapes_scales_and_dtypes():
    _, g = small_graph()
    conv = g.node("conv")
    assert conv.output_type.shape == (1, 32, 4, 4) and conv.output_type.dtype == "int32"
    assert conv.output_type.scale == pytest.approx(0.0005)
    assert g.node("rq").output_type == TensorType((1, 32, 4, 4), "int8", 0.1, -3)
    assert [n.name for n in g.nodes] == ["conv", "bias", "rq", "relu"]
    assert g.consumers()["conv"] == [g.node("bias")]
    assert g.node("conv").attrs["groups"] == 1


def test_shapes_of_data_movement_and_pooling():
    b = GraphBuilder()
    x = b.input("x", (2, 8, 7, 7), "float32")
    assert b.nn.max_pool2d(x, 3, strides=2, padding=1).type.shape == (2, 8, 4, 4)
    assert b.nn.global_avg_pool2d(x).type.shape == (2, 8, 1, 1)
    assert b.nn.batch_flatten(x).type.shape == (2, 392)
    assert b.reshape(x, (0, -1, 7)).type.shape == (2, 56, 7)
    assert b.transpose(x, (0, 2, 3, 1)).type.shape == (2, 7, 7, 8)
    assert b.concatenate([x, x], axis=1).type.shape == (2, 16, 7, 7)
    assert b.layout_transform(x, "NCHW", "NCHW2n16c").type.shape == (1, 1, 7, 7, 2, 16)


def test_inconsistent_shapes_name_both_tensors():
    b = GraphBuilder()
    x = b.input("data", (1, 16, 8, 8), "int8")
    w = b.const("kernel", np.ones((8, 12, 3, 3), np.int8))
    with pytest.raises(GraphError, match=r"'data'.*'kernel'"):
        b.qnn.conv2d(x, w)
    y = b.input("other", (1, 16, 4, 4), "int8", scale=1.0)
    with pytest.raises(GraphError, match=r"'data'.*'other'"):
        b.concatenate([x, y], axis=1)
    z = b.input("wide", (1, 16, 8, 8), "int32")
    with pytest.raises(GraphError, match=r"'data'.*'wide'.*dtypes"):
        b.concatenate([x, z], axis=1)


def test_unknown_operator_names_node_and_operator():
    b = GraphBuilder()
    x = b.input("x", (1, 4), "float32")
    with pytest.raises(UnsupportedOperatorError, match=r"'lstm_0'.*'nn.lstm'"):
        b.op("nn.lstm", [x], {}, name="lstm_0")


def test_graph_rejects_use_before_definition_and_duplicate_names():
    t = TensorType((1,), "float32")
    x = Value("x", t, "input")
    a = Node("nn.relu", (Value("later", t),), {}, "a", t)
    later = Node("nn.relu", (x,), {}, "later", t)
    with pytest.raises(GraphError, match="'a'.*'later'.*not defined before"):
        Graph([x], [later.output], [a, later])
    with pytest.raises(GraphError, match="already used"):
        Graph([x], [later.output], [later, later])


def test_printer_lists_every_node():
    _, g = small_graph()
    text = str(g)
    assert text.splitlines()[0].startswith("graph(%x: int8[1, 16, 8, 8] q(scale=0.05, zp=0))")
    assert "%conv = qnn.conv2d(%x, %w, strides=2, padding=(1, 1, 1, 1)" in text
    assert text.rstrip().endswith("return %relu\n}".rstrip())


def test_numpy_attributes_become_plain_values():
    b = GraphBuilder()
    acc = b.input("acc", (1, 3, 2, 2), "int32")
    y = b.qnn.requantize(acc, input_scale=np.array([0.1, 0.2, 0.3]), output_scale=np.float32(0.5),
                         output_zero_point=np.int64(4), name="rq")
    g = b.finish(y)
    attrs = g.node("rq").attrs
    assert attrs["input_scale"] == pytest.approx((0.1, 0.2, 0.3)) and type(attrs["output_zero_point"]) is int
    assert g.consumers()["acc"] == [g.node("rq")]
