"""Baseline files, cycle verdicts, the table and the JUnit XML of the regression (pure Python)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from vta.dse import baseline as bl
from vta.dse.regress import Options, default_configs
from vta.dse.report import Check, WorkloadRow, format_table, write_junit


@pytest.mark.parametrize("base, cycles, status", [
    (1000, 1010, "same"), (1000, 1011, "regression"), (1000, 990, "same"), (1000, 989, "faster"),
    (None, 5, "new"),
])
def test_verdicts_at_the_one_percent_threshold(base, cycles, status):
    v = bl.compare(base, cycles, 0.01)
    assert v.status == status
    if base:
        assert v.percent == f"{100 * (cycles - base) / base:+.2f}%"


def test_baseline_round_trip_and_configuration_check(tmp_path):
    cfg = {"LOG_BATCH": 0, "LOG_BLOCK": 4, "HW_VER": "0.0.2"}
    path = bl.save(tmp_path / "b.json", bl.Baseline(cfg, {"x": 10}, {"x": 11}))
    back = bl.load(path, cfg)
    assert back.tsim_cycles == {"x": 10} and back.model_cycles == {"x": 11}
    with pytest.raises(bl.BaselineError, match="another configuration"):
        bl.load(path, {**cfg, "LOG_BLOCK": 5})
    assert bl.load(tmp_path / "none.json") is None
    waived = bl.save(tmp_path / "w.json", bl.Baseline(cfg, {"x": 10}, {"x": 11},
                                                      {"x": {"tolerance": 0.2, "reason": "known"}}))
    assert bl.load(waived).model_waivers == {"x": {"tolerance": 0.2, "reason": "known"}}
    doc = json.loads(waived.read_text())
    doc["model_waivers"]["x"]["reason"] = ""
    waived.write_text(json.dumps(doc))
    with pytest.raises(bl.BaselineError, match="model_waivers"):
        bl.load(waived)
    (tmp_path / "bad.json").write_text(json.dumps({"format_version": 9}))
    with pytest.raises(bl.BaselineError, match="format_version"):
        bl.load(tmp_path / "bad.json")


def test_committed_baselines_cover_every_shipped_configuration():
    from vta.dse.regress import REPO

    for path in default_configs():
        doc = json.loads((REPO / "baselines" / path.name).read_text())
        assert doc["config"]["LOG_BLOCK"] == json.loads(path.read_text())["LOG_BLOCK"]
        assert "alu.chain" in doc["tsim_cycles"]


def test_table_and_junit(tmp_path):
    checks = [Check("lint", "vta_config.json", "pass"),
              Check("workloads", "vta_config.json alu.chain cycles", "fail", "cycle regression: +5.00%"),
              Check("cocotb", "test_alu::test_alu", "skip", "no Verilator"),
              Check("model", "vta_config.json alu.chain", "error", "boom\nmore")]
    rows = [WorkloadRow("vta_config.json", "alu.chain", 1050, 1000, "+5.00%", 1049, -0.001, "REGRESSION")]
    text = format_table(checks, rows)
    assert "FAIL: 4 checks, 1 passed, 1 failed, 1 errors, 1 skipped" in text
    assert "REGRESSION" in text and "1,050" in text and "-0.10%" in text
    root = ET.parse(write_junit(checks, tmp_path / "j.xml")).getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"lint", "workloads", "cocotb", "model"}
    case = suites["workloads"].find("testcase")
    assert case.get("name") == "vta_config.json alu.chain cycles"
    assert case.find("failure").get("message") == "cycle regression: +5.00%"
    assert suites["model"].find("testcase/error") is not None
    assert suites["cocotb"].get("skipped") == "1"


@pytest.mark.parametrize("kwargs, words", [
    ({"stages": ("lint", "fuzz")}, "unknown stage"),
    ({"threshold": -1}, "non-negative"),
    ({"baselines": "x.json"}, "names one configuration"),
])
def test_bad_options(kwargs, words):
    with pytest.raises(ValueError, match=words):
        Options(**kwargs)
