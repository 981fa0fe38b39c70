"""Whole small graphs compiled and run on fsim, bit-exact against NumPy oracles written here."""

from __future__ import annotations

import numpy as np
import pytest

from vta.graph import compile
from vta.graph.executor import GraphModule
from vta.runtime import ext_dev

from ..conftest import make_env
from .nets import basic_block, conv_relu_conv, dense_head
from .oracle import conv_int, fixed_point, requant, rounded_sum, worst_bits

pytestmark = pytest.mark.native


def run_graph(graph, inputs, env, **options):
    graph_json, lib, params = compile(graph, env=env, **options)
    m = GraphModule(graph_json, lib, ext_dev(0))
    m.set_input(**params)
    m.run(**inputs)
    return m


def oracle_conv_relu_conv(g, x, mode="fixed"):
    p = g.params
    w1, b1, w2 = p["w1"], p["b1"].astype(np.int64), p["w2"]
    acc1 = conv_int(x.astype(np.int64), w1, 120, 1, (1, 1, 1, 1), b1)
    y1 = requant(acc1, 0.05 * 0.01 / 0.6, 0, 0, 255, acc_bits=worst_bits(w1, b1), mode=mode)
    acc2 = conv_int(y1, w2, 0, 1, (0, 0, 0, 0))
    return requant(acc2, 0.6 * 0.02 / 1.5, 3, 0, 127, acc_bits=worst_bits(w2, np.zeros(10)), mode=mode).astype(np.int8)


@pytest.mark.parametrize("config,images", [("vta_config.json", 1), ("batch2.json", 2), ("batch2.json", 1)])
def test_conv_relu_conv(config, images):
    """Default and BATCH=2 configurations; one image on BATCH=2 is padded at the region borders."""
    with make_env(config) as env:
        batch = images
        g = conv_relu_conv(np.random.default_rng(0), batch=batch)
        x = np.random.default_rng(1).integers(0, 256, (batch, 3, 8, 8)).astype(np.uint8)
        m = run_graph(g, {"x": x}, env)
        np.testing.assert_array_equal(m.get_output(0), oracle_conv_relu_conv(g, x))
        conv2 = {r.name: r for r in m.node_records()}["conv2"]
        assert conv2.device == "vta"
        assert ("batch 1 padded to 2" in conv2.reason) == (images % env.BATCH != 0)


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
    s1 = np.asarray(g.value("w1").type.scale)
    acc1 = conv_int(x, p["w1"], -3, 2, (1, 1, 1, 1), p["b1"])
    y1 = requant(acc1, 0.04 * s1 / 0.9, -5, 0, 127, acc_bits=worst_bits(p["w1"], p["b1"]))
    yd = requant(conv_int(x, p["wd"], -3, 2, (0, 0, 0, 0), p["bd"]), 0.04 * 0.015 / 0.7, 1, -128, 127,
                 acc_bits=worst_bits(p["wd"], p["bd"]))
    acc2 = conv_int(y1, p["w2"], -5, 1, (1, 1, 1, 1), p["b2"])
    y2 = requant(acc2, 0.9 * 0.01 / 1.1, 2, -128, 127, acc_bits=worst_bits(p["w2"], p["b2"]))
    # qnn.add: both operands rescaled to the output scale and summed, one rounding, the zero point, relu
    return rounded_sum([(y2 - 2, 1.1 / 1.3), (yd - 1, 0.7 / 1.3)], -4, 0, 127).astype(np.int8)


def test_dense_head_with_pooling_flatten_and_softmax(env):
    g = dense_head(np.random.default_rng(5))
    x = np.random.default_rng(6).integers(0, 256, (1, 64, 4, 4)).astype(np.uint8)
    m = run_graph(g, {"x": x}, env)
    p = g.params
    sums = x.astype(np.int64).sum(axis=(2, 3)) - 16 * 7
    pooled = requant(sums, 0.1 / (0.05 * 16), 5, 0, 255)
    acc = (pooled - 5) @ p["wf"].astype(np.int64).T + p["bf"]
    q = requant(acc, 0.05 * 0.01 / 0.4, -1, -128, 127, acc_bits=worst_bits(p["wf"], p["bf"]))
    logits = (q + 1).astype(np.float32) * np.float32(0.4)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(m.get_output(0), e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    devices = {r.name: r.device for r in m.node_records()}
    assert devices["fc"] == "vta" and devices["gap"] == "vta" and devices["softmax"] == "cpu"


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


def test_accelerated_graph_gives_the_bits_of_the_layer_by_layer_oracle(env):
    """Fusion (bias folding, int8 domain, intermediate rounding of the residual) changes nothing:
    the accelerator's result equals the NumPy oracles that run the original layers one by one."""
    for graph, x, oracle in ((basic_block(np.random.default_rng(8)),
                              np.random.default_rng(9).integers(-128, 128, (1, 16, 8, 8)).astype(np.int8),
                              oracle_basic_block),
                             (conv_relu_conv(np.random.default_rng(10)),
                              np.random.default_rng(11).integers(0, 256, (1, 3, 8, 8)).astype(np.uint8),
                              oracle_conv_relu_conv)):
        m = run_graph(graph, {"x": x}, env)
        np.testing.assert_array_equal(m.get_output(0), oracle(graph, x))


def test_max_pool_and_standalone_add_on_the_accelerator(env):
    from vta.graph import GraphBuilder, optimize

    b = GraphBuilder()
    x = b.input("x", (1, 20, 9, 9), "int8", scale=0.1, zero_point=-2)
    y = b.input("y", (1, 20, 5, 5), "uint8", scale=0.2, zero_point=131)
    p = b.nn.max_pool2d(x, 3, strides=2, padding=(1, 1, 1, 1), name="pool")
    s = b.qnn.add(p, y, output_scale=0.25, output_zero_point=100, out_dtype="uint8", name="add")
    g = b.finish(b.clip(s, 90, 250, name="clip"))
    placed = {n.name: (n.op, n.attrs["device"]) for n in optimize(g, env).nodes}
    assert placed["pool"] == ("vta.max_pool2d", "vta") and placed["add"] == ("vta.add", "vta")
    rng = np.random.default_rng(12)
    xv = rng.integers(-128, 128, (1, 20, 9, 9)).astype(np.int8)
    yv = rng.integers(0, 256, (1, 20, 5, 5)).astype(np.uint8)
    m = run_graph(g, {"x": xv, "y": yv}, env)
    xp = np.pad(xv.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-1000)
    pooled = np.full((1, 20, 5, 5), -1000, dtype=np.int64)
    for dy in range(3):
        for dx in range(3):
            pooled = np.maximum(pooled, xp[:, :, dy:dy + 9:2, dx:dx + 9:2])
    expected = rounded_sum([(pooled + 2, 0.1 / 0.25), (yv.astype(np.int64) - 131, 0.2 / 0.25)], 100, 90, 250)
    np.testing.assert_array_equal(m.get_output(0), expected.astype(np.uint8))


def test_built_operators_are_cached(env, tmp_path, monkeypatch):
    from vta.graph import optimize
    from vta.graph.accel import AcceleratorBuilder

    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path))
    g = optimize(conv_relu_conv(np.random.default_rng(0)), env)
    nodes = [n for n in g.nodes if n.attrs["device"] == "vta"]
    first = AcceleratorBuilder(env)
    first.prebuild(nodes, jobs=1)
    ops = [first.build(n) for n in nodes]
    assert first.cache_hits == 0 and len(list((tmp_path / "graph_ops").iterdir())) == 2
    again = AcceleratorBuilder(env)
    again.prebuild(nodes, jobs=1)
    assert again.cache_hits == 2
    assert [again.build(n).module.get_source() for n in nodes] == [o.module.get_source() for o in ops]


def test_power_of_two_requantization(env):
    g = conv_relu_conv(np.random.default_rng(0))
    x = np.random.default_rng(1).integers(0, 256, (1, 3, 8, 8)).astype(np.uint8)
    graph_json, lib, params = compile(g, env=env, requant_mode="pow2")
    m = GraphModule(graph_json, lib, ext_dev(0))
    m.set_input(**params)
    m.run(x=x)
    np.testing.assert_array_equal(m.get_output(0), oracle_conv_relu_conv(g, x, mode="pow2"))
    assert not np.array_equal(m.get_output(0), oracle_conv_relu_conv(g, x))


@pytest.mark.parametrize("pad_limit", [None, 2.0])
def test_wide_requantization_on_the_accelerator_and_the_host(env, pad_limit):
    # requant_mode="wide": the layers' multipliers with the float32 bits their bounds leave; the
    # first layer kept on the CPU (pad_limit) gives the same bits through the host's requantize
    g = conv_relu_conv(np.random.default_rng(0))
    x = np.random.default_rng(1).integers(0, 256, (1, 3, 8, 8)).astype(np.uint8)
    m = run_graph(g, {"x": x}, env, requant_mode="wide", pad_limit=pad_limit)
    np.testing.assert_array_equal(m.get_output(0), oracle_conv_relu_conv(g, x, mode="wide"))
    records = {r.name: r for r in m.node_records()}
    assert records["conv2"].device == "vta" and (records["conv1"].device == "cpu") == (pad_limit is not None)
    # the split multiplier: more ALU work than the 15-bit form of the same layer
    fixed = {r.name: r for r in run_graph(g, {"x": x}, env, pad_limit=pad_limit).node_records()}
    assert records["conv2"].stats["alu_counter"] > fixed["conv2"].stats["alu_counter"]


def test_first_layer_on_the_cpu_gives_the_same_bits(env):
    g = conv_relu_conv(np.random.default_rng(13))
    x = np.random.default_rng(14).integers(0, 256, (1, 3, 8, 8)).astype(np.uint8)
    m = run_graph(g, {"x": x}, env, pad_limit=2.0)
    devices = {r.name: r.device for r in m.node_records()}
    assert devices["conv1"] == "cpu" and devices["conv2"] == "vta"
    np.testing.assert_array_equal(m.get_output(0), oracle_conv_relu_conv(g, x))


def test_direct_residual_rounding(env):
    """residual_rounding='direct': the second convolution requantizes straight to the add's scale."""
    g = basic_block(np.random.default_rng(3))
    x = np.random.default_rng(4).integers(-128, 128, (1, 16, 8, 8)).astype(np.int8)
    m = run_graph(g, {"x": x}, env, residual_rounding="direct")
    p = {k: np.asarray(v) for k, v in g.params.items()}
    s1 = np.asarray(g.value("w1").type.scale)
    y1 = requant(conv_int(x, p["w1"], -3, 2, (1, 1, 1, 1), p["b1"]), 0.04 * s1 / 0.9, -5, 0, 127,
                 acc_bits=worst_bits(p["w1"], p["b1"]))
    yd = requant(conv_int(x, p["wd"], -3, 2, (0, 0, 0, 0), p["bd"]), 0.04 * 0.015 / 0.7, 1, -128, 127,
                 acc_bits=worst_bits(p["wd"], p["bd"]))
    acc2 = conv_int(y1, p["w2"], -5, 1, (1, 1, 1, 1), p["b2"])
    main = fixed_point(acc2, 0.9 * 0.01 / 1.3, acc_bits=worst_bits(p["w2"], p["b2"]))
    expected = np.clip(main + fixed_point(yd - 1, 0.7 / 1.3) - 4, 0, 127).astype(np.int8)
    np.testing.assert_array_equal(m.get_output(0), expected)


def oracle_resnet18_like(g, x):
    """tests/graph/nets.resnet18_like layer by layer in NumPy: each convolution's integer sum,
    bias and requantisation (accumulator bounds as the pipeline annotates them: worst_bits), the
    max pool, the residual adds rounded once, the global average pool and the dense layer."""
    p = {k: np.asarray(v) for k, v in g.params.items()}

    def conv(y, ys, yz, name, stride, out_scale, out_zp, lo, hi):
        w, b = p[f"{name}.w"], p[f"{name}.b"]
        k = w.shape[2]
        acc = conv_int(y, w, yz, stride, (k // 2,) * 4, b)
        scale = ys * np.asarray(g.value(f"{name}.w").type.scale) / out_scale
        return requant(acc, scale, out_zp, lo, hi, acc_bits=worst_bits(w, b))

    y = conv(x.astype(np.int64), 0.02, 128, "conv1", 2, 0.5, 0, 0, 255)
    ys, yz = 0.5, 0
    n, c, h, w = y.shape
    padded = np.full((n, c, h + 2, w + 2), -1000, dtype=np.int64)
    padded[:, :, 1:-1, 1:-1] = y
    oh, ow = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    y = np.full((n, c, oh, ow), -1000, dtype=np.int64)
    for dy in range(3):
        for dx in range(3):
            y = np.maximum(y, padded[:, :, dy:dy + 2 * oh:2, dx:dx + 2 * ow:2])
    for i, (c, s) in enumerate([(64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1)]):
        h1 = conv(y, ys, yz, f"l{i}.c1", s, 0.5, 0, 0, 255)
        if s != 1 or y.shape[1] != c:
            short, ss, sz = conv(y, ys, yz, f"l{i}.ds", s, 0.5, -10, -128, 127), 0.5, -10
        else:
            short, ss, sz = y, ys, yz
        y2 = conv(h1, 0.5, 0, f"l{i}.c2", 1, 0.6, -10, -128, 127)
        y = rounded_sum([(y2 + 10, 0.6 / 0.7), (short - sz, ss / 0.7)], 0, 0, 255)
        ys, yz = 0.7, 0
    hw = y.shape[2] * y.shape[3]
    pooled = requant(y.sum(axis=(2, 3)) - hw * yz, 1.0 / hw, yz, 0, 255)
    acc = (pooled - yz) @ p["fc.w"].astype(np.int64).T + p["fc.b"]
    return requant(acc, ys * 0.01 / 0.3, 0, -128, 127, acc_bits=worst_bits(p["fc.w"], p["fc.b"])).astype(np.int8)


def test_resnet18_shaped_network_equals_the_layer_by_layer_oracle(env):
    """The whole ResNet-18 structure (at 32x32): every layer on the accelerator but the flatten
    (the average pool too), the result bit-identical to the NumPy oracle of the network."""
    from .nets import resnet18_like

    g = resnet18_like(np.random.default_rng(15), size=32)
    x = np.random.default_rng(16).integers(0, 256, (1, 3, 32, 32)).astype(np.uint8)
    m = run_graph(g, {"data": x}, env)
    devices = {r.name: r.device for r in m.node_records() if r.op.startswith(("vta.", "qnn.", "nn."))}
    assert devices["flatten"] == "cpu"
    assert all(devices[n] == "vta" for n in ("conv1", "pool", "gap", "l0.c1", "l0.c2", "l6.ds", "l7.c2", "fc"))
    np.testing.assert_array_equal(m.get_output(0), oracle_resnet18_like(g, x))
