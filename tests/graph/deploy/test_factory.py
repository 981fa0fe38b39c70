"""The executor factory: accessors, functions, serialisation, export → load (same process)."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from vta import runtime
from vta.errors import ModuleLoadError, TVMError
from vta.graph.factory import GraphExecutorFactoryModule
from vta.graph.params import save_param_dict
from vta.runtime import ext_dev, load_module
from vta.tvm.contrib import graph_executor

from . import netlib


def _run(module, env, x):
    m = graph_executor.GraphModule(module["default"](ext_dev(0)))
    m.set_input("x", x)
    m.run()
    return m.get_output(0).numpy()


def test_accessors(factory, env):
    assert factory.type_key == "GraphExecutorFactory"
    assert json.loads(factory.get_graph_json())["arg_nodes"] == [0, 1]
    assert factory.get_lib() is factory.imported_modules[0]
    params = factory.get_params()
    assert list(params) == ["p"]
    np.testing.assert_array_equal(params["p"].numpy(), netlib.make_params(env)["p"])
    assert factory["get_graph_json"]() == factory.graph_json
    assert factory.libmod_name == "default" and factory.module is factory


def test_default_runs_the_graph_in_process(factory, env):
    x = netlib.make_input(env)
    out = _run(factory, env, x)
    np.testing.assert_array_equal(out, netlib.reference(x, netlib.make_params(env)["p"]))


def test_executor_is_a_module_with_tvm_functions(factory):
    mod = factory["default"](ext_dev(0))
    assert isinstance(mod, runtime.Module)
    for name in ("set_input", "run", "get_output", "get_num_outputs", "get_num_inputs", "load_params"):
        assert callable(mod[name])
    assert mod["get_num_outputs"]() == 1


def test_remove_params_and_load_params(factory, env):
    bare = factory["remove_params"]()
    assert bare.get_params() == {} and bare.get_lib() is factory.get_lib()
    m = graph_executor.GraphModule(bare["default"](ext_dev(0)))
    p = netlib.make_params(env, seed=7)
    m.load_params(save_param_dict(p))
    x = netlib.make_input(env)
    m.run(x=x)
    np.testing.assert_array_equal(m.get_output(0).numpy(), netlib.reference(x, p["p"]))


def test_save_to_binary_layout(factory, env):
    """TVM's GraphExecutorFactory::SaveToBinary: json string, count, names, arrays, module name."""
    blob = factory.save_to_binary()
    gj = factory.get_graph_json().encode()
    assert blob[:8] == struct.pack("<Q", len(gj)) and blob[8:8 + len(gj)] == gj
    at = 8 + len(gj)
    assert blob[at:at + 8] == struct.pack("<Q", 1)
    assert blob[at + 8:at + 16] == struct.pack("<Q", 1)
    assert blob[at + 16:at + 25] == struct.pack("<Q", 1) + b"p"
    assert blob[at + 25:at + 33] == bytes.fromhex("3FA1B496F0405EDD")
    assert blob.endswith(struct.pack("<Q", 7) + b"default")
    back = GraphExecutorFactoryModule.load_from_binary(blob)
    assert back.graph_json == factory.graph_json
    np.testing.assert_array_equal(back.params["p"], factory.params["p"])


def test_export_and_load_same_process(net_so, env):
    loaded = load_module(net_so)
    assert isinstance(loaded, GraphExecutorFactoryModule)
    assert [m.type_key for m in loaded.imported_modules] == ["library"]
    lib = loaded.get_lib()
    for name in ("vta_add_1", "vta_add_2"):  # both operators' objects are in the one library
        assert lib.get_function(name).is_native
    x = netlib.make_input(env)
    np.testing.assert_array_equal(_run(loaded, env, x), netlib.reference(x, netlib.make_params(env)["p"]))


def test_export_tar_loads(factory, env, tmp_path):
    path = factory.export_library(tmp_path / "net.tar")
    loaded = load_module(path)
    x = netlib.make_input(env)
    np.testing.assert_array_equal(_run(loaded, env, x), netlib.reference(x, netlib.make_params(env)["p"]))


def test_bad_constructor_arguments(factory):
    lib = factory.get_lib()
    with pytest.raises(ValueError, match="not valid JSON"):
        GraphExecutorFactoryModule("{", lib)
    with pytest.raises(ValueError, match="'nodes' list"):
        GraphExecutorFactoryModule("[]", lib)
    with pytest.raises(TypeError, match="runtime Module"):
        GraphExecutorFactoryModule(factory.graph_json, "lib")
    with pytest.raises(TypeError, match="NumPy array or an NDArray"):
        GraphExecutorFactoryModule(factory.graph_json, lib, {"p": "x"})
    with pytest.raises(TypeError, match="needs a device"):
        factory["default"]()
    with pytest.raises(TypeError, match="Device"):
        factory["default"]("ext_dev")


def test_compiler_options_are_refused(factory, tmp_path):
    with pytest.raises(TypeError, match="not supported"):
        factory.export_library(tmp_path / "y.so", fcompile="ndk")


def test_cpu_only_graph_exports_without_a_library(tmp_path):
    """A graph with no accelerator node: the factory alone in the file, restored with no import."""
    from vta.graph import GraphBuilder
    from vta.graph.build_module import build

    b = GraphBuilder()
    x = b.input("x", (2, 3), "float32")
    y = b.nn.softmax(x)
    lib = build(b.finish([y]))
    assert lib.get_lib() is None
    path = lib.export_library(tmp_path / "cpu.so")
    loaded = load_module(path)
    assert isinstance(loaded, GraphExecutorFactoryModule) and loaded.get_lib() is None
    m = graph_executor.GraphModule(loaded["default"](ext_dev(0)))
    v = np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]], dtype=np.float32)
    m.run(x=v)
    e = np.exp(v - v.max(axis=1, keepdims=True))
    np.testing.assert_allclose(m.get_output(0).numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-6)


@pytest.mark.parametrize("cut", [0, 5, 8, 100, -20, -1])
def test_truncated_payload(factory, cut):
    blob = factory.save_to_binary()
    with pytest.raises(ModuleLoadError, match=r"corrupt GraphExecutorFactory payload: truncated.*at byte \d+"):
        GraphExecutorFactoryModule.load_from_binary(blob[:cut])


def test_corrupt_payload_array_magic(factory):
    blob = bytearray(factory.save_to_binary())
    at = blob.index(bytes.fromhex("3FA1B496F0405EDD"))
    blob[at] ^= 0xFF
    with pytest.raises(ModuleLoadError, match=rf"magic of array 0 \('p'\).*\(at byte {at} "):
        GraphExecutorFactoryModule.load_from_binary(bytes(blob))


def test_executor_module_close_releases_the_executor(factory, env):
    mod = factory["default"](ext_dev(0))
    mod.set_input("x", netlib.make_input(env))
    mod.run()
    mod.close()
    mod.close()
    with pytest.raises(TVMError, match="closed"):
        mod["run"]
