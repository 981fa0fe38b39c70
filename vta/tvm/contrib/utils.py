"""``tvm.contrib.utils``: temporary directories (``tempdir().relpath(name)``)."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path

__all__ = ["tempdir", "TempDirectory"]


class TempDirectory:
    """A directory removed by :meth:`remove`, at the end of a ``with`` block, or when collected.

    Parameters
    ----------
    custom_path : path-like, optional
        Use (and create) this directory instead of a new one; it is then never removed.
    keep_for_debug : bool
        Keep a new directory after use (for inspecting build products).

    Raises
    ------
    OSError
        If the directory cannot be created.
    """

    def __init__(self, custom_path: str | os.PathLike | None = None, keep_for_debug: bool = False):
        if custom_path is not None:
            Path(custom_path).mkdir(parents=True, exist_ok=True)
            self.temp_dir = str(Path(custom_path).resolve())
            owned = False
        else:
            self.temp_dir = tempfile.mkdtemp(prefix="vta_tmp_")
            owned = not keep_for_debug
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.temp_dir, True) if owned else None

    @property
    def path(self) -> Path:
        """The directory."""
        return Path(self.temp_dir)

    def relpath(self, name: str) -> str:
        """The path of ``name`` inside the directory.

        Raises
        ------
        ValueError
            If ``name`` is absolute or leaves the directory (``..``).
        """
        if os.path.isabs(name) or ".." in Path(name).parts:
            raise ValueError(f"relpath takes a name inside the directory, got {name!r}")
        return os.path.join(self.temp_dir, name)

    def listdir(self) -> list[str]:
        """Names of the entries of the directory."""
        return sorted(os.listdir(self.temp_dir))

    def remove(self) -> None:
        """Delete the directory now (idempotent; a custom or kept directory stays)."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> "TempDirectory":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"TempDirectory({self.temp_dir!r})"


def tempdir(custom_path: str | os.PathLike | None = None, keep_for_debug: bool = False) -> TempDirectory:
    """A new temporary directory (see :class:`TempDirectory`).

    Raises
    ------
    OSError
        If the directory cannot be created.
    """
    return TempDirectory(custom_path, keep_for_debug)
