"""Files that are either wholly written or not there: write beside, fsync, rename into place.

Every file the project publishes (cache entries, built and exported libraries, sweep rows and
tables, RPC uploads) is written to a temporary file in the destination's directory, flushed and
``fsync``-ed, then renamed over the destination with :func:`os.replace` (atomic on POSIX) and the
directory is ``fsync``-ed. A process killed at any moment therefore leaves either the old file
or the new one under the published name, never a torn one; at worst a hidden temporary file
(``.<name>.*.tmp``) stays behind, which nothing reads.

Crash points
------------
:func:`crash_point` marks the moments a crash test kills the process at. It does nothing unless
the environment variable ``VTA_CRASH_AT`` names the point (``name``, or ``name@N`` for the N-th
time that point is reached, counting from 1); then the process sends itself ``SIGKILL``. The
points are ``atomic.partial`` (half the bytes of a file written, or all of them but not yet
flushed), ``atomic.before_replace``
(the whole temporary file written and synced, not yet renamed) and ``atomic.after_replace``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from pathlib import Path
from typing import IO, Iterator

__all__ = ["CRASH_ENV", "crash_point", "fsync_file", "fsync_dir", "publish", "atomic_writer", "write_bytes",
           "write_text", "copy_file"]

#: Environment variable that arms :func:`crash_point` (crash tests only).
CRASH_ENV = "VTA_CRASH_AT"
_hits: dict[str, int] = {}


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: Files are published with the permissions ``open()`` would give them (mkstemp makes them 0600).
_FILE_MODE = 0o666 & ~_read_umask()


def crash_point(name: str) -> None:
    """Kill this process with ``SIGKILL`` if ``$VTA_CRASH_AT`` names this point (see the module)."""
    armed = os.environ.get(CRASH_ENV)
    if not armed:
        return
    want, _, nth = armed.partition("@")
    if want != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] == (int(nth) if nth else 1):
        os.kill(os.getpid(), signal.SIGKILL)


def fsync_file(path: str | os.PathLike) -> None:
    """``fsync`` a finished file.

    Raises
    ------
    OSError
        If the file cannot be opened or synced.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str | os.PathLike) -> None:
    """``fsync`` a directory so a rename inside it survives a power loss (best effort)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # a platform or file system that cannot open directories: the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on directories; the rename itself stays atomic
    finally:
        os.close(fd)


def publish(tmp: str | os.PathLike, dest: str | os.PathLike, durable: bool = True) -> Path:
    """``fsync`` the finished file ``tmp`` and rename it to ``dest`` (same directory).

    ``durable=False`` skips both ``fsync`` calls: the rename is still atomic for a process that
    is killed, but not for a power loss (for files that do not outlive the process anyway).

    Raises
    ------
    OSError
        If the file cannot be synced or renamed.
    """
    if durable:
        fsync_file(tmp)
    crash_point("atomic.before_replace")
    os.replace(tmp, dest)
    if durable:
        fsync_dir(Path(dest).parent)
    crash_point("atomic.after_replace")
    return Path(dest)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "wb", durable: bool = True, _crash: bool = True,
                  **open_kwargs) -> Iterator[IO]:
    """Open a temporary file beside ``path``; on a clean exit it is synced and renamed to ``path``.

    On an exception the temporary file is removed and ``path`` is untouched. ``durable``: as
    for :func:`publish`.

    Raises
    ------
    OSError
        If the directory cannot be written.
    """
    dest = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, mode, **open_kwargs) as handle:
            yield handle
            if _crash:
                crash_point("atomic.partial")  # written, perhaps partly still buffered
        publish(tmp, dest, durable=durable)  # closed (flushed) first, then synced and renamed
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_bytes(path: str | os.PathLike, data: bytes | bytearray | memoryview, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (``durable``: as for :func:`publish`); returns the path.

    Raises
    ------
    OSError
        If the directory cannot be written.
    """
    view = memoryview(data).cast("B")
    with atomic_writer(path, "wb", durable=durable, _crash=False) as handle:
        half = len(view) // 2
        handle.write(view[:half])
        handle.flush()
        crash_point("atomic.partial")
        handle.write(view[half:])
    return Path(path)


def write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically; returns the path.

    Raises
    ------
    OSError
        If the directory cannot be written.
    """
    return write_bytes(path, text.encode(encoding))


def copy_file(src: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """Copy ``src`` to ``dest`` atomically; returns ``dest``.

    Raises
    ------
    OSError
        If ``src`` cannot be read or ``dest``'s directory cannot be written.
    """
    return write_bytes(dest, Path(src).read_bytes())
