"""Build a schedule and run it on fsim through the tutorial flow (save, LocalSession, call)."""

from __future__ import annotations

from contextlib import ExitStack

import numpy as np

from vta import nd, rpc
from vta.build import build
from vta.testing import simulator

COUNTER_KEYS = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes",
                "gemm_counter", "alu_counter")


def run(sched, args, inputs: dict, tmp_path, name: str = "default_function"):
    """Build ``sched`` and call it once on fsim.

    ``inputs`` maps argument names to NumPy arrays; every other argument is an output, allocated
    with the tensor's shape and dtype. Returns ``(outputs by name, upstream counters)``.
    """
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
                arr = nd.array(inputs[t.name], dev)
            else:
                arr = nd.empty(tuple(int(s) for s in t.shape), t.dtype, dev)
            arrays[t.name] = stack.enter_context(arr)
        simulator.clear_stats()
        f(*[arrays[t.name] for t in args])
        stats = simulator.stats()
        outs = {k: a.numpy() for k, a in arrays.items() if k not in inputs}
    return outs, {k: stats[k] for k in COUNTER_KEYS}


def gemm_reference(data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``clip((A . W^T) >> 8, 0, 127)`` on packed (1, n, BATCH, BLOCK_IN) / (m, n, BLOCK_OUT, BLOCK_IN)."""
    o, n_, batch, block_in = data.shape
    m, _, block_out, _ = weight.shape
    a = data.transpose(0, 2, 1, 3).reshape(o * batch, n_ * block_in).astype(np.int64)
    w = weight.transpose(0, 2, 1, 3).reshape(m * block_out, n_ * block_in).astype(np.int64)
    r = np.clip((a @ w.T) >> 8, 0, 127)
    return r.reshape(o, batch, m, block_out).transpose(0, 2, 1, 3).astype(np.int8)
