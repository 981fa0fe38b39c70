"""Profile-guided optimisation (GCC) of the tsim library's per-cycle code.

:func:`vta.sim.tsim.library.build` compiles the Verilated model and the shim twice: once
instrumented (``-fprofile-generate``), which is then run on a training set of workloads in a
child process (:func:`train`; the profile is written when that process exits), and once with
the profile (``-fprofile-use``). The profile only steers the compiler's code layout, inlining,
unrolling and branch order: the library computes the same bits and the same cycles, and runs
faster (about 6% on the GEMM-heavy benchmark program and 9% on ResNet-18 C11 per CPU second;
about 3% fewer host instructions per simulated cycle).

The training set (:data:`TRAINING`) is part of the library's cache key: the same sources, flags
and training give the same library. Set ``VTA_TSIM_PGO=0`` to build without it (for instance with
a compiler other than GCC); that setting is part of the key too.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from ...env import Environment
from ...errors import BuildError

__all__ = ["TRAINING", "GENERATE_FLAGS", "USE_FLAGS", "enabled", "train", "recipe"]

#: The workloads the instrumented library runs (:mod:`vta.dse.workloads`): a convolution layer
#: (GEMM with its loads, stores and requantisation epilogue on the ALU) and an ALU-heavy program.
#: A workload the configuration cannot run is skipped.
TRAINING = ("resnet18.C11", "alu.chain")
#: Compiler flags (the C++ preprocessor and compiler line, and the link line) of the instrumented
#: build. The model is single-threaded, so the counters need no atomic updates.
GENERATE_FLAGS = ("-fprofile-generate -fprofile-update=single", "-fprofile-generate")
#: Compiler flags of the build with the profile: code the training did not reach (the checks'
#: failure paths, the run-time library) is compiled as without a profile.
USE_FLAGS = "-fprofile-use -fprofile-partial-training -Wno-missing-profile"
#: Characters of the training's output kept in a BuildError.
_TAIL_CHARS = 4000


@functools.lru_cache(maxsize=None)
def _compiler_is_gcc() -> bool:
    """Whether ``c++`` (the compiler of Verilator's makefile) is GCC, whose profile flags these are."""
    try:
        proc = subprocess.run(["c++", "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError:
        return False
    return proc.returncode == 0 and "Free Software Foundation" in proc.stdout and "clang" not in proc.stdout


def enabled() -> bool:
    """Whether builds use the profile: on Linux x86-64 with GCC, unless ``VTA_TSIM_PGO`` is ``0``.

    Raises
    ------
    BuildError
        If ``VTA_TSIM_PGO`` is set to anything but ``0`` or ``1``.
    """
    value = os.environ.get("VTA_TSIM_PGO", "1")
    if value not in ("0", "1"):
        raise BuildError(f"VTA_TSIM_PGO is {value!r}; accepted: '0' (build without a profile) or '1' (the default)")
    return (value == "1" and platform.system() == "Linux" and platform.machine() in ("x86_64", "AMD64")
            and _compiler_is_gcc())


def recipe() -> list[str]:
    """What the profile depends on besides the sources and the configuration (for the cache key)."""
    return ["pgo", *TRAINING, *GENERATE_FLAGS, USE_FLAGS]


def train(library: Path, env: Environment, cwd: Path) -> None:
    """Run the training workloads on the instrumented ``library`` in a child process.

    Parameters
    ----------
    library : Path
        The instrumented build.
    env : Environment
        Its configuration.
    cwd : Path
        Working directory of the child.

    Raises
    ------
    BuildError
        If the child fails (the message ends with the tail of its output).
    """
    package_root = Path(__file__).resolve().parents[3]
    path = os.pathsep.join([str(package_root), *filter(None, [os.environ.get("PYTHONPATH")])])
    cmd = [sys.executable, "-m", "vta.sim.tsim.pgo", str(library), json.dumps(env.cfg_dict)]
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=dict(os.environ, PYTHONPATH=path))
    if proc.returncode != 0:
        raise BuildError(f"the profile-guided build's training run failed (exit code {proc.returncode}); set "
                         f"VTA_TSIM_PGO=0 to build without a profile:\n{proc.stdout[-_TAIL_CHARS:]}")


def _train_child(library: str, cfg_json: str) -> None:
    """The child of :func:`train`: run :data:`TRAINING` on ``library`` (its profile is written at exit)."""
    from ...dram import global_dram
    from ...dse import workloads
    from .simulator import TSim

    env = Environment(json.loads(cfg_json))
    ran = 0
    with env, TSim(env, global_dram(), library=library) as dev:
        for name in TRAINING:
            try:
                workloads.run(workloads.get(name), env, dev)
            except workloads.InfeasibleWorkload:
                continue
            ran += 1
    print(f"trained on {ran} of {len(TRAINING)} workloads")


if __name__ == "__main__":
    _train_child(sys.argv[1], sys.argv[2])
