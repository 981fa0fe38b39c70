"""The shared-secret handshake that opens a session with a server bound beyond loopback.

Loading a library runs its code, so a server that strangers can reach must know who its client
is before it accepts any request. When the server has a secret, the first two frames of a
connection are a challenge and its answer::

    client -> {"id": 0, "op": "auth", "args": {}}
    server -> {"id": 0, "ok": true, "result": {"nonce": <32 random bytes, hex>}}
    client -> {"id": 0, "op": "auth", "args": {"proof": HMAC-SHA256(secret, nonce), hex}}
    server -> {"id": 0, "ok": true, "result": "ok"}       (or an error reply, then close)

The secret itself never crosses the connection, a recorded proof is useless for another
connection (a new nonce each time), and the proof is compared in constant time
(:func:`hmac.compare_digest`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import socket

from ..errors import RPCError
from .protocol import recv_frame, send_frame

__all__ = ["SECRET_ENV", "AuthError", "new_secret", "proof", "server_handshake", "client_handshake"]

#: Environment variable a client reads its secret from when none is passed to ``connect``.
SECRET_ENV = "VTA_RPC_SECRET"
_NONCE_BYTES = 32
_MAX_AUTH_FRAME = 4096


class AuthError(RPCError):
    """The client did not prove that it knows the server's secret."""


def new_secret() -> str:
    """A fresh random secret (32 bytes, URL-safe text)."""
    return secrets.token_urlsafe(32)


def proof(secret: str, nonce: bytes) -> str:
    """``HMAC-SHA256(secret, nonce)`` as hex."""
    return hmac.new(secret.encode(), nonce, hashlib.sha256).hexdigest()


def _expect_auth(sock: socket.socket) -> dict:
    header, _ = recv_frame(sock, _MAX_AUTH_FRAME)
    if header.get("op") != "auth" or not isinstance(header.get("args", {}), dict):
        raise AuthError(f"this server requires the shared-secret handshake first; got operation {header.get('op')!r}")
    return header.get("args", {})


def server_handshake(sock: socket.socket, secret: str) -> None:
    """Run the server's side; returns when the client proved the secret.

    Raises
    ------
    AuthError
        If the first frame is not ``auth`` or the proof is wrong (the client is told, then the
        caller closes the connection).
    RPCError, OSError
        If the connection fails or sends a malformed frame.
    """
    try:
        _expect_auth(sock)
        nonce = os.urandom(_NONCE_BYTES)
        send_frame(sock, {"id": 0, "ok": True, "result": {"nonce": nonce.hex()}})
        given = _expect_auth(sock).get("proof")
        if not isinstance(given, str) or not hmac.compare_digest(given.encode(), proof(secret, nonce).encode()):
            raise AuthError("wrong shared secret")
    except AuthError as exc:
        send_frame(sock, {"id": None, "ok": False, "error": {"type": "AuthError", "message": str(exc)}})
        raise
    send_frame(sock, {"id": 0, "ok": True, "result": "ok"})


def client_handshake(sock: socket.socket, secret: str) -> None:
    """Run the client's side.

    Raises
    ------
    AuthError
        If the server refuses the secret or does not speak the handshake.
    RPCError, OSError
        If the connection fails.
    """
    send_frame(sock, {"id": 0, "op": "auth", "args": {}})
    header, _ = recv_frame(sock, _MAX_AUTH_FRAME)
    result = header.get("result")
    if not header.get("ok") or not isinstance(result, dict) or not isinstance(result.get("nonce"), str):
        err = (header.get("error") or {}).get("message", header)
        raise AuthError(f"the server did not start the shared-secret handshake: {err}")
    try:
        nonce = bytes.fromhex(result["nonce"])
    except ValueError as exc:
        raise AuthError(f"the server sent a malformed nonce {result['nonce']!r}") from exc
    send_frame(sock, {"id": 0, "op": "auth", "args": {"proof": proof(secret, nonce)}})
    header, _ = recv_frame(sock, _MAX_AUTH_FRAME)
    if not header.get("ok"):
        raise AuthError(f"the server refused the shared secret: {(header.get('error') or {}).get('message', '')}")
