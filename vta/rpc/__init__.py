"""RPC sessions: run modules and arrays in another process, or in this one, through one API.

- :class:`LocalSession` serves the session API in this process (a private work directory,
  local devices), as upstream ``tvm.rpc.LocalSession`` did for the simulators.
- :func:`connect` opens a :class:`ClientSession` with a socket server started by
  ``python -m vta.rpc.server`` (or :class:`vta.rpc.server.Server` in-process).

Both offer ``upload``, ``download``, ``remove``, ``listdir``, ``load_module``,
``get_function``, ``cpu``, ``ext_dev`` and ``device``.
"""

from .client import ClientSession, RemoteFunction, RemoteModule, RemoteNDArray, connect
from .local import LocalSession

__all__ = ["LocalSession", "ClientSession", "RemoteFunction", "RemoteModule", "RemoteNDArray", "connect"]
