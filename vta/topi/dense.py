"""Packed dense (fully connected) layer for VTA (upstream ``vta.top.dense_packed`` /
``schedule_dense_packed``).

Layouts: data ``(N/BATCH, I/BLOCK_IN, BATCH, BLOCK_IN)``, weight ``(O/BLOCK_OUT, I/BLOCK_IN,
BLOCK_OUT, BLOCK_IN)``, result ``(N/BATCH, O/BLOCK_OUT, BATCH, BLOCK_OUT)``. A layer whose output
count is not a multiple of BLOCK_OUT (ResNet-18's 1000 classes) is computed on weights padded
with zero rows (:func:`vta.topi.pad_to_multiple`) and the extra outputs dropped.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..env import get_env
from ..errors import ScheduleError
from ..te import compute, create_schedule, reduce_axis, thread_axis
from ..te import sum as te_sum
from ..te.schedule import Schedule
from ..te.tensor import ComputeOp, Tensor
from ._traverse import classify
from ._traverse import epilogue_inputs as _epilogue_inputs
from .dispatch import tuned_tiling
from .tiling import (
    DenseTiling,
    DenseWorkload,
    check_fits,
    choose_dense_tiling,
    dense_footprint,
)

__all__ = ["DENSE_TAG", "dense_packed", "dense_workload", "schedule_dense_packed"]

#: Tag of the dense stage (as upstream).
DENSE_TAG = "dense_pack"


def _ints(shape) -> tuple:
    return tuple(int(s) for s in shape)


def dense_packed(data: Tensor, weight: Tensor, out_dtype: str = "int32") -> Tensor:
    """``res[bo, co, bi, ci] = sum(data[bo, k, bi, kk] * weight[co, k, ci, kk])`` tagged ``"dense_pack"``.

    Raises
    ------
    ValueError
        If the operands are not 4-D or disagree on the input features.
    """
    ds, ws = _ints(data.shape), _ints(weight.shape)
    if len(ds) != 4 or len(ws) != 4:
        raise ValueError(f"dense_packed: expected 4-D packed data and weight, got {ds!r} and {ws!r}")
    if ds[1] != ws[1] or ds[3] != ws[3]:
        raise ValueError(f"dense_packed: data {ds!r} and weight {ws!r} disagree on the input features")
    k_o = reduce_axis((0, ds[1]), name="k_o")
    k_i = reduce_axis((0, ds[3]), name="k_i")
    return compute(
        (ds[0], ws[0], ds[2], ws[2]),
        lambda b_o, c_o, b_i, c_i: te_sum(
            data[b_o, k_o, b_i, k_i].astype(out_dtype) * weight[c_o, k_o, c_i, k_i].astype(out_dtype), axis=[k_o, k_i]),
        name="res_dense", tag=DENSE_TAG)


def dense_workload(op: ComputeOp, bias: int = 0, residuals: int = 0) -> DenseWorkload:
    """The :class:`~vta.topi.tiling.DenseWorkload` of a stage made by :func:`dense_packed`."""
    data, weight = op.input_tensors
    ds, ws = _ints(data.shape), _ints(weight.shape)
    return DenseWorkload(ds[0], ds[1], ws[0], int(bias), residuals)


def schedule_dense_packed(outs: Any, tiling: DenseTiling | None = None) -> Schedule:
    """Schedule a packed dense layer and its element-wise epilogue on VTA.

    The output is tiled ``(b0, co0, b1, co1)``; the product and the epilogue are computed per
    ``co0`` tile in the accumulator (epilogue on the ALU); the reduction is split by ``tile_ci``
    with data and weights loaded per step; GEMM is tensorized at the batch axis; with
    ``oc_nthread = 2`` two virtual threads share the output-channel tiles.

    Raises
    ------
    ScheduleError
        If the graph is not a packed dense layer with element-wise stages after it, a factor does
        not divide its axis, or the tiling overflows an on-chip buffer (named, with the excess).
    """
    env = get_env()
    graph = classify(outs, DENSE_TAG, "schedule_dense_packed")
    op: ComputeOp = graph.core  # type: ignore[assignment]
    output = graph.output
    biases, residuals = _epilogue_inputs(graph, spatial_dims=(0,))
    wl = dense_workload(op, biases, residuals)
    # a stage marked ``extra_tile`` (e.g. the split product of vta.topi.qnn) keeps a second
    # output-shaped tile live in the accumulator, like a residual
    extra = sum(int(op.attrs.get("extra_tile", 0)) for op in graph.ewise if op.attrs)
    wl = replace(wl, alu_stages=len(graph.ewise), residuals=wl.residuals + extra)
    if tiling is None:
        # tuning records (vta.topi.dispatch) first, else the default chooser
        tiling = tuned_tiling("dense", env, wl) or choose_dense_tiling(env, wl)
    for name, factor, extent in (("tile_b", tiling.tile_b, wl.n_blocks), ("tile_co", tiling.tile_co, wl.co_blocks),
                                 ("tile_ci", tiling.tile_ci, wl.ci_blocks)):
        if factor <= 0 or extent % factor:
            raise ScheduleError(f"schedule_dense_packed: {name}={factor!r} does not divide the axis extent {extent!r}")
    if tiling.oc_nthread not in (1, 2) or (wl.co_blocks // tiling.tile_co) % tiling.oc_nthread:
        raise ScheduleError(f"schedule_dense_packed: oc_nthread={tiling.oc_nthread!r} "
                            "must be 1 or 2 and divide the tiles")
    check_fits(env, dense_footprint(wl, tiling), f"schedule_dense_packed with {tiling!r}")

    res = op.output(0)
    s = create_schedule(output.op)
    data, weight = op.input_tensors
    cdata = s.cache_read(data, env.inp_scope, [res])
    cweight = s.cache_read(weight, env.wgt_scope, [res])
    s[res].set_scope(env.acc_scope)
    ewise_caches = [s.cache_read(t, env.acc_scope, [reader.output(0)]) for reader, t in graph.ewise_inputs]
    for e in graph.ewise:
        s[e].set_scope(env.acc_scope)
        s[e].pragma(s[e].op.axis[0], env.alu)

    x_b, x_c, _, _ = s[output].op.axis
    x_bo, x_bi = s[output].split(x_b, factor=tiling.tile_b)
    x_co, x_ci = s[output].split(x_c, factor=tiling.tile_co)
    s[output].reorder(x_bo, x_co, x_bi, x_ci)
    if tiling.oc_nthread > 1:
        # Split before attaching: the computation is placed in the loop that remains.
        x_co, v_t = s[output].split(x_co, factor=tiling.oc_nthread)
        s[output].reorder(v_t, x_bo)
        s[output].bind(v_t, thread_axis("cthread"))
    store_pt = x_co
    s[res].compute_at(s[output], store_pt)
    for e in graph.ewise:
        s[e].compute_at(s[output], store_pt)
    for cache in ewise_caches + [op.output(0) for op in graph.loads]:
        s[cache].set_scope(env.acc_scope)
        s[cache].compute_at(s[output], store_pt)
        s[cache].pragma(s[cache].op.axis[0], env.dma_copy)

    r_bo, r_co, r_bi, r_ci = s[res].op.axis
    k_o, k_i = s[res].op.reduce_axis
    k_o0, k_o1 = s[res].split(k_o, factor=tiling.tile_ci)
    s[res].reorder(k_o0, r_bo, r_co, k_o1, r_bi, r_ci, k_i)
    s[cdata].compute_at(s[res], k_o0)
    s[cweight].compute_at(s[res], k_o0)
    s[cdata].pragma(s[cdata].op.axis[0], env.dma_copy)
    s[cweight].pragma(s[cweight].op.axis[0], env.dma_copy)
    s[res].tensorize(r_bi, env.gemm)
    s[output].pragma(x_ci, env.dma_copy)
    return s
