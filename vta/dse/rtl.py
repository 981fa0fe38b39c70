"""tsim libraries for any RTL directory, built once per (configuration, sources) even when many
processes ask at the same time, and the devices made from them.

:func:`build_library` takes the sources from an RTL directory (the project's ``hw/`` by default,
or a designer's modified copy), and holds an exclusive file lock named by the content key while
it builds, so two workers of a sweep that need the same configuration wait for one Verilator run
instead of running two (the cache entry itself is created atomically by
:func:`vta.sim.tsim.library.build_sources`).
"""

from __future__ import annotations

import fcntl
import subprocess
from pathlib import Path

from ..cache import cache_dir, content_key
from ..dram import global_dram
from ..env import Environment
from ..errors import BuildError

__all__ = ["HW_DIR", "build_library", "lint", "make_tsim", "sources"]

#: The project's RTL directory.
HW_DIR = Path(__file__).resolve().parents[2] / "hw"


def sources(hw_dir: Path | None = None) -> list[Path]:
    """``<hw_dir>/*.sv`` then ``<hw_dir>/sim/*.sv``, sorted (the tsim source list).

    Raises
    ------
    BuildError
        If the directory holds no ``.sv`` file.
    """
    hw = Path(hw_dir) if hw_dir is not None else HW_DIR
    found = sorted(hw.glob("*.sv")) + sorted((hw / "sim").glob("*.sv"))
    if not found:
        raise BuildError(f"RTL directory {str(hw)!r} holds no SystemVerilog sources (*.sv, sim/*.sv)")
    return found


def build_library(env: Environment, hw_dir: Path | None = None, trace: str | None = None) -> Path:
    """Build (or find) the tsim library of ``env`` from the RTL in ``hw_dir``; never twice at once.

    Parameters
    ----------
    env : Environment
        The configuration (its ``vta_pkg`` is generated from it).
    hw_dir : Path, optional
        RTL directory (default: the project's ``hw/``).
    trace : {None, "vcd", "fst"}
        Waveform support, as for :func:`vta.sim.tsim.library.build`.

    Returns
    -------
    Path
        The shared library.

    Raises
    ------
    BuildError
        If Verilator is missing or the build fails.
    """
    from ..sim.tsim import hwgen, library

    files = sources(hw_dir)
    package = hwgen.sv_package(env)
    parts: list[bytes | str] = [package, str(trace)]
    for path in files:
        parts += [path.name, path.read_bytes()]
    locks = cache_dir("tsim-locks")
    with open(locks / f"{content_key(parts)}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed
        return library.build_sources(files, package, trace=trace)


def make_tsim(env: Environment, hw_dir: Path | None = None):
    """A :class:`vta.sim.tsim.TSim` on the global DRAM arena with the library of ``hw_dir``.

    Raises
    ------
    BuildError, ModuleLoadError
        If the library cannot be built or loaded.
    """
    from ..sim.tsim import TSim

    return TSim(env, global_dram(), library=build_library(env, hw_dir))


def lint(env: Environment, hw_dir: Path | None = None, workdir: Path | None = None) -> str:
    """Run ``verilator --lint-only -Wall`` on the core (``vta_top``) for ``env``; return the warnings.

    Returns
    -------
    str
        Empty when the RTL is lint clean, else Verilator's output.

    Raises
    ------
    BuildError
        If Verilator is missing.
    """
    import tempfile

    from ..sim.tsim import hwgen, verilator

    hw = Path(hw_dir) if hw_dir is not None else HW_DIR
    waivers = sorted((hw / "lint").glob("*.vlt"))
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        pkg = Path(tmp) / "vta_pkg.sv"
        pkg.write_text(hwgen.sv_package(env))
        cmd = [verilator.verilator_bin(), "--lint-only", "-Wall", "--top-module", "vta_top",
               *map(str, waivers), str(pkg), *map(str, sorted(hw.glob("*.sv")))]
        proc = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if proc.returncode != 0 or "%Warning" in proc.stdout or "%Error" in proc.stdout:
        return proc.stdout.strip() or f"verilator exited with status {proc.returncode}"
    return ""
