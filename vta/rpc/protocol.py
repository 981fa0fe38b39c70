"""The RPC wire format: length-prefixed frames of a JSON header and raw byte payloads.

A frame is::

    magic   4 bytes   b"VTA\\x01"
    hlen    u32 LE    length of the JSON header in bytes
    plen    u64 LE    total length of the payloads
    header  hlen bytes of UTF-8 JSON (an object)
    payload plen bytes, split as the header's "payloads" list of lengths says

On a connection whose handshake derived a session key (:mod:`vta.rpc.auth`), every frame after
the handshake is an *authenticated frame* instead::

    magic   4 bytes   b"VTA\x02"
    hlen    u32 LE
    plen    u64 LE
    header  hlen bytes
    payload plen bytes
    tag     32 bytes  HMAC-SHA256(key, seq || magic || hlen || plen || header || payload)

where ``key`` is the key of the frame's direction (client to server or server to client) and
``seq`` is the frame's sequence number in that direction as u64 LE: 0 for the first frame after
the handshake, then 1, 2, ... The sequence number is not sent; each side counts. So a frame that
is altered, sent twice, sent out of order, dropped (the next one fails) or taken from another
connection fails its tag, and the receiver closes the connection. The tag is checked before the
header is parsed.

Values inside a header are plain JSON scalars and lists, or single-key tagged objects:
``{"bytes": i}`` (payload ``i``), ``{"ndarray": i, "dtype": "<i4", "shape": [..]}`` (a NumPy
array of a numeric dtype), ``{"dict": {...}}``, ``{"handle": h, "kind": "array" |
"module" | "func", ...}`` for objects that live on the server, and ``{"device": [type, id]}``
for a device of the server (``factory["default"](remote.ext_dev(0))``). Nothing is ever unpickled or
evaluated.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import socket
import struct
from typing import Any, Callable

import numpy as np

from ..env import check_keys
from ..errors import ConfigError, RPCError

__all__ = ["MAGIC", "MAGIC_AUTH", "TAG_BYTES", "FrameMAC", "send_frame", "recv_frame", "encode_value",
           "decode_value", "FrameError", "FrameAuthError", "ConnectionClosed", "MAX_HEADER", "ProtocolKeyError",
           "REQUEST_KEYS", "REPLY_KEYS", "ERROR_KEYS", "TAG_KEYS", "check_protocol_keys"]

MAGIC = b"VTA\x01"
#: Magic of an authenticated frame (one that ends with a tag).
MAGIC_AUTH = b"VTA\x02"
#: Bytes of an authenticated frame's tag (HMAC-SHA256).
TAG_BYTES = 32
_PREFIX = struct.Struct("<4sIQ")
_SEQ = struct.Struct("<Q")
#: Largest JSON header accepted (1 MiB).
MAX_HEADER = 1 << 20
_ARRAY_KINDS = "biuf"
#: Keys of a request header (``payloads`` is taken out by :func:`recv_frame`).
REQUEST_KEYS = ("id", "op", "args")
#: Keys of a reply header.
REPLY_KEYS = ("id", "ok", "result", "error")
#: Keys of a reply's ``error``.
ERROR_KEYS = ("type", "message")
#: The keys each tagged value may hold, by its tag (the key that names its kind).
TAG_KEYS = {
    "bytes": ("bytes",),
    "dict": ("dict",),
    "ndarray": ("ndarray", "dtype", "shape"),
    "handle": ("handle", "kind", "shape", "dtype", "device"),
    "device": ("device",),
}


class ProtocolKeyError(RPCError, ConfigError):
    """A request, reply or tagged value holds a key the protocol does not define; the message
    names the key, where it is and the closest defined key (the frame is read whole, so the
    connection stays usable)."""


def check_protocol_keys(obj: dict, known, where: str) -> None:
    """Refuse the first key of ``obj`` not in ``known``.

    Raises
    ------
    ProtocolKeyError
        Naming the key and the closest of ``known``.
    """
    check_keys(obj, known, where, ProtocolKeyError)


class ConnectionClosed(RPCError):
    """The peer closed the connection (cleanly between frames, or in the middle of one)."""


class FrameError(RPCError):
    """A frame is malformed.

    Attributes
    ----------
    fatal : bool
        True when the stream can no longer be followed (bad magic or an oversized frame whose
        bytes were not read); the connection must then be closed after replying.
    """

    def __init__(self, message: str, fatal: bool = False):
        super().__init__(message)
        self.fatal = fatal


class FrameAuthError(FrameError):
    """An authenticated frame failed its check (altered, replayed, reordered or injected).

    Always fatal: the connection is closed.
    """

    def __init__(self, message: str):
        super().__init__(message, fatal=True)


class FrameMAC:
    """The key and sequence counter that authenticate the frames of one direction.

    Parameters
    ----------
    key : bytes
        The direction's key (32 bytes from :func:`vta.rpc.auth.derive_keys`).

    Attributes
    ----------
    seq : int
        Sequence number of the next frame (counts frames sent, or frames accepted).
    """

    def __init__(self, key: bytes):
        if not isinstance(key, bytes) or len(key) < 16:
            raise ValueError(f"a frame key must be at least 16 bytes, got {key!r}")
        self._key = key
        self.seq = 0

    def start(self) -> "hmac.HMAC":
        """A fresh HMAC already fed with the current sequence number."""
        mac = hmac.new(self._key, digestmod=hashlib.sha256)
        mac.update(_SEQ.pack(self.seq))
        return mac


def _recv_exact(sock: socket.socket, n: int, what: str, at_start: bool = False) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            if at_start and got == 0:
                raise ConnectionClosed("the peer closed the connection")
            raise ConnectionClosed(f"the peer closed the connection in the middle of a frame's {what} "
                                   f"({got} of {n} bytes received)")
        got += k
    return buf


def send_frame(sock: socket.socket, header: dict, payloads: list | tuple = (), mac: FrameMAC | None = None) -> None:
    """Send one frame (an authenticated one when ``mac`` is given, which then counts it).

    Raises
    ------
    OSError
        If the socket fails.
    """
    header = dict(header)
    header["payloads"] = [memoryview(p).nbytes for p in payloads]
    text = json.dumps(header, allow_nan=True).encode()
    total = sum(header["payloads"])
    head = _PREFIX.pack(MAGIC if mac is None else MAGIC_AUTH, len(text), total) + text
    if mac is None:
        sock.sendall(head)
        for p in payloads:
            sock.sendall(p)
        return
    tag = mac.start()
    tag.update(head)
    for p in payloads:
        tag.update(p)
    mac.seq += 1
    if total <= 1 << 16:  # small frames go out in one write
        sock.sendall(b"".join([head, *(bytes(p) for p in payloads), tag.digest()]))
        return
    sock.sendall(head)
    for p in payloads:
        sock.sendall(p)
    sock.sendall(tag.digest())


def recv_frame(sock: socket.socket, max_payload: int, mac: FrameMAC | None = None) -> tuple[dict, list[memoryview]]:
    """Receive one frame; the payloads are views of one buffer that belongs to the caller.

    Parameters
    ----------
    max_payload : int
        Largest total payload accepted; a larger declared size is a fatal :class:`FrameError`.
    mac : FrameMAC, optional
        Expect an authenticated frame with this direction's key and next sequence number (which
        is counted when the tag holds).

    Raises
    ------
    ConnectionClosed
        If the peer closed the connection.
    FrameAuthError
        If ``mac`` is given and the frame is not an authenticated frame or its tag is wrong.
    FrameError
        If the frame is malformed (``fatal`` tells whether the stream is lost).
    """
    prefix = _recv_exact(sock, _PREFIX.size, "prefix", at_start=True)
    magic, hlen, plen = _PREFIX.unpack(prefix)
    expected = MAGIC if mac is None else MAGIC_AUTH
    if magic != expected:
        if mac is not None:
            raise FrameAuthError(f"frame {mac.seq} has magic {bytes(magic)!r}, not that of an authenticated frame "
                                 f"({MAGIC_AUTH!r})")
        raise FrameError(f"bad frame magic {bytes(magic)!r} (expected {MAGIC!r})", fatal=True)
    if hlen > MAX_HEADER:
        raise FrameError(f"frame header of {hlen} bytes exceeds the limit of {MAX_HEADER}", fatal=True)
    if plen > max_payload:
        raise FrameError(f"frame payload of {plen} bytes exceeds the limit of {max_payload}", fatal=True)
    text = _recv_exact(sock, hlen, "header")
    payload = _recv_exact(sock, plen, "payload") if plen else bytearray()
    if mac is not None:
        tag = _recv_exact(sock, TAG_BYTES, "tag")
        check = mac.start()
        check.update(prefix)
        check.update(text)
        check.update(payload)
        if not hmac.compare_digest(check.digest(), bytes(tag)):
            raise FrameAuthError(f"frame {mac.seq} failed authentication (altered, replayed, reordered, or sent "
                                 "by another connection)")
        mac.seq += 1
    try:
        header = json.loads(text.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FrameError(f"frame header is not valid UTF-8 JSON: {exc}") from exc
    except RecursionError:
        raise FrameError("frame header nests JSON too deeply") from None
    if not isinstance(header, dict):
        raise FrameError(f"frame header must be a JSON object, got {type(header).__name__}")
    sizes = header.pop("payloads", [])
    if (not isinstance(sizes, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in sizes)
            or sum(sizes) != plen):
        raise FrameError(f"frame header lists payload sizes {sizes!r} that do not add up to the {plen} bytes sent")
    parts, pos = [], 0
    mv = memoryview(payload)  # the frame owns this buffer, so slices need no copy
    for s in sizes:
        parts.append(mv[pos:pos + s])
        pos += s
    return header, parts


# ---------------------------------------------------------------------------------- values
def encode_value(value: Any, payloads: list, handle_of: Callable[[Any], dict | None] | None = None) -> Any:
    """Turn ``value`` into JSON-able data, appending raw bytes to ``payloads``.

    ``handle_of(value)`` may return a tagged handle object for values that stay on this side
    (server arrays, modules, functions) or None.

    Raises
    ------
    RPCError
        If the value has a type that cannot cross the connection.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, bytes):
        payloads.append(value)
        return {"bytes": len(payloads) - 1}
    if isinstance(value, (bytearray, memoryview)):
        payloads.append(bytes(value))
        return {"bytes": len(payloads) - 1}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _ARRAY_KINDS:
            raise RPCError(f"arrays of dtype {value.dtype} cannot cross the connection "
                           "(accepted kinds: bool, int, uint, float)")
        arr = np.ascontiguousarray(value)
        payloads.append(arr.reshape(-1).view(np.uint8))  # sent straight from the array's memory
        return {"ndarray": len(payloads) - 1, "dtype": arr.dtype.str, "shape": list(arr.shape)}
    if handle_of is not None:
        tagged = handle_of(value)
        if tagged is not None:
            return tagged
    if isinstance(value, (list, tuple)):
        return [encode_value(v, payloads, handle_of) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise RPCError("only dicts with string keys can cross the connection")
        return {"dict": {k: encode_value(v, payloads, handle_of) for k, v in value.items()}}
    raise RPCError(f"a value of type {type(value).__name__} cannot cross the connection")


def _payload(payloads: list, index: Any) -> bytes:
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(payloads):
        raise RPCError(f"payload index {index!r} is not one of the {len(payloads)} payloads of the frame")
    return payloads[index]


def decode_value(data: Any, payloads: list, resolve: Callable[[dict], Any] | None = None) -> Any:
    """Inverse of :func:`encode_value`; ``resolve(tagged)`` turns a handle object into a value.

    Raises
    ------
    RPCError
        If the data is malformed (an unknown tag, a bad payload index, an array whose size
        disagrees with its shape, a handle where none is accepted).
    """
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode_value(v, payloads, resolve) for v in data]
    if not isinstance(data, dict):
        raise RPCError(f"cannot decode value {data!r}")
    tag = next((t for t in TAG_KEYS if t in data), None)
    if tag is None:
        where = f"cannot decode tagged value {_brief(data)}"
        if not data:
            raise RPCError(f"{where} has no tag; tags: {', '.join(TAG_KEYS)}")
        check_protocol_keys(data, TAG_KEYS, where)  # raises: no key is a tag
    check_protocol_keys(data, TAG_KEYS[tag], f"{tag!r} value {_brief(data)}")
    if tag == "bytes":
        return bytes(_payload(payloads, data["bytes"]))
    if tag == "dict":
        if not isinstance(data["dict"], dict):
            raise RPCError(f"a 'dict' value holds a JSON object, got {_brief(data['dict'])}")
        return {k: decode_value(v, payloads, resolve) for k, v in data["dict"].items()}
    if tag == "ndarray":
        raw = _payload(payloads, data["ndarray"])
        try:
            dtype = np.dtype(str(data.get("dtype")))
        except TypeError as exc:
            raise RPCError(f"array dtype {data.get('dtype')!r} is not a NumPy dtype") from exc
        shape = data.get("shape")
        if dtype.kind not in _ARRAY_KINDS or dtype.fields is not None:
            raise RPCError(f"array dtype {data.get('dtype')!r} is refused (accepted kinds: bool, int, uint, float)")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                  for d in shape):
            raise RPCError(f"array shape {shape!r} must be a list of non-negative integers")
        if math.prod(shape) * dtype.itemsize != len(raw):
            raise RPCError(f"array of shape {shape} and dtype {dtype} needs {math.prod(shape) * dtype.itemsize} "
                           f"bytes but its payload holds {len(raw)}")
        arr = np.frombuffer(raw, dtype=dtype).reshape(shape)
        return arr if arr.flags.writeable else arr.copy()
    if resolve is None:
        raise RPCError(f"a remote handle {data!r} is not accepted here")
    return resolve(data)


def _brief(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
