"""``Schedule.cache_read`` in every order the upstream tutorials and TOPI schedules use it.

Regression: a cache_read issued after ``compute_at`` rebuilt the reader's operation but left its
consumers reading the old tensor ("tensor 'res_gem' ... neither in the argument list").
"""

from __future__ import annotations

import numpy as np
import pytest

from vta import te

from .. import workloads as W
from .runner import run

N_IN, N_OUT = 4, 4


def _expected(data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``int8(clip((A . W^T) >> 8, 0, 127))`` on the packed operands."""
    return W.wrap_to(W.gemm_reference(data, weight, shift=8, clip=127), "int8")


def _declare(env):
    data = te.placeholder((1, N_IN, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
    weight = te.placeholder((N_OUT, N_IN, env.BLOCK_OUT, env.BLOCK_IN), name="weight", dtype=env.wgt_dtype)
    ko = te.reduce_axis((0, N_IN), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    oshape = (1, N_OUT, env.BATCH, env.BLOCK_OUT)
    res_gem = te.compute(oshape, lambda bo, co, bi, ci: te.sum(
        data[bo, ko, bi, ki].astype(env.acc_dtype) * weight[co, ko, ci, ki].astype(env.acc_dtype),
        axis=[ko, ki]), name="res_gem")
    res_shr = te.compute(oshape, lambda *i: res_gem(*i) >> 8, name="res_shr")
    res_max = te.compute(oshape, lambda *i: te.max(res_shr(*i), 0), name="res_max")
    res_min = te.compute(oshape, lambda *i: te.min(res_max(*i), 127), name="res_min")
    res = te.compute(oshape, lambda *i: res_min(*i).astype(env.inp_dtype), name="res")
    return data, weight, (res_gem, res_shr, res_max, res_min), res


def _schedule(env, order: str):
    data, weight, acc, res = _declare(env)
    res_gem = acc[0]
    s = te.create_schedule(res.op)
    bufs = {}

    def read():
        bufs["d"] = s.cache_read(data, env.inp_scope, [res_gem])
        bufs["w"] = s.cache_read(weight, env.wgt_scope, [res_gem])

    if order == "first":
        read()
    b, oc, b_tns, oc_tns = s[res].op.axis
    oc_out, oc_inn = s[res].split(oc, factor=2)
    s[res].reorder(b, oc_out, oc_inn, b_tns, oc_tns)
    for t in acc:
        s[t].set_scope(env.acc_scope)
        s[t].compute_at(s[res], oc_out)
    if order == "after_compute_at":
        read()
    _, _, gb_tns, _ = s[res_gem].op.axis
    ko, ki = s[res_gem].op.reduce_axis
    ko_out, ko_inn = s[res_gem].split(ko, factor=2)
    gb, goc, gb_tns, goc_tns = s[res_gem].op.axis
    s[res_gem].reorder(ko_out, gb, goc, ko_inn, gb_tns, goc_tns, ki)
    s[res_gem].tensorize(gb_tns, env.gemm)
    if order == "after_tensorize":
        read()
    for key in ("d", "w"):
        s[bufs[key]].compute_at(s[res_gem], ko_out)
        s[bufs[key]].pragma(s[bufs[key]].op.axis[0], env.dma_copy)
    for t in acc[1:]:
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[res].pragma(oc_inn, env.dma_copy)
    return s, [data, weight, res]


@pytest.mark.parametrize("order", ["first", "after_compute_at", "after_tensorize"])
def test_cache_read_any_order_runs_on_fsim(env, tmp_path, order):
    s, args = _schedule(env, order)
    rng = np.random.default_rng(3)
    d = rng.integers(-128, 128, size=(1, N_IN, env.BATCH, env.BLOCK_IN)).astype(np.int8)
    w = rng.integers(-128, 128, size=(N_OUT, N_IN, env.BLOCK_OUT, env.BLOCK_IN)).astype(np.int8)
    outs, stats = run(s, args, {"data": d, "weight": w}, tmp_path)
    np.testing.assert_equal(outs["res"], _expected(d, w))
    # Each input tile is loaded once per output block (two blocks), each weight tile once.
    assert stats["inp_load_nbytes"] == 2 * d.nbytes
    assert stats["wgt_load_nbytes"] == w.nbytes


def test_cache_read_keeps_declared_tensors_usable(env):
    """Tensors declared before the call still name their (rebuilt) stages."""
    data, _, acc, res = _declare(env)
    s = te.create_schedule(res.op)
    s[acc[0]].compute_at(s[res], s[res].op.axis[1])
    s.cache_read(data, env.inp_scope, [acc[0]])
    assert s[acc[0]].op is not acc[0].op           # rebuilt to read the cache
    assert s[acc[1]].op.input_tensors == [s[acc[0]].op.output(0)]
    assert s[res].op in s.outputs


def test_cache_write_consumers_read_the_copy(env):
    _, _, acc, res = _declare(env)
    s = te.create_schedule(res.op)
    cache = s.cache_write(acc[1], env.acc_scope)
    assert s[acc[1]].op.input_tensors == [cache]
    assert s[acc[2]].op.input_tensors == [s[acc[1]].op.output(0)]


def test_cache_read_of_a_rebuilt_intermediate_runs_on_fsim(env, tmp_path):
    """The accumulator is cache-read by name after an earlier cache_read rebuilt its stage."""
    data, weight, acc, res = _declare(env)
    res_gem, res_shr = acc[0], acc[1]
    s = te.create_schedule(res.op)
    d_buf = s.cache_read(data, env.inp_scope, [res_gem])
    w_buf = s.cache_read(weight, env.wgt_scope, [res_gem])
    # res_gem's stage now computes a new tensor; the tensor declared before still names it.
    shr_in = s.cache_read(res_gem, env.acc_scope, [res_shr])
    for t in (res_gem, shr_in, *acc[1:]):
        s[t].set_scope(env.acc_scope)
    for t in (d_buf, w_buf):
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    s[res_gem].tensorize(s[res_gem].op.axis[2], env.gemm)
    s[res_gem].reorder(*s[res_gem].op.reduce_axis[:1], *s[res_gem].op.axis, s[res_gem].op.reduce_axis[1])
    for t in (shr_in, *acc[1:]):
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[res].pragma(s[res].op.axis[0], env.dma_copy)
    rng = np.random.default_rng(4)
    d = rng.integers(-128, 128, size=(1, N_IN, env.BATCH, env.BLOCK_IN)).astype(np.int8)
    w = rng.integers(-128, 128, size=(N_OUT, N_IN, env.BLOCK_OUT, env.BLOCK_IN)).astype(np.int8)
    outs, _ = run(s, [data, weight, res], {"data": d, "weight": w}, tmp_path)
    np.testing.assert_equal(outs["res"], _expected(d, w))
