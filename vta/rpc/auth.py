"""The shared-secret handshake that opens a session with a server bound beyond loopback.

Loading a library runs its code, so a server that strangers can reach must know who its client
is before it accepts any request. When the server has a secret, the first four frames of a
connection are plain frames (:mod:`vta.rpc.protocol`) that run a mutual challenge::

    client -> {"id": 0, "op": "auth", "args": {"nonce": Nc}}
    server -> {"id": 0, "ok": true, "result": {"nonce": Ns}}
    client -> {"id": 0, "op": "auth", "args": {"proof": HMAC-SHA256(secret, b"vta-rpc client" || Ns || Nc)}}
    server -> {"id": 0, "ok": true, "result": {"proof": HMAC-SHA256(secret, b"vta-rpc server" || Ns || Nc)}}

``Nc`` and ``Ns`` are 32 random bytes each, and nonces and proofs are sent as lowercase hex. A
wrong proof gets an error reply (``"ok": false``) and the connection is closed. The secret
itself never crosses the connection, proofs are compared in constant time, and a recorded proof
is useless on another connection (new nonces each time).

Both sides then derive the session's frame keys with HKDF-SHA256 (RFC 5869)::

    prk = HMAC-SHA256(key=Nc || Ns, msg=secret as UTF-8)
    okm = T1 || T2,  T1 = HMAC-SHA256(prk, INFO || 0x01),  T2 = HMAC-SHA256(prk, T1 || INFO || 0x02)
    INFO = b"vta-rpc frame keys v2"
    client-to-server key = okm[0:32], server-to-client key = okm[32:64]

and every later frame in either direction is an authenticated frame (magic ``VTA\\x02``, an
HMAC-SHA256 tag over a per-direction sequence number and the frame). So an attacker on the path
who does not know the secret can neither alter, replay, reorder nor inject a request: the
receiver closes the connection at the first frame whose tag fails.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import socket

from ..errors import RPCError
from .protocol import REPLY_KEYS, REQUEST_KEYS, FrameMAC, ProtocolKeyError, check_protocol_keys, recv_frame, send_frame

__all__ = ["SECRET_ENV", "AuthError", "new_secret", "proof", "hkdf_sha256", "derive_keys", "server_handshake",
           "client_handshake"]

#: Environment variable a client reads its secret from when none is passed to ``connect``.
SECRET_ENV = "VTA_RPC_SECRET"
_NONCE_BYTES = 32
_MAX_AUTH_FRAME = 4096
_INFO = b"vta-rpc frame keys v2"


class AuthError(RPCError):
    """The client did not prove that it knows the server's secret (or the server did not)."""


def new_secret() -> str:
    """A fresh random secret (32 bytes, URL-safe text)."""
    return secrets.token_urlsafe(32)


def proof(secret: str, server_nonce: bytes, client_nonce: bytes, role: str = "client") -> str:
    """``HMAC-SHA256(secret, b"vta-rpc " + role || Ns || Nc)`` as hex (``role``: client or server)."""
    if role not in ("client", "server"):
        raise ValueError(f"role must be 'client' or 'server', got {role!r}")
    msg = b"vta-rpc " + role.encode() + server_nonce + client_nonce
    return hmac.new(secret.encode(), msg, hashlib.sha256).hexdigest()


def hkdf_sha256(ikm: bytes, salt: bytes, info: bytes, length: int) -> bytes:
    """HKDF with SHA-256 (RFC 5869): extract with ``salt``, expand to ``length`` bytes.

    Raises
    ------
    ValueError
        If ``length`` is not in ``[1, 8160]``.
    """
    if not 1 <= length <= 255 * 32:
        raise ValueError(f"HKDF-SHA256 length must be in [1, 8160], got {length!r}")
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, block = b"", b""
    for i in range(1, -(-length // 32) + 1):
        block = hmac.new(prk, block + info + bytes([i]), hashlib.sha256).digest()
        out += block
    return out[:length]


def derive_keys(secret: str, client_nonce: bytes, server_nonce: bytes) -> tuple[bytes, bytes]:
    """The session's frame keys ``(client_to_server, server_to_client)``, 32 bytes each.

    ``HKDF-SHA256(ikm=secret, salt=Nc || Ns, info=b"vta-rpc frame keys v2", 64 bytes)`` split in
    two halves.

    Returns
    -------
    (bytes, bytes)
    """
    okm = hkdf_sha256(secret.encode(), client_nonce + server_nonce, _INFO, 64)
    return okm[:32], okm[32:]


def _hex_field(obj: dict, name: str, size: int | None, who: str) -> bytes:
    value = obj.get(name)
    try:
        raw = bytes.fromhex(value) if isinstance(value, str) else None
    except ValueError:
        raw = None
    if raw is None or (size is not None and len(raw) != size):
        want = f"{size} bytes as hex" if size is not None else "hex"
        raise AuthError(f"{who} sent a malformed {name} {value!r} (expected {want})")
    return raw


def _check_keys(obj: dict, known: tuple[str, ...], where: str) -> None:
    try:
        check_protocol_keys(obj, known, where)
    except ProtocolKeyError as exc:
        raise AuthError(str(exc)) from exc


def _expect_auth(sock: socket.socket, field: str) -> dict:
    header, _ = recv_frame(sock, _MAX_AUTH_FRAME)
    args = header.get("args", {})
    if header.get("op") != "auth" or not isinstance(args, dict):
        raise AuthError(f"this server requires the shared-secret handshake first; got operation {header.get('op')!r}")
    _check_keys(header, REQUEST_KEYS, "handshake request")
    _check_keys(args, (field,), "handshake request arguments")
    return args


def _expect_result(sock: socket.socket, field: str, refused: str) -> dict:
    header, _ = recv_frame(sock, _MAX_AUTH_FRAME)
    result = header.get("result")
    if not header.get("ok") or not isinstance(result, dict):
        err = header.get("error")
        raise AuthError(f"{refused}: {err.get('message', '') if isinstance(err, dict) else header}")
    _check_keys(header, REPLY_KEYS, "handshake reply")
    _check_keys(result, (field,), "handshake reply result")
    return result


def server_handshake(sock: socket.socket, secret: str) -> tuple[FrameMAC, FrameMAC]:
    """Run the server's side; returns when the client proved the secret.

    Returns
    -------
    (FrameMAC, FrameMAC)
        The authenticators of the frames to receive (client to server) and to send.

    Raises
    ------
    AuthError
        If the first frame is not ``auth`` or the proof is wrong (the client is told, then the
        caller closes the connection).
    RPCError, OSError
        If the connection fails or sends a malformed frame.
    """
    try:
        client_nonce = _hex_field(_expect_auth(sock, "nonce"), "nonce", _NONCE_BYTES, "the client")
        server_nonce = os.urandom(_NONCE_BYTES)
        send_frame(sock, {"id": 0, "ok": True, "result": {"nonce": server_nonce.hex()}})
        given = _expect_auth(sock, "proof").get("proof")
        expected = proof(secret, server_nonce, client_nonce, "client")
        if not isinstance(given, str) or not hmac.compare_digest(given.encode(), expected.encode()):
            raise AuthError("wrong shared secret")
    except AuthError as exc:
        send_frame(sock, {"id": None, "ok": False, "error": {"type": "AuthError", "message": str(exc)}})
        raise
    send_frame(sock, {"id": 0, "ok": True, "result": {"proof": proof(secret, server_nonce, client_nonce, "server")}})
    c2s, s2c = derive_keys(secret, client_nonce, server_nonce)
    return FrameMAC(c2s), FrameMAC(s2c)


def client_handshake(sock: socket.socket, secret: str) -> tuple[FrameMAC, FrameMAC]:
    """Run the client's side.

    Returns
    -------
    (FrameMAC, FrameMAC)
        The authenticators of the frames to send (client to server) and to receive.

    Raises
    ------
    AuthError
        If the server refuses the secret, does not speak the handshake, or cannot prove that it
        knows the secret itself.
    RPCError, OSError
        If the connection fails.
    """
    client_nonce = os.urandom(_NONCE_BYTES)
    send_frame(sock, {"id": 0, "op": "auth", "args": {"nonce": client_nonce.hex()}})
    result = _expect_result(sock, "nonce", "the server did not start the shared-secret handshake")
    server_nonce = _hex_field(result, "nonce", _NONCE_BYTES, "the server")
    send_frame(sock, {"id": 0, "op": "auth", "args": {"proof": proof(secret, server_nonce, client_nonce, "client")}})
    given = _expect_result(sock, "proof", "the server refused the shared secret").get("proof")
    expected = proof(secret, server_nonce, client_nonce, "server")
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), expected.encode()):
        raise AuthError("the server did not prove that it knows the shared secret (wrong secret, or not the "
                        "server you meant)")
    c2s, s2c = derive_keys(secret, client_nonce, server_nonce)
    return FrameMAC(c2s), FrameMAC(s2c)
