"""Running workloads on fsim through the tutorial flow (see ``tests/compiler/fsim_run.py``)."""

from __future__ import annotations

import numpy as np

from ..fsim_run import build_and_run, counters

__all__ = ["check", "counters", "run_case"]


def run_case(case, tmp_path, name: str = "default_function", debug_flag: int = 0, calls: int = 1):
    """Build workload ``case`` and run it ``calls`` times on fsim.

    Returns (output array, statistics of the last call, module); with ``calls > 1`` the
    statistics are a list with one dict per call.
    """
    outs, per_call, mod = build_and_run(case.schedule, case.args, case.inputs, tmp_path, name=name,
                                        debug_flag=debug_flag, calls=calls)
    return outs[case.out_name], (per_call[0] if calls == 1 else per_call), mod


def check(case, out):
    """The output equals the NumPy reference exactly."""
    np.testing.assert_equal(out, case.expected())
