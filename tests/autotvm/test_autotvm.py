"""AutoTVM on the simulated accelerator: spaces, tuners, records, apply_history_best, measurement.

Oracles: a known optimum written in the test (a small space whose cost is a formula), NumPy
references of the operators, and a cycle-model run made directly in the test.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from vta import autotvm
from vta.autotvm.measure import (
    CLOCK_HZ,
    MeasureErrorNo,
    MeasureInput,
    MeasureResult,
    measure_candidate,
)
from vta.autotvm.record import decode, encode, load_from_file
from vta.autotvm.space import ConfigSpace
from vta.env import Environment, get_env
from vta.errors import TuningLogError


# ------------------------------------------------------------------ a small known space
def _toy_task():
    space = ConfigSpace()
    space.define_split("tile_x", 64, num_outputs=2)        # 7 factors
    space.define_knob("unroll", [0, 1, 2])
    space.define_reorder("order", ["a", "b"], policy="all")
    space.multi_filter(lambda e: e["tile_x"].size[-1] != 2)  # one factor refused

    class T:
        name = "toy"
        config_space = space
        target = "ext_dev"
        flop = 1.0

    return T(), space


def _toy_cost(cfg) -> float:
    # optimum: tile_x 16, unroll 2, order [1, 0]
    return (abs(np.log2(cfg["tile_x"].size[-1]) - 4) + abs(cfg["unroll"].val - 2) + cfg["order"].perm[0] * -0.5 + 2)


@pytest.fixture
def toy_measure(monkeypatch):
    def fake_batch(task, configs, option):
        del task, option
        return [MeasureResult((_toy_cost(c),), 0, 0.0, 0.0) for c in configs]

    monkeypatch.setattr("vta.autotvm.tuner.tuner.measure_batch", fake_batch)
    monkeypatch.setattr("vta.autotvm.tuner.tuner.parallelism", lambda runner: 2)
    return autotvm.measure_option(runner=autotvm.LocalRunner(n_parallel=0, target="model"))


def test_space_counts_and_indices():
    _, space = _toy_task()
    assert space.range_length == 7 * 3 * 2
    assert len(space) == 6 * 3 * 2
    for i in space.valid_indices():
        cfg = space.get(i)
        assert cfg.index == i and cfg["tile_x"].size[-1] != 2
        assert space.index_of(space.point(i)) == i
    assert sorted(e.size[-1] for e in space.space_map["tile_x"]) == [1, 2, 4, 8, 16, 32, 64]


@pytest.mark.parametrize("name", ["gridsearch", "random", "ga", "xgb"])
def test_tuners_find_the_known_optimum(name, toy_measure):
    from vta.autotvm import tuner as t

    task, space = _toy_task()
    if name == "xgb":
        pytest.importorskip("xgboost")
    tun = {"gridsearch": lambda: t.GridSearchTuner(task), "random": lambda: t.RandomTuner(task, seed=1),
           "ga": lambda: t.GATuner(task, pop_size=8, seed=1),
           "xgb": lambda: t.XGBTuner(task, plan_size=8, seed=1)}[name]()
    tun.tune(n_trial=len(space), measure_option=toy_measure)
    best = min(space.valid_indices(), key=lambda i: _toy_cost(space.get(i)))
    assert tun.best_config.index == best
    assert len(set(tun.xs)) == len(tun.xs) == len(space)   # every valid point once, no invalid one


def test_xgb_beats_random_on_a_budget(toy_measure):
    pytest.importorskip("xgboost")
    from vta.autotvm import tuner as t

    task, space = _toy_task()
    found = []
    for cls in (lambda: t.XGBTuner(task, plan_size=8, seed=3), lambda: t.RandomTuner(task, seed=3)):
        tun = cls()
        tun.tune(n_trial=18, measure_option=toy_measure)
        found.append(tun.best_cost)
    optimum = min(_toy_cost(space.get(i)) for i in space.valid_indices())
    assert found[0] == optimum and found[0] <= found[1]


# ------------------------------------------------------------------ records
def _record(index=5, cost=1e-4, error=0):
    _, space = _toy_task()
    task = autotvm.task.Task("conv2d_packed.vta", (("TENSOR", (1, 2, 3), "int8"), (1, 1)), {"bias": 1})
    return MeasureInput(get_env().target, task, space.get(index)), MeasureResult((cost,), error, 0.5, 12.0)


def test_record_round_trip_and_format(tmp_path):
    inp, res = _record()
    line = encode(inp, res)
    d = json.loads(line)
    assert set(d) == {"input", "config", "result", "version", "tvm_version"}
    assert d["input"][1] == "conv2d_packed.vta" and d["input"][2] == [["TENSOR", [1, 2, 3], "int8"], [1, 1]]
    assert d["config"]["index"] == 5 and [e[1] for e in d["config"]["entity"]] == ["sp", "ot", "re"]
    assert d["result"] == [[1e-4], 0, 0.5, 12.0]
    inp2, res2 = decode(line)
    assert str(inp2.target) == str(inp.target) and inp2.task.args == inp.task.args
    assert inp2.config == inp.config and inp2.config.index == 5 and res2 == res
    assert encode(inp2, res2) == line
    err = json.loads(encode(*_record(error=MeasureErrorNo.WRONG_ANSWER)))
    assert err["result"][0] == [1e9] and err["result"][1] == 5


def test_bad_log_line_names_file_and_line(tmp_path):
    p = tmp_path / "x.log"
    p.write_text(encode(*_record()) + "\n# comment\n{not json\n")
    with pytest.raises(TuningLogError, match=r"x\.log:3"):
        list(load_from_file(p))
    with pytest.raises(FileNotFoundError, match="missing.log"):
        autotvm.apply_history_best(str(tmp_path / "missing.log"))


def test_apply_history_best_picks_the_best_error_free_record(tmp_path):
    p = tmp_path / "t.log"
    rows = [_record(3, 3e-4), _record(7, 1e-4), _record(9, 0.5e-4, error=MeasureErrorNo.WRONG_ANSWER),
            _record(11, 2e-4)]
    p.write_text("".join(encode(i, r) + "\n" for i, r in rows))
    with autotvm.apply_history_best(str(p)) as ctx:
        cfg = ctx.query(get_env().target, rows[0][0].task.workload)
        assert cfg.index == 7
        assert ctx.query(get_env().target, ("conv2d_packed.vta", (), {})) is None
    out = tmp_path / "best.log"
    assert autotvm.record.pick_best(str(p), str(out)) == 1
    assert [decode(line)[0].config.index for line in out.read_text().splitlines()] == [7]


# ------------------------------------------------------------------ measurement on the cycle model
@pytest.fixture(scope="module")
def model_env():
    return Environment({**get_env().cfg_dict, "TARGET": "model"})


def _small_conv_task(env):
    from vta import te

    with env:
        data = te.placeholder((1, 2, 8, 8, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
        kernel = te.placeholder((2, 2, 3, 3, env.BLOCK_OUT, env.BLOCK_IN), name="kernel", dtype=env.wgt_dtype)
        return autotvm.task.create("conv2d_packed.vta", args=(data, kernel, (1, 1), (1, 1), (1, 1), "int32"),
                                   target=env.target)


def test_measurement_agrees_with_a_direct_cycle_model_run(model_env):
    from vta import topi
    from vta.build import build
    from vta.dram import global_dram
    from vta.runtime import ext_dev
    from vta.runtime.ndarray import array
    from vta.sim.model import CycleModel
    from vta.sim.targets import attach_device

    env = model_env
    task = _small_conv_task(env)
    assert len(task.config_space) > 4
    cfg = task.config_space.get(task.config_space.valid_indices()[-1])
    res = measure_candidate(task, cfg, level="model")
    assert res.error_no == 0, res
    # the same tiling built by hand and run on a fresh cycle model
    tiling = autotvm.vta_ops.tiling_from_config("conv2d", cfg)
    rng = np.random.default_rng(5)
    with env:
        from vta import te

        data = te.placeholder((1, 2, 8, 8, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
        kernel = te.placeholder((2, 2, 3, 3, env.BLOCK_OUT, env.BLOCK_IN), name="kernel", dtype=env.wgt_dtype)
        out = topi.requantize(topi.conv2d_packed(data, kernel, 1, 1, "int32"))
        mod = build(topi.schedule_conv2d_packed(out, tiling), [data, kernel, out], "ext_dev", name="direct")
        dev = CycleModel(env, global_dram())
        x = rng.integers(-64, 64, size=(1, 2, 8, 8, env.BATCH, env.BLOCK_IN)).astype("int8")
        w = rng.integers(-64, 64, size=(2, 2, 3, 3, env.BLOCK_OUT, env.BLOCK_IN)).astype("int8")
        arrays = [array(x, ext_dev(0)), array(w, ext_dev(0)),
                  array(np.zeros(tuple(int(d) for d in out.shape), "int8"), ext_dev(0))]
        previous = attach_device(env, dev)
        try:
            mod(*arrays)
        finally:
            attach_device(env, previous)
        cycles = dev.stats()["cycle_count"]
        # NumPy oracle of the convolution and upstream's epilogue
        xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1), (0, 0), (0, 0)))
        acc = sum(np.einsum("bkhwxi,okyi->bohwxy", xp[:, :, i:i + 8, j:j + 8], w[:, :, i, j].astype(np.int64))
                  for i in range(3) for j in range(3))
        assert np.array_equal(arrays[2].numpy(), np.clip(acc >> 8, 0, 127).astype("int8"))
        for a in arrays:
            a.close()
        mod.close()
        dev.close()
    assert round(res.costs[0] * CLOCK_HZ) == cycles


def test_a_wrong_candidate_is_an_error_record_never_the_best(model_env, monkeypatch, tmp_path):
    env = model_env
    task = _small_conv_task(env)
    valid = task.config_space.valid_indices()
    bad_index = valid[0]
    import vta.autotvm.measure as m

    real = m._template_program

    def sabotage(task, config, env):
        mod, arrays, expected, unpack = real(task, config, env)
        if config.index == bad_index:  # this candidate "computes" something else
            expected = expected.copy()
            expected.flat[0] ^= 1
        return mod, arrays, expected, unpack

    monkeypatch.setattr(m, "_template_program", sabotage)
    monkeypatch.setattr(m, "_REFERENCES", {})
    res = measure_candidate(task, task.config_space.get(bad_index), level="model")
    assert res.error_no == MeasureErrorNo.WRONG_ANSWER and "wrong answer" in res.costs[0]
    log = tmp_path / "w.log"
    tun = autotvm.tuner.GridSearchTuner(task)
    tun.tune(n_trial=3, measure_option=autotvm.measure_option(runner=autotvm.LocalRunner(n_parallel=0, target="model")),
             callbacks=[autotvm.callback.log_to_file(str(log))])
    recs = list(load_from_file(log))
    assert [r.error_no for i, r in recs if i.config.index == bad_index] == [MeasureErrorNo.WRONG_ANSWER]
    assert tun.best_config.index != bad_index
    with autotvm.apply_history_best(str(log)) as ctx:
        assert ctx.query(env.target, task.workload).index != bad_index


def test_an_instantiation_error_is_recorded(model_env):
    task = _small_conv_task(model_env)
    space = task.config_space
    invalid = next(i for i in range(space.range_length) if i not in set(space.valid_indices()))
    res = measure_candidate(task, space.get(invalid), level="model")
    assert res.error_no == MeasureErrorNo.INSTANTIATION_ERROR


def test_the_tuned_tiling_reaches_the_schedule(model_env, tmp_path, monkeypatch):
    """Under apply_history_best the template's schedule and the vta.topi hook (what the graph
    build asks) take the record's tiling; a workload without a record gets the default."""
    from vta import topi
    from vta.autotvm.vta_ops import tiling_from_config, workload_of
    from vta.topi.tiling import Conv2DWorkload, choose_conv2d_tiling

    env = model_env
    task = _small_conv_task(env)
    pick = task.config_space.get(task.config_space.valid_indices()[1])
    wl = Conv2DWorkload(1, 2, 2, 8, 8, 3, 3, (1, 1), (1, 1, 1, 1), 1, 0, 7)
    other = Conv2DWorkload(1, 2, 2, 8, 8, 3, 3, (1, 1), (1, 1, 1, 1), 1, 1, 7)
    gtask = autotvm.task.Task(*workload_of("conv2d", env, wl))
    log = tmp_path / "one.log"
    log.write_text(encode(MeasureInput(env.target, task, pick), MeasureResult((1e-5,), 0, 0.0, 0.0)) + "\n"
                   + encode(MeasureInput(env.target, gtask, pick), MeasureResult((1e-5,), 0, 0.0, 0.0)) + "\n")
    seen = []
    real = topi.schedule_conv2d_packed
    monkeypatch.setattr(topi, "schedule_conv2d_packed",
                        lambda outs, tiling=None: seen.append(tiling) or real(outs, tiling))
    want = tiling_from_config("conv2d", pick)
    with env, autotvm.apply_history_best(str(log)) as ctx:
        out = autotvm.vta_ops.conv2d_packed(*autotvm.task.deserialize_args(task.args))
        autotvm.vta_ops.schedule_conv2d_packed([out])
        assert seen == [want]
        assert ctx.query("conv2d", env, wl) == want
        assert ctx.query("conv2d", env, other) is None
        assert [d["source"] for d in ctx.decisions] == ["tuned", "default"]
        assert topi.dispatch.tuned_tiling("conv2d", env, wl) == want
    assert topi.dispatch.active() is None and topi.dispatch.tuned_tiling("conv2d", env, wl) is None
    out = autotvm.vta_ops.conv2d_packed(*autotvm.task.deserialize_args(task.args))
    with env:
        autotvm.vta_ops.schedule_conv2d_packed([out])
    assert seen[-1] is None  # no context: the fallback, the default chooser
    del choose_conv2d_tiling
