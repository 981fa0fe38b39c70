"""The socket server and client: files, malformed requests, disconnects, calls, arrays, modules."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from vta import rpc, runtime
from vta.errors import RPCError
from vta.rpc.protocol import MAGIC, recv_frame, send_frame

REPO = Path(__file__).resolve().parents[2]


def _wait_for(pred, what: str, limit: float = 60.0) -> None:
    """Poll ``pred`` until it holds (sessions end on their own threads)."""
    end = time.monotonic() + limit
    while not pred():
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.01)


def _raw(server) -> socket.socket:
    s = socket.create_connection((server.host, server.port), timeout=60)
    return s


def _sessions_dir(server) -> Path:
    return Path(server.workdir)


# ------------------------------------------------------------------------------ files
def test_files_over_the_socket(remote, server, tmp_path):
    src = tmp_path / "blob.bin"
    data = os.urandom(100_000)
    src.write_bytes(data)
    remote.upload(src)
    remote.upload(b"hi", target="hello.txt")
    assert remote.listdir() == ["blob.bin", "hello.txt"]
    assert remote.download("blob.bin") == data
    remote.remove("hello.txt")
    assert remote.listdir() == ["blob.bin"]
    (workdir,) = _sessions_dir(server).iterdir()
    assert (workdir / "blob.bin").read_bytes() == data
    for bad in ("..", "../x", "/abs", "a/b", "."):
        with pytest.raises(RPCError, match="file name"):
            remote.upload(b"x", target=bad)
        with pytest.raises(RPCError, match="file name"):
            remote.download(bad)
    with pytest.raises(RPCError, match="exceeds the limit"):
        remote.upload(bytes((1 << 20) + 1), target="big")
    assert remote.ping() == "pong"  # the session survived every refusal
    assert remote.listdir() == ["blob.bin"]
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["blob.bin", "blob.bin"]


def test_each_connection_has_its_own_session(server):
    with rpc.connect(server.host, server.port, timeout=60) as a, rpc.connect(server.host, server.port, timeout=60) as b:
        a.upload(b"1", target="only_a")
        assert b.listdir() == []
        assert a.listdir() == ["only_a"]
        assert len(list(_sessions_dir(server).iterdir())) == 2
    _wait_for(lambda: server.sessions_served == 2, "both sessions to end")
    assert list(_sessions_dir(server).iterdir()) == []  # work directories removed


# ------------------------------------------------------------------------------ malformed requests
def _reply(sock) -> dict:
    header, _ = recv_frame(sock, 1 << 20)
    return header


def test_malformed_requests_get_error_replies(server):
    with _raw(server) as s:
        s.sendall(MAGIC + struct.pack("<IQ", 5, 0) + b"{nope")
        r = _reply(s)
        assert r["ok"] is False and r["error"]["type"] == "FrameError"
        for header, pattern in [({"op": "format_disk"}, "unknown operation"),
                                ({"op": "listdir", "args": [1]}, "args must be a JSON object"),
                                ({"op": "download", "args": {"nam": "x"}}, "unknown key 'nam'; did you mean name?"),
                                ({"op": "download", "args": {}}, "bad arguments"),
                                ({"op": "ping", "arg": {}}, "request: unknown key 'arg'; did you mean args?"),
                                ({"op": "call", "args": {"func": {"handle": 99, "kind": "func"}}}, "handle 99"),
                                ({"op": "upload", "args": {"name": "x", "data": {"bytes": 4}}}, "payload index"),
                                ({"op": "alloc_array", "args": {"shape": [2], "dtype": "int32", "device_type": 77}},
                                 "device type")]:
            send_frame(s, header)
            r = _reply(s)
            assert r["ok"] is False and pattern in r["error"]["message"], r
        send_frame(s, {"id": 5, "op": "ping"})
        assert _reply(s) == {"id": 5, "ok": True, "result": "pong"}


def test_bad_magic_and_oversized_frames_close_the_connection(server):
    for raw in (b"GET / HTTP/1.1\r\n\r\n", MAGIC + struct.pack("<IQ", 2, 1 << 40) + b"{}"):
        with _raw(server) as s:
            s.sendall(raw)
            r = _reply(s)
            assert r["ok"] is False and r["error"]["type"] == "FrameError"
            try:
                tail = s.recv(1)
            except ConnectionResetError:  # it hung up with our unread bytes still queued
                tail = b""
            assert tail == b""  # the server hung up
    with rpc.connect(server.host, server.port, timeout=60) as c:
        assert c.ping() == "pong"


# ------------------------------------------------------------------------------ disconnects
def test_client_that_disconnects_mid_call(server):
    started, release = threading.Event(), threading.Event()

    def slow(x):
        started.set()
        release.wait(10)
        return x + 1

    runtime.register_func("tests.rpc.slow", slow, override=True)
    with rpc.connect(server.host, server.port, timeout=60) as c:
        f = c.get_function("tests.rpc.slow")
        # send the call by hand and hang up without reading the reply
        send_frame(c._sock, {"id": 99, "op": "call", "args": {"func": f._tagged(), "args": [1]}})
        assert started.wait(10)
    release.set()
    _wait_for(lambda: server.sessions_served == 1, "the abandoned session to end")
    assert list(_sessions_dir(server).iterdir()) == []  # its work directory is gone
    with rpc.connect(server.host, server.port, timeout=60) as c:
        assert c.get_function("tests.rpc.slow")(41) == 42


def test_client_that_disconnects_inside_a_frame(server):
    with _raw(server) as s:
        s.sendall(MAGIC + struct.pack("<IQ", 100, 10) + b'{"op": "upl')
    _wait_for(lambda: server.sessions_served == 1, "the broken session to end")
    with rpc.connect(server.host, server.port, timeout=60) as c:
        assert c.ping() == "pong"


# ------------------------------------------------------------------------------ calls and arrays
def test_remote_function_calls(remote):
    runtime.register_func("tests.rpc.add", lambda a, b: a + b, override=True)
    runtime.register_func("tests.rpc.info", lambda s: {"len": len(s), "up": s.upper(), "raw": s.encode()},
                          override=True)

    def boom(x):
        raise ValueError(f"boom {x!r}")

    runtime.register_func("tests.rpc.boom", boom, override=True)
    assert remote.get_function("tests.rpc.add")(2, 3) == 5
    assert remote.get_function("tests.rpc.add")(0.5, 0.25) == 0.75
    assert remote.get_function("tests.rpc.info")("abc") == {"len": 3, "up": "ABC", "raw": b"abc"}
    with pytest.raises(RPCError, match="ValueError.*boom 7"):
        remote.get_function("tests.rpc.boom")(7)
    with pytest.raises(RPCError, match="no global function"):
        remote.get_function("tests.rpc.nothing")
    assert remote.ping() == "pong"


def test_arrays_live_on_the_server(remote):
    seen = {}

    def inspect_and_double(arr):
        seen["type"] = type(arr).__name__
        seen["device"] = (arr.device.device_type, arr.device.session)
        arr.copyfrom(arr.numpy() * 2)
        return int(arr.numpy().sum())

    runtime.register_func("tests.rpc.double", inspect_and_double, override=True)
    host = np.arange(12, dtype=np.int32).reshape(3, 4)
    dev = remote.ext_dev(0)
    assert dev.session is remote and dev.device_type == 12
    a = runtime.array(host, dev)
    assert isinstance(a, rpc.RemoteNDArray) and a.shape == (3, 4) and a.dtype == "int32"
    np.testing.assert_array_equal(a.numpy(), host)
    assert remote.get_function("tests.rpc.double")(a) == int(host.sum()) * 2
    assert seen == {"type": "NDArray", "device": (12, None)}  # a local ext_dev array on the server
    np.testing.assert_array_equal(a.numpy(), host * 2)
    np.testing.assert_array_equal(np.asarray(a), host * 2)
    assert a.nbytes == host.nbytes
    e = runtime.empty((2, 2), "float32", remote.cpu(0))
    e.copyfrom(np.eye(2, dtype=np.float32))
    np.testing.assert_array_equal(e.numpy(), np.eye(2))
    with pytest.raises(ValueError, match="shape"):
        e.copyfrom(np.zeros(3, dtype=np.float32))
    a.close()
    with pytest.raises(RPCError, match="closed"):
        a.numpy()


def test_module_calls_with_arrays_and_scalars(remote, kernels_obj):
    remote.upload(kernels_obj)
    mod = remote.load_module(kernels_obj.name)
    x = runtime.array(np.arange(8, dtype=np.int32), remote.ext_dev(0))
    y = runtime.array(np.full(8, 100, dtype=np.int32), remote.ext_dev(0))
    assert mod(x, y, 3) == 8                       # the entry function
    assert mod.get_function("axpy")(x, y, -1) == 8  # by name
    np.testing.assert_array_equal(y.numpy(), 100 + 2 * np.arange(8))
    with pytest.raises(RPCError, match="expects"):
        mod["axpy"](x, 3)
    with pytest.raises(RPCError, match="no function"):
        mod.get_function("missing")
    with pytest.raises(RPCError, match="does not exist|no file"):
        remote.load_module("not_uploaded.o")
    assert any(n.startswith(kernels_obj.name) and n.endswith(".so") for n in remote.listdir())


def test_python_dash_m_server(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "vta.rpc.server", "--port", "0", "--workdir", str(tmp_path)],
                            stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        line = proc.stdout.readline()
        assert line.startswith("vta.rpc.server listening on 127.0.0.1:"), line
        port = int(line.rsplit(":", 1)[1])
        with rpc.connect("127.0.0.1", port, timeout=60) as c:
            c.upload(b"x", target="f")
            assert c.listdir() == ["f"] and c.ping() == "pong"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


def test_session_end_frees_server_arrays_and_reuses_handles(server):
    from vta.dram import global_dram

    runtime.register_func("tests.rpc.ident", lambda x: x, override=True)
    live = lambda: len(list(global_dram().allocations()))  # noqa: E731
    before = live()
    with rpc.connect(server.host, server.port, timeout=60) as c:
        a = runtime.array(np.arange(1000, dtype=np.int32), c.ext_dev(0))
        b = runtime.empty((10,), "int8", c.ext_dev(0))
        assert live() == before + 2
        same = c.get_function("tests.rpc.ident")(a)  # the server hands back the same array
        assert same._handle == a._handle
        assert c.get_function("tests.rpc.ident")._handle == c.get_function("tests.rpc.ident")._handle
        b.close()
        assert live() == before + 1
    _wait_for(lambda: server.sessions_served == 1, "the session to end")
    assert live() == before
