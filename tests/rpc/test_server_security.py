"""A server that is safe to expose: the shared secret, idle clients, session limits, confinement,
partial uploads, and many concurrent clients."""

from __future__ import annotations

import socket
import struct
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from vta import rpc, runtime
from vta.errors import RPCError
from vta.rpc.auth import AuthError, proof
from vta.rpc.protocol import MAGIC, recv_frame, send_frame
from vta.rpc.server import Server, is_loopback


def _wait_for(pred, what: str, limit: float = 60.0) -> None:
    end = time.monotonic() + limit
    while not pred():
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.01)


@pytest.fixture
def sessions(tmp_path) -> Path:
    d = tmp_path / "sessions"
    d.mkdir()
    return d


def test_loopback_detection():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3") and not is_loopback("example.org")


def test_binding_beyond_loopback_generates_a_secret(sessions):
    with Server("0.0.0.0", 0, workdir=sessions) as srv:
        assert isinstance(srv.secret, str) and len(srv.secret) >= 32
    with Server("127.0.0.1", 0, workdir=sessions) as srv:
        assert srv.secret is None
    with pytest.raises(ValueError, match="secret"):
        Server("127.0.0.1", 0, workdir=sessions, secret="")


def test_secret_is_required_before_any_request(sessions):
    with Server("127.0.0.1", 0, workdir=sessions, secret="s3cret").start() as srv:
        # the right secret opens a working session
        with rpc.connect(srv.host, srv.port, timeout=30, secret="s3cret") as c:
            assert c.ping() == "pong"
        # a wrong secret is refused and leaves no session directory behind
        with pytest.raises(AuthError, match="refused"):
            rpc.connect(srv.host, srv.port, timeout=30, secret="guess")
        # no secret: the first request is refused, nothing ran, the connection is closed
        with socket.create_connection((srv.host, srv.port), timeout=30) as s:
            send_frame(s, {"id": 1, "op": "upload", "args": {"name": "x.so", "data": {"bytes": 0}}}, [b"ELF"])
            header, _ = recv_frame(s, 1 << 20)
            assert header["ok"] is False and header["error"]["type"] == "AuthError"
        _wait_for(lambda: srv.sessions_served == 3, "the three connections to end")
        assert list(sessions.iterdir()) == []


def test_replayed_proof_is_useless(sessions):
    """Each connection gets a new server nonce, so a proof seen on the wire cannot be reused."""
    nc = bytes(range(32))
    with Server("127.0.0.1", 0, workdir=sessions, secret="k").start() as srv:
        with socket.create_connection((srv.host, srv.port), timeout=30) as s:
            send_frame(s, {"id": 0, "op": "auth", "args": {"nonce": nc.hex()}})
            nonce1 = bytes.fromhex(recv_frame(s, 4096)[0]["result"]["nonce"])
            send_frame(s, {"id": 0, "op": "auth", "args": {"proof": proof("k", nonce1, nc)}})
            assert recv_frame(s, 4096)[0]["ok"] is True
        with socket.create_connection((srv.host, srv.port), timeout=30) as s:
            send_frame(s, {"id": 0, "op": "auth", "args": {"nonce": nc.hex()}})  # the same client nonce
            nonce2 = bytes.fromhex(recv_frame(s, 4096)[0]["result"]["nonce"])
            assert nonce2 != nonce1
            send_frame(s, {"id": 0, "op": "auth", "args": {"proof": proof("k", nonce1, nc)}})
            assert recv_frame(s, 4096)[0]["ok"] is False


def test_secret_given_to_a_server_without_one_is_an_error(sessions):
    with Server("127.0.0.1", 0, workdir=sessions).start() as srv:
        with pytest.raises(AuthError, match="handshake"):
            rpc.connect(srv.host, srv.port, timeout=30, secret="x")


def test_idle_client_is_dropped_without_blocking_others(sessions):
    with Server("127.0.0.1", 0, workdir=sessions, idle_timeout=0.5).start() as srv:
        idle = socket.create_connection((srv.host, srv.port), timeout=30)
        slow = socket.create_connection((srv.host, srv.port), timeout=30)
        slow.sendall(MAGIC + struct.pack("<IQ", 50, 0))  # half a frame, then silence
        with rpc.connect(srv.host, srv.port, timeout=30) as c:  # others are served meanwhile
            assert c.ping() == "pong"
        _wait_for(lambda: srv.sessions_served == 3, "the idle and the slow client to be dropped", limit=20)
        assert idle.recv(1) == b""  # the server closed the idle connection
        idle.close()
        slow.close()
        assert list(sessions.iterdir()) == []


def test_session_limit(sessions):
    with Server("127.0.0.1", 0, workdir=sessions, max_sessions=1).start() as srv:
        with rpc.connect(srv.host, srv.port, timeout=30) as first:
            assert first.ping() == "pong"
            with socket.create_connection((srv.host, srv.port), timeout=30) as s:
                header, _ = recv_frame(s, 1 << 20)
                assert header["ok"] is False and "1 sessions" in header["error"]["message"]
        _wait_for(lambda: srv.sessions_served == 1, "the first session to end")
        with rpc.connect(srv.host, srv.port, timeout=30) as again:
            assert again.ping() == "pong"


@pytest.mark.parametrize("name", ["../escape.so", "/etc/passwd", "a/b.so", "..", "."])
def test_uploads_and_loads_are_confined(sessions, name):
    with Server("127.0.0.1", 0, workdir=sessions).start() as srv, rpc.connect(srv.host, srv.port, timeout=30) as c:
        with pytest.raises(RPCError, match="refused"):
            c.upload(b"\x7fELF", target=name)
        with pytest.raises(RPCError):
            c.load_module(name)
    assert not (sessions.parent / "escape.so").exists()


def test_symlink_out_of_the_workspace_is_not_followed(sessions, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("secret data")
    with Server("127.0.0.1", 0, workdir=sessions).start() as srv, rpc.connect(srv.host, srv.port, timeout=30) as c:
        c.upload(b"x", target="plain.txt")
        (workdir,) = list(sessions.iterdir())
        (workdir / "link.txt").symlink_to(outside)  # planted by someone with local access
        with pytest.raises(RPCError, match="link"):
            c.download("link.txt")
        with pytest.raises(RPCError, match="link"):
            c.upload(b"overwrite", target="link.txt")
    assert outside.read_text() == "secret data"


def test_disconnect_mid_upload_leaves_no_partial_file(sessions):
    with Server("127.0.0.1", 0, workdir=sessions).start() as srv:
        s = socket.create_connection((srv.host, srv.port), timeout=30)
        header = b'{"id": 1, "op": "upload", "args": {"name": "net.so", "data": {"bytes": 0}}, "payloads": [100000]}'
        s.sendall(MAGIC + struct.pack("<IQ", len(header), 100000) + header + b"\0" * 5000)
        _wait_for(lambda: len(list(sessions.iterdir())) == 1, "the session's work directory")
        (workdir,) = list(sessions.iterdir())
        time.sleep(0.2)  # the server is now inside the frame, waiting for the rest
        assert list(workdir.iterdir()) == []
        s.close()
        _wait_for(lambda: srv.sessions_served == 1, "the broken upload's session to end")
        assert not workdir.exists()


def test_eight_concurrent_clients_with_twenty_requests_each(sessions):
    runtime.register_func("tests.rpc.square", lambda x: x * x, override=True)
    errors: list = []
    done = []

    def client(k: int) -> None:
        try:
            with rpc.connect(srv.host, srv.port, timeout=60) as c:
                f = c.get_function("tests.rpc.square")
                for i in range(20):
                    if i % 4 == 0:
                        c.upload(bytes([k, i]) * 10, target=f"f{i}.bin")
                        assert c.download(f"f{i}.bin") == bytes([k, i]) * 10
                    elif i % 4 == 1:
                        a = runtime.ndarray.array(np.full((4,), k * 100 + i, dtype="int32"), c.cpu(0))
                        assert a.numpy().tolist() == [k * 100 + i] * 4
                    else:
                        assert f(k * 1000 + i) == (k * 1000 + i) ** 2
                assert len(c.listdir()) == 5
            done.append(k)
        except Exception as exc:  # collected and reported by the main thread
            errors.append((k, repr(exc)))

    with Server("127.0.0.1", 0, workdir=sessions).start() as srv:
        threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == []
        assert sorted(done) == list(range(8))
        _wait_for(lambda: srv.sessions_served == 8, "all sessions to end")
    assert list(sessions.iterdir()) == []
