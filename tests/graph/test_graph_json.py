"""The graph JSON readers (executor, factory, debug executor, MAC share) refuse unknown keys at
every level, naming the key and the closest accepted one; every graph the project writes loads.

Oracle: the key sets of TVM's graph executor format as vta.graph.lower documents them, restated
here, and NumPy-free checks of what each graph holds (the runs themselves are tested elsewhere).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from vta.errors import ConfigError, GraphError
from vta.graph import mac_share
from vta.graph.executor import GraphModule
from vta.graph.factory import GraphExecutorFactoryModule
from vta.graph.graph_json import GraphJSONError, load_graph_json
from vta.graph.lower import lower

from .nets import basic_block, conv_relu_conv, dense_head

#: The keys of each level, as the format's documentation (vta/graph/lower.py) lists them.
DOCUMENTED = {
    "graph": {"nodes", "arg_nodes", "node_row_ptr", "heads", "attrs"},
    "attrs": {"shape", "dltype", "storage_id"},
    "node": {"op", "name", "inputs", "attrs"},
    "node attrs": {"func_name", "num_inputs", "num_outputs", "flatten_data", "host_kernel", "host_attrs", "device",
                   "reason", "op", "layer", "macs"},
}


@pytest.fixture(scope="module")
def lowered():
    """conv -> relu -> conv with the first layer on the CPU (so the graph has a host node)."""
    from tests.conftest import make_env

    with make_env() as env:
        yield lower(conv_relu_conv(np.random.default_rng(0)), env=env, pad_limit=2.0)


def _keys_used(doc: dict) -> dict[str, set]:
    ops = [n for n in doc["nodes"] if n["op"] != "null"]
    return {"graph": set(doc), "attrs": set(doc["attrs"]), "node": set().union(*map(set, doc["nodes"])),
            "node attrs": set().union(*(set(n["attrs"]) for n in ops))}


def _host_node(doc: dict) -> dict:
    return next(n for n in doc["nodes"] if n["op"] != "null" and n["attrs"]["func_name"] == "__host__"
                and n["attrs"]["host_kernel"] == "qnn.conv2d")


def _mutations():
    """(label, edit of the document, the message expected)."""
    def rename(obj: dict, old: str, new: str) -> None:
        obj[new] = obj.pop(old)

    def first_op(doc):
        return next(n for n in doc["nodes"] if n["op"] != "null")

    def host_attr(doc):
        node = _host_node(doc)
        attrs = json.loads(node["attrs"]["host_attrs"])
        rename(attrs, "padding", "paddings")
        node["attrs"]["host_attrs"] = json.dumps(attrs)

    return [
        ("graph", lambda d: rename(d, "node_row_ptr", "node_row_pt"), "unknown key 'node_row_pt'; did you mean "
         "node_row_ptr?"),
        ("graph attrs", lambda d: rename(d["attrs"], "storage_id", "storage_ids"), "attrs: unknown key "
         "'storage_ids'; did you mean storage_id?"),
        ("graph attrs", lambda d: d["attrs"].update(device_index=["list_int", [1]]), "attrs: unknown key "
         "'device_index'"),
        ("node", lambda d: rename(first_op(d), "inputs", "input"), "unknown key 'input'; did you mean inputs?"),
        ("node attrs", lambda d: rename(first_op(d)["attrs"], "func_name", "func_nmae"), "attrs: unknown key "
         "'func_nmae'; did you mean func_name?"),
        ("host attrs", host_attr, "(attributes of qnn.conv2d): unknown key 'paddings'; did you mean padding?"),
    ]


def test_the_writer_uses_exactly_the_documented_keys(lowered):
    used = _keys_used(json.loads(lowered.graph_json))
    for level, keys in used.items():
        assert keys <= DOCUMENTED[level], f"{level}: {keys - DOCUMENTED[level]} written but not documented"


@pytest.mark.parametrize("level, edit, message", _mutations(), ids=[m[0] for m in _mutations()])
def test_every_reader_refuses_an_unknown_key(lowered, level, edit, message):
    doc = json.loads(lowered.graph_json)
    edit(doc)
    bad = json.dumps(doc)
    pattern = message.replace("?", r"\?").replace("(", r"\(").replace(")", r"\)")
    with pytest.raises(GraphJSONError, match=pattern) as info:
        load_graph_json(bad)
    assert isinstance(info.value, ConfigError) and isinstance(info.value, GraphError)
    with pytest.raises(GraphJSONError, match=pattern):
        GraphModule(bad, lowered.lib)
    with pytest.raises(GraphJSONError, match=pattern):
        GraphExecutorFactoryModule(bad, lowered.lib, lowered.params)
    with pytest.raises(GraphJSONError, match=pattern):
        mac_share(bad)


def test_the_debug_executor_refuses_an_unknown_key(lowered):
    from vta.graph.debug_executor import create
    from vta.runtime import ext_dev

    doc = json.loads(lowered.graph_json)
    doc["heads_"] = doc["heads"]
    with pytest.raises(GraphJSONError, match=r"unknown key 'heads_'; did you mean heads\?"):
        create(json.dumps(doc), lowered.lib, ext_dev(0))


@pytest.mark.parametrize("text, message", [
    ("{", "graph JSON is not valid JSON"),
    ("[1]", "must be a graph executor JSON object with a 'nodes' list, got list"),
    ('{"nodes": {}}', "nodes must be a JSON list"),
    ('{"nodes": [[]]}', "node 0 must be a JSON object"),
    ('{"nodes": [{"op": "tvm_op", "name": "a", "attrs": {"host_kernel": "nn.relu", "host_attrs": "[1]"}}]}',
     "node 'a' host_attrs must be a JSON object"),
])
def test_malformed_documents(text, message):
    with pytest.raises(GraphJSONError, match=message):
        load_graph_json(text)


@pytest.mark.parametrize("make", [conv_relu_conv, basic_block, dense_head])
@pytest.mark.parametrize("pad_limit", [None, 2.0])
def test_every_generated_graph_loads(make, pad_limit):
    from tests.conftest import make_env

    with make_env() as env:
        low = lower(make(np.random.default_rng(1)), env=env, pad_limit=pad_limit)
    doc = load_graph_json(low.graph_json)
    assert doc == json.loads(low.graph_json)
    for level, keys in _keys_used(doc).items():
        assert keys <= DOCUMENTED[level]
    GraphModule(low.graph_json, low.lib).close()


def test_an_exported_library_loads_back(lowered, tmp_path):
    """export_library stores the graph JSON in the library; loading it reads it again."""
    from vta.runtime import load_module

    factory = GraphExecutorFactoryModule(lowered.graph_json, lowered.lib, lowered.params)
    path = factory.export_library(tmp_path / "net.so")
    with load_module(path) as loaded:
        assert load_graph_json(loaded["get_graph_json"]()) == json.loads(lowered.graph_json)


def test_a_partitioned_onnx_model_with_onnxruntime_regions_loads():
    """onnx.region nodes carry a whole onnxruntime sub-model in their host_attrs."""
    pytest.importorskip("onnxruntime")
    from vta.frontend import from_onnx

    from .test_onnx_region import _two_output_model

    from tests.conftest import make_env

    g, _ = from_onnx(_two_output_model())
    with make_env() as env:
        low = lower(g, env=env)
    doc = load_graph_json(low.graph_json)
    regions = [n for n in doc["nodes"] if n["op"] != "null" and n["attrs"].get("host_kernel") == "onnx.region"]
    assert len(regions) == 2
    attrs = json.loads(regions[0]["attrs"]["host_attrs"])
    attrs["modle"] = attrs.pop("model")
    regions[0]["attrs"]["host_attrs"] = json.dumps(attrs)
    with pytest.raises(GraphJSONError, match=r"unknown key 'modle'; did you mean model\?"):
        load_graph_json(json.dumps(doc))
