"""Packed 2-D convolution for VTA (upstream ``vta.top.conv2d_packed`` / ``schedule_conv2d_packed``).

Layouts: data ``NCHWnc`` ``(N/BATCH, CI/BLOCK_IN, H, W, BATCH, BLOCK_IN)``, kernel ``OIHWoi``
``(CO/BLOCK_OUT, CI/BLOCK_IN, KH, KW, BLOCK_OUT, BLOCK_IN)``, result ``(N/BATCH, CO/BLOCK_OUT,
OH, OW, BATCH, BLOCK_OUT)`` in ``out_dtype`` (int32). The schedule runs the convolution on the
GEMM core and the element-wise epilogue (:func:`vta.topi.requantize`) on the ALU, tiled by
:func:`vta.topi.tiling.choose_conv2d_tiling` for the active configuration.
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
from .pad import pad
from .tiling import (
    Conv2DTiling,
    Conv2DWorkload,
    check_fits,
    choose_conv2d_tiling,
    conv2d_footprint,
)

__all__ = ["CONV2D_TAG", "conv2d_packed", "conv2d_workload", "schedule_conv2d_packed"]

#: Tag of the convolution stage (as upstream).
CONV2D_TAG = "conv2d_dense"


def _pair(v: Any, what: str) -> tuple[int, int]:
    if isinstance(v, int) and not isinstance(v, bool):
        v = (v, v)
    try:
        a, b = (int(x) for x in v)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"conv2d_packed: {what} must be an int or a pair of ints, got {v!r}") from exc
    return a, b


def _padding(v: Any) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` of an int, a pair ``(pad_h, pad_w)`` or a 4-tuple."""
    if isinstance(v, (tuple, list)) and len(v) == 4:
        try:
            return tuple(int(x) for x in v)  # type: ignore[return-value]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"conv2d_packed: padding must hold ints, got {v!r}") from exc
    ph, pw = _pair(v, "padding")
    return ph, pw, ph, pw


def _ints(shape) -> tuple:
    return tuple(int(s) for s in shape)


def conv2d_packed(data: Tensor, kernel: Tensor, strides: Any, padding: Any, out_dtype: str = "int32") -> Tensor:
    """The packed convolution ``res[b, co, i, j, bi, ci] = sum(pad(data)[b, k, i*sh+di, j*sw+dj, bi, kk]
    * kernel[co, k, di, dj, ci, kk])`` tagged ``"conv2d_dense"``.

    Padding (an int, symmetric ``(pad_h, pad_w)``, or ``(top, left, bottom, right)``) is a
    :func:`vta.topi.pad` stage named ``pad_data`` (zeros: the hardware's padded loads).

    Raises
    ------
    ValueError
        If data or kernel is not 6-D, their input channels or blocks disagree, a stride is not
        positive, a padding negative, or the padded input is smaller than the kernel.
    """
    if len(data.shape) != 6 or len(kernel.shape) != 6:
        raise ValueError(
            f"conv2d_packed: expected 6-D packed data (NCHWnc) and kernel (OIHWoi), got {_ints(data.shape)!r} "
            f"and {_ints(kernel.shape)!r}"
        )
    ds, ks = _ints(data.shape), _ints(kernel.shape)
    if ds[1] != ks[1] or ds[5] != ks[5]:
        raise ValueError(f"conv2d_packed: data {ds!r} and kernel {ks!r} disagree on the input channels")
    sh, sw = _pair(strides, "strides")
    pads = _padding(padding)
    pt, pl, pb, pr = pads
    if sh <= 0 or sw <= 0 or min(pads) < 0:
        raise ValueError(f"conv2d_packed: strides {(sh, sw)!r} must be positive and padding {padding!r} non-negative")
    if ds[2] + pt + pb < ks[2] or ds[3] + pl + pr < ks[3]:
        raise ValueError(f"conv2d_packed: the padded input {ds[2:4]!r} + {padding!r} is smaller than the kernel {ks[2:4]!r}")
    pad_data = pad(data, [0, 0, pt, pl, 0, 0], [0, 0, pb, pr, 0, 0], name="pad_data") if any(pads) else data
    oh = (ds[2] + pt + pb - ks[2]) // sh + 1
    ow = (ds[3] + pl + pr - ks[3]) // sw + 1
    # The symmetric pair as before; an asymmetric padding is recorded as its 4-tuple.
    ph_pw = (pt, pl) if (pt, pl) == (pb, pr) else pads
    oshape = (ds[0], ks[0], oh, ow, ds[4], ks[4])
    d_i = reduce_axis((0, ks[2]), name="d_i")
    d_j = reduce_axis((0, ks[3]), name="d_j")
    k_o = reduce_axis((0, ds[1]), name="k_o")
    k_i = reduce_axis((0, ds[5]), name="k_i")
    return compute(
        oshape,
        lambda b_o, c_o, i, j, b_i, c_i: te_sum(
            pad_data[b_o, k_o, i * sh + d_i.var, j * sw + d_j.var, b_i, k_i].astype(out_dtype)
            * kernel[c_o, k_o, d_i, d_j, c_i, k_i].astype(out_dtype),
            axis=[k_o, d_i, d_j, k_i]),
        name="res_conv", tag=CONV2D_TAG, attrs={"strides": (sh, sw), "padding": ph_pw})


def conv2d_workload(conv: ComputeOp, bias: int = 0, residuals: int = 0) -> Conv2DWorkload:
    """The :class:`~vta.topi.tiling.Conv2DWorkload` of a stage made by :func:`conv2d_packed`.

    Raises
    ------
    ScheduleError
        If the stage does not carry the strides and padding :func:`conv2d_packed` records.
    """
    if "strides" not in conv.attrs or "padding" not in conv.attrs:
        raise ScheduleError(
            f"stage {conv.name!r} is tagged {CONV2D_TAG!r} but has no strides/padding attributes; "
            f"declare it with vta.topi.conv2d_packed"
        )
    data, kernel = conv.input_tensors
    ks = _ints(kernel.shape)
    pads = tuple(conv.attrs["padding"])
    ds = _ints(data.shape) if not any(pads) else _ints(data.op.input_tensors[0].shape)
    return Conv2DWorkload(ds[0], ds[1], ks[0], ds[2], ds[3], ks[2], ks[3], tuple(conv.attrs["strides"]), pads,
                          int(bias), residuals)


def schedule_conv2d_packed(outs: Any, tiling: Conv2DTiling | None = None) -> Schedule:
    """Schedule a packed convolution and its element-wise epilogue on VTA.

    The output is tiled ``(b, h0, co0, w0, co1, h1, w1, bi, ci)``; the convolution and the
    epilogue are computed per ``w0`` tile in the accumulator, the epilogue on the ALU, other
    inputs of the epilogue (a bias) loaded into the accumulator; the reduction is split by
    ``tile_ci`` and the (padded) input and the weights loaded per step; GEMM is tensorized at the
    batch axis; virtual threads (``cthread``) split the outer output-channel or row tiles.

    Parameters
    ----------
    outs : Tensor or list of one Tensor
        The output (e.g. from :func:`vta.topi.requantize` over :func:`conv2d_packed`).
    tiling : Conv2DTiling, optional
        Split factors; chosen by :func:`~vta.topi.tiling.choose_conv2d_tiling` when omitted.

    Raises
    ------
    ScheduleError
        If the graph is not a packed convolution with element-wise stages after it, a tiling
        factor does not divide its axis, or the tiling overflows an on-chip buffer (the message
        names the buffer and by how much).
    """
    env = get_env()
    graph = classify(outs, CONV2D_TAG, "schedule_conv2d_packed")
    conv_op: ComputeOp = graph.core  # type: ignore[assignment]
    output = graph.output
    biases, residuals = _epilogue_inputs(graph, spatial_dims=(2, 3))
    wl = conv2d_workload(conv_op, biases, residuals)
    # a stage marked ``extra_tile`` (e.g. the split product of vta.topi.qnn) keeps a second
    # output-shaped tile live in the accumulator, like a residual
    extra = sum(int(op.attrs.get("extra_tile", 0)) for op in graph.ewise if op.attrs)
    # and one marked ``extra_vector`` (a constant vector built on the ALU) is budgeted like a bias
    vectors = sum(int(op.attrs.get("extra_vector", 0)) for op in graph.ewise if op.attrs)
    wl = replace(wl, alu_stages=len(graph.ewise), residuals=wl.residuals + extra, bias=wl.bias + vectors)
    if tiling is None:
        tiling = choose_conv2d_tiling(env, wl)
    _check_tiling(wl, tiling)
    check_fits(env, conv2d_footprint(wl, tiling), f"schedule_conv2d_packed with {tiling!r}")

    conv = conv_op.output(0)
    s = create_schedule(output.op)
    data, kernel = conv_op.input_tensors
    if isinstance(data.op, ComputeOp) and "pad" in data.op.tag:
        cdata = data
        s[cdata].set_scope(env.inp_scope)
    else:
        cdata = s.cache_read(data, env.inp_scope, [conv])
    ckernel = s.cache_read(kernel, env.wgt_scope, [conv])
    s[conv].set_scope(env.acc_scope)
    ewise_caches = [s.cache_read(t, env.acc_scope, [reader.output(0)]) for reader, t in graph.ewise_inputs]
    for op in graph.ewise:
        s[op].set_scope(env.acc_scope)
        s[op].pragma(s[op].op.axis[0], env.alu)

    x_bo, x_co, x_i, x_j, x_bi, x_ci = s[output].op.axis
    x_co0, x_co1 = s[output].split(x_co, factor=tiling.tile_co)
    x_i0, x_i1 = s[output].split(x_i, factor=tiling.tile_h)
    x_j0, x_j1 = s[output].split(x_j, factor=tiling.tile_w)
    s[output].reorder(x_bo, x_i0, x_co0, x_j0, x_co1, x_i1, x_j1, x_bi, x_ci)
    store_pt = x_j0
    s[conv].compute_at(s[output], store_pt)
    for op in graph.ewise:
        s[op].compute_at(s[output], store_pt)
    for cache in ewise_caches + [op.output(0) for op in graph.loads]:
        s[cache].set_scope(env.acc_scope)
        s[cache].compute_at(s[output], store_pt)
        s[cache].pragma(s[cache].op.axis[0], env.dma_copy)
    if tiling.oc_nthread > 1:
        _, v_t = s[output].split(x_co0, factor=tiling.oc_nthread)
        s[output].reorder(v_t, x_bo)
        s[output].bind(v_t, thread_axis("cthread"))
    if tiling.h_nthread > 1:
        _, v_t = s[output].split(x_i0, factor=tiling.h_nthread)
        s[output].reorder(v_t, x_bo)
        s[output].bind(v_t, thread_axis("cthread"))

    c_bo, c_co, c_i, c_j, c_bi, c_ci = s[conv].op.axis
    k_o, d_i, d_j, k_i = s[conv].op.reduce_axis
    k_o0, k_o1 = s[conv].split(k_o, factor=tiling.tile_ci)
    s[conv].reorder(k_o0, c_bo, c_co, c_i, k_o1, d_i, d_j, c_j, c_bi, c_ci, k_i)
    s[cdata].compute_at(s[conv], k_o0)
    s[ckernel].compute_at(s[conv], k_o0)
    s[cdata].pragma(s[cdata].op.axis[0], env.dma_copy)
    s[ckernel].pragma(s[ckernel].op.axis[0], env.dma_copy)
    s[conv].tensorize(c_bi, env.gemm)
    s[output].pragma(x_co1, env.dma_copy)
    return s


def _check_tiling(wl: Conv2DWorkload, t: Conv2DTiling) -> None:
    for name, factor, extent in (("tile_h", t.tile_h, wl.out_height), ("tile_w", t.tile_w, wl.out_width),
                                 ("tile_co", t.tile_co, wl.co_blocks), ("tile_ci", t.tile_ci, wl.ci_blocks)):
        if factor <= 0 or extent % factor:
            raise ScheduleError(f"schedule_conv2d_packed: {name}={factor!r} does not divide the axis extent {extent!r}")
    if t.oc_nthread not in (1, 2) or t.h_nthread not in (1, 2):
        raise ScheduleError(f"schedule_conv2d_packed: thread counts {(t.oc_nthread, t.h_nthread)!r} must be 1 or 2")
    if (wl.co_blocks // t.tile_co) % t.oc_nthread or (wl.out_height // t.tile_h) % t.h_nthread:
        raise ScheduleError(f"schedule_conv2d_packed: {t!r} leaves tiles that the virtual threads do not divide")
