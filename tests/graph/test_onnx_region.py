"""An onnxruntime region's outputs are shared by its output nodes within one graph run only: a
new run (or a call without a run token) runs the session again, even on the same input buffer
objects refilled in place."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from vta.graph import onnx_region  # noqa: E402


def _two_output_model():
    """x -> (Sigmoid(x), Neg(x)): two outputs of one region."""
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sig"),
             helper.make_node("Neg", ["x"], ["n"], name="neg")]
    info = [helper.make_tensor_value_info(v, TensorProto.FLOAT, [2, 3]) for v in ("x", "s", "n")]
    graph = helper.make_graph(nodes, "two", info[:1], info[1:])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


class _CountingSession:
    def __init__(self, session):
        self.session, self.calls = session, 0

    def run(self, *args, **kwargs):
        self.calls += 1
        return self.session.run(*args, **kwargs)


@pytest.fixture
def region_attrs():
    attrs = {"model": onnx_region.encode_model(_two_output_model().SerializeToString()),
             "inputs": ["x"], "outputs": ["s", "n"], "index": 0}
    region = onnx_region._region(attrs["model"])
    counting = region.session = _CountingSession(region.session)
    yield attrs, counting
    region.session = counting.session


def test_outputs_reused_within_a_run_and_never_across_runs(region_attrs):
    attrs, counting = region_attrs
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    s = onnx_region.run_region(attrs, [x], run_token=1)
    n = onnx_region.run_region({**attrs, "index": 1}, [x], run_token=1)
    assert counting.calls == 1                       # one onnxruntime run for both output nodes
    np.testing.assert_allclose(s, _sigmoid(x), rtol=1e-6)
    np.testing.assert_array_equal(n, -x)
    x += 1.0                                         # the same buffer object, new contents, next run
    s = onnx_region.run_region(attrs, [x], run_token=2)
    n = onnx_region.run_region({**attrs, "index": 1}, [x], run_token=2)
    assert counting.calls == 2
    np.testing.assert_allclose(s, _sigmoid(x), rtol=1e-6)
    np.testing.assert_array_equal(n, -x)
    x -= 3.0                                         # no token: no reuse at all
    for _ in range(2):
        np.testing.assert_array_equal(onnx_region.run_region({**attrs, "index": 1}, [x]), -x)
    assert counting.calls == 4


def test_executor_refilling_an_input_buffer_in_place_gets_fresh_outputs(monkeypatch):
    """The graph executor, made to keep its input buffers and refill them in place, runs the
    region again on every graph run (one session run per graph run for both outputs)."""
    from vta.env import get_env
    from vta.frontend import from_onnx
    from vta.graph import compile as compile_graph
    from vta.graph.executor import GraphModule

    def store_in_place(self, idx, value):
        arr = np.asarray(value)
        if idx in self._host:
            np.copyto(self._host[idx], arr)      # the same object as the last run's input
        else:
            self._host[idx] = np.array(arr, copy=True)
        self._fresh_on_host.add(idx)

    monkeypatch.setattr(GraphModule, "_store_input", store_in_place)
    g, _ = from_onnx(_two_output_model())
    assert [n.op for n in g.nodes] == ["onnx.region", "onnx.region"]
    region = onnx_region._region(g.nodes[0].attrs["model"])
    counting = _CountingSession(region.session)
    monkeypatch.setattr(region, "session", counting)
    rng = np.random.default_rng(5)
    with get_env() as env:
        js, lib, params = compile_graph(g, env=env)
        with GraphModule(js, lib) as m:
            m.set_input(**params)
            for run in range(3):
                x = rng.standard_normal((2, 3)).astype(np.float32)
                m.run(x=x)
                np.testing.assert_allclose(m.get_output(0), _sigmoid(x), rtol=1e-6)
                np.testing.assert_array_equal(m.get_output(1), -x)
                assert counting.calls == run + 1
