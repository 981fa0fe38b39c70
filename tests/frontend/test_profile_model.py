"""``python -m vta profile MODEL.onnx``: a whole model traced on the cycle model, one layer per
accelerator node, its cycles those the model's own counters report for the same run."""

from __future__ import annotations

import io
import json

import pytest

from vta.env import Environment, get_env
from vta.models import digits_model_path, runner
from vta.models.profile import random_input
from vta.profile.session import run_profile

pytestmark = pytest.mark.native


def test_profile_digits_on_the_cycle_model(tmp_path):
    out = io.StringIO()
    assert run_profile(digits_model_path(), "model", tmp_path, plots=False, out=out) == 0
    report = json.loads((tmp_path / "layers.json").read_text())
    traced = {row["layer"]: row["cycles"] for row in report["layers"] if row["layer"] != "total"}

    # The same model and input, run untraced: the executor's per-node device counters.
    env = Environment({**get_env().cfg_dict, "TARGET": "model"})
    built = runner.build(digits_model_path(), env)
    try:
        runner.run(built, random_input(tuple(built.input_shape), built.input_dtype))
        counted = {r.name: int(r.stats["cycle_count"]) for r in built.module.node_records() if r.device == "vta"}
    finally:
        built.close()
    assert set(traced) == set(counted) and len(counted) >= 3
    for name, cycles in counted.items():
        assert traced[name] == cycles, name
    assert "trace.json" in out.getvalue()
    trace = json.loads((tmp_path / "trace.json").read_text())
    names = {e.get("name") for e in trace["traceEvents"]}
    assert set(counted) <= names
