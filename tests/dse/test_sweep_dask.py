"""Sweeps on a two-worker Dask LocalCluster: same rows as in-process runs, a killed worker,
resuming after an interruption, and the command line."""

from __future__ import annotations

import json
import os
import signal

import pytest

distributed = pytest.importorskip("distributed")

from vta.__main__ import main  # noqa: E402
from vta.dse.engine import local_cluster, run_points  # noqa: E402
from vta.dse.evaluate import Point, evaluate, release_devices  # noqa: E402
from vta.dse.results import read_jsonl  # noqa: E402
from vta.dse.space import Space  # noqa: E402
from vta.dse.store import ResultStore  # noqa: E402

#: Fields that depend on the run, not on the design point.
_VOLATILE = {"seconds"}


@pytest.fixture(scope="module")
def client():
    cluster = local_cluster(2)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _points(workloads=("alu.chain", "gemm.blocked")):
    space = Space({"LOG_BLOCK": [3, 4, 5], "LOG_ACC_BUFF_SIZE": [16, 17]})
    return [Point.make(cfg, w) for cfg in space.grid() for w in workloads]


def _strip(row):
    return {k: v for k, v in row.items() if k not in _VOLATILE}


def test_two_workers_give_the_rows_of_single_process_runs(client, tmp_path):
    points = _points()
    outcome = run_points(points, store=ResultStore(tmp_path / "cache"), client=client)
    assert outcome.evaluated == len(points) and outcome.cached == 0 and outcome.failed == 0
    try:
        alone = [evaluate(p) for p in points]
    finally:
        release_devices()
    assert [_strip(r) for r in outcome.rows] == [_strip(r) for r in alone]
    statuses = {r["status"] for r in outcome.rows}
    assert statuses == {"ok", "infeasible"}  # LOG_BLOCK 3 cannot be encoded with these buffers


def _has_model_workloads() -> bool:
    import sys

    return "vta.models.workloads" in sys.modules


def test_workers_run_model_workloads_they_never_imported(client, tmp_path):
    """Worker processes import the module that registered a workload's kind (here vta.models for
    an ``onnx:PATH`` model) before evaluating it, and give the rows of an in-process run."""
    pytest.importorskip("onnxruntime")
    from vta.models import digits_model_path

    assert not any(client.run(_has_model_workloads).values())  # the workers never imported vta.models
    points = [Point.make(cfg, f"onnx:{digits_model_path()}") for cfg in Space({"LOG_ACC_BUFF_SIZE": [16, 17]}).grid()]
    outcome = run_points(points, store=ResultStore(tmp_path / "cache"), client=client)
    assert outcome.failed == 0 and {r["status"] for r in outcome.rows} == {"ok"}
    try:
        alone = [evaluate(p) for p in points]
    finally:
        release_devices()
    assert [_strip(r) for r in outcome.rows] == [_strip(r) for r in alone]


def test_a_killed_worker_costs_only_its_tasks(client, tmp_path):
    points = [Point.make({**dict(p.config), "LOG_WGT_BUFF_SIZE": 17}, p.workload) for p in _points(("gemm.blocked",))]
    points += _points(("resnet18.C10",))
    killed = []

    def kill_a_busy_worker(row):
        if killed:
            return
        busy = {w: keys for w, keys in client.processing().items() if keys}
        pids = client.run(os.getpid)
        for worker in busy:
            if worker in pids:
                os.kill(pids[worker], signal.SIGKILL)
                killed.append(worker)
                return

    outcome = run_points(points, store=ResultStore(tmp_path / "cache"), client=client, on_row=kill_a_busy_worker)
    assert killed, "no worker was busy when the first row arrived"
    assert outcome.failed == 0
    assert len(outcome.rows) == len(points)
    assert all(r["status"] in ("ok", "infeasible") for r in outcome.rows)
    client.wait_for_workers(2, timeout=60)  # the nanny restarts the killed worker


def test_a_resumed_sweep_evaluates_only_the_missing_points(client, tmp_path):
    points = _points()
    store = ResultStore(tmp_path / "cache")
    seen = []

    def interrupt_after_three(row):
        seen.append(row["key"])
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_points(points, store=store, client=client, on_row=interrupt_after_three)
    stored = {p.key for p in points if p.key in store}
    assert set(seen) <= stored and 3 <= len(stored) < len(points)
    computed = []
    outcome = run_points(points, store=store, client=client, on_row=lambda r: computed.append(r["key"]))
    assert outcome.cached == len(stored)
    assert outcome.evaluated == len(points) - len(stored)
    assert set(computed) == {p.key for p in points} - stored


def test_sweep_command_writes_the_table_and_the_plot(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"parameters": {"LOG_BLOCK": [3, 4, 5]}, "workloads": ["alu.chain"]}))
    out = tmp_path / "out"
    args = [str(spec), "--out", str(out), "--workers", "0", "--cache", str(tmp_path / "cache"), "--no-progress"]
    assert main(["sweep", *args]) == 0
    rows = read_jsonl(out / "points.jsonl")
    assert [r["LOG_BLOCK"] for r in rows] == [3, 4, 5]
    assert rows[0]["status"] == "infeasible" and "micro-op" in rows[0]["reason"]
    assert (out / "points.csv").read_text().count("\n") == 4
    assert "pareto" in (out / "configs.csv").read_text().splitlines()[0]
    assert (out / "pareto.png").stat().st_size > 1000
    text = capsys.readouterr().out
    assert "3 points (3 evaluated, 0 from the cache)" in text
    assert main(["sweep", *args]) == 0
    assert "3 points (0 evaluated, 3 from the cache)" in capsys.readouterr().out
    release_devices()


def test_sweep_command_rejects_a_bad_spec(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"parameters": {"LOG_BLOCK": [4]}, "workloads": ["nope"]}))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o")]) == 2
    assert "unknown workload 'nope'" in capsys.readouterr().err


def test_an_existing_scheduler_by_address_with_the_progress_bar(client, tmp_path, capsys):
    points = _points(("alu.chain",))[2:4]
    outcome = run_points(points, store=ResultStore(tmp_path / "cache"), scheduler=client.scheduler.address,
                         progress=True)
    assert [r["status"] for r in outcome.rows] == ["ok", "ok"] and outcome.evaluated == 2
    assert "Completed" in capsys.readouterr().out  # Dask's text progress bar


def _fill_arena():
    from vta.dram import global_dram

    dram = global_dram()
    live = sum(n for _, n in dram.allocations())
    dram.alloc(dram.capacity - live - (64 << 20))  # leave less than a configuration's runtime needs
    return os.getpid()


def test_rows_a_full_worker_cannot_run_are_errors_with_the_reason(client, tmp_path):
    from vta.dse.engine import ARENA_FULL

    client.wait_for_workers(2, timeout=60)
    client.run(_fill_arena)  # as if each worker had run the runtimes of thirty configurations
    points = _points(("alu.chain",))[2:]
    try:
        outcome = run_points(points, store=ResultStore(tmp_path / "cache"), client=client)
    finally:
        client.restart()  # fresh worker processes for the other tests
    assert outcome.failed == len(points)
    assert all(r["status"] == "error" and r["reason"].startswith(ARENA_FULL) for r in outcome.rows)
