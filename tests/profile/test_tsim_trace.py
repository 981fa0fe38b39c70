"""tsim traces against the RTL's own counters, on hand-built programs of known timing."""

from __future__ import annotations

import json

import pytest

from tests.model.test_vs_tsim import TOLERANCE
from tests.profile import checks, programs
from vta.dram import DRAM
from vta.profile import UNITS, Recorder
from vta.profile.chrome import validate_chrome, write_chrome
from vta.sim.model import CycleModel

pytestmark = pytest.mark.verilator


def _trace(dev, make, layer="prog"):
    addr, n = programs.place(dev.env, dev.dram, make)
    dev.clear_stats()
    with Recorder(dev, window=16) as rec, rec.layer(layer):
        dev.run(addr, n)
    return rec.timeline, dev.stats()


def test_busy_cycles_equal_the_cores_counters(tsim_device):
    tl, stats = _trace(tsim_device, programs.pipeline)
    busy = checks.busy_by_unit(tl)
    for unit in UNITS:
        assert busy[unit] == stats[f"{unit}_busy_cycles"] > 0, unit
    stall = checks.token_stall_by_unit(tl)
    for unit in UNITS:
        assert stall[unit] == stats[f"{unit}_stall_cycles"], unit
    assert tl.cycles == stats["cycle_count"]
    retired = {u: len({e.index for e in tl.events if e.unit == u}) for u in UNITS}
    for unit in ("load", "compute", "store"):
        assert retired[unit] == stats[f"{unit}_retired"]


def test_slices_never_overlap_and_waits_end_after_push(tsim_device):
    tl, _ = _trace(tsim_device, programs.pipeline)
    checks.assert_no_overlap(tl)
    assert {f.channel for f in tl.flows} == {"l2g", "g2s", "s2g"}
    checks.assert_waits_after_push(tl)
    # the chain serialises the units: the GEMM waits for the load, the store for the GEMM
    by_index = {e.index: e for e in tl.events if e.unit != "fetch"}
    assert by_index[1].token_wait > 0 and by_index[1].start > by_index[0].end - 1
    assert by_index[2].token_wait > 0 and by_index[2].start > by_index[1].end - 1


def test_one_gemm_uop_per_cycle(tsim_device):
    slices = {}
    for n in (16, 272):
        tl, _ = _trace(tsim_device, programs.gemms(n))
        (gemm,) = [e for e in tl.events if e.unit == "compute" and e.info.name == "GEMM"]
        slices[n] = gemm.busy
        assert gemm.info.uops == n
    assert slices[272] - slices[16] == 256


def test_counters_and_trace_file(tsim_device, tmp_path):
    tl, stats = _trace(tsim_device, programs.pipeline)
    fills = [v["entries"] for _, v in tl.counters["queue compute"]]
    # three compute instructions queued; the run stops counting as FINISH retires, with it at the head
    assert max(fills) >= 3 and fills[-1] <= 1
    read = sum(sum(v.values()) for _, v in tl.counters["DRAM read B/cycle"])
    assert read > 0
    path = write_chrome(tl, tmp_path / "trace.json")
    doc = json.loads(path.read_text())
    validate_chrome(doc)
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == set(UNITS)
    phases = {e["ph"] for e in doc["traceEvents"]}
    assert {"X", "C", "s", "f", "M"} <= phases
    insn_busy = {}
    tids = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e["cat"] == "insn":
            insn_busy[tids[e["tid"]]] = insn_busy.get(tids[e["tid"]], 0) + e["dur"]
    for unit in UNITS:
        assert insn_busy[unit] == stats[f"{unit}_busy_cycles"]
    # layer -> instruction nesting: every instruction slice lies inside a layer slice of its track
    layers = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "layer"]
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e["cat"] == "insn":
            assert any(la["tid"] == e["tid"] and la["ts"] <= e["ts"] and e["ts"] + e["dur"] <= la["ts"] + la["dur"]
                       for la in layers)


def test_model_agrees_with_tsim_per_unit(tsim_device):
    tl_t, _ = _trace(tsim_device, programs.pipeline)
    with DRAM(1 << 24) as dram, CycleModel(tsim_device.env, dram) as model:
        tl_m, _ = _trace(model, programs.pipeline)
    bt, bm = checks.busy_by_unit(tl_t), checks.busy_by_unit(tl_m)
    for unit in UNITS:
        assert abs(bm[unit] - bt[unit]) <= TOLERANCE * bt[unit], (unit, bm[unit], bt[unit])
    assert abs(tl_m.cycles - tl_t.cycles) <= TOLERANCE * tl_t.cycles
    assert [(f.channel, f.producer, f.consumer) for f in tl_m.flows] == \
           [(f.channel, f.producer, f.consumer) for f in tl_t.flows]


def test_probe_off_records_nothing(tsim_device):
    dev = tsim_device
    addr, n = programs.place(dev.env, dev.dram, programs.gemms(8))
    with Recorder(dev):
        pass
    assert "run" not in vars(dev)
    dev.run(addr, n)
    assert dev.probe_records is None
    assert int(dev._lib.lib.vta_tsim_probe_count(dev._handle)) == 0


def test_command_line_on_tsim(tsim_device, tmp_path):
    import io

    from vta.__main__ import main
    from vta.demo import build_demo_pack

    pack_dir = build_demo_pack(tsim_device.env, seed=0).save(tmp_path / "demo")
    out = io.StringIO()
    rc = main(["profile", str(pack_dir), "--target", "tsim", "--out", str(tmp_path / "p"), "--no-plots"], out=out)
    assert rc == 0, out.getvalue()
    rows = json.loads((tmp_path / "p" / "layers.json").read_text())
    (row,) = rows["layers"]
    assert row["layer"] == "demo" and row["cycles"] == rows["counters"]["cycle_count"]
    for unit in UNITS:
        assert row[f"{unit}_busy"] == rows["counters"][f"{unit}_busy_cycles"]
        assert row[f"{unit}_stall"] == rows["counters"][f"{unit}_stall_cycles"]
