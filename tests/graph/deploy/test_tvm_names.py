"""Upstream deployment code with only its imports changed: relay.build, graph_executor,
debug_executor, runtime.save_param_dict/load_param_dict/load_module, ext_dev."""

from __future__ import annotations

import numpy as np
import pytest

import vta
from vta import tvm
from vta.tvm import relay, rpc
from vta.tvm.contrib import graph_executor, utils
from vta.tvm.contrib.debugger import debug_executor

from . import qnet


def test_upstream_deploy_flow(env):
    graph = qnet.make_graph()
    params = dict(graph.params)
    with vta.build_config():
        lib = relay.build(graph, target=tvm.target.Target(env.target, host=env.target_host), params=params)
    assert lib.type_key == "GraphExecutorFactory"
    temp = utils.tempdir()
    lib.export_library(temp.relpath("graphlib.so"))
    remote = rpc.LocalSession()
    remote.upload(temp.relpath("graphlib.so"))
    loaded = remote.load_module("graphlib.so")
    ctx = remote.ext_dev(0)
    m = graph_executor.GraphModule(loaded["default"](ctx))
    x = qnet.make_input()
    m.set_input("data", x)
    timer = m.module.time_evaluator("run", ctx, number=2, repeat=2)
    tcost = timer()
    assert len(tcost.results) == 2 and tcost.mean > 0
    np.testing.assert_array_equal(m.get_output(0).numpy(), qnet.reference(x))
    assert m.get_input(0).numpy().shape == x.shape
    remote.close()


def test_graph_executor_create_and_set_input_by_index_and_params(env):
    lib = relay.build(qnet.make_graph(), target=env.target)
    m = graph_executor.create(lib.get_graph_json(), lib.get_lib(), tvm.ext_dev(0))
    m.set_input(**lib.get_params())
    x = qnet.make_input(seed=5)
    m.set_input(0, x)
    m.run()
    out = tvm.nd.empty(qnet.reference(x).shape, "int8")
    m.get_output(0, out)
    np.testing.assert_array_equal(out.numpy(), qnet.reference(x))
    assert m.get_num_outputs() == 1 and m.get_num_inputs() >= 1


def test_param_blob_round_trip_through_runtime_names(env, tmp_path):
    lib = relay.build(qnet.make_graph())
    blob = tvm.runtime.save_param_dict(lib.get_params())
    back = tvm.runtime.load_param_dict(blob)
    assert sorted(back) == sorted(lib.params)
    for k, v in back.items():
        np.testing.assert_array_equal(v.numpy(), lib.params[k])
    (tmp_path / "params.bin").write_bytes(blob)
    bare = lib["remove_params"]()
    m = graph_executor.GraphModule(bare["default"](tvm.ext_dev(0)))
    m.load_params((tmp_path / "params.bin").read_bytes())
    x = qnet.make_input()
    m.run(data=x)
    np.testing.assert_array_equal(m.get_output(0).numpy(), qnet.reference(x))
    so = lib.export_library(tmp_path / "net.so")
    assert tvm.runtime.load_module(str(so)).type_key == "GraphExecutorFactory"


def test_debug_executor_names(env):
    lib = relay.build(qnet.make_graph())
    m = debug_executor.create(lib.get_graph_json(), lib.get_lib(), tvm.ext_dev(0))
    m.set_input(**lib.get_params())
    m.set_input("data", qnet.make_input())
    m.run()
    rows = m.last_report.as_dicts()
    assert [r["node"] for r in rows if r["device"] == "vta"] == ["conv0", "conv1"]


def test_relay_build_refuses_what_it_cannot_do(env):
    with pytest.raises(TypeError, match="vta.graph.Graph"):
        relay.build("not a graph")
    with pytest.raises(ValueError, match="target kind 'llvm'"):
        relay.build(qnet.make_graph(), target="llvm")
    with pytest.raises(ValueError, match="executor"):
        relay.build(qnet.make_graph(), executor="aot")
    with pytest.raises(AttributeError, match="from_onnx"):
        relay.frontend.from_tensorflow
    with pytest.raises(AttributeError, match="no attribute 'vm'"):
        relay.vm
