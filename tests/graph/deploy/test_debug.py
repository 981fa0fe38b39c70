"""The debug executor: one row per operator node with shapes, MACs, instructions and cycles."""

from __future__ import annotations

import numpy as np
import pytest

from vta.env import Environment, load_config
from vta.graph.debug_executor import DebugReport, GraphModuleDebug
from vta.runtime import ext_dev
from vta.tvm.contrib.debugger import debug_executor

from . import netlib


@pytest.fixture(params=["sim", "model"])
def target_env(request):
    cfg = load_config()
    cfg["TARGET"] = request.param
    with Environment(cfg) as env:
        yield env


def test_report_rows(target_env):
    env = target_env
    lib = netlib.make_lib(env)
    params = netlib.make_params(env)
    m = debug_executor.create(netlib.graph_json(env), lib, ext_dev(0))
    assert isinstance(m, GraphModuleDebug)
    m.set_input(**params)
    x = netlib.make_input(env)
    m.set_input("x", x)
    report = m.profile()
    assert isinstance(report, DebugReport)
    np.testing.assert_array_equal(m.get_output(0).numpy(), netlib.reference(x, params["p"]))
    assert [r.name for r in report.nodes] == ["add1", "cast", "add2"]
    assert [r.device for r in report.nodes] == ["vta", "cpu", "vta"]
    shape = (1, netlib.M, env.BATCH, env.BLOCK_OUT)
    assert report.nodes[0].input_shapes == [shape, shape] and report.nodes[0].output_shape == shape
    # one vector add: 2 loads + 1 ALU + 1 store + finish + (2 nops of the dependency handshake), as counted by fsim
    acc = report.nodes[0]
    assert acc.stats["insn_alu"] == 1 and acc.stats["insn_store"] == 1 and acc.instructions >= 5
    assert report.nodes[1].instructions == 0 and report.nodes[1].cycles is None
    if env.TARGET == "model":
        assert acc.cycles and acc.cycles > 0
        assert report.total_cycles == report.nodes[0].cycles + report.nodes[2].cycles
    else:
        assert acc.cycles is None and report.total_cycles is None
    assert all(r.macs == 0 and r.gemm_bound is None for r in report.nodes)
    text = str(report)
    assert "add1" in text and "cast" in text and text.splitlines()[-1].startswith("total")


def test_factory_debug_create(factory, env):
    dbg = factory["debug_create"]("default", ext_dev(0))
    x = netlib.make_input(env)
    dbg.set_input("x", x)
    dbg.run()
    assert len(dbg.last_report.nodes) == 3
    np.testing.assert_array_equal(dbg.get_output(0).numpy(), netlib.reference(x, netlib.make_params(env)["p"]))
    with pytest.raises(ValueError, match="not 'other'"):
        factory["debug_create"]("other", ext_dev(0))


def test_gemm_bound_percent():
    from vta.graph.debug_executor import NodeReport

    r = NodeReport(0, "c", "vta.conv2d", "vta", "", [], (1,), macs=256 * 100, instructions=3, cycles=200,
                   seconds=0.0, block=256)
    assert r.gemm_bound == pytest.approx(50.0)


@pytest.fixture
def model_env():
    cfg = load_config()
    cfg["TARGET"] = "model"
    with Environment(cfg) as env:
        yield env


def test_qnet_report_on_the_cycle_model(model_env):
    from vta.graph.build_module import build

    from . import qnet

    lib = build(qnet.make_graph())
    m = lib["debug_create"]("default", ext_dev(0))
    x = qnet.make_input()
    report = m.profile(data=x)
    np.testing.assert_array_equal(m.get_output(0).numpy(), qnet.reference(x))
    convs = [r for r in report.nodes if r.device == "vta"]
    assert [r.name for r in convs] == ["conv0", "conv1"]
    macs = 1 * qnet.C * qnet.HW * qnet.HW * qnet.C * 9          # outputs x (C * kh * kw)
    assert all(r.macs == macs for r in convs)
    for r in convs:
        assert r.cycles > 0 and r.stats["insn_gemm"] > 0
        block = model_env.BATCH * model_env.BLOCK_IN * model_env.BLOCK_OUT
        assert r.gemm_bound == pytest.approx(100.0 * macs / block / r.cycles)
        assert 0 < r.gemm_bound <= 100.0
    hosts = [r for r in report.nodes if r.device == "cpu"]
    assert hosts and all(r.cycles is None and r.reason for r in hosts)
    assert report.total_macs == 2 * macs
    assert "conv0" in str(report)


def test_macs_attribute_of_the_graph_wins(env):
    """A node carrying ``macs`` (the unpadded count) is reported with it."""
    import json

    doc = json.loads(netlib.graph_json(env))
    doc["nodes"][2]["attrs"]["macs"] = "1234"
    m = debug_executor.create(json.dumps(doc), netlib.make_lib(env), ext_dev(0))
    m.set_input(**netlib.make_params(env))
    report = m.profile(x=netlib.make_input(env))
    assert [r.macs for r in report.nodes] == [1234, 0, 0]
