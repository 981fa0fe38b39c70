"""A non-editable install works from any directory: ``pip install .`` and a built wheel.

Each variant is installed into a fresh virtual environment in ``tmp_path`` (it sees this
interpreter's packages for the dependencies, never this checkout: the installed ``vta`` comes
first on its path), and README's main command, ``python -m vta demo``, runs in an empty
directory outside the checkout; so does the get-started tutorial (compile, link against the
runtime built from the packaged C sources, run on fsim), and with Verilator the demo on tsim
(the RTL and the shim read from the package). Slow: builds, installs, and a first numba
compilation in each environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: What a source distribution holds (MANIFEST.in): copied so the build never writes into the checkout.
SOURCE = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "configs", "hw", "sim", "vta")

pytestmark = pytest.mark.slow


def _run(cmd, cwd, env=None):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout


def _source_copy(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.o", "share")
    dest.mkdir()
    for name in SOURCE:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        else:
            shutil.copy2(src, dest / name)
    return dest


def _venv(path: Path) -> Path:
    _run([sys.executable, "-m", "venv", "--system-site-packages", path], cwd=path.parent)
    return path / "bin" / "python"


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VTA_CONFIG")}
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


@pytest.mark.parametrize("how", ["wheel", "pip install ."])
def test_installed_package_runs_outside_the_checkout(how, tmp_path):
    src = _source_copy(tmp_path / "src")
    python = _venv(tmp_path / "venv")
    env = _clean_env()
    if how == "wheel":
        _run([python, "-m", "pip", "wheel", "--no-deps", "-w", tmp_path / "dist", src], cwd=tmp_path, env=env)
        (wheel,) = (tmp_path / "dist").glob("vta-*.whl")
        target = wheel
    else:
        target = src
    _run([python, "-m", "pip", "install", "--no-deps", target], cwd=tmp_path, env=env)
    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()
    where = _run([python, "-c", "import vta, vta.env as e; print(vta.__file__); print(e.default_config_path()); "
                  "print(e.data_dir('hw')); print(e.data_dir('sim'))"], cwd=run_dir, env=env).splitlines()
    site = str(tmp_path / "venv")
    assert all(line.startswith(site) for line in where), where  # the installed copy, not the checkout
    from vta.sim.tsim import library

    hw = Path(where[2])
    shipped = [*hw.glob("*.sv"), *(hw / "sim").glob("*.sv")]
    assert sorted(p.name for p in shipped) == sorted(p.name for p in library.sources())
    assert (hw / "syn" / "vta_sram.sv").is_file()  # the synthesis view `python -m vta area` reads
    assert (Path(where[3]) / "vta_tsim.cc").is_file() and (Path(where[3]) / "vta_tsim.h").is_file()
    out = _run([python, "-m", "vta", "demo"], cwd=run_dir, env=env)
    assert "PASS" in out and "FAIL" not in out
    from vta.sim.tsim import verilator

    if verilator.available():  # the RTL and the shim from the package (a cached build when unchanged)
        out = _run([python, "-m", "vta", "demo", "--target", "tsim"], cwd=run_dir, env=env)
        assert "PASS" in out and "FAIL" not in out and "cycle_count" in out
    shutil.copy(ROOT / "examples" / "get_started.py", run_dir)
    out = _run([python, "get_started.py"], cwd=run_dir, env=env)
    assert "PASSED" in out
    assert sorted(p.name for p in run_dir.iterdir()) == ["get_started.py"]
