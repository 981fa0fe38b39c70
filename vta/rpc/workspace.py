"""A session's work directory: uploads, downloads and module files, confined to one folder."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path

from .. import atomic
from ..errors import RPCError

__all__ = ["Workspace", "DEFAULT_MAX_UPLOAD", "check_name"]

#: Largest file a session accepts by default (256 MiB).
DEFAULT_MAX_UPLOAD = 256 << 20
_MAX_NAME = 255


def check_name(name: object) -> str:
    """Return ``name`` if it is a plain file name, else raise.

    A plain name is a non-empty string of at most 255 characters that is not ``.`` or ``..``
    and holds no path separator and no NUL, so it cannot leave the work directory.

    Raises
    ------
    RPCError
        Naming the rejected value and the rule it breaks.
    """
    if not isinstance(name, str) or not name:
        raise RPCError(f"a file name must be a non-empty string, got {name!r}")
    seps = {"/", "\\", os.sep} | ({os.altsep} if os.altsep else set())
    if name in (".", "..") or any(s in name for s in seps) or "\x00" in name:
        raise RPCError(f"file name {name!r} is refused: use a plain name without '/', '\\', NUL, '.' or '..'")
    if os.path.isabs(name) or len(name) > _MAX_NAME:
        raise RPCError(f"file name {name!r} is refused: it must be relative and at most {_MAX_NAME} characters")
    return name


class Workspace:
    """A directory that holds a session's files.

    Parameters
    ----------
    parent : path-like, optional
        Directory in which to create the work directory (default: the system temporary
        directory). The work directory itself is always new and removed by :meth:`close`, or
        when the workspace is garbage-collected, or at the latest when the process exits (for
        sessions that are never closed, as upstream tutorials write them).
    max_upload : int
        Largest file accepted by :meth:`upload`, in bytes.

    Raises
    ------
    OSError
        If the directory cannot be created.
    """

    def __init__(self, parent: str | os.PathLike | None = None, max_upload: int = DEFAULT_MAX_UPLOAD):
        self.path = Path(tempfile.mkdtemp(prefix="vta-rpc-", dir=parent))
        self.max_upload = int(max_upload)
        self._closed = False
        # Runs at close(), at garbage collection or at interpreter exit, whichever comes first.
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.path), ignore_errors=True)

    def _check_open(self) -> None:
        if self._closed:
            raise RPCError("this session's work directory has been removed (the session is closed)")

    def file(self, name: str) -> Path:
        """Path of file ``name`` inside the work directory.

        Raises
        ------
        RPCError
            If the name is not a plain file name, names a symbolic link, or the workspace is
            closed.
        """
        self._check_open()
        path = self.path / check_name(name)
        if path.is_symlink():
            raise RPCError(f"file {name!r} is a symbolic link; the work directory holds only plain files")
        return path

    def upload(self, name: str, data: bytes) -> None:
        """Write ``data`` to file ``name`` (replacing it).

        Raises
        ------
        RPCError
            If the name is refused or ``data`` exceeds the size limit.
        """
        path = self.file(name)
        if len(data) > self.max_upload:
            raise RPCError(f"upload {name!r} of {len(data)} bytes exceeds the limit of {self.max_upload} bytes")
        # Written beside the target and renamed, so a failed write or a crash never leaves a
        # partial file under the requested name (a library is never half-replaced). Not synced:
        # the directory does not outlive the session.
        atomic.write_bytes(path, data, durable=False)

    def download(self, name: str) -> bytes:
        """Read file ``name``.

        Raises
        ------
        RPCError
            If the name is refused or no such file exists.
        """
        path = self.file(name)
        if not path.is_file():
            raise RPCError(f"no file {name!r} in the session's work directory")
        return path.read_bytes()

    def remove(self, name: str) -> None:
        """Delete file ``name``.

        Raises
        ------
        RPCError
            If the name is refused or no such file exists.
        """
        path = self.file(name)
        if not path.is_file():
            raise RPCError(f"no file {name!r} in the session's work directory")
        path.unlink()

    def listdir(self) -> list[str]:
        """Names of the files in the work directory, sorted."""
        self._check_open()
        return sorted(p.name for p in self.path.iterdir())

    def close(self) -> None:
        """Remove the work directory and everything in it (idempotent)."""
        if not self._closed:
            self._closed = True
            self._finalizer()
