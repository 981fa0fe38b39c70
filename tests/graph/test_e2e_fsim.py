"""Whole small graphs compiled and run on fsim, bit-exact against NumPy oracles written here."""

from __future__ import annotations

import numpy as np
import pytest

from vta.graph import compile
from vta.graph.executor import GraphModule
from vta.runtime import ext_dev

from ..conftest import make_env
from .nets import basic_block, conv_relu_conv, dense_head
from .oracle import conv_int, fixed_point, requant, worst_bits

pytestmark = pytest.mark.native


def run_graph(graph, inputs, env):
    graph_json, lib, params = compile(graph, env=env)
    m = GraphModule(graph_json, lib, ext_dev(0))
    m.set_input(**params)
    m.run(**inputs)
    return m


def oracle_conv_relu_conv(g, x):
    p = g.params
    w1, b1, w2 = p["w1"], p["b1"].astype(np.int64), p["w2"]
    bias1 = b1 + 8 * w1.astype(np.int64).sum(axis=(1, 2, 3))           # int8 domain: zero point -8
    acc1 = conv_int(x.astype(np.int64), w1, 120, 1, (1, 1, 1, 1), b1)
    y1 = requant(acc1, 0.05 * 0.01 / 0.6, 0, 0, 255, acc_bits=worst_bits(w1, bias1))
    bias2 = 128 * w2.astype(np.int64).sum(axis=(1, 2, 3))
    acc2 = conv_int(y1, w2, 0, 1, (0, 0, 0, 0))
    return requant(acc2, 0.6 * 0.02 / 1.5, 3, 0, 127, acc_bits=worst_bits(w2, bias2)).astype(np.int8)


@pytest.mark.parametrize("config", ["vta_config.json", "batch2.json"])
def test_conv_relu_conv(config):
    with make_env(config) as env:
        batch = env.BATCH
        g = conv_relu_conv(np.random.default_rng(0), batch=batch)
        x = np.random.default_rng(1).integers(0, 256, (batch, 3, 8, 8)).astype(np.uint8)
        m = run_graph(g, {"x": x}, env)
        np.testing.assert_array_equal(m.get_output(0), oracle_conv_relu_conv(g, x))


def test_resnet_basic_block_with_residual_and_downsample(env):
    g = basic_block(np.random.default_rng(3))
    x = np.random.default_rng(4).integers(-128, 128, (1, 16, 8, 8)).astype(np.int8)
    m = run_graph(g, {"x": x}, env)
    np.testing.assert_array_equal(m.get_output(0), oracle_basic_block(g, x))
    records = {r.name: r for r in m.node_records()}
    assert {r.device for r in records.values()} == {"vta", "cpu"}
    assert records["conv2"].stats["gemm_counter"] > 0 and records["conv2"].device == "vta"


def oracle_basic_block(g, x):
    p = {k: np.asarray(v) for k, v in g.params.items()}
    i64 = np.int64
    s1 = np.asarray(g.value("w1").type.scale)
    b1f = p["b1"].astype(i64) + 3 * p["w1"].astype(i64).sum(axis=(1, 2, 3))
    acc1 = conv_int(x, p["w1"], -3, 2, (1, 1, 1, 1), p["b1"])
    y1 = requant(acc1, 0.04 * s1 / 0.9, -5, 0, 127, acc_bits=worst_bits(p["w1"], b1f))
    bdf = p["bd"].astype(i64) + 3 * p["wd"].astype(i64).sum(axis=(1, 2, 3))
    yd = requant(conv_int(x, p["wd"], -3, 2, (0, 0, 0, 0), p["bd"]), 0.04 * 0.015 / 0.7, 1, -128, 127,
                 acc_bits=worst_bits(p["wd"], bdf))
    b2f = p["b2"].astype(i64) + 5 * p["w2"].astype(i64).sum(axis=(1, 2, 3))
    acc2 = conv_int(y1, p["w2"], -5, 1, (1, 1, 1, 1), p["b2"])
    # fused residual: the conv requantizes to the add's output scale, the shortcut by its own multiplier
    main = fixed_point(acc2, 0.9 * 0.01 / 1.3, acc_bits=worst_bits(p["w2"], b2f))
    short = fixed_point(yd - 1, 0.7 / 1.3)
    return np.clip(main + short - 4, 0, 127).astype(np.int8)


def test_dense_head_with_pooling_flatten_and_softmax(env):
    g = dense_head(np.random.default_rng(5))
    x = np.random.default_rng(6).integers(0, 256, (1, 64, 4, 4)).astype(np.uint8)
    m = run_graph(g, {"x": x}, env)
    p = g.params
    sums = x.astype(np.int64).sum(axis=(2, 3)) - 16 * 7
    pooled = requant(sums, 0.1 / (0.05 * 16), 5, 0, 255)
    bias = p["bf"].astype(np.int64) + 123 * p["wf"].astype(np.int64).sum(axis=1)
    acc = (pooled - 5) @ p["wf"].astype(np.int64).T + p["bf"]
    q = requant(acc, 0.05 * 0.01 / 0.4, -1, -128, 127, acc_bits=worst_bits(p["wf"], bias))
    logits = (q + 1).astype(np.float32) * np.float32(0.4)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(m.get_output(0), e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    devices = {r.name: r.device for r in m.node_records()}
    assert devices["fc"] == "vta" and devices["gap"] == "cpu" and devices["softmax"] == "cpu"


def test_graph_module_api(env):
    g = conv_relu_conv(np.random.default_rng(0))
    graph_json, lib, params = compile(g, env=env)
    m = GraphModule(graph_json, lib, ext_dev(0))
    assert m.get_num_outputs() == 1 and m.get_num_inputs() == 1 + len(params)
    x = np.random.default_rng(1).integers(0, 256, (1, 3, 8, 8)).astype(np.uint8)
    m.set_input(0, x)
    m.set_input(**params)
    np.testing.assert_array_equal(m.get_input("x"), x)
    m.run()
    first = m.get_output(0)
    np.testing.assert_array_equal(first, oracle_conv_relu_conv(g, x))
    m.run(x=np.zeros_like(x))
    assert not np.array_equal(m.get_output(0), first)
    with pytest.raises(Exception, match="takes uint8"):
        m.set_input("x", x.astype(np.int8))
