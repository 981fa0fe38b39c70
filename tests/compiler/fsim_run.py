"""Build a schedule and run it on fsim through the tutorial flow (:func:`vta.testing.build_and_run`).

build -> ``save("<name>.o")`` -> ``rpc.LocalSession`` upload / ``load_module`` -> call on
``ext_dev`` arrays -> outputs and simulator statistics. Shared by the e2e and scale tests.
"""

from __future__ import annotations

from vta.testing import build_and_run

__all__ = ["COUNTER_KEYS", "build_and_run", "counters"]

#: The statistics upstream's tutorials print (the upstream counters).
COUNTER_KEYS = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes",
                "gemm_counter", "alu_counter")


def counters(stats: dict) -> dict:
    """The upstream counters of a statistics dict."""
    return {k: stats[k] for k in COUNTER_KEYS}
