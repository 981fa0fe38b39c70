"""Frames after the shared-secret handshake are authenticated: altered, replayed, reordered and
injected frames close the connection with a logged reason, and the request never runs."""

from __future__ import annotations

import logging
import socket
import time

import pytest

from vta import rpc, runtime
from vta.errors import RPCError
from vta.rpc.auth import client_handshake, derive_keys, hkdf_sha256
from vta.rpc.protocol import MAGIC, MAGIC_AUTH, TAG_BYTES, FrameAuthError, FrameMAC, recv_frame, send_frame
from vta.rpc.server import Server

from .mitm import Proxy

SECRET = "correct horse battery staple"
SERVER_LOG = "vta.rpc.server"


@pytest.fixture
def calls():
    """Arguments of every call of the global function ``tests.rpc.record`` that the server ran."""
    seen: list = []
    runtime.register_func("tests.rpc.record", lambda x: seen.append(bytes(x)), override=True)
    return seen


@pytest.fixture
def srv(tmp_path):
    d = tmp_path / "sessions"
    d.mkdir()
    with Server("127.0.0.1", 0, workdir=d, secret=SECRET, idle_timeout=20).start() as s:
        yield s


def _wait_for(pred, what: str, limit: float = 30.0) -> None:
    end = time.monotonic() + limit
    while not pred():
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.01)


class _Buffer:
    """A stand-in socket that keeps what is sent, to build frames byte by byte."""

    def __init__(self):
        self.data = bytearray()

    def sendall(self, b) -> None:
        self.data += bytes(b)


def _frame(header: dict, payloads=(), mac: FrameMAC | None = None) -> bytes:
    buf = _Buffer()
    send_frame(buf, header, payloads, mac=mac)
    return bytes(buf.data)


def _session(srv) -> tuple[socket.socket, FrameMAC, FrameMAC]:
    """A raw authenticated connection: the socket and its (send, receive) authenticators."""
    s = socket.create_connection((srv.host, srv.port), timeout=20)
    send_mac, recv_mac = client_handshake(s, SECRET)
    return s, send_mac, recv_mac


def _record_request(req_id: int) -> dict:
    return {"id": req_id, "op": "call", "args": {"func": {"handle": 1, "kind": "func"},
                                                 "args": [{"bytes": 0}]}}


def _refused(s: socket.socket, recv_mac: FrameMAC) -> str:
    """Read the server's (authenticated) refusal and check that it then closed the connection."""
    header, _ = recv_frame(s, 1 << 20, recv_mac)
    assert header["ok"] is False and header["error"]["type"] == "FrameAuthError"
    try:
        rest = s.recv(1)
    except ConnectionResetError:  # closed with bytes of the refused frame still unread
        rest = b""
    assert rest == b""
    return header["error"]["message"]


def _logged(caplog, text: str) -> bool:
    return any(r.name == SERVER_LOG and r.levelno == logging.WARNING and text in r.getMessage()
               for r in caplog.records)


# ------------------------------------------------------------------------------ the key schedule
def test_hkdf_is_rfc5869():
    # RFC 5869 appendix A.1 (SHA-256, basic test case)
    okm = hkdf_sha256(b"\x0b" * 22, bytes(range(13)), bytes(range(0xF0, 0xFA)), 42)
    assert okm.hex() == ("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
                         "34007208d5b887185865")


def test_session_keys_differ_per_direction_and_per_connection():
    c2s, s2c = derive_keys(SECRET, b"a" * 32, b"b" * 32)
    assert len(c2s) == len(s2c) == 32 and c2s != s2c
    assert derive_keys(SECRET, b"a" * 32, b"c" * 32)[0] != c2s
    assert derive_keys("other", b"a" * 32, b"b" * 32)[0] != c2s


def test_every_frame_after_the_handshake_is_authenticated(srv, calls):
    with Proxy(srv.address) as px:
        with rpc.connect("127.0.0.1", px.port, timeout=20, secret=SECRET) as c:
            c.get_function("tests.rpc.record")(b"hello")
            assert c.ping() == "pong"
        _wait_for(lambda: srv.sessions_served == 1, "the session to end")
    for direction in ("c2s", "s2c"):
        frames = px.frames[direction]
        assert [f[:4] for f in frames] == [MAGIC] * 2 + [MAGIC_AUTH] * 3
    assert calls == [b"hello"]


# ------------------------------------------------------------------------------ alterations
def _flip_position(frame: bytes, region: str) -> int:
    hlen = int.from_bytes(frame[4:8], "little")
    plen = int.from_bytes(frame[8:16], "little")
    if region in ("hlen", "plen"):  # clear a set bit so the declared length shrinks
        at = 4 if region == "hlen" else 8
        assert frame[at] != 0
        return at
    start = {"magic": 0, "header": 16 + hlen // 2, "payload": 16 + hlen + plen // 2,
             "tag": len(frame) - TAG_BYTES // 2}[region]
    return start


@pytest.mark.parametrize("region", ["magic", "hlen", "plen", "header", "payload", "tag"])
def test_altered_request_closes_the_connection_and_never_runs(srv, calls, caplog, region):
    caplog.set_level(logging.WARNING, logger=SERVER_LOG)

    def tamper(direction: str, index: int, frame: bytes) -> list:
        if direction == "c2s" and index == 3:  # the call, after two handshake frames and get_function
            pos = _flip_position(frame, region)
            b = bytearray(frame)
            b[pos] ^= b[pos] & -b[pos] if region in ("hlen", "plen") else 0x04
            return [bytes(b)]
        return [frame]

    with Proxy(srv.address, tamper) as px:
        c = rpc.connect("127.0.0.1", px.port, timeout=20, secret=SECRET)
        f = c.get_function("tests.rpc.record")
        with pytest.raises(RPCError, match="FrameAuthError"):
            f(b"upload me to the server" * 4)
        assert c.closed
        _wait_for(lambda: srv.sessions_served == 1, "the server to close the connection")
    assert calls == []
    assert _logged(caplog, "closed: frame 1")


def test_altered_reply_is_refused_by_the_client(srv, calls, caplog):
    caplog.set_level(logging.WARNING, logger="vta.rpc.client")

    def tamper(direction: str, index: int, frame: bytes) -> list:
        if direction == "s2c" and index == 3:
            b = bytearray(frame)
            b[20] ^= 0x01  # inside the reply's JSON header
            return [bytes(b)]
        return [frame]

    with Proxy(srv.address, tamper) as px:
        c = rpc.connect("127.0.0.1", px.port, timeout=20, secret=SECRET)
        f = c.get_function("tests.rpc.record")
        with pytest.raises(RPCError, match="failed authentication"):
            f(b"x")
        assert c.closed
        _wait_for(lambda: srv.sessions_served == 1, "the session to end")
    assert calls == [b"x"]  # the request was genuine and ran; its reply was not believed
    assert any("failed authentication" in r.getMessage() for r in caplog.records if r.name == "vta.rpc.client")


# ------------------------------------------------------------------------------ replay, order, injection
def test_replayed_request_closes_the_connection(srv, calls, caplog):
    caplog.set_level(logging.WARNING, logger=SERVER_LOG)

    def tamper(direction: str, index: int, frame: bytes) -> list:
        return [frame, frame] if direction == "c2s" and index == 3 else [frame]

    with Proxy(srv.address, tamper) as px:
        c = rpc.connect("127.0.0.1", px.port, timeout=20, secret=SECRET)
        c.get_function("tests.rpc.record")(b"pay once")
        with pytest.raises(RPCError):  # the server refused the copy and closed the connection
            c.ping()
        _wait_for(lambda: srv.sessions_served == 1, "the server to close the connection")
    assert calls == [b"pay once"]
    assert _logged(caplog, "closed: frame 2 failed authentication")


def test_reordered_or_dropped_frames_close_the_connection(srv, calls, caplog):
    caplog.set_level(logging.WARNING, logger=SERVER_LOG)
    s, send_mac, recv_mac = _session(srv)
    with s:
        first = _frame({"id": 1, "op": "get_function", "args": {"name": "tests.rpc.record"}}, (), send_mac)
        second = _frame(_record_request(2), [b"b"], send_mac)
        s.sendall(second)  # frame 1 arrives where frame 0 is expected
        assert "frame 0 failed authentication" in _refused(s, recv_mac)
    s, send_mac, recv_mac = _session(srv)
    with s:
        s.sendall(_frame({"id": 1, "op": "get_function", "args": {"name": "tests.rpc.record"}}, (), send_mac))
        assert recv_frame(s, 1 << 20, recv_mac)[0]["ok"] is True
        _frame(_record_request(2), [b"lost"], send_mac)  # built, then dropped on the way
        s.sendall(_frame(_record_request(3), [b"c"], send_mac))
        assert "frame 1 failed authentication" in _refused(s, recv_mac)
    _wait_for(lambda: srv.sessions_served == 2, "both connections to end")
    assert calls == []
    assert _logged(caplog, "closed: frame 0 failed authentication")
    assert _logged(caplog, "closed: frame 1 failed authentication")
    del first


def test_frame_from_another_connection_is_refused(srv, calls, caplog):
    caplog.set_level(logging.WARNING, logger=SERVER_LOG)
    a, a_send, a_recv = _session(srv)
    b, b_send, b_recv = _session(srv)
    with a, b:
        get = {"id": 1, "op": "get_function", "args": {"name": "tests.rpc.record"}}
        stolen = _frame(get, (), b_send)  # a valid frame 0 of connection b ...
        a.sendall(stolen)  # ... injected into connection a
        assert "frame 0 failed authentication" in _refused(a, a_recv)
        b.sendall(stolen)  # b itself still works
        assert recv_frame(b, 1 << 20, b_recv)[0]["ok"] is True
        b.sendall(_frame(_record_request(2), [b"ok"], b_send))
        assert recv_frame(b, 1 << 20, b_recv)[0]["ok"] is True
        # a plain (untagged) frame is refused after the handshake, however well-formed
        b.sendall(_frame(_record_request(3), [b"plain"]))
        assert "not that of an authenticated frame" in _refused(b, b_recv)
    _wait_for(lambda: srv.sessions_served == 2, "both connections to end")
    assert calls == [b"ok"]
    assert _logged(caplog, "frame 2 has magic")


def test_receiver_refuses_a_tag_made_with_the_wrong_key():
    a, b = socket.socketpair()
    with a, b:
        a.sendall(_frame({"op": "ping"}, [b"x"], FrameMAC(b"k" * 32)))
        with pytest.raises(FrameAuthError, match="frame 0 failed authentication"):
            recv_frame(b, 1 << 20, FrameMAC(b"j" * 32))


def test_authenticated_frame_layout_is_the_documented_one():
    import hashlib
    import hmac
    import json
    import struct

    key = bytes(range(32))
    mac = FrameMAC(key)
    _frame({"op": "first"}, (), mac)  # frame 0
    raw = _frame({"k": 1}, [b"zz", b"y"], mac)  # frame 1
    magic, hlen, plen = struct.unpack_from("<4sIQ", raw)
    assert (magic, plen) == (b"VTA\x02", 3) and len(raw) == 16 + hlen + plen + 32
    assert json.loads(raw[16:16 + hlen]) == {"k": 1, "payloads": [2, 1]}
    assert raw[16 + hlen:16 + hlen + plen] == b"zzy"
    expected = hmac.new(key, struct.pack("<Q", 1) + raw[:-32], hashlib.sha256).digest()
    assert raw[-32:] == expected and mac.seq == 2
