"""The graph build under apply_history_best: tuned tilings where the log has records, the default
chooser elsewhere; the outputs stay those of the default build (a NumPy oracle: the host evaluator)."""

from __future__ import annotations

import numpy as np
import pytest

from vta import autotvm
from vta.autotvm.measure import MeasureInput, MeasureResult
from vta.autotvm.record import encode
from vta.env import Environment, get_env


@pytest.fixture(scope="module")
def env():
    return Environment({**get_env().cfg_dict, "TARGET": "sim"})


def _graph():
    from vta.graph import GraphBuilder

    b = GraphBuilder()
    rng = np.random.default_rng(1)
    x = b.input("x", (1, 16, 8, 8), "int8", scale=0.05, zero_point=0)
    w = rng.integers(-8, 8, size=(32, 16, 3, 3)).astype(np.int8)
    acc = b.qnn.conv2d(x, b.const("w", w, scale=0.01), padding=(1, 1, 1, 1))
    y = b.nn.relu(b.qnn.requantize(acc, output_scale=0.1))
    return b.finish(y)


@pytest.mark.slow
def test_graph_build_takes_the_tuned_tiling(env, tmp_path):
    from vta.graph import compile
    from vta.graph.executor import GraphModule
    from vta.runtime import ext_dev

    graph = _graph()
    with env:
        tasks = autotvm.extract_from_program(graph, ops=("nn.conv2d",), env=env)
    assert len(tasks) == 1
    task = tasks[0]
    space = task.config_space
    pick = next(i for i in space.valid_indices() if i != task.default_index)
    log = tmp_path / "g.log"
    log.write_text(encode(MeasureInput(env.target, task, space.get(pick)), MeasureResult((1e-6,), 0, 0.0, 0.0)) + "\n")
    x = np.random.default_rng(2).integers(-40, 40, size=(1, 16, 8, 8)).astype(np.int8)
    outs, sources = [], []
    for tuned in (False, True):
        with env:
            if tuned:
                with autotvm.apply_history_best(str(log)) as ctx:
                    graph_json, lib, params = compile(graph)
                assert [d["source"] for d in ctx.decisions] == ["tuned"]
                assert ctx.decisions[0]["tiling"] == autotvm.vta_ops.tiling_from_config("conv2d", space.get(pick))
            else:
                graph_json, lib, params = compile(graph)
            sources.append(lib.source if hasattr(lib, "source") else None)
            m = GraphModule(graph_json, lib, ext_dev(0))
            m.set_input(x=x, **params)
            m.run()
            outs.append(np.asarray(m.get_output(0)).copy())
    from vta.graph.host import evaluate

    expected = evaluate(graph, {"x": x})
    expected = expected[0] if isinstance(expected, (list, tuple)) else expected
    assert np.array_equal(outs[0], outs[1])
    assert np.array_equal(outs[1], np.asarray(expected))
    if sources[0] is not None:
        assert sources[0] != sources[1]
