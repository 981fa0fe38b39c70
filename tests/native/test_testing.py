"""vta.testing.run and vta.testing.simulator; the runtime library of every configuration."""

from __future__ import annotations

import ctypes
import json

import pytest

import vta.testing
from vta.env import Environment
from vta.runtime import vta_bridge
from vta.runtime.registry import get_global_func
from vta.testing import simulator

from .conftest import RecordingDevice

pytestmark = pytest.mark.native


def with_target(env: Environment, target: str) -> Environment:
    return Environment({**env.cfg_dict, "TARGET": target})


def test_run_gives_a_local_session_for_sim(env, monkeypatch):
    monkeypatch.delenv("VTA_LOCAL_SIM_RPC", raising=False)
    seen = []

    def body(e, remote):
        seen.append((e, type(remote).__name__, remote.ext_dev(0).device_type))
        return 42

    assert vta.testing.run(body) == 42
    assert seen == [(env, "LocalSession", 12)]


def test_run_connects_to_a_local_server(env, monkeypatch, tmp_path):
    from vta.rpc.server import Server

    with Server("127.0.0.1", 0, workdir=tmp_path).start() as server:
        monkeypatch.setenv("VTA_LOCAL_SIM_RPC", str(server.port))
        kinds = vta.testing.run(lambda e, remote: type(remote).__name__)
    assert kinds == "ClientSession"


def test_run_rejects_a_bad_port(env, monkeypatch):
    monkeypatch.setenv("VTA_LOCAL_SIM_RPC", "not-a-port")
    with pytest.raises(RuntimeError, match="VTA_LOCAL_SIM_RPC='not-a-port' is not a TCP port"):
        vta.testing.run(lambda e, remote: None)


def test_run_rejects_an_unknown_target(env):
    with with_target(env, "fpga9000"):
        with pytest.raises(RuntimeError, match="Unknown target 'fpga9000'"):
            vta.testing.run(lambda e, remote: None)


def test_run_needs_a_server_for_a_board(env, monkeypatch):
    monkeypatch.delenv("VTA_RPC_HOST", raising=False)
    monkeypatch.delenv("VTA_RPC_PORT", raising=False)
    with with_target(env, "pynq"):
        with pytest.raises(RuntimeError, match="set VTA_RPC_HOST and VTA_RPC_PORT"):
            vta.testing.run(lambda e, remote: None)


def test_profiler_functions_are_registered(env):
    assert simulator.enabled()
    for name in ("profiler_clear", "profiler_status", "profiler_debug_mode"):
        assert get_global_func(f"vta.simulator.{name}", allow_missing=True) is not None


def test_stats_and_clear_follow_the_device(env, rt, recorder):
    rt.VTASynchronize.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    simulator.clear_stats()
    assert rt.VTASynchronize(rt.VTATLSCommandHandle(), 1 << 31) == 0
    stats = simulator.stats()
    # an empty window: NOP-ST, NOP-LD, NOP-CMP, FINISH, and nothing moved
    assert [len(s) for s in recorder.streams] == [4]
    assert stats["acc_load_nbytes"] == stats["out_store_nbytes"] == stats["alu_counter"] == 0
    assert json.loads(get_global_func("vta.simulator.profiler_status")()) == stats
    simulator.clear_stats()
    assert all(v == 0 for k, v in simulator.stats().items() if not k.startswith("tokens_"))


def test_debug_mode_without_device_support(env, recorder):
    """A device implementing no debug flag accepts 0 and names what it accepts otherwise."""
    simulator.debug_mode(0)
    with pytest.raises(ValueError, match=r"flag 1 is not supported by the recording device; accepted bits: none"):
        simulator.debug_mode(simulator.DEBUG_SKIP_EXEC)
    with pytest.raises(TypeError, match="must be an int"):
        simulator.debug_mode(True)


def test_unknown_target_has_no_device(env):
    from vta.errors import ConfigError

    with pytest.raises(ConfigError, match="TARGET 'fpga9000' has no device"):
        vta_bridge.device_for(with_target(env, "fpga9000"))


def test_attach_device_checks_its_argument(env):
    with pytest.raises(TypeError, match="needs a vta.sim.device.Device"):
        vta_bridge.attach_device(env, object())


def test_runtime_library_of_every_configuration(any_env):
    """Every shipped configuration builds, and an empty window runs on its own device."""
    lib = vta_bridge.runtime(any_env)
    lib.VTATLSCommandHandle.restype = ctypes.c_void_p
    lib.VTASynchronize.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    real = vta_bridge.device_for(any_env)
    rec = RecordingDevice(real)
    vta_bridge.attach_device(any_env, rec)
    try:
        assert lib.VTASynchronize(lib.VTATLSCommandHandle(), 1 << 31) == 0
    finally:
        vta_bridge.attach_device(any_env, real)
    assert [len(s) for s in rec.streams] == [4]
    assert real.stats()["insn_finish"] >= 1
