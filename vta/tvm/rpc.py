"""``tvm.rpc``: sessions that run modules and arrays, backed by :mod:`vta.rpc`.

``rpc.LocalSession()`` serves the session API in this process (what the tutorials use with the
simulators); ``rpc.connect(host, port)`` reaches a server started with ``python -m vta.rpc.server``.
"""

from __future__ import annotations

from typing import Any

from ..rpc import ClientSession, LocalSession, RemoteFunction, RemoteModule, RemoteNDArray, connect
from ._missing import missing

__all__ = ["LocalSession", "connect", "ClientSession", "RPCSession", "RemoteFunction", "RemoteModule",
           "RemoteNDArray"]

#: Upstream's name for a session with a socket server.
RPCSession = ClientSession


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
