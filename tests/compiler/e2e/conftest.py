"""Running compiled schedules on fsim through the tutorial flow.

build -> save("x.o") -> LocalSession upload/load_module -> call on ext_dev arrays -> NumPy
comparison and simulator statistics.
"""

from __future__ import annotations

from contextlib import ExitStack

import numpy as np

from vta.build import build, build_config
from vta import nd, rpc
from vta.testing import simulator


def run_case(case, tmp_path, name: str = "default_function", debug_flag: int = 0, calls: int = 1):
    """Build ``case`` and run it ``calls`` times on fsim.

    Returns (output array, statistics of the last call, module); with ``calls > 1`` the
    statistics are a list with one dict per call.
    """
    with build_config(debug_flag=debug_flag):
        mod = build(case.schedule, case.args, "ext_dev", name=name)
    obj = tmp_path / f"{name}.o"
    mod.save(obj)
    with ExitStack() as stack:
        remote = stack.enter_context(rpc.LocalSession())
        remote.upload(str(obj))
        f = remote.load_module(obj.name)
        dev = remote.ext_dev(0)
        arrays = []
        for t in case.args:
            if t.name in case.inputs:
                arr = nd.array(case.inputs[t.name], dev)
            else:
                arr = nd.empty(case.out_shape, case.out_dtype, dev)
            arrays.append(stack.enter_context(arr))
        per_call = []
        for _ in range(calls):
            simulator.clear_stats()
            f(*arrays)
            per_call.append(simulator.stats())
        out = arrays[-1].numpy()
    return out, (per_call[0] if calls == 1 else per_call), mod


def check(case, out):
    """The output equals the NumPy reference exactly."""
    np.testing.assert_equal(out, case.expected())


def counters(stats) -> dict:
    """The upstream counters only."""
    keys = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes",
            "gemm_counter", "alu_counter")
    return {k: stats[k] for k in keys}
