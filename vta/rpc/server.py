"""The RPC socket server: one session (thread, work directory, handle table) per connection.

Run it with::

    python -m vta.rpc.server --host 127.0.0.1 --port 9091

or in-process (tests) with ``Server("127.0.0.1", 0).start()``, which picks a free port. The
server binds the loopback interface unless told otherwise. It loads and runs the modules
clients upload, so expose it only to clients you trust.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import threading
from typing import Sequence

from .handler import SessionHandler
from .protocol import MAX_HEADER, ConnectionClosed, FrameError, recv_frame, send_frame
from .workspace import DEFAULT_MAX_UPLOAD

__all__ = ["Server", "main"]

log = logging.getLogger(__name__)


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

    Raises
    ------
    OSError
        If the address cannot be bound.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 9091, workdir: str | os.PathLike | None = None,
                 max_upload: int = DEFAULT_MAX_UPLOAD):
        self.workdir = workdir
        self.max_upload = int(max_upload)
        self._sock = socket.create_server((host, port))
        self.host, self.port = self._sock.getsockname()[:2]
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
                self._conns.add(conn)
                self._threads = [x for x in self._threads if x.is_alive()]
                self._threads.append(t)
                t.start()  # under the lock, so close() never joins a thread not yet started

    def start(self) -> "Server":
        """Serve on a background thread and return ``self``."""
        self._accept_thread = threading.Thread(target=self.serve_forever, daemon=True, name="vta-rpc-accept")
        self._accept_thread.start()
        return self

    def _serve_connection(self, conn: socket.socket, peer) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        session = SessionHandler(self.workdir, self.max_upload)
        max_payload = self.max_upload + MAX_HEADER
        try:
            while True:
                try:
                    header, payloads = recv_frame(conn, max_payload)
                except ConnectionClosed:
                    return
                except FrameError as exc:
                    send_frame(conn, {"id": None, "ok": False, "error": {"type": "FrameError", "message": str(exc)}})
                    if exc.fatal:
                        return
                    continue
                reply, out = session.handle(header, payloads)
                send_frame(conn, reply, out)
        except OSError as exc:  # the client went away mid-call; end this session only
            log.debug("connection from %s ended: %s", peer, exc)
        finally:
            session.close()
            with self._lock:
                self._conns.discard(conn)
                self.sessions_served += 1
            conn.close()

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
    p.add_argument("--max-upload", type=int, default=DEFAULT_MAX_UPLOAD, help="largest upload in bytes (default 256 MiB)")
    args = p.parse_args(argv)
    try:
        server = Server(args.host, args.port, args.workdir, args.max_upload)
    except OSError as exc:
        sys.stderr.write(f"vta.rpc.server: error: cannot listen on {args.host}:{args.port}: {exc.strerror}\n")
        return 2
    print(f"vta.rpc.server listening on {server.host}:{server.port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
