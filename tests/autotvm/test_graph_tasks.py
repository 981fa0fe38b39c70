"""Tasks of a graph beyond the plain convolutions: grouped/depthwise convolutions
(``group_conv2d_packed.vta``) and the ALU-only add and product (``add.vta``, ``multiply.vta``).
Every candidate's output is checked against NumPy; a wrong candidate is an error record, never the
best; the graph build applies their records (outputs against the host evaluator, NumPy)."""

from __future__ import annotations

import numpy as np
import pytest

from vta import autotvm
from vta.autotvm.measure import CLOCK_HZ, MeasureErrorNo, MeasureInput, MeasureResult, measure_candidate
from vta.autotvm.record import encode, load_from_file
from vta.env import Environment, get_env

ALL = ("nn.conv2d", "nn.dense", "add", "multiply")
SX, SW, SY, SR, SO, SG, SM = 0.04, 0.02, 0.05, 0.06, 0.09, 1 / 255, 0.07


@pytest.fixture(scope="module")
def env():
    return Environment({**get_env().cfg_dict, "TARGET": "model"})


def _net():
    """int8 x -> depthwise 3x3 conv (32 channels) + requantize -> y (output 0); a + r (qnn.add of
    two inputs) -> s; s * gate (per channel, qnn.mul) -> output 1."""
    from vta.graph import GraphBuilder

    rng = np.random.default_rng(11)
    b = GraphBuilder()
    x = b.input("x", (1, 32, 6, 6), "int8", scale=SX, zero_point=0)
    a = b.input("a", (1, 32, 6, 6), "int8", scale=SY, zero_point=-2)
    r = b.input("r", (1, 32, 6, 6), "int8", scale=SR, zero_point=3)
    gate = b.input("gate", (1, 32, 1, 1), "uint8", scale=SG, zero_point=0)
    w = rng.integers(-50, 51, (32, 1, 3, 3)).astype(np.int8)
    acc = b.qnn.conv2d(x, b.const("w", w, scale=SW), padding=(1, 1, 1, 1), groups=32, name="dw")
    y = b.qnn.requantize(acc, output_scale=SY, output_zero_point=-2, name="rq")
    s = b.qnn.add(a, r, output_scale=SO, output_zero_point=1, name="add")
    out = b.op("qnn.mul", [s, gate], dict(lhs_scale=SO, lhs_zero_point=1, rhs_scale=SG, rhs_zero_point=0,
                                          output_scale=SM, output_zero_point=-3, out_dtype="int8"), "mul")
    return b.finish([y, out]), w


@pytest.fixture(scope="module")
def tasks(env):
    graph, _ = _net()
    with env:
        found = autotvm.extract_from_program(graph, ops=ALL, env=env)
    return {t.name: t for t in found}


def test_grouped_and_alu_operators_are_tasks_with_knobs(tasks):
    assert set(tasks) == {"group_conv2d_packed.vta", "add.vta", "multiply.vta"}
    g = tasks["group_conv2d_packed.vta"]
    assert g.args[5] == 2  # 32 depthwise channels: two accelerator groups of one block
    assert set(g.config_space.space_map) == {"tile_h", "tile_w", "tile_co", "tile_ci", "oc_nthread", "h_nthread"}
    for name in ("add.vta", "multiply.vta"):
        t = tasks[name]
        assert set(t.config_space.space_map) == {"tile_c", "tile_h"}
        # 2 channel blocks x rows 1, 2, 3, 6 all fit the accumulator
        assert len(t.config_space) == 8
        assert t.default_index in t.config_space.valid_indices()
        default = autotvm.vta_ops.tiling_from_config(name.split(".")[0], t.config_space.get(t.default_index))
        assert (default.tile_c, default.tile_h) == (1, 6)
    assert tasks["multiply.vta"].args[1][1][2:4] == (1, 1)  # the gate is broadcast over the pixels
    for t in tasks.values():
        assert t.layers and len(t.config_space) > 1


def test_every_alu_candidate_is_measured_and_checked(tasks):
    for name in ("add.vta", "multiply.vta"):
        t = tasks[name]
        cycles = {}
        for i in t.config_space.valid_indices():
            res = measure_candidate(t, t.config_space.get(i), level="model")
            assert res.error_no == MeasureErrorNo.NO_ERROR, (name, i, res)
            cycles[i] = round(res.costs[0] * CLOCK_HZ)
        assert len(set(cycles.values())) > 1, f"{name}: the knobs change nothing: {cycles}"


def test_grouped_candidates_are_measured_and_checked(tasks):
    t = tasks["group_conv2d_packed.vta"]
    valid = t.config_space.valid_indices()
    picks = [t.default_index] + [i for i in valid if i != t.default_index][:2]
    for i in picks:
        res = measure_candidate(t, t.config_space.get(i), level="model")
        assert res.error_no == MeasureErrorNo.NO_ERROR, (i, res)


def test_a_wrong_alu_candidate_is_an_error_record_never_the_best(tasks, env, monkeypatch, tmp_path):
    import vta.autotvm.measure as m

    t = tasks["add.vta"]
    valid = t.config_space.valid_indices()
    # sabotage the fastest candidate: its output is made to differ from the oracle in one element
    fast = min(valid, key=lambda i: measure_candidate(t, t.config_space.get(i)).costs[0])
    real = m._alu_program

    def sabotage(task, config, env):
        mod, arrays, expected, unpack = real(task, config, env)
        if config.index == fast:
            unpack_real = unpack

            def unpack(packed):
                got = np.array(unpack_real(packed))
                got.flat[0] ^= 1
                return got
        return mod, arrays, expected, unpack

    monkeypatch.setattr(m, "_alu_program", sabotage)
    log = tmp_path / "alu.log"
    tun = autotvm.tuner.GridSearchTuner(t)
    tun.tune(n_trial=len(valid), measure_option=autotvm.measure_option(
        runner=autotvm.LocalRunner(n_parallel=0, target="model")), callbacks=[autotvm.callback.log_to_file(str(log))])
    recs = list(load_from_file(log))
    assert [r.error_no for i, r in recs if i.config.index == fast] == [MeasureErrorNo.WRONG_ANSWER]
    assert tun.best_config.index != fast
    with autotvm.apply_history_best(str(log)) as ctx:
        assert ctx.query(env.target, t.workload).index != fast


@pytest.mark.slow
def test_the_graph_build_applies_grouped_and_alu_records(tasks, env, tmp_path):
    """Records for all three tasks, each a non-default tiling: the graph build takes them (and
    says so), and its output is the NumPy oracle's."""
    from vta.graph import compile
    from vta.graph.executor import GraphModule
    from vta.runtime import ext_dev

    graph, w = _net()
    log = tmp_path / "g.log"
    picks = {}
    with log.open("w") as f:
        for name, t in tasks.items():
            space = t.config_space
            picks[name] = next(i for i in space.valid_indices() if i != t.default_index)
            f.write(encode(MeasureInput(env.target, t, space.get(picks[name])), MeasureResult((1e-6,), 0, 0.0, 0.0))
                    + "\n")
    rng = np.random.default_rng(3)
    x = rng.integers(-100, 100, (1, 32, 6, 6)).astype(np.int8)
    r = rng.integers(-128, 128, (1, 32, 6, 6)).astype(np.int8)
    av = rng.integers(-128, 128, (1, 32, 6, 6)).astype(np.int8)
    gate = rng.integers(0, 256, (1, 32, 1, 1)).astype(np.uint8)
    sim = Environment({**env.cfg_dict, "TARGET": "sim"})
    with sim, autotvm.apply_history_best(str(log)) as ctx:
        graph_json, lib, params = compile(graph)
    assert sorted(d["task"] for d in ctx.decisions if d["source"] == "tuned") == sorted(tasks)
    with sim:
        mod = GraphModule(graph_json, lib, ext_dev(0))
        mod.set_input(x=x, a=av, r=r, gate=gate, **params)
        mod.run()
        got = [np.asarray(mod.get_output(i)).copy() for i in range(2)]
    # the oracle: the host evaluator (NumPy, no accelerator, no schedule) of the same graph
    from vta.graph.host import evaluate

    want = evaluate(graph, {"x": x, "a": av, "r": r, "gate": gate})
    for g, e in zip(got, want, strict=True):
        assert np.array_equal(g, np.asarray(e))


def test_candidates_compiled_at_O0_give_the_cycles_and_outputs_of_O1(tasks, monkeypatch):
    """Measurement compiles a candidate's host code at -O0 (it only drives the simulator): the
    device cycles and the checked output are those of the package's -O1 objects."""
    import vta.runtime.native_lib as nl

    t = tasks["group_conv2d_packed.vta"]
    cfg = t.config_space.get(t.default_index)
    quick = measure_candidate(t, cfg, level="model")
    monkeypatch.setattr(nl, "TUNING_OBJECT_FLAGS", nl.OBJECT_FLAGS)
    plain = measure_candidate(t, cfg, level="model")
    assert quick.error_no == plain.error_no == MeasureErrorNo.NO_ERROR
    assert quick.costs == plain.costs


def test_an_alu_tiling_that_does_not_fit_is_a_schedule_error(tasks, env):
    from vta.errors import ScheduleError
    from vta.topi.alu_tiling import AluTiling
    from vta.topi.qnn import build_qadd

    spec = tasks["add.vta"].spec
    for bad in (AluTiling(3, 6), AluTiling(1, 4), AluTiling(2, 6 * 1000)):
        with pytest.raises(ScheduleError, match="does not divide"):
            build_qadd(spec, "bad_tiling", env=env, tiling=bad)
    res = measure_candidate(tasks["add.vta"], tasks["add.vta"].config_space.get(0), level="model")
    assert res.error_no == MeasureErrorNo.NO_ERROR  # the space holds only fitting tilings
