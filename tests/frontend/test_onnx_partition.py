"""Partitioned models: what the importer does not convert runs on onnxruntime, the rest on the
accelerator; onnxruntime on the whole model is the oracle."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from vta.errors import FrontendError  # noqa: E402
from vta.frontend import from_onnx  # noqa: E402
from vta.graph.host import evaluate  # noqa: E402
from vta.models import quantize  # noqa: E402

from .helpers import make_model, ort_run, rand_w  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _cosine(a, b) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def silu_net():
    """conv -> SiLU (Sigmoid * x: no converter) -> conv -> global pool -> Gemm -> Softmax, quantized."""
    rng = np.random.default_rng(3)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c1"], ["s1"], name="sig"),
        helper.make_node("Mul", ["c1", "s1"], ["a1"], name="silu"),
        helper.make_node("Conv", ["a1", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=1),
    ]
    inits = {"w1": rand_w(rng, 16, 3, 3, 3), "b1": rng.standard_normal(16).astype(np.float32) * 0.1,
             "w2": rand_w(rng, 16, 16, 3, 3), "b2": rng.standard_normal(16).astype(np.float32) * 0.1,
             "wf": rand_w(rng, 10, 16), "bf": np.zeros(10, np.float32)}
    model = make_model(nodes, [("x", (1, 3, 16, 16))], [("prob", (1, 10))], inits)
    calib = rng.standard_normal((8, 3, 16, 16)).astype(np.float32)
    return quantize(model, calib)


def test_unconverted_operators_become_onnxruntime_regions(silu_net):
    graph, _ = from_onnx(silu_net)
    regions = [n for n in graph.nodes if n.op == "onnx.region"]
    assert regions, "the SiLU and the Softmax run on onnxruntime"
    assert any("Sigmoid" in n.attrs["ops"] for n in regions)
    assert any("Softmax" in n.attrs["ops"] for n in regions)
    assert any(n.op == "qnn.conv2d" for n in graph.nodes)
    tensors = {t for n in silu_net.graph.node for t in list(n.input) + list(n.output)}
    names = {n.name for n in silu_net.graph.node}
    for n in regions:
        # the border is made of the model's own tensors; the sub-model holds the model's own nodes
        assert set(n.attrs["inputs"]) <= tensors and set(n.attrs["outputs"]) <= tensors
        sub = onnx.load_from_string(base64.b64decode(n.attrs["model"]))
        assert {m.name for m in sub.graph.node} <= names
        assert n.attrs["reason"].startswith("onnxruntime runs ONNX operators")


def test_partitioned_model_on_fsim_agrees_with_onnxruntime(silu_net):
    from vta.env import get_env
    from vta.graph import compile as compile_graph
    from vta.graph.executor import GraphModule

    x = np.random.default_rng(11).standard_normal((1, 3, 16, 16)).astype(np.float32)
    (want,) = ort_run(silu_net, {"x": x})
    graph, params = from_onnx(silu_net)
    env = get_env()
    with env:
        js, lib, cparams = compile_graph(graph, params, env=env)
        with GraphModule(js, lib) as m:
            m.set_input(**cparams)
            m.run(x=x)
            got = m.get_output(0)
            records = m.node_records()
    assert got.shape == want.shape
    assert _cosine(got, want) >= 0.99
    assert int(np.argmax(got)) == int(np.argmax(want))
    devices = {r.device for r in records}
    assert devices == {"vta", "cpu"}
    assert all(r.reason for r in records)
    assert any(r.op == "onnx.region" and r.device == "cpu" for r in records)


def test_multiple_inputs_and_outputs_and_integer_inputs():
    """A model that runs wholly on onnxruntime: one region with two outputs, an int32 input."""
    nodes = [helper.make_node("Cast", ["k"], ["kf"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Mul", ["x", "kf"], ["y"], name="mul"),
             helper.make_node("Erf", ["x"], ["z"], name="erf")]
    graph = helper.make_graph(nodes, "t",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4]),
                               helper.make_tensor_value_info("k", TensorProto.INT32, ["n", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with pytest.raises(FrontendError, match=r"input 'x' has a dynamic dimension 0 \('n'\)"):
        from_onnx(model)
    g, _ = from_onnx(model, shape={"x": (2, 4), "k": (2, 4)})
    assert [v.type.dtype for v in g.inputs] == ["float32", "int32"]
    assert [n.attrs["index"] for n in g.nodes] == [0, 1]   # one region, two output nodes
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((2, 4)).astype(np.float32), "k": rng.integers(-5, 5, (2, 4)).astype(np.int32)}
    want = ort_run(model, feeds)
    for ours, theirs in zip(evaluate(g, feeds), want, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    from vta.env import get_env
    from vta.graph import compile as compile_graph
    from vta.graph.executor import GraphModule

    with get_env() as env:
        js, lib, params = compile_graph(g, env=env)
        with GraphModule(js, lib) as m:
            m.set_input(**params)
            for _ in range(2):   # the session and its outputs are reused, not stale
                m.run(**feeds)
                for i, theirs in enumerate(want):
                    np.testing.assert_array_equal(m.get_output(i), theirs)
                feeds = {"x": feeds["x"] + 1.0, "k": feeds["k"]}
                want = ort_run(model, feeds)


def test_old_opset_is_converted_saying_so(caplog):
    rng = np.random.default_rng(0)
    m = make_model([helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
                    helper.make_node("Relu", ["c"], ["y"], name="relu")],
                   [("x", (1, 4, 4, 4))], [("y", (1, 4, 4, 4))], {"w": rand_w(rng, 4, 4, 1, 1)}, opset=9)
    with caplog.at_level("WARNING", logger="vta.frontend"):
        g, _ = from_onnx(m)
    assert "opset 9" in caplog.text and "version_converter" in caplog.text
    x = rng.standard_normal((1, 4, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(evaluate(g, {"x": x})[0], ort_run(m, {"x": x})[0], rtol=1e-6)


_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, {root!r})
    import vta
    from vta.tvm.contrib import graph_executor
    lib = vta.runtime.load_module({so!r})
    m = graph_executor.GraphModule(lib["default"](vta.runtime.ext_dev(0)))
    m.set_input("x", np.load({x!r}))
    m.run()
    np.save({out!r}, m.get_output(0).numpy())
""")


def test_partitioned_model_deploys_in_a_fresh_process_and_over_rpc(silu_net, tmp_path):
    """The sub-models travel inside the exported library."""
    from vta import rpc
    from vta.env import get_env
    from vta.graph import build
    from vta.tvm.contrib import graph_executor

    x = np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32)
    graph, params = from_onnx(silu_net)
    with get_env():
        factory = build(graph, params)
        m = graph_executor.GraphModule(factory["default"](__import__("vta").runtime.ext_dev(0)))
        m.set_input("x", x)
        m.run()
        here = m.get_output(0).numpy()
    so = tmp_path / "net.so"
    factory.export_library(so)
    np.save(tmp_path / "x.npy", x)
    script = _CHILD.format(root=str(ROOT), so=str(so), x=str(tmp_path / "x.npy"), out=str(tmp_path / "y.npy"))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), here)
    with rpc.LocalSession() as remote:
        remote.upload(so)
        lib = remote.load_module("net.so")
        rm = graph_executor.GraphModule(lib["default"](remote.ext_dev(0)))
        rm.set_input("x", x)
        rm.run()
        np.testing.assert_array_equal(rm.get_output(0).numpy(), here)
    assert _cosine(here, ort_run(silu_net, {"x": x})[0]) >= 0.99



def test_cli_quantize_then_run_compare(tmp_path):
    """``python -m vta quantize`` then ``run --compare --shape`` on a model with a dynamic batch."""
    import io

    from vta.__main__ import main

    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("HardSigmoid", ["c"], ["h"], name="hsig"),
             helper.make_node("GlobalAveragePool", ["h"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["y"], name="flat")]
    model = make_model(nodes, [("x", ("n", 3, 8, 8))], [("y", ("n", 16))], {"w": rand_w(rng, 16, 3, 3, 3)})
    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(model, str(src))
    assert main(["quantize", str(src), "--out", str(dst), "--random", "2"]) == 2   # the batch is dynamic
    assert not dst.exists()
    out = io.StringIO()
    assert main(["quantize", str(src), "--out", str(dst), "--random", "2", "--shape", "x=1,3,8,8"], out) == 0
    assert dst.is_file()
    out = io.StringIO()
    assert main(["run", str(dst), "--compare", "--shape", "x=1,3,8,8"], out) == 0
    text = out.getvalue()
    assert "comparison with onnxruntime" in text and "cosine similarity" in text
    assert "accelerator:" in text and "% of the wall time" in text
    cos = float(text.split("cosine similarity ")[1].split()[0])
    assert cos >= 0.99
    assert main(["run", str(dst), "--shape", "x=1,3"], io.StringIO()) == 2   # rank contradicts the model
    assert main(["run", str(dst), "--shape", "oops"], io.StringIO()) == 2


def test_opset_converters_pick_the_implementation_of_the_model_opset():
    """ReduceMean's axes: an attribute up to opset 17, an input from 18 (``_impl_v13``/``_impl_v18``)."""
    from vta.frontend.onnx_qdq import ReduceMean

    assert ReduceMean.get_converter(13) is ReduceMean._impl_v13
    assert ReduceMean.get_converter(17) is ReduceMean._impl_v13
    assert ReduceMean.get_converter(21) is ReduceMean._impl_v18
    assert ReduceMean.get_converter(12) is None
    rng = np.random.default_rng(4)
    for opset in (13, 18):
        axes_in = ["c", "axes"] if opset >= 18 else ["c"]
        attrs = {} if opset >= 18 else {"axes": [2, 3]}
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
                 helper.make_node("ReduceMean", axes_in, ["y"], name="mean", keepdims=1, **attrs)]
        inits = {"w": rand_w(rng, 8, 4, 1, 1)}
        if opset >= 18:
            inits["axes"] = np.array([2, 3], np.int64)
        m = make_model(nodes, [("x", (1, 4, 4, 4))], [("y", (1, 8, 1, 1))], inits, opset=opset)
        q = quantize(m, rng.standard_normal((4, 4, 4, 4)).astype(np.float32))
        g, _ = from_onnx(q)
        ops = [n.op for n in g.nodes]
        assert "onnx.region" not in ops and {"qnn.global_avg_pool2d", "nn.global_avg_pool2d"} & set(ops), opset


def test_debug_executor_shows_cpu_regions_and_accelerator_nodes(silu_net):
    from vta.env import get_env
    from vta.graph import build
    from vta.runtime import ext_dev

    x = np.random.default_rng(2).standard_normal((1, 3, 16, 16)).astype(np.float32)
    graph, params = from_onnx(silu_net)
    with get_env():
        factory = build(graph, params)
        debug = factory["debug_create"]("default", ext_dev(0))
        report = debug.profile(x=x)
    ops = {(n.device, n.op) for n in report.nodes}
    assert ("cpu", "onnx.region") in ops and any(d == "vta" for d, _ in ops)
    region = next(n for n in report.nodes if n.op == "onnx.region")
    assert region.reason.startswith("onnxruntime runs ONNX operators")
    mac_share, wall_share = report.accelerator_share
    vta_macs = sum(n.macs for n in report.nodes if n.device == "vta")
    # logical MACs from the ONNX shapes: conv1 16x16x16 outputs x 3x3x3, conv2 x 16x3x3, fc 10 x 16
    assert report.total_macs == 16 * 256 * 27 + 16 * 256 * 144 + 10 * 16
    assert 0 < vta_macs and mac_share == vta_macs / report.total_macs
    assert 0.0 <= wall_share <= 1.0
    assert report.table().splitlines()[0].startswith("accelerator: ")
    # the run report (python -m vta run) shows the same share: one count, vta.graph.mac_share
    from vta.models import runner

    built = runner.build(silu_net, get_env())
    try:
        runner.run(built, x)
        assert runner.accelerator_share(built)[0] == mac_share
        assert f"{100 * mac_share:.1f}% of {report.total_macs:,} MACs" in runner.format_layers(built)
    finally:
        built.close()


def test_cli_profile_takes_the_names_run_takes(tmp_path):
    import io

    from vta.__main__ import main

    out = io.StringIO()
    assert main(["profile", "digits", "--out", str(tmp_path / "p"), "--no-plots", "--target", "model"], out) == 0
    text = out.getvalue()
    assert "every node, CPU and accelerator side by side" in text and "accelerator: " in text
    assert main(["profile", "zoo:no_such_model", "--out", str(tmp_path / "q")], io.StringIO()) == 2
