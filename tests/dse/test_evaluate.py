"""One design point on the cycle model: rows, infeasibility reasons, cache keys (no Dask)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from tests.compiler.fsim_run import build_and_run
from tests.compiler.workloads.resnet import conv_layer
from vta.dse import workloads as wl
from vta.dse.evaluate import Point, area, evaluate, release_devices
from vta.dse.space import shipped_config
from vta.env import Environment


@pytest.fixture(autouse=True, scope="module")
def _release():
    yield
    release_devices()


def test_a_resnet_layer_row_agrees_with_the_tutorial_flow(tmp_path):
    """The row's cycles and counters equal a model run through save/LocalSession/load_module."""
    cfg = shipped_config(None)
    row = evaluate(Point.make(cfg, "resnet18.C11"))
    assert row["status"] == "ok", row
    env = Environment({**cfg, "TARGET": "model"})
    with env:
        sched, args, inputs, _ = conv_layer(env, "C11", env.BATCH, np.random.default_rng(5))
        _, per_call, _ = build_and_run(sched, args, inputs, tmp_path)
    stats = per_call[0]
    assert row["cycles"] == stats["cycle_count"]
    assert row["gemm_counter"] == stats["gemm_counter"]
    moved = sum(stats[k] for k in ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes",
                                   "out_store_nbytes"))
    assert row["bytes_moved"] == moved
    assert row["macs"] == 7 * 7 * 512 * 512 * 9  # C11: 7x7 output, 512 -> 512 channels, 3x3 kernel
    assert row["macs_per_cycle"] == pytest.approx(row["macs"] / row["cycles"])
    assert row["mac_count"] == 256 and row["sram_bits"] == 8 * ((1 << 15) + (1 << 15) + (1 << 18) + (1 << 17))


def test_unencodable_configuration_is_infeasible_with_the_rule():
    cfg = {**shipped_config(None), "LOG_INP_BUFF_SIZE": 18}
    row = evaluate(Point.make(cfg, "alu.chain"))
    assert row["status"] == "infeasible"
    assert row["reason"].startswith("configuration:") and "micro-op needs" in row["reason"]


@pytest.mark.parametrize("base, change, workload, words", [
    (None, {"LOG_ACC_BUFF_SIZE": 12}, "alu.chain", "accumulator rows"),
    (None, {"LOG_WGT_BUFF_SIZE": 9}, "resnet18.C2", "wgt buffer overflows"),
    ("narrow.json", {}, "gemm.blocked", "int8 inputs"),
])
def test_workload_that_does_not_fit_is_infeasible_with_the_reason(base, change, workload, words):
    row = evaluate(Point.make({**shipped_config(base), **change}, workload))
    assert row["status"] == "infeasible", row
    assert row["reason"].startswith("workload:") and words in row["reason"]
    assert row["mac_count"] > 0  # the area proxy is known even when the workload does not run


def test_keys_separate_configurations_workloads_and_levels():
    cfg = shipped_config(None)
    keys = {Point.make(cfg, "alu.chain").key, Point.make({**cfg, "LOG_BLOCK": 5}, "alu.chain").key,
            Point.make(cfg, "gemm.blocked").key, Point.make(cfg, "alu.chain", "tsim").key}
    assert len(keys) == 4
    assert Point.make(dict(reversed(list(cfg.items()))), "alu.chain").key == Point.make(cfg, "alu.chain").key


def test_area_proxy():
    env = Environment(shipped_config("batch2.json"))
    assert area(env) == {
        "mac_count": 2 * 16 * 16,
        "sram_bits": 8
        * sum(
            1 << env.__dict__[k]
            for k in ("LOG_UOP_BUFF_SIZE", "LOG_INP_BUFF_SIZE", "LOG_WGT_BUFF_SIZE", "LOG_ACC_BUFF_SIZE")
        ),
    }


def test_workload_registry_and_hook():
    assert len(wl.resolve(["resnet18"])) == 10
    with pytest.raises(KeyError, match="unknown workload"):
        wl.resolve(["resnet50.C1"])

    def runner(workload, env, device):
        return {"cycle_count": 7, "outputs": b""}

    wl.register_kind("fake-net", wl.Kind(runner, lambda w, env: 14, lambda w: "v1"), {"fake.net": (1,)})
    row = evaluate(Point.make(shipped_config(None), "fake.net"))
    assert row["status"] == "ok" and row["cycles"] == 7 and row["macs_per_cycle"] == 2.0


def test_in_process_evaluation_says_when_the_arena_is_full(monkeypatch):
    module = importlib.import_module("vta.dse.evaluate")  # the package exports a function of that name
    monkeypatch.setattr(module, "ARENA_HEADROOM", 1 << 40)
    row = evaluate(Point.make(shipped_config(None), "alu.chain"))
    assert row["status"] == "error" and "DRAM arena is used up" in row["reason"]
