"""``vta.testing.run_built``: the load-and-call helper every test and benchmark runs compiled code
through. Oracles: NumPy's vadd (the tutorial workload's reference) and the instruction and
micro-op counts of the tutorial's section 3.1 (one ALU micro-op per row, eight instructions)."""

from __future__ import annotations

import numpy as np
import pytest

from vta import build, isa
from vta.testing import Input, Output, run_built, run_by_name

from . import workloads as W

ROWS = 16


def _vadd_args(case) -> list:
    """The vadd's arguments: its inputs, then its output."""
    return [Input(case.inputs[t.name]) if t.name in case.inputs
            else Output(tuple(int(s) for s in t.shape), str(t.dtype)) for t in case.args]


def test_two_calls_captured_outputs_and_per_call_statistics(env, tmp_path):
    case = W.vadd(env, np.random.default_rng(3), m=ROWS)
    mod = build(case.schedule, case.args, "ext_dev", name="vadd")
    run = run_built(mod, _vadd_args(case), tmp_path, calls=2, capture=True)
    assert len(run.outputs) == 1
    np.testing.assert_array_equal(run.outputs[0], case.expected())
    # the statistics are cleared before each call: both count the vadd's own micro-ops
    assert [s["alu_counter"] for s in run.stats] == [ROWS, ROWS]
    assert len(run.seconds) == 2
    # section 3.1: LOAD-ACC x2, LOAD-UOP, ALU, STORE, NOP-LD, NOP-CMP, FINISH
    assert len(run.instructions) == 8
    assert sum(isinstance(i, isa.AluInsn) for i in run.instructions) == 1


def test_by_name_and_same_name_twice_keeps_both_object_files(env, tmp_path):
    case = W.vadd(env, np.random.default_rng(4), m=ROWS)
    mod = build(case.schedule, case.args, "ext_dev", name="vadd")
    run = run_built(mod, _vadd_args(case), tmp_path, name="same")
    np.testing.assert_array_equal(run.outputs[0], case.expected())
    assert run.instructions is None
    outs, stats = run_by_name(mod, case.args, case.inputs, tmp_path, name="same")
    assert list(outs) == [case.out_name] and len(stats) == 1
    np.testing.assert_array_equal(outs[case.out_name], case.expected())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.o", "same_1.o"]


@pytest.mark.parametrize("calls", [0, -1, 1.5, True])
def test_bad_calls_refused_before_saving(tmp_path, calls):
    with pytest.raises(ValueError, match="calls must be an int of at least 1"):
        run_built(object(), [], tmp_path, calls=calls)
    assert list(tmp_path.iterdir()) == []


def test_argument_of_unknown_kind_refused(tmp_path):
    with pytest.raises(TypeError, match="neither a numpy.ndarray, an Input nor an Output"):
        run_built(object(), [[1, 2, 3]], tmp_path)
    assert list(tmp_path.iterdir()) == []
