"""Agreement with onnxruntime node by node: onnxruntime regions cut with their DequantizeLinear
nodes, average pools that round on exact halves left to onnxruntime, and the per-tensor
comparison of :mod:`vta.models.divergence` (checked by a fault injected into one node)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from vta.frontend import from_onnx  # noqa: E402
from vta.graph.host import evaluate  # noqa: E402
from vta.models import quantize  # noqa: E402

from .helpers import make_model, ort_run, rand_w  # noqa: E402


def test_region_reads_an_integer_tensor_through_its_own_dequantize():
    """DequantizeLinear -> Softmax -> QuantizeLinear is fused by onnxruntime (QLinearSoftmax,
    lookup tables); a sub-model cut after the DequantizeLinear ran a float Softmax instead and
    differed on 1.6% of these outputs."""
    rng = np.random.default_rng(5)
    m = make_model([helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=-1)],
                   [("x", (1, 8, 64))], [("y", (1, 8, 64))])
    q = quantize(m, [rng.standard_normal((1, 8, 64)).astype(np.float32) * 3 for _ in range(4)])
    g, _ = from_onnx(q)
    (region,) = [n for n in g.nodes if n.op == "onnx.region"]
    assert region.inputs[0].type.dtype == "uint8"
    assert not any(n.op == "qnn.dequantize" and n.output == region.inputs[0] for n in g.nodes)
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((1, 8, 64)).astype(np.float32) * 3
        np.testing.assert_array_equal(evaluate(g, {"x": x})[0], ort_run(q, {"x": x})[0])


def _qdq_pool(s_in: float, s_out: float, kernel=(3, 2)):
    """x -> QuantizeLinear -> DequantizeLinear -> AveragePool -> QuantizeLinear -> DequantizeLinear."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "si", "zi"], ["xq"], name="qx"),
             helper.make_node("DequantizeLinear", ["xq", "si", "zi"], ["xd"], name="dx"),
             helper.make_node("AveragePool", ["xd"], ["p"], name="pool", kernel_shape=list(kernel),
                              strides=list(kernel)),
             helper.make_node("QuantizeLinear", ["p", "so", "zo"], ["pq"], name="qp"),
             helper.make_node("DequantizeLinear", ["pq", "so", "zo"], ["y"], name="dp")]
    inits = [numpy_helper.from_array(np.float32(s_in), "si"), numpy_helper.from_array(np.uint8(128), "zi"),
             numpy_helper.from_array(np.float32(s_out), "so"), numpy_helper.from_array(np.uint8(128), "zo")]
    out_shape = [1, 16, 6 // kernel[0], 8 // kernel[1]]
    graph = helper.make_graph(nodes, "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 6, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_average_pool_with_ties_is_left_to_onnxruntime():
    """Equal scales and a 6-pixel window: window sums land on exact halves, which onnxruntime
    rounds to even; the pool runs in onnxruntime and equals it bit for bit."""
    q = _qdq_pool(0.05, 0.05)
    g, _ = from_onnx(q)
    assert not any("avg_pool" in n.op for n in g.nodes)
    (region,) = [n for n in g.nodes if n.op == "onnx.region"]
    assert "exact halves" in region.attrs["reason"], region.attrs["reason"]
    x = (np.random.default_rng(1).integers(-60, 60, (1, 16, 6, 8)) * 0.05).astype(np.float32)
    ours, theirs = evaluate(g, {"x": x})[0], ort_run(q, {"x": x})[0]
    np.testing.assert_array_equal(ours, theirs)
    # the integer pool's half-up rounding would have differed on this input: the rule matters
    half_up = np.floor(x.reshape(1, 16, 2, 3, 4, 2).sum(axis=(3, 5)) / 0.05 / 6 + 0.5 + 1e-9)
    assert np.any(half_up * 0.05 != theirs)


def test_average_pool_without_ties_stays_an_integer_pool():
    g, _ = from_onnx(_qdq_pool(0.05, 0.0371))
    assert any(n.op == "qnn.avg_pool2d" for n in g.nodes)
    assert not any(n.op == "onnx.region" for n in g.nodes)


@pytest.fixture(scope="module")
def small_net():
    """conv -> hard-swish-like Sigmoid gate (onnxruntime) -> conv, quantized (QDQ)."""
    rng = np.random.default_rng(3)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c1"], ["s1"], name="sig"),
        helper.make_node("Conv", ["s1", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[1, 1]),
    ]
    inits = {"w1": rand_w(rng, 16, 16, 3, 3), "b1": rng.standard_normal(16).astype(np.float32) * 0.1,
             "w2": rand_w(rng, 16, 16, 1, 1), "b2": rng.standard_normal(16).astype(np.float32) * 0.1}
    model = make_model(nodes, [("x", (1, 16, 8, 8))], [("c2", (1, 16, 8, 8))], inits)
    return quantize(model, rng.standard_normal((8, 16, 8, 8)).astype(np.float32))


def _divergence(model, monkeypatch=None, fault=None):
    from vta.env import Environment, get_env
    from vta.graph import executor
    from vta.models.divergence import node_divergence

    if fault is not None:
        real = executor.run_kernel

        def faulty(name, attrs, inputs, run_token=None):
            out = real(name, attrs, inputs, run_token=run_token)
            if name == fault:
                out = out.copy()
                out.flat[0] = out.flat[0] ^ 1   # one element one unit off
            return out

        monkeypatch.setattr(executor, "run_kernel", faulty)
    feeds = {"x": np.random.default_rng(7).standard_normal((1, 16, 8, 8)).astype(np.float32)}
    env = Environment({**get_env().cfg_dict, "TARGET": "sim"})
    return {r.tensor: r for r in node_divergence(model, feeds, env)}, feeds


def test_divergence_rows_match_an_independent_comparison(small_net):
    from vta.env import Environment, get_env
    from vta.models import runner

    rows, feeds = _divergence(small_net)
    q_tensors = [n.output[0] for n in small_net.graph.node if n.op_type == "QuantizeLinear"]
    assert set(q_tensors) <= set(rows)     # every quantized tensor of the model is compared
    ops = {rows[t].op for t in q_tensors}
    assert {"qnn.quantize", "vta.conv2d", "onnx.region"} <= ops
    # the model output's row is what runner.compare_outputs says of a separate run
    built = runner.build(small_net, Environment({**get_env().cfg_dict, "TARGET": "sim"}))
    try:
        ours = runner.run(built, feeds)
    finally:
        built.close()
    (ref,) = runner.compare_outputs(ours, ort_run(small_net, feeds))
    out = rows["c2"]
    assert out.iso_equal is None and out.equal == pytest.approx(ref["equal"])
    assert out.cosine == pytest.approx(ref["cosine"])
    # the region of the whole graph computes what onnxruntime computes, given its inputs
    assert all(rows[t].iso_equal == 1.0 for t in q_tensors if rows[t].op == "onnx.region")


def test_a_fault_in_one_node_shows_in_isolation_there_only(small_net, monkeypatch):
    clean, _ = _divergence(small_net)
    faulty, _ = _divergence(small_net, monkeypatch, fault="onnx.region")
    (sig,) = [t for t, r in clean.items() if r.op == "onnx.region"]
    size = clean[sig].size
    assert faulty[sig].iso_equal == pytest.approx(clean[sig].iso_equal - 1 / size)
    assert faulty[sig].iso_max_diff == 1
    for t, r in clean.items():
        if t != sig and r.iso_equal is not None:   # teacher-forced: the fault does not travel
            assert faulty[t].iso_equal == r.iso_equal, t


def test_forcing_every_tensor_gives_onnxruntime_outputs(small_net):
    from vta.env import Environment, get_env
    from vta.models.divergence import node_divergence

    feeds = {"x": np.random.default_rng(7).standard_normal((1, 16, 8, 8)).astype(np.float32)}
    env = Environment({**get_env().cfg_dict, "TARGET": "sim"})
    rows = node_divergence(small_net, feeds, env, force=lambda t: True)
    (out,) = [r for r in rows if r.onnx_op == "output"]
    # the output is the last forced tensor dequantized: onnxruntime's bits give its output
    assert out.iso_equal == 1.0 and out.iso_max_diff == 0.0
    none = node_divergence(small_net, feeds, env, force=lambda t: False)
    (free,) = [r for r in none if r.onnx_op == "output"]
    assert (free.iso_equal, free.iso_cosine) == (free.equal, free.cosine)   # nothing forced: the e2e run
