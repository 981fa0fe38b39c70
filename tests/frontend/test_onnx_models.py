"""Whole models: the bundled digits CNN and ResNet-18 imported and checked against onnxruntime."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from vta.frontend import from_onnx  # noqa: E402
from vta.models import digits_model_path, load_digits_test, quantize, resnet18  # noqa: E402

from .helpers import ort_run  # noqa: E402
from .oracle import run_graph  # noqa: E402


def test_bundled_digits_model_is_small_and_quantized():
    import onnx

    path = digits_model_path()
    assert path.stat().st_size < 1_000_000
    ops = Counter(n.op_type for n in onnx.load(str(path)).graph.node)
    assert ops["QuantizeLinear"] and ops["Conv"] == 2 and ops["Gemm"] == 1


def test_digits_top1_matches_onnxruntime_int8():
    import onnx

    model = onnx.load(str(digits_model_path()))
    x, y, meta = load_digits_test()
    graph, params = from_onnx(model)
    assert set(params) == set(graph.params)
    ours = np.array([int(np.argmax(run_graph(graph, {"input": x[i:i + 1]})[0])) for i in range(len(x))])
    theirs = np.array([int(np.argmax(ort_run(model, {"input": x[i:i + 1]})[0])) for i in range(len(x))])
    assert np.mean(ours == theirs) >= 0.99
    assert abs(np.mean(theirs == y) - meta["int8_accuracy"]) < 1e-9  # the recorded figure is onnxruntime's
    assert np.mean(ours == y) >= 0.95


@pytest.fixture(scope="module")
def resnet_int8():
    rng = np.random.default_rng(0)
    return quantize(resnet18(seed=0), rng.standard_normal((2, 3, 224, 224)).astype(np.float32))


def test_resnet18_import_structure(resnet_int8):
    """(The import's time is a benchmark figure: benchmarks/onnx_import.py.)"""
    graph, params = from_onnx(resnet_int8)
    ops = Counter(n.op for n in graph.nodes)
    assert ops["qnn.conv2d"] == 20 and ops["qnn.add"] == 8 and ops["qnn.dense"] == 1
    assert ops["nn.max_pool2d"] == 1 and ops["qnn.global_avg_pool2d"] == 1
    assert graph.outputs[0].type.shape == (1, 1000)
    assert all(p.dtype in (np.int8, np.int32) for p in params.values())


def test_resnet18_oracle_matches_onnxruntime(resnet_int8):
    graph, _ = from_onnx(resnet_int8)
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    ours = run_graph(graph, {"data": x})[0]
    theirs = ort_run(resnet_int8, {"data": x})[0]
    assert np.argmax(ours) == np.argmax(theirs)


def test_resnet18_qoperator_after_preprocessing():
    """QLinearConv/QLinearAdd/QLinearGlobalAveragePool/QGemm, and the unused opset domains that
    onnxruntime's quant_pre_process lists."""
    rng = np.random.default_rng(0)
    q = quantize(resnet18(seed=0), rng.standard_normal((2, 3, 224, 224)).astype(np.float32),
                 quant_format="QOperator", preprocess=True)
    ops = Counter(n.op_type for n in q.graph.node)
    assert ops["QLinearConv"] == 20 and ops["QLinearAdd"] == 8 and ops["QGemm"] == 1
    assert len(q.opset_import) > 2
    graph, _ = from_onnx(q)
    assert Counter(n.op for n in graph.nodes)["qnn.conv2d"] == 20
    x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
    assert np.argmax(run_graph(graph, {"data": x})[0]) == np.argmax(ort_run(q, {"data": x})[0])
