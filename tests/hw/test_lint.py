"""``verilator --lint-only -Wall`` is clean on the RTL for the default and the BATCH=2 package."""

import subprocess

import pytest

from tests.conftest import make_env
from tests.hw.hwsim import HW_DIR, needs_verilator, rtl_sources
from vta.sim.tsim import hwgen
from vta.sim.tsim import verilator as _verilator

pytestmark = needs_verilator


@pytest.mark.parametrize("config", ["vta_config.json", "batch2.json", "block32.json", "extended.json", "narrow.json"])
def test_lint_clean(tmp_path, config):
    pkg = tmp_path / "vta_pkg.sv"
    pkg.write_text(hwgen.sv_package(make_env(config)))
    waivers = sorted((HW_DIR / "lint").glob("*.vlt"))
    assert waivers, "hw/lint/*.vlt is missing"
    cmd = [_verilator.verilator_bin(), "--lint-only", "-Wall", "--top-module", "vta_top",
           *map(str, waivers), str(pkg), *map(str, rtl_sources())]
    proc = subprocess.run(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)
    assert proc.returncode == 0 and "%Warning" not in proc.stdout, proc.stdout[-4000:]
