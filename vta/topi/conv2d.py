"""Packed 2-D convolution for VTA (upstream ``vta.top.conv2d_packed`` / ``schedule_conv2d_packed``).

Layouts: data ``NCHWnc`` ``(N/BATCH, CI/BLOCK_IN, H, W, BATCH, BLOCK_IN)``, kernel ``OIHWoi``
``(CO/BLOCK_OUT, CI/BLOCK_IN, KH, KW, BLOCK_OUT, BLOCK_IN)``, result ``(N/BATCH, CO/BLOCK_OUT,
OH, OW, BATCH, BLOCK_OUT)`` in ``out_dtype`` (int32). The schedule runs the convolution on the
GEMM core and the element-wise epilogue (:func:`vta.topi.requantize`) on the ALU, tiled by
:func:`vta.topi.tiling.choose_conv2d_tiling` for the active configuration. ``dilation`` spaces
the kernel taps. Spatial tiles may be ragged (not dividing the output): the last tile computes
on zero padding past the input (padded loads) and its store is cropped;
:func:`choose_ragged_conv2d_tiling` chooses such tilings. Channel tiles passed explicitly may be
ragged too: past the last output block the last ``tile_co`` tile computes on weights and bias
never loaded and its store is cropped; past the last input block the last ``tile_ci`` chunk of
the reduction reads weights zero-filled by the load (padded rows: at most 15, the pad field),
so the input channels there, left unloaded, add nothing. :func:`schedule_conv_tiles` is the
schedule body shared with the grouped and transposed convolutions.

A kernel of one tap along the rows with a row stride ``s > 1`` (the 1x1 stride-2 projections
of ResNet) reads one input row in ``s``: the convolution then reads a
:func:`~vta.topi.pad.subsample` of its input, and the load of each reduction step moves only
those rows (a LOAD whose DRAM row stride is ``s`` rows). Columns keep their runs, from the
first column read to the last (:func:`_subsampled` says why).
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product
from typing import Any

from ..env import get_env
from ..errors import ScheduleError
from ..te import compute, create_schedule, reduce_axis, thread_axis
from ..te import sum as te_sum
from ..te.schedule import Schedule
from ..te.tensor import ComputeOp, Tensor
from ..tir.nodes import Add, StringImm
from ..tir.transform.vthread_rotate import ROTATE_PRAGMA
from ..tir.transform.vthread_stagger import STAGGER_PRAGMA
from ..transform.dma import CROP_PREFIX
from ._traverse import OpGraph, classify
from ._traverse import epilogue_inputs as _epilogue_inputs
from .dispatch import tuned_tiling
from .pad import SUBSAMPLE_TAG, pad, subsample
from .tiling import (
    ROTATED_MAX_THREADS,
    Conv2DTiling,
    Conv2DWorkload,
    check_fits,
    choose_conv2d_tiling,
    conv2d_footprint,
    rotates,
)

__all__ = [
    "CONV2D_TAG",
    "check_tiling",
    "choose_ragged_conv2d_tiling",
    "conv2d_packed",
    "conv2d_workload",
    "dilated_extent",
    "epilogue_workload",
    "schedule_conv2d_packed",
    "schedule_conv_tiles",
]

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


def conv2d_packed(data: Tensor, kernel: Tensor, strides: Any, padding: Any, out_dtype: str = "int32",
                  dilation: Any = 1) -> Tensor:
    """The packed convolution ``res[b, co, i, j, bi, ci] = sum(pad(data)[b, k, i*sh+di*dh, j*sw+dj*dw,
    bi, kk] * kernel[co, k, di, dj, ci, kk])`` tagged ``"conv2d_dense"``.

    Padding (an int, symmetric ``(pad_h, pad_w)``, or ``(top, left, bottom, right)``) is a
    :func:`vta.topi.pad` stage named ``pad_data`` (zeros: the hardware's padded loads).
    ``dilation`` (an int or ``(dh, dw)``) spaces the kernel taps: the kernel covers
    ``(KH - 1) * dh + 1`` rows of the padded input (TVM's ``dilation``). A one-tap kernel with
    a stride > 1 and no padding along the rows reads a :func:`~vta.topi.pad.subsample` stage
    named ``strided_data`` instead (module docstring); ``attrs["strides"]`` of the result stay
    the strides given.

    Raises
    ------
    ValueError
        If data or kernel is not 6-D, their input channels or blocks disagree, a stride or a
        dilation is not positive, a padding negative, or the padded input is smaller than the
        (dilated) kernel.
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
    dh, dw = _pair(dilation, "dilation")
    pads = _padding(padding)
    pt, pl, pb, pr = pads
    if sh <= 0 or sw <= 0 or min(pads) < 0:
        raise ValueError(f"conv2d_packed: strides {(sh, sw)!r} must be positive and padding {padding!r} non-negative")
    if dh <= 0 or dw <= 0:
        raise ValueError(f"conv2d_packed: dilation {(dh, dw)!r} must be positive")
    ekh, ekw = dilated_extent(ks[2], dh), dilated_extent(ks[3], dw)
    if ds[2] + pt + pb < ekh or ds[3] + pl + pr < ekw:
        raise ValueError(f"conv2d_packed: the padded input {ds[2:4]!r} + {padding!r} is smaller than the "
                         f"(dilated) kernel {(ekh, ekw)!r}")
    pad_data = pad(data, [0, 0, pt, pl, 0, 0], [0, 0, pb, pr, 0, 0], name="pad_data") if any(pads) else data
    oh = (ds[2] + pt + pb - ekh) // sh + 1
    ow = (ds[3] + pl + pr - ekw) // sw + 1
    if _subsampled(ekh, sh, pt + pb):
        # a one-tap kernel with stride s reads one input row in s: the stage the schedule loads
        # holds only those (its DRAM rows s apart), read with stride 1
        pad_data = subsample(pad_data, [1, 1, sh, 1, 1, 1], name="strided_data")
        sh = 1
    # The symmetric pair as before; an asymmetric padding is recorded as its 4-tuple.
    ph_pw = (pt, pl) if (pt, pl) == (pb, pr) else pads
    oshape = (ds[0], ks[0], oh, ow, ds[4], ks[4])
    d_i = reduce_axis((0, ks[2]), name="d_i")
    d_j = reduce_axis((0, ks[3]), name="d_j")
    k_o = reduce_axis((0, ds[1]), name="k_o")
    k_i = reduce_axis((0, ds[5]), name="k_i")
    attrs = {"strides": _pair(strides, "strides"), "padding": ph_pw}
    if (dh, dw) != (1, 1):
        attrs["dilation"] = (dh, dw)
    return compute(
        oshape,
        lambda b_o, c_o, i, j, b_i, c_i: te_sum(
            pad_data[b_o, k_o, i * sh + d_i.var * dh, j * sw + d_j.var * dw, b_i, k_i].astype(out_dtype)
            * kernel[c_o, k_o, d_i, d_j, c_i, k_i].astype(out_dtype),
            axis=[k_o, d_i, d_j, k_i]),
        name="res_conv", tag=CONV2D_TAG, attrs=attrs)


def _subsampled(extent: int, stride: int, padding: int) -> bool:
    """Whether the input rows are subsampled: a kernel of one tap (``extent`` 1) along them with
    ``stride > 1`` reads one input row in ``stride``; without padding along the rows (a padded
    subsampled load would need pad bounds that divide by the stride), its load moves only those.

    Columns are not subsampled: the load would move each element as its own row (one read
    burst of two beats each). Measured on ResNet-18's projections C4, C7, C10 (cycle model), it
    saved 0.7% of C4 with the ideal memory but cost 2 to 2.7 times the cycles with the ``ddr4``
    memory (eight bursts in flight), and a ragged tile's padded load needs contiguous columns."""
    return extent == 1 and stride > 1 and padding == 0


def dilated_extent(k: int, d: int) -> int:
    """Input rows (or columns) a kernel of ``k`` taps spaced ``d`` apart covers: ``(k - 1) * d + 1``."""
    return (k - 1) * d + 1


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
    sub = isinstance(data.op, ComputeOp) and data.op.tag == SUBSAMPLE_TAG
    if sub:
        data = data.op.input_tensors[0]
    ds = _ints(data.shape) if not any(pads) else _ints(data.op.input_tensors[0].shape)
    # A dilated kernel is described by the window it covers (the input footprint and the output
    # size are exact; the weight footprint and GEMM count are over-estimated, so fits stay safe).
    dh, dw = tuple(conv.attrs.get("dilation", (1, 1)))
    return Conv2DWorkload(ds[0], ds[1], ks[0], ds[2], ds[3], dilated_extent(ks[2], dh), dilated_extent(ks[3], dw),
                          tuple(conv.attrs["strides"]), pads, int(bias), residuals, subsampled_rows=sub)


def schedule_conv2d_packed(outs: Any, tiling: Conv2DTiling | None = None) -> Schedule:
    """Schedule a packed convolution and its element-wise epilogue on VTA.

    The output is tiled ``(b, h0, co0, w0, co1, h1, w1, bi, ci)``; the convolution and the
    epilogue are computed per ``w0`` tile in the accumulator, the epilogue on the ALU, other
    inputs of the epilogue (a bias) loaded into the accumulator; the reduction is split by
    ``tile_ci`` and the (padded) input and the weights loaded per step; GEMM is tensorized at the
    batch axis; virtual threads (``cthread``) split the outer output-channel or row tiles.
    No factor needs to divide its extent (ragged last tiles, see the module docstring).

    Parameters
    ----------
    outs : Tensor or list of one Tensor
        The output (e.g. from :func:`vta.topi.requantize` over :func:`conv2d_packed`).
    tiling : Conv2DTiling, optional
        Split factors; when omitted, the active tuning records' (:mod:`vta.topi.dispatch`), else
        :func:`~vta.topi.tiling.choose_conv2d_tiling`'s.

    Raises
    ------
    ScheduleError
        If the graph is not a packed convolution with element-wise stages after it, a tile
        exceeds its extent, the virtual threads do not divide the tiles, a spatial tile reads
        only padding (:func:`check_windows`), or the tiling overflows an on-chip buffer (the
        message names the buffer and by how much).
    """
    env = get_env()
    graph = classify(outs, CONV2D_TAG, "schedule_conv2d_packed")
    wl = epilogue_workload(graph, conv2d_workload(graph.core))
    if tiling is None:
        # tuning records (vta.topi.dispatch) first, else the default chooser
        tiling = tuned_tiling("conv2d", env, wl) or choose_conv2d_tiling(env, wl)
    _check_tiling(wl, tiling)
    check_fits(env, conv2d_footprint(wl, tiling), f"schedule_conv2d_packed with {tiling!r}")
    return schedule_conv_tiles(graph, tiling, rotate=rotates(env, wl, tiling))


def epilogue_workload(graph: OpGraph, wl: Conv2DWorkload) -> Conv2DWorkload:
    """``wl`` with the epilogue of ``graph`` counted: per-channel inputs (bias), output-shaped
    inputs (residuals) and the ALU stages."""
    biases, residuals = _epilogue_inputs(graph, spatial_dims=(2, 3))
    # a stage marked ``extra_tile`` (e.g. the split product of vta.topi.qnn) keeps a second
    # output-shaped tile live in the accumulator, like a residual
    extra = sum(int(op.attrs.get("extra_tile", 0)) for op in graph.ewise if op.attrs)
    # and one marked ``extra_vector`` (a constant vector built on the ALU) is budgeted like a bias
    vectors = sum(int(op.attrs.get("extra_vector", 0)) for op in graph.ewise if op.attrs)
    return replace(wl, bias=int(biases) + vectors, residuals=residuals + extra, alu_stages=len(graph.ewise),
                   bias_first=_bias_first(graph))


def _bias_first(graph: OpGraph) -> bool:
    """Whether the stage reading the core's result adds one per-channel input to it (the
    addition InjectBiasMov turns into the tile's starting value)."""
    first = [op for op in graph.ewise if any(t.op is graph.core for t in op.input_tensors)]
    if len(first) != 1 or not isinstance(first[0].body, Add):
        return False
    others = [t for t in first[0].input_tensors if t.op is not graph.core]
    return len(others) == 1 and len(others[0].shape) == 6 and all(_const(d) == 1 for d in others[0].shape[2:4])


def _const(x) -> int | None:
    return getattr(x, "value", x if isinstance(x, int) else None)


def schedule_conv_tiles(graph: OpGraph, tiling: Conv2DTiling, skip_zero_taps: bool = False,
                        rotate: bool = False) -> Schedule:
    """The VTA schedule of a packed convolution-like stage (``graph.core``: axes ``(b, co, i, j,
    bi, ci)``, reduction ``(k_o, d_i, d_j, k_i)``, reading a (padded) input and a kernel) and
    its epilogue, tiled by ``tiling`` (already checked by the caller).

    With ``rotate`` (:func:`~vta.topi.tiling.rotates` holds for the tiling) each thread loads
    its weights once, before its tiles, and the threads are rotated
    (:mod:`vta.tir.transform.vthread_rotate`).

    With ``skip_zero_taps`` the GEMM is not tensorized but marked ``conv2d_transpose_gemm``:
    the input read may be guarded (``if_then_else(cond, x, 0)`` with ``cond`` independent of the
    tile), and the guarded-out taps emit no micro-op (InjectConv2DTransposeSkip).
    """
    env = get_env()
    conv_op: ComputeOp = graph.core  # type: ignore[assignment]
    output = graph.output
    conv = conv_op.output(0)
    s = create_schedule(output.op)
    data, kernel = conv_op.input_tensors
    if isinstance(data.op, ComputeOp) and data.op.tag == SUBSAMPLE_TAG:
        # the subsampled input (conv2d_packed) is the loaded stage; a padding below it is
        # inlined into it (padded columns of a load whose rows are subsampled)
        cdata = data
        s[cdata].set_scope(env.inp_scope)
        src = data.op.input_tensors[0]
        if isinstance(src.op, ComputeOp):
            s[src].compute_inline()
    elif isinstance(data.op, ComputeOp) and "pad" in data.op.tag:
        cdata = data
        s[cdata].set_scope(env.inp_scope)
    else:
        cdata = s.cache_read(data, env.inp_scope, [conv])
    ckernel = s.cache_read(kernel, env.wgt_scope, [conv])
    s[conv].set_scope(env.acc_scope)
    ewise_caches = [s.cache_read(t, env.acc_scope, [reader.output(0)]) for reader, t in graph.ewise_inputs]
    # 0-D stages (a scalar operand made a tensor, as upstream's topi broadcasts did) are inlined
    consts = [op for op in graph.ewise if not op.axis]
    graph = replace(graph, ewise=[op for op in graph.ewise if op.axis])
    for op in consts:
        s[op].compute_inline()
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
        # past the last output channel (a ragged tile_co) nothing is stored: no need to load
        s[cache].pragma(s[cache].op.axis[0], env.dma_copy, _crop(s[cache], 1))
    c_bo, c_co, c_i, c_j, c_bi, c_ci = s[conv].op.axis
    k_o, d_i, d_j, k_i = s[conv].op.reduce_axis
    # With ALU_MOV a 1x1 kernel's two threads run one reduction step apart (the store of one
    # thread's tile overlaps the other's GEMM; vta.tir.transform.vthread_stagger). Larger kernels
    # keep lock-step: their loads, not the stores, would then be exposed.
    stagger = bool(env.ALU_MOV) and all(_extent(ax) == 1 for ax in (d_i, d_j))
    outer = x_bo
    for nthread, axis in ((tiling.oc_nthread, x_co0), (tiling.h_nthread, x_i0)):
        if nthread > 1:
            _, v_t = s[output].split(axis, factor=nthread)
            outer = v_t
            s[output].reorder(v_t, x_bo)
            s[output].bind(v_t, thread_axis("cthread"))
            if rotate:
                s[output].pragma(v_t, ROTATE_PRAGMA)
            elif stagger:
                s[output].pragma(v_t, STAGGER_PRAGMA)

    k_o0, k_o1 = s[conv].split(k_o, factor=tiling.tile_ci)
    s[conv].reorder(k_o0, c_bo, c_co, c_i, k_o1, d_i, d_j, c_j, c_bi, c_ci, k_i)
    s[cdata].compute_at(s[conv], k_o0)
    # rotated threads: one reduction step and one output-channel tile per thread, so a thread's
    # weights are the same for all its tiles: loaded once, before them; threads over the rows
    # all read the same weights: one copy, loaded before the threads (at the root)
    if not rotate:
        s[ckernel].compute_at(s[conv], k_o0)
    elif tiling.oc_nthread > 1:
        s[ckernel].compute_at(s[output], outer)
    # A ragged last channel tile (module docstring): the weights past the last input channel
    # are zero-filled (padded rows of the weight load), so the input's channels there need not
    # be loaded; the weights past the last output channel feed only outputs never stored.
    s[cdata].pragma(s[cdata].op.axis[0], env.dma_copy, _crop(s[cdata], 1))
    s[ckernel].pragma(s[ckernel].op.axis[0], env.dma_copy, _crop(s[ckernel], 0))
    if skip_zero_taps:
        s[conv].pragma(c_bi, "conv2d_transpose_gemm")
    else:
        s[conv].tensorize(c_bi, env.gemm)
    s[output].pragma(x_co1, env.dma_copy)
    return s


def _extent(axis) -> int | None:
    ext = getattr(axis.dom, "extent", None)
    return getattr(ext, "value", None)


#: Most zero rows a padded load fills past its data (the 4-bit y_pad field).
_MAX_PAD = 15


def _crop(stage, axis: int) -> StringImm:
    """The ``dma_copy`` pragma value letting the copy crop the overhang of one of its axes
    (:mod:`vta.transform.dma`)."""
    return StringImm(CROP_PREFIX + stage.op.axis[axis].var.name)


def _check_tiling(wl: Conv2DWorkload, t: Conv2DTiling, what: str = "schedule_conv2d_packed") -> None:
    """Every tile may be ragged (not dividing its extent, see the module docstring) but not
    larger than the extent; virtual threads divide the tile counts; no spatial tile reads only
    padding."""
    check_tiling(t, wl.out_height, wl.out_width, wl.co_blocks, wl.ci_blocks, what, ragged_co=True, ragged_ci=True,
                 max_threads=ROTATED_MAX_THREADS if rotates(get_env(), wl, t) else 2)
    check_windows(wl, t, what)


def check_windows(wl: Conv2DWorkload, t: Conv2DTiling, what: str) -> None:
    """Refuse a tiling with a spatial tile whose input window lies wholly in the padding.

    Raises
    ------
    ScheduleError
        If such a tile exists (:meth:`~vta.topi.tiling.Conv2DWorkload.padding_only_tile`): its
        input load would move no pixel, which no LOAD instruction expresses. The message names
        the tile and suggests larger tiles.
    """
    empty = wl.padding_only_tile(t.tile_h, t.tile_w)
    if empty:
        raise ScheduleError(f"{what}: {t!r}: {empty}; choose a larger or differently aligned tile_h/tile_w, "
                            f"or let the tiling be chosen")


def check_tiling(t: Conv2DTiling, out_height: int, out_width: int, co_blocks: int, ci_blocks: int,
                 what: str, ragged_co: bool = False, ragged_ci: bool = False, max_threads: int = 2) -> None:
    """Check a convolution tiling against its extents (see :func:`schedule_conv_tiles`).

    With ``ragged_co`` (``ragged_ci``) the output- (input-) channel factor need not divide its
    block count (the last channel tile is ragged), like the spatial tiles. ``max_threads``
    above 2 (rotated threads, :func:`~vta.topi.tiling.rotates`) allows that many threads on one
    axis.

    Raises
    ------
    ScheduleError
        If a channel factor does not divide its block count (unless allowed ragged), a
        ragged last ``tile_ci`` chunk is more than 15 blocks short, a tile is not in
        ``[1, extent]``, a thread count is not 1 or 2 (up to ``max_threads`` on one axis),
        both are above 1, or the threads do not divide the tiles.
    """
    for name, factor, extent, ragged in (("tile_co", t.tile_co, co_blocks, ragged_co),
                                         ("tile_ci", t.tile_ci, ci_blocks, ragged_ci)):
        if not ragged and (factor <= 0 or extent % factor):
                raise ScheduleError(f"{what}: {name}={factor!r} does not divide the axis extent {extent!r}")
    for name, factor, extent in (("tile_co", t.tile_co, co_blocks), ("tile_ci", t.tile_ci, ci_blocks),
                                 ("tile_h", t.tile_h, out_height), ("tile_w", t.tile_w, out_width)):
        if not 0 < factor <= extent:
            raise ScheduleError(f"{what}: {name}={factor!r} must lie in [1, {extent}]")
    short = -ci_blocks % t.tile_ci
    if short > _MAX_PAD:
        raise ScheduleError(f"{what}: the last tile_ci={t.tile_ci} chunk of {ci_blocks} input blocks is {short} blocks "
                            f"short; its weights are zero-filled by padded rows, at most {_MAX_PAD} (the 4-bit pad "
                            f"field): choose a tile_ci leaving at most {_MAX_PAD}")
    if max_threads > 2 and 1 in (t.oc_nthread, t.h_nthread) and 0 < t.threads <= max_threads:
        pass  # rotated threads on one axis (vta.tir.transform.vthread_rotate)
    elif t.oc_nthread not in (1, 2) or t.h_nthread not in (1, 2):
        raise ScheduleError(f"{what}: thread counts {(t.oc_nthread, t.h_nthread)!r} must be 1 or 2"
                            + (f" (or up to {max_threads} on one axis)" if max_threads > 2 else ""))
    elif t.threads > 2:
        # two thread axes nest two virtual_thread scopes: the inner expansion does not rebase
        # the outer one's buffers (measured: all four threads load to the same SRAM rows), and
        # their dependency tokens deadlock
        raise ScheduleError(f"{what}: {t!r} has {t.threads} virtual threads; at most 2 (oc_nthread or h_nthread)")
    if _ceil_div(co_blocks, t.tile_co) % t.oc_nthread or _ceil_div(out_height, t.tile_h) % t.h_nthread:
        raise ScheduleError(f"{what}: {t!r} leaves tiles that the virtual threads do not divide")


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def fits(env: Any, footprint: dict) -> bool:
    """Whether a footprint (:func:`~vta.topi.tiling.conv2d_footprint`) fits every buffer of ``env``."""
    cap = {"inp": env.INP_BUFF_DEPTH, "wgt": env.WGT_BUFF_DEPTH, "acc": env.ACC_BUFF_DEPTH, "uop": env.UOP_BUFF_DEPTH}
    return all(footprint[k] <= cap[k] for k in cap)


def choose_ragged_conv2d_tiling(env: Any, wl: Conv2DWorkload) -> Conv2DTiling:
    """The fitting convolution tiling with the least estimated cycles, spatial tiles of any size
    (ragged ones included: :func:`schedule_conv_tiles` pads the last tile and crops its store).

    The estimate is :func:`~vta.topi.tiling.choose_conv2d_tiling`'s model with ceil tile counts:
    bytes loaded / 8 plus 32 cycles per instruction, plus one cycle per GEMM micro-op (the
    overhang of ragged tiles included), the loads hidden behind the GEMMs with two virtual
    threads. Useful where an extent has few divisors and the whole extent does not fit (e.g. 53
    output rows: the divisor tilings have 1 or 53 rows).

    Raises
    ------
    ScheduleError
        If not even a 1 x 1 tiling of one channel block fits (the buffer and excess named).
        Also if a spatial tile reads only padding even with the whole output in one tile.
    """
    oh, ow = wl.out_height, wl.out_width
    padded = any(p > 0 for p in wl.pads)
    co_divs = [d for d in range(1, wl.co_blocks + 1) if wl.co_blocks % d == 0]
    ci_divs = [d for d in range(1, wl.ci_blocks + 1) if wl.ci_blocks % d == 0]
    best, best_key = None, None
    for th, tw, tco, tci, ocn, hn in product(range(1, oh + 1), range(1, ow + 1), co_divs, ci_divs, (1, 2), (1, 2)):
        h_tiles, w_tiles = _ceil_div(oh, th), _ceil_div(ow, tw)
        if ocn * hn > 2 or (wl.co_blocks // tco) % ocn or h_tiles % hn or wl.padding_only_tile(th, tw):
            continue
        t = Conv2DTiling(th, tw, tco, tci, ocn, hn)
        if not fits(env, conv2d_footprint(wl, t)):
            continue
        in_h, in_w = wl.window(th, tw)
        tiles = h_tiles * w_tiles * (wl.co_blocks // tco)
        steps = tiles * (wl.ci_blocks // tci)
        load = steps * tci * (in_h * in_w * env.INP_ELEM_BYTES + tco * wl.kh * wl.kw * env.WGT_ELEM_BYTES)
        insns = steps * (2 + (tci if padded else 1)) + tiles * (tco + 6)
        gemm = wl.n_blocks * h_tiles * th * w_tiles * tw * wl.co_blocks * wl.ci_blocks * wl.kh * wl.kw
        mem = load / 8 + 32 * insns
        key = (max(mem, gemm) if t.threads > 1 else mem + gemm, insns, -tw)
        if best_key is None or key < best_key:
            best, best_key = t, key
    if best is None:
        check_fits(env, conv2d_footprint(wl, Conv2DTiling(1, 1, 1, 1)), "conv2d_packed")
        check_windows(wl, Conv2DTiling(oh, ow, 1, 1), "conv2d_packed")
        raise ScheduleError(f"conv2d_packed: no tiling of {wl!r} fits this configuration")
    return best
