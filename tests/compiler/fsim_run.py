"""Build a schedule and run it on fsim through the tutorial flow.

build -> ``save("<name>.o")`` -> ``rpc.LocalSession`` upload / ``load_module`` -> call on
``ext_dev`` arrays -> outputs and simulator statistics (:func:`vta.testing.run_by_name`). Shared
by the e2e and scale tests.
"""

from __future__ import annotations

from vta.build import build, build_config
from vta.testing import run_by_name

#: The statistics upstream's tutorials print (the upstream counters).
COUNTER_KEYS = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes",
                "gemm_counter", "alu_counter")


def counters(stats: dict) -> dict:
    """The upstream counters of a statistics dict."""
    return {k: stats[k] for k in COUNTER_KEYS}


def build_and_run(sched, args, inputs: dict, tmp_path, name: str = "default_function", debug_flag: int = 0,
                  calls: int = 1):
    """Build ``sched`` for ``ext_dev`` and call it ``calls`` times on fsim.

    ``inputs`` maps argument names to NumPy arrays (int8 values for ``int4`` tensors); every
    other argument is an output, allocated with the tensor's shape and dtype. The object file goes to ``tmp_path``.
    A module built with ``debug_flag`` sets the command queue's flag; it is cleared afterwards.

    Returns
    -------
    tuple
        ``(outputs by name, statistics of each call (list of dicts), module)``.

    Raises
    ------
    ValueError
        If ``calls`` is not positive.
    """
    if calls < 1:
        raise ValueError(f"build_and_run: calls must be at least 1, got {calls!r}")
    with build_config(debug_flag=debug_flag):
        mod = build(sched, args, "ext_dev", name=name)
    outs, per_call = run_by_name(mod, args, inputs, tmp_path, name=name, calls=calls,
                                 clear_debug_flag=bool(debug_flag))
    return outs, per_call, mod
