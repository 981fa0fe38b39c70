"""``python -m vta tune`` on the bundled digits model, and its refusals; RPCRunner on a cluster."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import vta
from vta.__main__ import main

DIGITS = Path(vta.__file__).resolve().parent / "models" / "digits_int8.onnx"


def test_tune_command_writes_records_for_every_task(tmp_path):
    pytest.importorskip("onnx")
    log = tmp_path / "log.json"
    out = io.StringIO()
    rc = main(["tune", str(DIGITS), "--trials", "1", "--out", str(log), "--workers", "0", "--no-progress",
               "--tuner", "random"], out=out)
    assert rc == 0, out.getvalue()
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    names = {json.dumps(r["input"][2:]) for r in rows}
    assert len(names) == 3                                  # conv1, conv2, fc
    assert {r["input"][1] for r in rows} == {"conv2d_packed.vta", "dense_packed.vta"}
    assert all(r["result"][1] == 0 for r in rows) and len(rows) == 3
    text = out.getvalue()
    assert "3 tasks from" in text and "speed-up" in text


@pytest.mark.parametrize("argv, message", [
    (["--trials", "0"], "--trials 0"),
    (["--target", "fpga"], None),
])
def test_tune_command_refuses_bad_input(tmp_path, capsys, argv, message):
    rc = main(["tune", str(DIGITS), "--out", str(tmp_path / "l.json"), *argv])
    assert rc == 2
    if message:
        assert message in capsys.readouterr().err
    assert not (tmp_path / "l.json").exists()


def test_tune_command_names_a_missing_model(tmp_path, capsys):
    rc = main(["tune", str(tmp_path / "nope.onnx"), "--out", str(tmp_path / "l.json"), "--workers", "0"])
    assert rc == 2 and "nope.onnx" in capsys.readouterr().err


@pytest.mark.slow
def test_rpc_runner_measures_on_an_existing_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    from vta import autotvm
    from vta.env import Environment, get_env

    from .test_autotvm import _small_conv_task

    env = Environment({**get_env().cfg_dict, "TARGET": "model"})
    task = _small_conv_task(env)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster:
        host, port = cluster.scheduler_address.replace("tcp://", "").split(":")
        option = autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                        runner=autotvm.RPCRunner("sim", host=host, port=int(port)))
        tun = autotvm.tuner.RandomTuner(task, seed=2)
        tun.tune(n_trial=3, measure_option=option, callbacks=[autotvm.callback.log_to_file(str(tmp_path / "r.log"))])
        autotvm.measure.close_clusters()
    assert len(tun.xs) == 3 and tun.best_config is not None
