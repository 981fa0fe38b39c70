"""Cycle-model and fsim traces (pure Python): the model's own counters, ordering, no time in fsim."""

from __future__ import annotations

import json

import pytest

from tests.conftest import make_env
from tests.profile import checks, programs
from vta.dram import DRAM
from vta.profile import UNITS, ProfileError, Recorder
from vta.profile.chrome import to_chrome, validate_chrome
from vta.sim.device import NullDevice
from vta.sim.fsim import FunctionalSimulator
from vta.sim.model import CycleModel


@pytest.fixture
def model():
    env = make_env()
    with DRAM(1 << 24) as dram, CycleModel(env, dram) as dev:
        yield dev


def _trace(dev, make, layer="prog"):
    addr, n = programs.place(dev.env, dev.dram, make)
    dev.clear_stats()
    with Recorder(dev, window=16) as rec, rec.layer(layer):
        dev.run(addr, n)
    return rec.timeline, dev.stats()


def test_busy_and_stall_equal_the_models_counters(model):
    tl, stats = _trace(model, programs.pipeline)
    busy, stall = checks.busy_by_unit(tl), checks.token_stall_by_unit(tl)
    for unit in UNITS:
        assert busy[unit] == stats[f"{unit}_busy_cycles"] > 0, unit
        assert stall[unit] == stats[f"{unit}_stall_cycles"], unit
    assert tl.cycles == stats["cycle_count"]


def test_ordering(model):
    tl, _ = _trace(model, programs.pipeline)
    checks.assert_no_overlap(tl)
    checks.assert_waits_after_push(tl)
    assert [f.channel for f in tl.flows] == ["l2g", "g2s", "s2g"]


def test_gemm_slice_follows_the_cost_formula(model):
    # costs.py: a GEMM of n > 0 micro-ops occupies the compute unit n + pipe_fill cycles
    tl, _ = _trace(model, programs.gemms(100))
    (gemm,) = [e for e in tl.events if e.unit == "compute" and e.info.name == "GEMM"]
    assert gemm.busy == 100 + model.timing.pipe_fill


def test_runs_share_one_axis_and_keep_their_layer(model):
    addr, n = programs.place(model.env, model.dram, programs.pipeline)
    with Recorder(model) as rec:
        with rec.layer("first"):
            model.run(addr, n)
        model.run(addr, n)
    tl = rec.timeline
    assert [la.name for la in tl.layers] == ["first", "run 1"]
    assert tl.layers[1].start == tl.layers[0].end
    assert min(e.start for e in tl.events if e.layer == "run 1") >= tl.layers[0].end
    validate_chrome(json.loads(json.dumps(to_chrome(tl))))


def test_probe_off_after_recording(model):
    addr, n = programs.place(model.env, model.dram, programs.gemms(4))
    with Recorder(model):
        model.run(addr, n)
    assert "run" not in vars(model)
    model.run(addr, n)
    assert model.probe_events is None


def test_fsim_gives_program_order_without_time():
    env = make_env()
    with DRAM(1 << 24) as dram, FunctionalSimulator(env, dram) as dev:
        addr, n = programs.place(env, dram, programs.pipeline)
        with Recorder(dev) as rec:
            dev.run(addr, n)
    tl = rec.timeline
    assert [e.index for e in tl.events] == list(range(n))
    assert [e.unit for e in tl.events] == ["load", "compute", "store", "compute", "compute"]
    assert all(e.start is None and e.end is None for e in tl.events)
    assert tl.events[0].info.dram_bytes == 8 * env.WGT_ELEM_BYTES
    assert tl.events[1].info.pops == ("l2g",) and tl.events[1].info.pushes == ("g2s",)
    doc = to_chrome(tl)
    validate_chrome(doc)
    assert not any(e["ph"] in ("C", "s") for e in doc["traceEvents"])


def test_a_device_without_probe_is_refused():
    env = make_env()
    with DRAM(1 << 20) as dram:
        with pytest.raises(ProfileError, match="only tsim"):
            Recorder(NullDevice(env, dram))
        with pytest.raises(ValueError, match="window"):
            Recorder(FunctionalSimulator(env, dram), window=0)


def test_a_layer_name_used_twice_gets_one_slice_per_run(model):
    addr, n = programs.place(model.env, model.dram, programs.pipeline)
    with Recorder(model) as rec:
        for name in ("conv", "relu", "conv"):
            with rec.layer(name):
                model.run(addr, n)
    doc = to_chrome(rec.timeline)
    validate_chrome(doc)
    compute_tid = 3
    layer_slices = [(e["name"], e["ts"]) for e in doc["traceEvents"]
                    if e.get("cat") == "layer" and e["tid"] == compute_tid]
    starts = [la.start for la in rec.timeline.layers]
    assert layer_slices == [("conv", starts[0]), ("relu", starts[1]), ("conv", starts[2])]
    from vta.profile.report import layer_rows

    rows = {r["layer"]: r for r in layer_rows(rec.timeline)}
    assert rows["conv"]["cycles"] == 2 * rows["relu"]["cycles"]  # the same program twice


def test_fsim_layers_in_program_order():
    env = make_env()
    with DRAM(1 << 24) as dram, FunctionalSimulator(env, dram) as dev:
        addr, n = programs.place(env, dram, programs.pipeline)
        with Recorder(dev) as rec:
            for name in ("a", "b"):
                with rec.layer(name):
                    dev.run(addr, n)
    doc = to_chrome(rec.timeline)
    validate_chrome(doc)
    insn = [e for e in doc["traceEvents"] if e.get("cat") == "insn"]
    assert [e["ts"] for e in insn] == list(range(2 * n))
    assert [e["args"]["layer"] for e in insn] == ["a"] * n + ["b"] * n


def test_one_recorder_per_device(model):
    with Recorder(model):
        with pytest.raises(ProfileError, match="already being recorded"):
            Recorder(model).start()
    with Recorder(model):  # free again once the first one stopped
        pass


@pytest.mark.parametrize("events, message", [
    ([{"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 10, "name": "a"},
      {"ph": "X", "pid": 1, "tid": 1, "ts": 5, "dur": 10, "name": "b"}], "overlaps"),
    ([{"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": -1, "name": "a"}], "duration"),
    ([{"ph": "s", "pid": 1, "tid": 1, "ts": 0, "id": 7, "name": "t"}], "flow 7"),
    ([{"ph": "C", "pid": 1, "ts": 0, "name": "q", "args": {"n": "x"}}], "numbers"),
    ([{"ph": "Q", "pid": 1}], "unknown phase"),
])
def test_validator_rejects_malformed_traces(events, message):
    with pytest.raises(ValueError, match=message):
        validate_chrome({"traceEvents": events})
