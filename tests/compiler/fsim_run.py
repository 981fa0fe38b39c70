"""Build a schedule and run it on fsim through the tutorial flow.

build -> ``save("<name>.o")`` -> ``rpc.LocalSession`` upload / ``load_module`` -> call on
``ext_dev`` arrays -> outputs and simulator statistics. Shared by the e2e and scale tests.
"""

from __future__ import annotations

from contextlib import ExitStack

from vta import nd, rpc
from vta.build import build, build_config
from vta.runtime import subbyte
from vta.testing import simulator

#: The statistics upstream's tutorials print (the upstream counters).
COUNTER_KEYS = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes",
                "gemm_counter", "alu_counter")


def counters(stats: dict) -> dict:
    """The upstream counters of a statistics dict."""
    return {k: stats[k] for k in COUNTER_KEYS}


def _clear_queue_debug_flag() -> None:
    """``VTASetDebugMode(VTATLSCommandHandle(), 0)``, as a module built without a flag never does."""
    import ctypes

    from vta.runtime.native_lib import runtime_library

    lib = runtime_library().cdll
    lib.VTATLSCommandHandle.restype = ctypes.c_void_p
    lib.VTASetDebugMode(ctypes.c_void_p(lib.VTATLSCommandHandle()), 0)


def build_and_run(sched, args, inputs: dict, tmp_path, name: str = "default_function", debug_flag: int = 0,
                  calls: int = 1):
    """Build ``sched`` for ``ext_dev`` and call it ``calls`` times on fsim.

    ``inputs`` maps argument names to NumPy arrays (int8 values for ``int4`` tensors); every
    other argument is an output, allocated with the tensor's shape and dtype. The object file goes to ``tmp_path``.

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
    obj = tmp_path / f"{name}.o"
    mod.save(obj)
    with ExitStack() as stack:
        remote = stack.enter_context(rpc.LocalSession())
        remote.upload(str(obj))
        f = remote.load_module(obj.name)
        dev = remote.ext_dev(0)
        arrays = {}
        for t in args:
            if t.name in inputs:
                # sub-byte tensors (int4 on configs/narrow.json) take int8 values and pack them
                packed = str(t.dtype) if subbyte.parse(str(t.dtype)) is not None else None
                arr = nd.array(inputs[t.name], dev, dtype=packed)
            else:
                arr = nd.empty(tuple(int(s) for s in t.shape), t.dtype, dev)
            arrays[t.name] = stack.enter_context(arr)
        per_call = []
        try:
            for _ in range(calls):
                simulator.clear_stats()
                f(*[arrays[t.name] for t in args])
                per_call.append(simulator.stats())
        finally:
            if debug_flag:  # the module set the command queue's flag, which persists: clear it
                _clear_queue_debug_flag()
        outs = {k: a.numpy() for k, a in arrays.items() if k not in inputs}
    return outs, per_call, mod
