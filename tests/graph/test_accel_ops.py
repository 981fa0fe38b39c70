"""One registration per accelerator operator: every pass handles every registered operator, and
no pass names an accelerator operator outside the registry."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

import vta.graph
from vta.errors import GraphError
from vta.graph import GraphBuilder, optimize
from vta.graph.accel_ops import ACCEL_OPS
from vta.graph.infer import OPS
from vta.graph.opdefs import op_def
from vta.graph.lower import lower
from vta.graph.passes.fuse import FUSED_KINDS

GRAPH_DIR = Path(vta.graph.__file__).resolve().parent
#: The modules that act on accelerator operators by name: they must read the registry.
PASS_MODULES = [*sorted((GRAPH_DIR / "passes").glob("*.py")), GRAPH_DIR / "lower.py", GRAPH_DIR / "accel.py",
                GRAPH_DIR / "accel_match.py", GRAPH_DIR / "macs.py"]


def _w(rng, shape):
    return rng.integers(-30, 31, shape).astype(np.int8)


def _conv_graph(rng):
    b = GraphBuilder()
    x = b.input("x", (1, 20, 6, 6), "int8", scale=0.05, zero_point=3)
    a = b.qnn.conv2d(x, b.const("w", _w(rng, (24, 20, 3, 3)), scale=0.01), padding=(1, 1, 1, 1), name="core")
    return b.finish(b.qnn.requantize(a, output_scale=0.4, output_zero_point=-2, name="rq"))


def _dense_graph(rng):
    b = GraphBuilder()
    x = b.input("x", (1, 40), "int8", scale=0.05, zero_point=3)
    a = b.qnn.dense(x, b.const("w", _w(rng, (10, 40)), scale=0.01), name="core")
    return b.finish(b.qnn.requantize(a, output_scale=0.4, output_zero_point=-2, name="rq"))


def _add_graph(rng):
    del rng
    b = GraphBuilder()
    x = b.input("x", (1, 20, 4, 4), "int8", scale=0.05, zero_point=3)
    y = b.input("y", (1, 20, 4, 4), "int8", scale=0.07, zero_point=-1)
    # not 0.1: x's scale would be half of it, and onnxruntime's ties to even would keep the sum off the ALU
    return b.finish(b.qnn.add(x, y, output_scale=0.13, output_zero_point=0, name="core"))


def _mul_graph(rng):
    del rng
    b = GraphBuilder()
    x = b.input("x", (1, 20, 4, 4), "uint8", scale=0.05, zero_point=130)
    y = b.input("y", (1, 20, 4, 4), "int8", scale=0.07, zero_point=-1)
    return b.finish(b.op("qnn.mul", [x, y], dict(lhs_scale=0.05, lhs_zero_point=130, rhs_scale=0.07,
                                                rhs_zero_point=-1, output_scale=0.1, output_zero_point=3),
                         "core"))


def _max_pool_graph(rng):
    del rng
    b = GraphBuilder()
    x = b.input("x", (1, 20, 6, 6), "int8", scale=0.05, zero_point=3)
    return b.finish(b.nn.max_pool2d(x, (2, 2), (2, 2), name="core"))


def _avg_pool_graph(rng):
    del rng
    b = GraphBuilder()
    x = b.input("x", (1, 20, 6, 6), "uint8", scale=0.05, zero_point=3)
    return b.finish(b.qnn.global_avg_pool2d(x, output_scale=0.02, output_zero_point=1, name="core"))


def _upsampling_graph(rng):
    del rng
    b = GraphBuilder()
    x = b.input("x", (1, 20, 3, 4), "uint8", scale=0.05, zero_point=3)
    y = b.input("y", (1, 20, 6, 12), "uint8", scale=0.05, zero_point=3)
    return b.finish(b.qnn.add(b.nn.upsampling(x, 2, 3, name="core"), y, output_scale=0.1, output_zero_point=0))


def _minmax_graph(rng):
    del rng
    b = GraphBuilder()
    x = b.input("x", (1, 20, 4, 4), "uint8", scale=0.05, zero_point=3)
    y = b.input("y", (1, 20, 4, 4), "int8", scale=0.07, zero_point=-1)
    return b.finish(b.op("qnn.maximum", [x, y], dict(lhs_scale=0.05, lhs_zero_point=3, rhs_scale=0.07,
                                                    rhs_zero_point=-1, output_scale=0.06, output_zero_point=2),
                         "core"))


#: A small graph per registered kind whose node ``core`` becomes that accelerator operator.
GRAPHS = {"conv2d": _conv_graph, "dense": _dense_graph, "add": _add_graph, "multiply": _mul_graph,
          "max_pool2d": _max_pool_graph, "avg_pool2d": _avg_pool_graph,
          "upsampling": _upsampling_graph, "minmax": _minmax_graph}


def test_every_registered_kind_has_a_fusion_and_a_test_graph():
    kinds = {op.kind for op in ACCEL_OPS.values()}
    assert set(FUSED_KINDS) == kinds
    assert set(GRAPHS) == kinds
    sources = [s for op in ACCEL_OPS.values() for s in op.sources]
    assert len(sources) == len(set(sources)), "a graph operator starts chains of two accelerator operators"
    for name, op in ACCEL_OPS.items():
        assert op.name == name and name.startswith("vta.")
        assert name not in OPS and op_def(name) is op.opdef
        assert op.activation_inputs and op.layout in ("NCHW", "NC")
        assert all(s in OPS for s in op.sources)


@pytest.mark.parametrize("name", sorted(ACCEL_OPS))
def test_every_pass_handles_the_registered_operator(name, env):
    op = ACCEL_OPS[name]
    g = optimize(GRAPHS[op.kind](np.random.default_rng(3)), env)
    node = g.node("core")
    # fused (FuseAccelerator), placed (PlaceDevices)
    assert node.op == name and node.attrs["device"] == "vta" and node.attrs["reason"].startswith("supported")
    # packed (PackLayout): its activations are packed, the output too
    assert node.attrs["layout"] == f"{op.layout}{env.BATCH}n{env.BLOCK_IN}c"
    for i in op.activation_inputs:
        if i < len(node.inputs):
            assert node.inputs[i].type.ndim == len(op.layout) + 2
    # padded (PadChannels): padding again changes nothing
    consts = {op.roles[i]: g.params[v.name] for i, v in enumerate(node.inputs) if v.kind == "param"}
    spec = node.attrs["spec"]
    assert op.pad(spec, consts, env)[0] is spec
    assert node.attrs["channels"] in (10, 20, 24)
    assert op.macs(spec) >= 0
    # every node of the graph is placed
    assert all(n.attrs.get("device") in ("vta", "cpu") for n in g.nodes)


@pytest.mark.parametrize("name", sorted(ACCEL_OPS))
def test_every_registered_operator_lowers(name, env):
    op = ACCEL_OPS[name]
    low = lower(GRAPHS[op.kind](np.random.default_rng(4)), env=env)
    assert f'"op": "{name}"' in low.graph_json
    assert low.lib is not None


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings}


def test_no_pass_names_an_accelerator_operator():
    named = {}
    for path in PASS_MODULES:
        for s in _string_constants(path):
            if re.fullmatch(r"vta\.[a-z_0-9]+", s):
                named.setdefault(s, set()).add(path.name)
    # passes only name the host glue operators of the graph IR (offsets, folding), never an
    # accelerator operator: those they read from the registry
    assert not set(named) & set(ACCEL_OPS), {k: v for k, v in named.items() if k in ACCEL_OPS}
    assert set(named) <= {k for k in OPS if k.startswith("vta.")}, named


def test_mac_share_counts_logical_macs_per_device(env):
    from vta.graph import mac_share

    from .nets import conv_relu_conv

    conv1 = 16 * 8 * 8 * 3 * 3 * 3     # 3 -> 16, 3x3, 8x8 output: not the 16 padded input channels
    conv2 = 10 * 8 * 8 * 16            # 16 -> 10, 1x1
    g = optimize(conv_relu_conv(np.random.default_rng(0)), env)
    assert mac_share(g) == {"vta_macs": conv1 + conv2, "cpu_macs": 0, "share": 1.0}
    g = optimize(conv_relu_conv(np.random.default_rng(0)), env, pad_limit=2.0)   # the first layer on the CPU
    assert g.node("conv1").attrs["device"] == "cpu"
    lowered = lower(conv_relu_conv(np.random.default_rng(0)), env=env, pad_limit=2.0)
    share = mac_share(lowered)
    assert share == {"vta_macs": conv2, "cpu_macs": conv1, "share": conv2 / (conv1 + conv2)}
    assert mac_share(lowered.graph_json) == share    # what the run report and the profile read
    with pytest.raises(TypeError, match="int"):
        mac_share(3)
    with pytest.raises(GraphError, match="'graph'"):
        mac_share("graph")
