"""Building, quantizing and comparing small ONNX models for the importer tests."""

from __future__ import annotations

import numpy as np

from vta.frontend import from_onnx

from .oracle import run_graph


def make_model(nodes, inputs, outputs, inits=None, opset=13):
    """A checked float ModelProto; ``inputs``/``outputs`` are (name, shape) pairs."""
    from onnx import TensorProto, checker, helper, numpy_helper

    graph = helper.make_graph(
        nodes, "t",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        initializer=[numpy_helper.from_array(_arr(v), k) for k, v in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    checker.check_model(model)
    return model


def _arr(v):
    a = np.asarray(v)
    return a if a.dtype.kind in "iu" else a.astype(np.float32)


def rand_w(rng, *shape, scale=None):
    fan = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    return (rng.standard_normal(shape) * (scale or np.sqrt(2.0 / fan))).astype(np.float32)


def calib(rng, shape, n=8):
    return rng.standard_normal((n, *shape[1:])).astype(np.float32) if shape[0] == 1 else \
        [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


def ort_run(model, feeds):
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def output_scale(graph, i=0):
    """The scale of the integers a float output was dequantized from (None if not one)."""
    node = graph.producer(graph.outputs[i])
    if node is not None and node.op == "qnn.dequantize":
        s = np.asarray(node.attrs["scale"], np.float64)
        return float(s.max())
    return None


def compare(qmodel, feeds, shape=None, frac=0.999):
    """Import ``qmodel``, run the oracle and onnxruntime, assert the int8 outputs agree."""
    graph, params = from_onnx(qmodel, shape=shape)
    ours = run_graph(graph, feeds)
    theirs = ort_run(qmodel, feeds)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.shape == b.shape
        s = output_scale(graph, i)
        if s is None:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            continue
        lsb = np.abs(a.astype(np.float64) - b.astype(np.float64)) / s
        assert lsb.max() <= 1.0 + 1e-3, f"output {i}: {lsb.max():.3f} units apart"
        assert np.mean(lsb < 1e-3) >= frac, f"output {i}: only {np.mean(lsb < 1e-3):.4%} equal"
    return graph
