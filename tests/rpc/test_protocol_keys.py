"""Requests, replies, tagged values and handshake frames refuse keys the protocol does not define,
naming the key and the closest defined one; the connection stays usable after a refused request.

Oracle: the key sets written in vta/rpc/protocol.py's documentation (restated here), and the
replies a raw socket receives.
"""

from __future__ import annotations

import socket
import threading

import pytest

from vta import rpc
from vta.errors import ConfigError, RPCError
from vta.rpc.auth import AuthError, client_handshake, server_handshake
from vta.rpc.client import ClientSession
from vta.rpc.protocol import ProtocolKeyError, decode_value, recv_frame, send_frame

SECRET = "keys-secret"


@pytest.mark.parametrize("data, payloads, message", [
    ({"byte": 0}, [b"x"], "unknown key 'byte'; did you mean bytes?"),
    ({"bytes": 0, "size": 1}, [b"x"], "unknown key 'size'; accepted: bytes"),
    ({"dict": {"any": 1}, "dikt": 2}, [], "unknown key 'dikt'; did you mean dict?"),
    ({"ndarray": 0, "dtype": "<i4", "shape": [1], "shapes": [1]}, [b"1234"],
     "unknown key 'shapes'; did you mean shape?"),
    ({"handle": 1, "kind": "array", "devise": [12, 0]}, [], "unknown key 'devise'; did you mean device?"),
    ({"device": [1, 0], "id": 0}, [], "unknown key 'id'"),
    ({"ndarry": 0}, [b""], "unknown key 'ndarry'; did you mean ndarray?"),
])
def test_tagged_values_refuse_unknown_keys(data, payloads, message):
    with pytest.raises(ProtocolKeyError, match=message.replace("?", r"\?")) as info:
        decode_value(data, payloads, resolve=lambda tagged: tagged)
    assert isinstance(info.value, ConfigError) and isinstance(info.value, RPCError)


def test_the_keys_of_a_user_dict_are_data_not_protocol():
    assert decode_value({"dict": {"byte": 1, "shapes": [2]}}, []) == {"byte": 1, "shapes": [2]}


def _reply(sock: socket.socket) -> dict:
    header, _ = recv_frame(sock, 1 << 20)
    return header


def test_requests_refuse_unknown_keys_and_the_session_lives_on(server):
    with socket.create_connection((server.host, server.port), timeout=60) as s:
        for header, message in [
            ({"id": 1, "op": "ping", "arg": {}}, "request: unknown key 'arg'; did you mean args?"),
            ({"id": 2, "opp": "ping"}, "request: unknown key 'opp'; did you mean op?"),
            ({"id": 3, "op": "upload", "args": {"nmae": "f", "data": {"bytes": 0}}},
             "request 'upload' arguments: unknown key 'nmae'; did you mean name?"),
            ({"id": 4, "op": "listdir", "args": {"all": True}}, "request 'listdir' takes no arguments, got 'all'"),
            ({"id": 5, "op": "upload", "args": {"name": "f", "data": {"bytes": 0, "offset": 2}}},
             "'bytes' value {'bytes': 0, 'offset': 2}: unknown key 'offset'; accepted: bytes"),
        ]:
            send_frame(s, header, [b"abc"] if header["id"] in (3, 5) else [])
            r = _reply(s)
            assert r["ok"] is False and r["id"] == header["id"], r
            assert r["error"] == {"type": "ProtocolKeyError", "message": message}
        send_frame(s, {"id": 9, "op": "listdir"})
        assert _reply(s) == {"id": 9, "ok": True, "result": []}  # nothing was uploaded


def _fake_server(reply: dict) -> tuple[ClientSession, threading.Thread]:
    """A client session whose server answers the first request with ``reply``, then a pong."""
    a, b = socket.socketpair()

    def serve() -> None:
        with b:
            header, _ = recv_frame(b, 1 << 20)
            send_frame(b, {**reply, "id": header["id"]})
            header, _ = recv_frame(b, 1 << 20)
            send_frame(b, {"id": header["id"], "ok": True, "result": "pong"})

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return ClientSession(a), t


@pytest.mark.parametrize("reply, message", [
    ({"ok": True, "reslt": "pong"}, "the reply to 'ping': unknown key 'reslt'; did you mean result?"),
    ({"ok": False, "error": {"type": "RPCError", "mesage": "x"}},
     "the error reply to 'ping': unknown key 'mesage'; did you mean message?"),
])
def test_the_client_refuses_replies_with_unknown_keys(reply, message):
    sess, t = _fake_server(reply)
    with sess:
        with pytest.raises(ProtocolKeyError, match=message.replace("?", r"\?")):
            sess._request("ping")
        assert sess._request("ping") == "pong"  # the frame was read whole: the stream is in step
    t.join(10)


def test_the_handshake_refuses_unknown_keys():
    a, b = socket.socketpair()
    with a, b:
        errors: list[BaseException] = []

        def serve() -> None:
            try:
                server_handshake(b, SECRET)
            except AuthError as exc:
                errors.append(exc)

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        send_frame(a, {"id": 0, "op": "auth", "args": {"nonse": "00" * 32}})
        r = _reply(a)
        t.join(10)
        assert r["ok"] is False and "unknown key 'nonse'; did you mean nonce?" in r["error"]["message"]
        assert errors and "did you mean nonce?" in str(errors[0])


def test_a_client_handshake_refuses_an_unknown_key_in_the_servers_reply():
    a, b = socket.socketpair()
    with a, b:
        def serve() -> None:
            recv_frame(b, 1 << 20)
            send_frame(b, {"id": 0, "ok": True, "result": {"nonce": "00" * 32, "extra": 1}})

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        with pytest.raises(AuthError, match="handshake reply result: unknown key 'extra'"):
            client_handshake(a, SECRET)
        t.join(10)


def test_a_real_session_with_a_secret_still_works(tmp_path):
    """The handshake and every request and reply of a real client pass the key checks."""
    from vta.rpc.server import Server

    with Server("127.0.0.1", 0, workdir=tmp_path, secret=SECRET) as srv:
        srv.start()
        with rpc.connect(srv.host, srv.port, timeout=60, secret=SECRET) as sess:
            sess.upload(b"abc", target="f.bin")
            assert sess.download("f.bin") == b"abc" and sess.listdir() == ["f.bin"]
