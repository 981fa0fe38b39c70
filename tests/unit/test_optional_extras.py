"""Optional means optional: every command of ``python -m vta`` does its main work when the packages
of the optional extras (onnx, profile, dse) cannot be imported, and says what it left out.

Each command runs in a subprocess whose ``sitecustomize`` (on PYTHONPATH) puts a meta-path finder
in front of the import system that refuses the extras' top-level packages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The top-level packages each extra of pyproject.toml installs for the package's code.
EXTRAS = {
    "onnx": ("onnx", "onnxruntime", "sympy"),
    "profile": ("matplotlib",),
    "dse": ("dask", "distributed", "matplotlib"),
}
ALL = tuple(sorted({m for mods in EXTRAS.values() for m in mods}))

BLOCKER = '''
import os
import sys

_BLOCKED = frozenset(m for m in os.environ.get("VTA_TEST_BLOCKED_MODULES", "").split(",") if m)


class _Blocker:
    """Refuse to import the blocked top-level packages, as if they were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Blocker())
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A directory holding the blocking ``sitecustomize``."""
    path = tmp_path_factory.mktemp("blocker")
    (path / "sitecustomize.py").write_text(BLOCKER)
    return path


@pytest.fixture(scope="module")
def without(site):
    """``without(modules, *args)``: run ``python -m vta *args`` where ``modules`` cannot be imported."""

    def run(modules, *args, cwd=None):
        env = dict(os.environ, VTA_TEST_BLOCKED_MODULES=",".join(modules),
                   PYTHONPATH=os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")]))
        return subprocess.run([sys.executable, "-m", "vta", *map(str, args)], cwd=cwd or ROOT, env=env,
                              capture_output=True, text=True, timeout=600)

    return run


@pytest.fixture(scope="module")
def pack(tmp_path_factory, without):
    """The demo's program pack, written by ``demo`` without any extra."""
    path = tmp_path_factory.mktemp("pack") / "demo"
    proc = without(ALL, "demo", "--save-pack", path)
    assert proc.returncode == 0, proc.stderr
    assert "PASS" in proc.stdout
    return path


def test_the_blocker_refuses_the_extras_and_nothing_else(site):
    code = ("import importlib\n"
            "for m in ('matplotlib', 'onnx', 'numpy', 'json'):\n"
            "    try:\n"
            "        importlib.import_module(m); print(m, 'ok')\n"
            "    except ImportError as e:\n"
            "        print(m, 'refused', e.name)\n")
    env = dict(os.environ, VTA_TEST_BLOCKED_MODULES="matplotlib,onnx", PYTHONPATH=str(site))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert proc.stdout.split("\n")[:4] == ["matplotlib refused matplotlib", "onnx refused onnx", "numpy ok", "json ok"]


def test_demo_disasm_and_run_of_a_pack_need_no_extra(without, pack):
    proc = without(ALL, "disasm", pack)
    assert proc.returncode == 0, proc.stderr
    assert "FINISH" in proc.stdout
    proc = without(ALL, "run", pack)
    assert proc.returncode == 0, proc.stderr
    assert "PASS" in proc.stdout


def test_profile_without_matplotlib_writes_the_rest_and_says_what_it_skipped(without, pack, tmp_path):
    out = tmp_path / "prof"
    proc = without(ALL, "profile", pack, "--out", out, "--target", "model")
    assert proc.returncode == 0, proc.stderr
    assert {"trace.json", "layers.txt", "layers.csv", "layers.json"} <= {p.name for p in out.iterdir()}
    assert not list(out.glob("*.png"))
    assert "skipped utilisation, roofline, timeline: matplotlib is not installed" in proc.stdout
    assert json.loads((out / "trace.json").read_text())


@pytest.mark.parametrize("extra", ["dse", "profile"])
def test_sweep_without_dask_or_matplotlib_evaluates_every_point(without, tmp_path, extra):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"parameters": {"LOG_ACC_BUFF_SIZE": [16, 17]}, "workloads": ["alu.chain"]}))
    out = tmp_path / "out"
    # (without Dask, --workers 1 falls back to this process; with it, --workers 0 keeps the test quick)
    workers = "1" if extra == "dse" else "0"
    proc = without(EXTRAS[extra], "sweep", spec, "--out", out, "--workers", workers, "--no-progress",
                   "--cache", tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in (out / "points.jsonl").read_text().splitlines()]
    assert sorted(r["LOG_ACC_BUFF_SIZE"] for r in rows) == [16, 17]
    assert all(r["status"] == "ok" and r["cycles"] > 0 for r in rows)
    assert not (out / "pareto.png").exists()
    assert "skipping pareto.png: matplotlib is not installed" in proc.stderr
    if extra == "dse":
        assert "Dask is not installed" in proc.stderr


def test_sweep_on_a_named_cluster_without_dask_is_refused(without, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"parameters": {"LOG_ACC_BUFF_SIZE": [17]}, "workloads": ["alu.chain"]}))
    proc = without(EXTRAS["dse"], "sweep", spec, "--out", tmp_path / "out", "--scheduler", "tcp://127.0.0.1:1")
    assert proc.returncode == 2
    assert "--scheduler needs Dask" in proc.stderr and "pip install 'vta[dse]'" in proc.stderr


@pytest.mark.slow
def test_run_of_the_bundled_model_needs_only_the_onnx_extra(without):
    proc = without(EXTRAS["profile"] + EXTRAS["dse"], "run")
    assert proc.returncode == 0, proc.stderr
    assert "accuracy" in proc.stdout.lower()


@pytest.mark.slow
def test_run_of_an_onnx_model_without_onnx_says_which_extra_to_install(without):
    proc = without(EXTRAS["onnx"], "run")
    assert proc.returncode == 2
    assert "pip install" in proc.stderr and "Traceback" not in proc.stderr
