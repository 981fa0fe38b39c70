"""A man-in-the-middle proxy on 127.0.0.1 for the RPC security tests.

It relays a client's connection to a server. In frame mode it cuts each direction into frames
(plain ``VTA\\x01`` frames, and authenticated ``VTA\\x02`` frames with their 32-byte tag) and
hands every frame to ``tamper(direction, index, frame) -> list of bytes`` (``direction`` is
``"c2s"`` or ``"s2c"``, ``index`` counts the direction's frames from 0, handshake included), so a
test can alter, duplicate or drop frames; in raw mode it relays bytes and records them.
"""

from __future__ import annotations

import socket
import struct
import threading
from typing import Callable

from vta.rpc.protocol import MAGIC_AUTH, TAG_BYTES

Tamper = Callable[[str, int, bytes], list]


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _read_frame(sock: socket.socket) -> bytes | None:
    prefix = _read_exact(sock, 16)
    if prefix is None:
        return None
    magic, hlen, plen = struct.unpack("<4sIQ", prefix)
    rest = _read_exact(sock, hlen + plen + (TAG_BYTES if magic == MAGIC_AUTH else 0))
    return None if rest is None else prefix + rest


class Proxy:
    """Listen on a free loopback port and relay one connection at a time to ``target``.

    Parameters
    ----------
    target : (str, int)
        The server's address.
    tamper : callable, optional
        Frame mode: called for every frame (default: pass frames through unchanged).
    raw : bool
        Relay bytes without cutting frames (for TLS); ``recorded[direction]`` holds them.
    """

    def __init__(self, target: tuple[str, int], tamper: Tamper | None = None, raw: bool = False):
        self.target = target
        self.tamper = tamper or (lambda d, i, f: [f])
        self.raw = raw
        self.recorded = {"c2s": bytearray(), "s2c": bytearray()}
        self.frames = {"c2s": [], "s2c": []}
        self._listen = socket.create_server(("127.0.0.1", 0))
        self._listen.settimeout(30)
        self.port = self._listen.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listen.accept()
            except OSError:
                return  # closed, or nobody came within the limit
            server = socket.create_connection(self.target, timeout=30)
            client.settimeout(30)
            self._socks += [client, server]
            for src, dst, d in ((client, server, "c2s"), (server, client, "s2c")):
                t = threading.Thread(target=self._pump, args=(src, dst, d), daemon=True)
                t.start()
                self._threads.append(t)

    def _pump(self, src: socket.socket, dst: socket.socket, direction: str) -> None:
        index = 0
        try:
            while True:
                if self.raw:
                    data = src.recv(65536)
                    if not data:
                        break
                    self.recorded[direction] += data
                    dst.sendall(data)
                    continue
                frame = _read_frame(src)
                if frame is None:
                    break
                self.frames[direction].append(frame)
                for out in self.tamper(direction, index, frame):
                    dst.sendall(out)
                index += 1
        except OSError:
            pass  # one side closed the connection: the relay ends with it
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already shut down by the other direction

    def close(self) -> None:
        try:
            self._listen.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        except OSError:
            pass  # not listening any more
        self._listen.close()
        for s in self._socks:
            s.close()
        for t in self._threads:
            t.join(timeout=10)

    def __enter__(self) -> "Proxy":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
