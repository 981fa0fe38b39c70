"""The wire format: frames over a socket pair and the value codec."""

from __future__ import annotations

import json
import socket
import struct

import numpy as np
import pytest

from vta.errors import RPCError
from vta.rpc.protocol import (MAGIC, ConnectionClosed, FrameError, decode_value, encode_value, recv_frame,
                              send_frame)


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_frame_round_trip(pair):
    a, b = pair
    send_frame(a, {"op": "x", "n": [1, 2]}, [b"abc", b"", bytes(range(256))])
    header, payloads = recv_frame(b, 1 << 20)
    assert header == {"op": "x", "n": [1, 2]}
    assert payloads == [b"abc", b"", bytes(range(256))]


def test_frame_layout_is_the_documented_one(pair):
    a, b = pair
    send_frame(a, {"k": 1}, [b"zz"])
    raw = b.recv(1000)
    magic, hlen, plen = struct.unpack_from("<4sIQ", raw)
    assert (magic, plen) == (MAGIC, 2)
    assert json.loads(raw[16:16 + hlen]) == {"k": 1, "payloads": [2]}
    assert raw[16 + hlen:] == b"zz"


@pytest.mark.parametrize("raw, fatal, pattern", [
    (b"EVIL" + struct.pack("<IQ", 2, 0) + b"{}", True, "magic"),
    (MAGIC + struct.pack("<IQ", 3, 0) + b"{x}", False, "JSON"),
    (MAGIC + struct.pack("<IQ", 2, 0) + b"[]", False, "JSON object"),
    (MAGIC + struct.pack("<IQ", 17, 3) + b'{"payloads": [5]}abc', False, "add up"),
    (MAGIC + struct.pack("<IQ", 2, 1 << 40) + b"{}", True, "exceeds"),
    (MAGIC + struct.pack("<IQ", 1 << 30, 0), True, "exceeds"),
    (MAGIC + struct.pack("<IQ", 200_000, 0) + b"[" * 100_000 + b"]" * 100_000, False, "too deeply"),
])
def test_malformed_frames(pair, raw, fatal, pattern):
    a, b = pair
    a.sendall(raw)
    with pytest.raises(FrameError, match=pattern) as info:
        recv_frame(b, 1 << 20)
    assert info.value.fatal is fatal


def test_eof_inside_a_frame_and_between_frames(pair):
    a, b = pair
    a.sendall(MAGIC + struct.pack("<IQ", 10, 0) + b"{")
    a.shutdown(socket.SHUT_WR)
    with pytest.raises(ConnectionClosed, match="middle"):
        recv_frame(b, 100)
    with pytest.raises(ConnectionClosed, match="closed the connection"):
        recv_frame(b, 100)


def test_values_round_trip():
    arr = np.arange(12, dtype=np.int16).reshape(3, 4)
    value = {"a": [1, 2.5, None, True, "s"], "b": b"\x00\x01", "c": arr, "d": {"e": np.float32(1.5)}}
    payloads: list = []
    data = encode_value(value, payloads)
    back = decode_value(json.loads(json.dumps(data)), payloads)
    assert back["a"] == [1, 2.5, None, True, "s"] and back["b"] == b"\x00\x01" and back["d"] == {"e": 1.5}
    np.testing.assert_array_equal(back["c"], arr)
    assert back["c"].dtype == np.int16


@pytest.mark.parametrize("data, payloads, pattern", [
    ({"ndarray": 0, "dtype": "O", "shape": [1]}, [b"12345678"], "refused"),
    ({"ndarray": 0, "dtype": "<i4", "shape": [3]}, [b"1234"], "needs 12 bytes"),
    ({"ndarray": 0, "dtype": "not-a-dtype", "shape": [1]}, [b"1"], "dtype"),
    ({"bytes": 3}, [b""], "payload index 3"),
    ({"handle": 1, "kind": "func"}, [], "not accepted"),
    ({"weird": 1}, [], "cannot decode"),
])
def test_bad_values_are_refused(data, payloads, pattern):
    with pytest.raises(RPCError, match=pattern):
        decode_value(data, payloads)


def test_unencodable_values_are_refused():
    with pytest.raises(RPCError, match="object"):
        encode_value(np.array([object()]), [])
    with pytest.raises(RPCError, match="set"):
        encode_value({1, 2}, [])
