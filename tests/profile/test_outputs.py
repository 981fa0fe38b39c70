"""The profiler's outputs: reports (text, CSV, JSON), plots, the command line, the model hook,
and the vta.testing switch (cycle model: no Verilator needed)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests.conftest import make_env
from tests.profile import programs
from vta.__main__ import main
from vta.profile.recorder import ProfileError
from vta.demo import build_demo_pack
from vta.dram import DRAM, global_dram
from vta.env import Environment
from vta.profile import UNITS, Recorder
from vta.profile.chrome import validate_chrome
from vta.profile.report import layer_rows, write_reports
from vta.profile.session import profile_packs, register_model_loader
from vta.sim.model import CycleModel
from vta.sim.targets import device_for

_PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def demo_pack():
    return build_demo_pack(make_env(), seed=0)


def _numeric(value: str):
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return value


def test_reports_agree_with_the_trace(tmp_path, demo_pack):
    tl, mismatches = profile_packs([("a", demo_pack), ("b", demo_pack)], "model")
    assert mismatches == {"a": {"out": 0}, "b": {"out": 0}}
    files = write_reports(tl, tmp_path)
    doc = json.loads(files["json"].read_text())
    rows = doc["layers"]
    assert [r["layer"] for r in rows] == ["a", "b", "total"]
    with open(files["csv"], newline="") as fh:
        from_csv = [{k: _numeric(v) for k, v in r.items()} for r in csv.DictReader(fh)]
    assert from_csv == rows
    for row, layer in zip(rows, tl.layers, strict=True):
        assert row["cycles"] == layer.end - layer.start
        assert row["gemm_bound_pct"] == round(100 * row["gemm_uops"] / row["cycles"], 2)
        for unit in UNITS:
            own = [e for e in tl.events if e.layer == layer.name and e.unit == unit]
            assert row[f"{unit}_busy"] == sum(e.busy for e in own)
            assert row[f"{unit}_busy"] + row[f"{unit}_stall"] + row[f"{unit}_idle"] == row["cycles"]
    total = rows[-1]
    assert total["cycles"] == tl.counts["cycle_count"]
    assert total["compute_busy"] == tl.counts["compute_busy_cycles"]
    assert total["store_stall_reason"] == "token g2s"  # the store waits for the GEMMs
    assert doc["roofs"] == {"macs_per_cycle": 256, "dram_bytes_per_cycle": 8}
    text = files["text"].read_text()
    assert "compute roof 256 MACs/cycle" in text and "\na " in text and "\ntotal" in text


def test_plots_are_written(tmp_path, demo_pack):
    pytest.importorskip("matplotlib")
    from vta.profile.plots import write_plots

    tl, _ = profile_packs([("conv", demo_pack)], "model")
    for name, path in write_plots(tl, tmp_path).items():
        data = path.read_bytes()
        assert data.startswith(_PNG) and len(data) > 5000, name


def test_command_line(tmp_path, demo_pack):
    pack_dir = demo_pack.save(tmp_path / "demo")
    out = io.StringIO()
    rc = main(["profile", str(pack_dir), "--target", "model", "--out", str(tmp_path / "prof"), "--no-plots"], out=out)
    assert rc == 0, out.getvalue()
    text = out.getvalue()
    assert "ui.perfetto.dev" in text and "layers.csv" in text
    for name in ("trace.json", "layers.txt", "layers.csv", "layers.json"):
        assert (tmp_path / "prof" / name).stat().st_size > 0
    validate_chrome(json.loads((tmp_path / "prof" / "trace.json").read_text()))
    assert not (tmp_path / "prof" / "timeline.png").exists()


def test_model_file_without_importer(tmp_path, monkeypatch):
    from vta.profile import session

    monkeypatch.setattr(session, "_model_runner", None)
    monkeypatch.setattr(session, "_model_loader", None)
    with pytest.raises(ProfileError, match="no model importer is wired"):
        session.run_profile(tmp_path / "net.onnx", "model", tmp_path / "o", out=io.StringIO())


def test_missing_model_file_is_a_clear_error(tmp_path, capsys):
    rc = main(["profile", str(tmp_path / "net.onnx"), "--out", str(tmp_path / "o")], out=io.StringIO())
    assert rc == 2
    assert "net.onnx' does not exist" in capsys.readouterr().err


def test_model_file_through_the_hook(tmp_path, demo_pack):
    seen = []

    def loader(path):
        seen.append(path)
        return [("conv1", demo_pack), ("dense", demo_pack)]

    from vta.profile import session

    import vta.models  # noqa: F401  (registers the whole-model runner, which a loader must not shadow here)

    runner = session._model_runner
    session.register_model_runner(None)
    register_model_loader(loader)
    try:
        out = io.StringIO()
        rc = main(["profile", str(tmp_path / "net.onnx"), "--out", str(tmp_path / "o"), "--no-plots"], out=out)
    finally:
        register_model_loader(None)
        session.register_model_runner(runner)
    assert rc == 0 and seen == [tmp_path / "net.onnx"]
    doc = json.loads((tmp_path / "o" / "trace.json").read_text())
    layer_names = {e["name"] for e in doc["traceEvents"] if e.get("cat") == "layer"}
    assert layer_names == {"conv1", "dense"}
    insn_layers = {e["args"]["layer"] for e in doc["traceEvents"] if e.get("cat") == "insn"}
    assert insn_layers == {"conv1", "dense"}


def test_testing_switch_traces_the_runtime_device(tmp_path):
    import vta.testing

    env = Environment({**make_env().cfg_dict, "TARGET": "model"})
    dev = device_for(env)
    addr, n = programs.place(env, global_dram(), programs.pipeline)
    with vta.testing.trace(out_dir=tmp_path, env=env) as rec:
        with rec.layer("node0"):
            dev.run(addr, n)
    assert [la.name for la in rec.timeline.layers] == ["node0"]
    assert (tmp_path / "layers.csv").exists() and (tmp_path / "trace.json").exists()
    assert "run" not in vars(dev)


def test_layer_rows_of_one_model_run():
    env = make_env()
    with DRAM(1 << 24) as dram, CycleModel(env, dram) as dev:
        addr, n = programs.place(env, dram, programs.pipeline)
        with Recorder(dev) as rec:
            dev.run(addr, n)
    (row,) = layer_rows(rec.timeline)
    assert row["macs"] == (64 + 32) * env.BATCH * env.BLOCK_IN * env.BLOCK_OUT
    assert row["bottleneck"] == "load"
