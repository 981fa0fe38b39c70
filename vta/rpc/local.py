"""``LocalSession``: the RPC session API served in this process, without sockets.

Tutorials and tests written for a remote board run unchanged against it: files go to a private
temporary work directory, modules are loaded from there, and devices and arrays are the local
ones (their ``session`` is None, so arrays are plain local NDArrays).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import _runtime
from .workspace import DEFAULT_MAX_UPLOAD, Workspace

__all__ = ["LocalSession", "read_upload"]


def read_upload(path_or_bytes: Any, target: str | None) -> tuple[str, bytes]:
    """Resolve the arguments of ``upload`` to ``(name, data)``.

    Raises
    ------
    RPCError
        If bytes are given without a target name.
    OSError
        If the file cannot be read.
    """
    from ..errors import RPCError

    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        if target is None:
            raise RPCError("uploading bytes needs a target file name (upload(data, target='name'))")
        return target, bytes(path_or_bytes)
    if not isinstance(path_or_bytes, (str, os.PathLike)):
        raise RPCError(f"upload takes a path or bytes, got {type(path_or_bytes).__name__}")
    path = Path(path_or_bytes)
    return target or path.name, path.read_bytes()


class LocalSession:
    """An in-process RPC session with its own temporary work directory.

    Parameters
    ----------
    workdir_parent : path-like, optional
        Where to create the work directory (default: the system temporary directory).
    max_upload : int
        Largest file :meth:`upload` accepts, in bytes.

    Examples
    --------
    >>> with LocalSession() as remote:
    ...     remote.upload(b"hello", target="greeting.txt")
    ...     remote.listdir()
    ['greeting.txt']
    """

    def __init__(self, workdir_parent: str | os.PathLike | None = None, max_upload: int = DEFAULT_MAX_UPLOAD):
        self._ws = Workspace(workdir_parent, max_upload)

    @property
    def workdir(self) -> Path:
        """The session's work directory (removed by :meth:`close`)."""
        return self._ws.path

    # ------------------------------------------------------------------ files
    def upload(self, path_or_bytes: Any, target: str | None = None) -> None:
        """Copy a file (or bytes) into the work directory under ``target`` or its base name.

        Raises
        ------
        RPCError
            If the name is refused (``..``, separators, absolute) or the data is too large.
        OSError
            If the source file cannot be read.
        """
        name, data = read_upload(path_or_bytes, target)
        self._ws.upload(name, data)

    def download(self, name: str) -> bytes:
        """The contents of file ``name`` of the work directory.

        Raises
        ------
        RPCError
            If the name is refused or the file does not exist.
        """
        return self._ws.download(name)

    def remove(self, name: str) -> None:
        """Delete file ``name`` from the work directory.

        Raises
        ------
        RPCError
            If the name is refused or the file does not exist.
        """
        self._ws.remove(name)

    def listdir(self) -> list[str]:
        """Names of the files in the work directory."""
        return self._ws.listdir()

    # ------------------------------------------------------------------ code
    def load_module(self, name: str) -> Any:
        """``vta.runtime.load_module(workdir/name)``.

        Raises
        ------
        RPCError
            If the name is refused or the runtime has no loader.
        ModuleLoadError
            If the file is missing or cannot be loaded.
        """
        return _runtime.load_module(str(self._ws.file(name)))

    def get_function(self, name: str) -> Any:
        """The global function ``name`` of this process.

        Raises
        ------
        RPCError
            If it is not registered.
        """
        return _runtime.get_global_func(name)

    # ------------------------------------------------------------------ devices
    def device(self, dev_type: int | str, dev_id: int = 0) -> Any:
        """A local device from a type code (1, 12) or a name (``"cpu"``, ``"ext_dev"``, a target string).

        Raises
        ------
        ValueError
            If the type is unknown or the id is negative.
        """
        return _runtime.make_device(dev_type, dev_id)

    def cpu(self, dev_id: int = 0) -> Any:
        """The host CPU device."""
        return self.device("cpu", dev_id)

    def ext_dev(self, dev_id: int = 0) -> Any:
        """The VTA device."""
        return self.device("ext_dev", dev_id)

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Remove the work directory (idempotent)."""
        self._ws.close()

    def __enter__(self) -> "LocalSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
