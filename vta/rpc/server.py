"""The RPC socket server: one session (thread, work directory, handle table) per connection.

Run it with::

    python -m vta.rpc.server --host 127.0.0.1 --port 9091

or in-process (tests) with ``Server("127.0.0.1", 0).start()``, which picks a free port.

Loading a library runs its code: a client that can upload and load a module can run anything
the server's user can. So the server binds the loopback interface unless told otherwise, and a
server bound to any other address requires a shared secret (``--secret`` or the
``VTA_RPC_SECRET`` environment variable; one is generated and printed when neither is given)
that each client proves before its first request (:mod:`vta.rpc.auth`); the handshake derives
session keys that then authenticate every frame in both directions, so a request cannot be
altered, replayed, reordered or injected on the way. The secret is what stands between the
network and code execution: give it only to clients you trust. Frames are authenticated, not
encrypted: for confidentiality give the server a certificate (``--tls-cert``/``--tls-key``) and
every connection runs over TLS (:mod:`ssl`). Each connection gets its own
work directory (removed when it ends), uploads are confined to it and bounded in size, idle
connections are closed after ``idle_timeout`` seconds, and at most ``max_sessions``
connections are served at once.
"""

from __future__ import annotations

import argparse
import ctypes
import ipaddress
import logging
import os
import socket
import ssl
import sys
import threading
from typing import Sequence

from ..errors import RPCError
from .auth import SECRET_ENV, AuthError, new_secret, server_handshake
from .handler import SessionHandler
from .protocol import MAX_HEADER, ConnectionClosed, FrameAuthError, FrameError, FrameMAC, recv_frame, send_frame
from .workspace import DEFAULT_MAX_UPLOAD

__all__ = ["Server", "main", "is_loopback", "limit_malloc_arenas"]

log = logging.getLogger(__name__)

#: Seconds a new connection has to complete the shared-secret handshake.
HANDSHAKE_TIMEOUT = 10.0
#: glibc's ``mallopt`` parameter number of ``M_ARENA_MAX`` (malloc.h).
_M_ARENA_MAX = -8
#: Malloc arenas of a ``python -m vta.rpc.server`` process (see :func:`limit_malloc_arenas`).
DEFAULT_MALLOC_ARENAS = 2


def limit_malloc_arenas(count: int) -> bool:
    """Cap glibc's malloc arenas of this process at ``count`` (``mallopt(M_ARENA_MAX)``).

    glibc gives threads arenas of their own, up to eight per core. Each session thread attaches
    to one, and as connections come and go more arenas are made, each keeping the memory it once
    held: over a soak of 20,000 requests they add a few MiB to the server's resident memory.
    Python threads allocate under the interpreter lock, one at a time, so they gain nothing from
    the extra arenas. Call this before the threads start (the server's ``main`` does). Nothing
    is changed when ``MALLOC_ARENA_MAX`` is set in the environment (the user's choice) or the
    C library is not glibc.

    Returns
    -------
    bool
        True if the limit was set.

    Raises
    ------
    ValueError
        If ``count`` is below 1.
    """
    if count < 1:
        raise ValueError(f"malloc arena count must be at least 1, got {count!r}")
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library symbols to look up, or not glibc
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt(_M_ARENA_MAX, count) == 1


def is_loopback(host: str) -> bool:
    """True if ``host`` (an address or ``localhost``) is a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _server_tls_context(cert, key) -> ssl.SSLContext | None:
    if cert is None:
        if key is not None:
            raise ValueError(f"tls_key {str(key)!r} was given without tls_cert")
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(os.fspath(cert), None if key is None else os.fspath(key))
    except (OSError, ssl.SSLError) as exc:
        raise RPCError(f"cannot load the TLS certificate {str(cert)!r} and key {str(key)!r}: {exc}; give a PEM "
                       "certificate and the PEM private key that belongs to it") from exc
    return ctx


class Server:
    """A threaded RPC server.

    Parameters
    ----------
    host : str
        Interface to bind (default loopback).
    port : int
        TCP port; 0 picks a free one (see :attr:`port`).
    workdir : path-like, optional
        Directory under which each session's private work directory is created (default: the
        system temporary directory). Session directories are removed when the session ends.
    max_upload : int
        Largest upload (and frame payload) a session accepts, in bytes.
    secret : str, optional
        The shared secret clients must prove (:mod:`vta.rpc.auth`). Required beyond loopback:
        when the bound address is not a loopback address and no secret is given, one is
        generated (read it from :attr:`secret`). On loopback, None means no handshake.
    idle_timeout : float, optional
        Seconds a connection may stay silent (between or inside frames) before it is closed;
        None waits forever.
    max_sessions : int
        Connections served at once; further ones get an error reply and are closed.
    tls_cert, tls_key : path-like, optional
        A PEM certificate (chain) and its private key: every connection then runs over TLS
        (1.2 or later). ``tls_key`` may be omitted when the certificate file holds the key.

    Raises
    ------
    OSError
        If the address cannot be bound.
    ValueError
        If ``secret`` is empty, ``idle_timeout`` is not positive, ``max_sessions`` < 1, or
        ``tls_key`` is given without ``tls_cert``.
    vta.errors.RPCError
        If the certificate or key cannot be read or do not match.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 9091, workdir: str | os.PathLike | None = None,
                 max_upload: int = DEFAULT_MAX_UPLOAD, secret: str | None = None,
                 idle_timeout: float | None = 300.0, max_sessions: int = 64,
                 tls_cert: str | os.PathLike | None = None, tls_key: str | os.PathLike | None = None):
        if secret is not None and (not isinstance(secret, str) or not secret):
            raise ValueError(f"secret must be a non-empty str or None, got {secret!r}")
        if idle_timeout is not None and not idle_timeout > 0:
            raise ValueError(f"idle_timeout must be a positive number of seconds or None, got {idle_timeout!r}")
        if int(max_sessions) < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions!r}")
        #: The TLS context every connection is wrapped in, or None (plain TCP).
        self.tls = _server_tls_context(tls_cert, tls_key)
        self.workdir = workdir
        self.max_upload = int(max_upload)
        self.idle_timeout = idle_timeout
        self.max_sessions = int(max_sessions)
        self._sock = socket.create_server((host, port))
        self.host, self.port = self._sock.getsockname()[:2]
        if secret is None and not is_loopback(self.host):
            secret = new_secret()
        #: The shared secret clients must prove, or None (loopback only).
        self.secret = secret
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._accept_thread: threading.Thread | None = None
        self._closed = False
        self.sessions_served = 0

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` the server listens on."""
        return self.host, self.port

    # ------------------------------------------------------------------ serving
    def serve_forever(self) -> None:
        """Accept connections until :meth:`close`; each runs in its own thread."""
        while not self._closed:
            try:
                conn, peer = self._sock.accept()
            except OSError:
                if self._closed:
                    return
                raise
            t = threading.Thread(target=self._serve_connection, args=(conn, peer), daemon=True,
                                 name=f"vta-rpc-{peer[0]}:{peer[1]}")
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                full = len(self._conns) >= self.max_sessions
                if not full:
                    self._conns.add(conn)
                    self._threads = [x for x in self._threads if x.is_alive()]
                    self._threads.append(t)
                    t.start()  # under the lock, so close() never joins a thread not yet started
            if full:
                self._refuse(conn, f"the server already serves {self.max_sessions} sessions; try again later")

    def start(self) -> "Server":
        """Serve on a background thread and return ``self``."""
        self._accept_thread = threading.Thread(target=self.serve_forever, daemon=True, name="vta-rpc-accept")
        self._accept_thread.start()
        return self

    @staticmethod
    def _refuse(conn: socket.socket, message: str) -> None:
        try:
            conn.settimeout(1.0)
            send_frame(conn, {"id": None, "ok": False, "error": {"type": "RPCError", "message": message}})
        except OSError:
            pass  # the client is gone already; nothing to tell it
        conn.close()

    def _serve_connection(self, conn: socket.socket, peer) -> None:
        session = None
        max_payload = self.max_upload + MAX_HEADER
        recv_mac: FrameMAC | None = None
        send_mac: FrameMAC | None = None
        raw = conn
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # fails if the client is gone already
            if self.tls is not None:
                conn.settimeout(HANDSHAKE_TIMEOUT)
                conn = self.tls.wrap_socket(conn, server_side=True)
                with self._lock:
                    self._conns.discard(raw)
                    self._conns.add(conn)
            if self.secret is not None:
                conn.settimeout(HANDSHAKE_TIMEOUT)
                recv_mac, send_mac = server_handshake(conn, self.secret)
            conn.settimeout(self.idle_timeout)
            session = SessionHandler(self.workdir, self.max_upload)
            while True:
                try:
                    header, payloads = recv_frame(conn, max_payload, recv_mac)
                except ConnectionClosed:
                    return
                except FrameError as exc:
                    kind = "FrameAuthError" if isinstance(exc, FrameAuthError) else "FrameError"
                    if exc.fatal:
                        log.warning("connection from %s closed: %s", peer, exc)
                    send_frame(conn, {"id": None, "ok": False, "error": {"type": kind, "message": str(exc)}},
                               mac=send_mac)
                    if exc.fatal:
                        return
                    continue
                reply, out = session.handle(header, payloads)
                send_frame(conn, reply, out, mac=send_mac)
        except ssl.SSLError as exc:
            log.warning("connection from %s refused: TLS handshake failed: %s", peer, exc)
        except (AuthError, RPCError) as exc:  # failed handshake: no session was opened
            log.warning("connection from %s refused: %s", peer, exc)
        except OSError as exc:  # the client went away or stayed silent too long; end this session only
            log.debug("connection from %s ended: %s", peer, exc)
        finally:
            if session is not None:
                session.close()
            with self._lock:
                self._conns.discard(conn)
                self._conns.discard(raw)
                self.sessions_served += 1
            conn.close()
            raw.close()

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Stop accepting, end every session and wait for their threads (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conns = list(self._conns)
            threads = list(self._threads)
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # not connected: nothing to shut down
        self._sock.close()
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by its session thread
        for t in threads:
            t.join(timeout=10)
        if self._accept_thread is not None:
            self._accept_thread.join(timeout=10)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m vta.rpc.server``: serve until interrupted.

    Returns
    -------
    int
        0 after Ctrl-C, 2 if the address cannot be bound.
    """
    p = argparse.ArgumentParser(prog="python -m vta.rpc.server", description="Serve VTA RPC sessions.")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=9091, help="TCP port (default 9091; 0 picks a free one)")
    p.add_argument("--workdir", default=None, help="parent directory of the session work directories")
    p.add_argument("--max-upload", type=int, default=DEFAULT_MAX_UPLOAD,
                   help="largest upload in bytes (default 256 MiB)")
    p.add_argument("--secret", default=os.environ.get(SECRET_ENV),
                   help=f"shared secret clients must prove (default: ${SECRET_ENV}; generated and printed "
                        "when binding beyond loopback without one)")
    p.add_argument("--idle-timeout", type=float, default=300.0, help="seconds before a silent client is dropped")
    p.add_argument("--max-sessions", type=int, default=64, help="connections served at once (default 64)")
    p.add_argument("--tls-cert", default=None, help="PEM certificate (chain): serve every connection over TLS")
    p.add_argument("--tls-key", default=None, help="PEM private key of --tls-cert (default: read from that file)")
    p.add_argument("--malloc-arenas", type=int, default=DEFAULT_MALLOC_ARENAS,
                   help=f"glibc malloc arenas of the server process (default {DEFAULT_MALLOC_ARENAS}; 0 keeps "
                        "glibc's default of 8 per core; MALLOC_ARENA_MAX in the environment takes precedence)")
    args = p.parse_args(argv)
    if args.malloc_arenas < 0:
        p.error(f"--malloc-arenas must be 0 (glibc's default) or a positive count, got {args.malloc_arenas}")
    if args.malloc_arenas:
        limit_malloc_arenas(args.malloc_arenas)
    try:
        server = Server(args.host, args.port, args.workdir, args.max_upload, secret=args.secret or None,
                        idle_timeout=args.idle_timeout, max_sessions=args.max_sessions,
                        tls_cert=args.tls_cert, tls_key=args.tls_key)
    except OSError as exc:
        sys.stderr.write(f"vta.rpc.server: error: cannot listen on {args.host}:{args.port}: {exc.strerror}\n")
        return 2
    except (ValueError, RPCError) as exc:
        sys.stderr.write(f"vta.rpc.server: error: {exc}\n")
        return 2
    tls = " (TLS)" if server.tls is not None else ""
    print(f"vta.rpc.server listening on {server.host}:{server.port}{tls}", flush=True)
    if server.secret is not None and not args.secret:
        print(f"shared secret (give it to clients as {SECRET_ENV} or connect(..., secret=...)): {server.secret}",
              flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
