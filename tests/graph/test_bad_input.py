"""Bad input to compile and to the executor: specific errors naming what is wrong."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vta.errors import GraphError, UnsupportedOperatorError
from vta.graph import GraphBuilder, compile
from vta.graph.executor import GraphModule
from vta.graph.ir import Graph, Node, TensorType, Value

from .nets import conv_relu_conv


def test_params_that_do_not_fit_the_graph(env):
    g = conv_relu_conv(np.random.default_rng(0))
    with pytest.raises(GraphError, match=r"params\['w1'\].*int8\[16, 3, 3, 3\]"):
        compile(g, {"w1": np.zeros((16, 3, 1, 1), np.int8)}, env=env)
    with pytest.raises(GraphError, match="'nope'"):
        compile(g, {"nope": np.zeros(1)}, env=env)


def test_unsupported_operator_fails_compile(env):
    t = TensorType((1, 4), "float32")
    x = Value("x", t, "input")
    g = Graph([x], [Value("cell", t)], [Node("nn.lstm", (x,), {}, "cell", t)])
    with pytest.raises(UnsupportedOperatorError, match=r"'cell'.*'nn.lstm'"):
        compile(g, env=env)


def test_cpu_only_graph_runs_without_a_library(env):
    b = GraphBuilder()
    x = b.input("x", (2, 5), "float32")
    g = b.finish(b.nn.softmax(x, name="sm"))
    graph_json, lib, params = compile(g, env=env)
    assert lib is None and params == {}
    node = json.loads(graph_json)["nodes"][1]
    assert node["attrs"]["func_name"] == "__host__" and node["attrs"]["device"] == "cpu"
    m = GraphModule(graph_json, None)
    with pytest.raises(GraphError, match="'x' has not been set"):
        m.run()
    with pytest.raises(GraphError, match="no input 'y'"):
        m.set_input("y", np.zeros((2, 5), np.float32))
    m.run(x=np.zeros((2, 5), np.float32))
    np.testing.assert_allclose(m.get_output(0), np.full((2, 5), 0.2), rtol=1e-6)


def test_malformed_json_and_missing_function():
    with pytest.raises(GraphError, match="malformed graph JSON"):
        GraphModule("{}", None)
    doc = {"nodes": [{"op": "null", "name": "x", "inputs": []},
                     {"op": "tvm_op", "name": "f", "attrs": {"func_name": "vta_f"}, "inputs": [[0, 0, 0]]}],
           "arg_nodes": [0], "node_row_ptr": [0, 1, 2], "heads": [[1, 0, 0]],
           "attrs": {"shape": ["list_shape", [[1], [1]]], "dltype": ["list_str", ["int8", "int8"]],
                     "storage_id": ["list_int", [0, 1]]}}
    with pytest.raises(GraphError, match="'vta_f'"):
        GraphModule(json.dumps(doc), None)


def test_storage_plan_reuses_dead_results(env):
    b = GraphBuilder()
    x = b.input("x", (2, 3), "float32")
    a = b.nn.relu(x, name="a")
    c = b.nn.relu(a, name="b")
    d = b.nn.relu(c, name="c")
    g = b.finish(b.nn.softmax(d, name="d"))
    graph_json, lib, _ = compile(g, env=env)
    doc = json.loads(graph_json)
    assert [n["name"] for n in doc["nodes"]] == ["x", "a", "b", "c", "d"]
    assert doc["attrs"]["storage_id"][1] == [0, 1, 2, 1, 3]   # c reuses a's storage; inputs/outputs their own
    m = GraphModule(graph_json, lib)
    v = np.array([[-1, 0, 1], [2, -3, 4]], np.float32)
    m.run(x=v)
    e = np.exp(np.maximum(v, 0))
    np.testing.assert_allclose(m.get_output(0), e / e.sum(axis=1, keepdims=True), rtol=1e-6)
