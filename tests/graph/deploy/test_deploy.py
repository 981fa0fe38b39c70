"""Deployment of an exported ``net.so``: a fresh process, rpc.LocalSession, the socket server,
and damaged files."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import vta

from vta import rpc
from vta.errors import ModuleLoadError, RPCError
from vta.rpc.server import Server
from vta.runtime import Device, load_module
from vta.tvm.contrib import graph_executor

from . import netlib

ROOT = Path(__file__).resolve().parents[3]

_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, {root!r})
    import vta
    lib = vta.runtime.load_module({so!r})
    print("TYPE", type(lib).__name__, lib.type_key)
    from vta.tvm.contrib import graph_executor
    m = graph_executor.GraphModule(lib["default"](vta.runtime.ext_dev(0)))
    m.set_input({input_name!r}, np.load({x!r}))
    m.run()
    np.save({out!r}, m.get_output(0).numpy())
""")


def test_round_trip_in_a_fresh_process(net, tmp_path):
    np.save(tmp_path / "x.npy", net.x)
    script = _CHILD.format(root=str(ROOT), so=str(net.so), x=str(tmp_path / "x.npy"), out=str(tmp_path / "y.npy"),
                           input_name=net.input_name)
    envvars = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=envvars,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "TYPE GraphExecutorFactoryModule GraphExecutorFactory" in proc.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), net.expected)


def test_local_session(net):
    with rpc.LocalSession() as remote:
        remote.upload(net.so)
        lib = remote.load_module("net.so")
        dev = remote.ext_dev(0)
        m = graph_executor.GraphModule(lib["default"](dev))
        m.set_input(net.input_name, net.x)
        m.run()
        out = m.get_output(0).numpy()
        timer = m.module.time_evaluator("run", dev, number=2, repeat=2)
        assert len(timer().results) == 2
    np.testing.assert_array_equal(out, net.expected)


@pytest.fixture
def server(tmp_path):
    parent = tmp_path / "sessions"
    parent.mkdir()
    with Server("127.0.0.1", 0, workdir=parent, max_upload=1 << 26) as srv:
        srv.start()
        yield srv


def test_socket_server(net, server):
    with rpc.connect(server.host, server.port, timeout=120) as remote:
        remote.upload(net.so)
        lib = remote.load_module("net.so")
        m = graph_executor.GraphModule(lib["default"](remote.ext_dev(0)))
        assert m.get_num_outputs() == 1
        m.set_input(net.input_name, net.x)
        m.run()
        np.testing.assert_array_equal(m.get_output(0).numpy(), net.expected)
        m.set_input(net.input_name, np.zeros_like(net.x))
        m.set_input(net.input_name, vta.runtime.array(net.x))   # a local array is sent by value
        m.run()
        np.testing.assert_array_equal(m.get_output(0).numpy(), net.expected)
        remote_x = vta.runtime.array(net.x, remote.cpu(0))         # an array already on the server
        m.set_input(**{net.input_name: remote_x})
        m.run()
        np.testing.assert_array_equal(m.get_output(0).numpy(), net.expected)
        result = m.benchmark(number=1, repeat=2)
        assert len(result.results) == 2 and result.mean > 0
        timer = m.module.time_evaluator("run", remote.ext_dev(0), number=2, repeat=3)
        cost = timer()
        assert len(cost.results) == 3 and cost.mean > 0
        with pytest.raises(RPCError, match="ParamFormatError"):
            m.load_params(b"\x00" * 12)
        with pytest.raises(RPCError, match="belongs to another session"):
            with rpc.LocalSession() as other:
                lib["default"](Device(12, 0, session=other))


def test_socket_server_load_params(net_so, env, server):
    """New parameters sent as a TVM parameter blob change the result as the oracle says."""
    from vta.graph.params import save_param_dict

    x, p2 = netlib.make_input(env), netlib.make_params(env, seed=9)
    with rpc.connect(server.host, server.port, timeout=120) as remote:
        remote.upload(net_so)
        m = graph_executor.GraphModule(remote.load_module("net.so")["default"](remote.ext_dev(0)))
        m.load_params(save_param_dict(p2))
        m.run(x=x)
        np.testing.assert_array_equal(m.get_output(0).numpy(), netlib.reference(x, p2["p"]))


def test_socket_server_subprocess(net, tmp_path):
    """``python -m vta.rpc.server`` in its own process: the factory loader is there after ``import vta``."""
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from vta.rpc.server import Server
        with Server("127.0.0.1", 0, workdir={str(tmp_path)!r}) as srv:
            print(srv.port, flush=True)
            srv.start()
            sys.stdin.read()
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        port = int(proc.stdout.readline())
        with rpc.connect("127.0.0.1", port, timeout=120) as remote:
            remote.upload(net.so)
            lib = remote.load_module("net.so")
            m = graph_executor.GraphModule(lib["default"](remote.ext_dev(0)))
            m.run(**{net.input_name: net.x})
            out = m.get_output(0).numpy()
        np.testing.assert_array_equal(out, net.expected)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


# ---------------------------------------------------------------------------- damaged files
def test_truncated_net_so(net_so, tmp_path):
    data = net_so.read_bytes()
    for n in (0, 100, len(data) // 2):
        bad = tmp_path / f"cut{n}.so"
        bad.write_bytes(data[:n])
        with pytest.raises(ModuleLoadError):
            load_module(bad)


def _blob_offset(data: bytes, factory) -> int:
    """Where the factory payload starts inside the library file (its graph JSON's length word)."""
    gj = factory.get_graph_json().encode()
    at = data.index(gj)
    return at - 8


def test_corrupt_param_magic_in_net_so(net_so, factory, tmp_path):
    data = bytearray(net_so.read_bytes())
    at = data.index(bytes.fromhex("3FA1B496F0405EDD"))  # the parameter's NDArray magic
    data[at] ^= 0x55
    bad = tmp_path / "net_magic.so"
    bad.write_bytes(bytes(data))
    payload_at = _blob_offset(bytes(data), factory)
    with pytest.raises(ModuleLoadError, match=rf"magic of array 0 \('p'\).*\(at byte {at - payload_at} "):
        load_module(bad)


def test_corrupt_graph_json_length_in_net_so(net_so, factory, tmp_path):
    data = bytearray(net_so.read_bytes())
    at = _blob_offset(bytes(data), factory)
    data[at:at + 8] = (1 << 40).to_bytes(8, "little")
    bad = tmp_path / "net_len.so"
    bad.write_bytes(bytes(data))
    with pytest.raises(ModuleLoadError, match="truncated: graph JSON needs"):
        load_module(bad)


def test_corrupt_graph_json_text_in_net_so(net_so, factory, tmp_path):
    data = bytearray(net_so.read_bytes())
    gj = factory.get_graph_json().encode()
    at = data.index(gj)
    data[at] = ord("[")  # same length, no longer an object with nodes
    bad = tmp_path / "net_json.so"
    bad.write_bytes(bytes(data))
    with pytest.raises(ModuleLoadError, match="corrupt GraphExecutorFactory payload: .*JSON"):
        load_module(bad)

