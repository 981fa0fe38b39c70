"""The result cache of a sweep: one JSON file per evaluated point, named by its key.

A row is written as soon as its task finishes (to a temporary file, then renamed), so a sweep
stopped at any moment keeps every finished point and a re-run evaluates only the missing ones.
Rows with ``status`` ``"error"`` are not stored: a failed simulation is tried again next time.
The default directory is ``vta.cache.cache_dir("dse")``; deleting it is always safe.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .. import atomic
from ..cache import cache_dir

__all__ = ["ResultStore"]


class ResultStore:
    """Rows by point key, on disk.

    Parameters
    ----------
    root : Path, optional
        The directory (created if missing; default ``vta.cache.cache_dir("dse")``).
    """

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else cache_dir("dse")
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        if not key or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"a result key is a hex digest, got {key!r}")
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The stored row of ``key``, or None (also for an unreadable file, which is then ignored).

        Raises
        ------
        ValueError
            If ``key`` is not a hex digest.
        """
        path = self._path(key)
        try:
            row = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError):
            return None  # a torn or foreign file: evaluate the point again
        return row if isinstance(row, dict) and row.get("key") == key else None

    def put(self, row: dict) -> bool:
        """Store ``row`` under ``row["key"]`` unless its status is ``"error"``; return whether stored.

        Raises
        ------
        ValueError
            If the row has no valid key.
        OSError
            If the directory cannot be written.
        """
        if row.get("status") == "error":
            return False
        path = self._path(str(row.get("key", "")))
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(path, json.dumps(row, sort_keys=True))  # synced and renamed: never a torn row
        return True

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json"))
