"""Where build products (the native runtime, Verilator models) are cached.

The cache directory is ``$VTA_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/vta``, else
``~/.cache/vta``. Entries are keyed by a hash of everything that went into them, so a stale entry
is never reused; deleting the directory is always safe.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterable

__all__ = ["cache_dir", "content_key"]


def cache_dir(kind: str) -> Path:
    """Return (and create) the cache subdirectory for one kind of build product."""
    root = os.environ.get("VTA_CACHE_DIR")
    if root:
        base = Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = Path(xdg) / "vta" if xdg else Path.home() / ".cache" / "vta"
    path = base / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def content_key(parts: Iterable[bytes | str]) -> str:
    """A short hex digest of the given parts, used to name a cache entry."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:20]
