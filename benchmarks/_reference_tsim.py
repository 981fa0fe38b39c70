"""The tsim that the cycle model's speed goal is measured against: tsim as of a pinned commit.

Issue 25 asks for the cycle model at 100 times tsim's speed or more, where tsim means the tsim of
the tree when the goal was set (commit :data:`REFERENCE_COMMIT`). tsim itself keeps getting faster,
and the goal does not move with it. So ``benchmarks/model_accuracy_tsim.py`` times its speed ratios
against a tsim library built from that commit's own files: its RTL (``hw/``), its C++ shim
(``sim/``) and its build recipe and package generator (``vta/sim/tsim/``). The library is built by
that commit's own ``vta.sim.tsim.library.build``, run in a separate interpreter on a copy of the
commit's tree (``git archive``; kept in the cache directory ``tsim-reference``), so whatever
changes later in this tree's RTL, shim, compiler flags or generator, the reference stays the same
program. The library lands in the usual tsim cache (keyed by the content of its sources): while the
sources have not changed, it is the library this tree builds, and nothing is built twice.

The reference library is loaded by this tree's :class:`vta.sim.tsim.TSim`; a later change of the
shim's C API that the old library does not export is reported by the loader
(:class:`vta.errors.ModuleLoadError`) rather than measured wrongly.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from vta.cache import cache_dir
from vta.errors import BuildError

__all__ = ["REFERENCE_COMMIT", "reference_library"]

#: The tree whose tsim the cycle model's speed goal is measured against (issue 25).
REFERENCE_COMMIT = "846e14a"
#: What of the pinned tree the build needs: the package (its tsim build code and generator), the
#: RTL, the shim, and pyproject.toml (which marks a source checkout for ``vta.env.data_dir``).
_PATHS = ("pyproject.toml", "hw", "sim", "vta")
_BUILD = ("import json, sys, vta\n"
          "from vta.env import Environment\n"
          "from vta.sim.tsim import library\n"
          "print(vta.__file__)\n"
          "print(library.build(Environment(json.loads(sys.argv[1]))))\n")


def _tree(repo: Path, commit: str) -> Path:
    """The pinned commit's files (:data:`_PATHS`), extracted once into the cache.

    Raises
    ------
    BuildError
        If ``repo`` is not a git checkout holding ``commit``.
    """
    entry = cache_dir("tsim-reference") / commit
    if (entry / "pyproject.toml").is_file():
        return entry
    try:
        proc = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit, *_PATHS],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        raise BuildError(f"the reference tsim is built from commit {commit} of the git history, but git cannot "
                         f"be run ({exc}); pass --reference-tsim current or the path of a built library") from exc
    if proc.returncode != 0:
        raise BuildError(f"the reference tsim is built from commit {commit}, which `git archive` cannot read in "
                         f"{repo} ({proc.stderr.decode(errors='replace').strip()}); pass --reference-tsim current "
                         "or the path of a built library")
    tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=entry.parent))
    try:
        with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
            # (the archive is this repository's own; the "data" filter where Python has it)
            tar.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        try:
            os.rename(tmp, entry)
        except OSError:
            if not (entry / "pyproject.toml").is_file():  # not a concurrent extraction that won
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return entry


def reference_library(cfg: dict, repo: Path, commit: str = REFERENCE_COMMIT) -> Path:
    """Build (or find in the cache) the tsim library of ``commit`` for the configuration ``cfg``.

    Parameters
    ----------
    cfg : dict
        The configuration (as :class:`vta.env.Environment` takes it).
    repo : Path
        A git checkout of this project holding ``commit``.
    commit : str
        The tree to build tsim from (default :data:`REFERENCE_COMMIT`).

    Returns
    -------
    Path
        The shared library.

    Raises
    ------
    BuildError
        If the commit cannot be read, or its build fails (the message ends with its output).
    """
    tree = _tree(repo, commit)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-c", _BUILD, json.dumps(cfg)], cwd=tree, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or len(lines) < 2 or not Path(lines[-1]).is_file():
        raise BuildError(f"building the reference tsim of commit {commit} failed (exit code {proc.returncode}):\n"
                         f"{proc.stdout[-4000:]}")
    if not Path(lines[-2]).resolve().is_relative_to(tree.resolve()):
        raise BuildError(f"building the reference tsim of commit {commit} imported the package from {lines[-2]}, "
                         f"not from the commit's tree {tree}")
    return Path(lines[-1])
