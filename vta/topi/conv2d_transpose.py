"""Packed 2-D transposed convolution for VTA (upstream ``vta.top.conv2d_transpose_packed`` /
``schedule_conv2d_transpose_packed``).

Layouts (as upstream): data ``(N/BATCH, CI/BLOCK_IN, H, W, BATCH, BLOCK_IN)``; kernel
``(CO/BLOCK_OUT, CI/BLOCK_IN, KH, KW, BLOCK_OUT, BLOCK_IN)`` holding the *spatially flipped*
kernel: a TVM ``conv2d_transpose_nchw`` weight ``w`` of shape ``(CI, CO, KH, KW)`` is packed as
``flip(w, (2, 3)).transpose(1, 0, 2, 3)`` in OIHW blocks; result ``(N/BATCH, CO/BLOCK_OUT, OH,
OW, BATCH, BLOCK_OUT)`` with ``OH = (H - 1) * sh - pad_top - pad_bottom + KH + output_padding_h``.

The transposed convolution is the convolution (stride 1) of the flipped kernel over the input
dilated by the strides (``s - 1`` zeros between pixels) and padded by ``KH - 1 - pad``. The
dilated input is never built: output row ``o`` with tap ``dy`` reads the dilated row
``t = o + dy - (KH - 1 - pad_top)``, which is input row ``t / sh`` when ``sh`` divides ``t`` and
an inserted zero otherwise. The declaration reads the (zero-padded) undilated input at
``(t + c) // sh`` under the guard ``(t + c) % sh == 0`` (``c`` a multiple of ``sh`` that makes
the index non-negative); the schedule marks the GEMM ``conv2d_transpose_gemm`` instead of
tensorizing it, and the guarded-out taps issue no micro-op (InjectConv2DTransposeSkip), so the
accelerator does only the work of real input pixels. With unit strides the operator is a
plain padded convolution and the GEMM is tensorized.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Any

from ..env import Environment, get_env
from ..errors import ScheduleError
from ..te import compute, if_then_else, reduce_axis
from ..te import sum as te_sum
from ..te.schedule import Schedule
from ..te.tensor import ComputeOp, Tensor
from ..tir import nodes as n
from ._traverse import classify
from .conv2d import (
    _padding,
    _pair,
    check_tiling,
    epilogue_workload,
    fits,
    schedule_conv_tiles,
)
from .pad import pad
from .tiling import Conv2DTiling, Conv2DWorkload, check_fits, conv2d_footprint

__all__ = [
    "CONV2D_TRANSPOSE_TAG",
    "Conv2DTransposeGeometry",
    "choose_conv2d_transpose_tiling",
    "conv2d_transpose_footprint",
    "conv2d_transpose_packed",
    "schedule_conv2d_transpose_packed",
]

#: Tag of the transposed convolution stage (as upstream).
CONV2D_TRANSPOSE_TAG = "packed_conv2d_transpose"


def _ints(shape) -> tuple:
    return tuple(int(s) for s in shape)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class _Axis:
    """One spatial axis of a transposed convolution: output row ``o`` with tap ``d`` reads the
    padded-input row ``(o + d + shift) // stride`` when ``(o + d + shift) % stride == 0``."""

    size: int       # input extent
    kernel: int
    stride: int
    out: int        # output extent
    shift: int      # c: a multiple-of-stride offset minus the back padding, >= 0
    before: int     # zero rows padded before the input
    after: int      # zero rows padded after it

    @classmethod
    def make(cls, size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int, out_pad: int) -> _Axis:
        out = (size - 1) * stride - pad_lo - pad_hi + kernel + out_pad
        back = kernel - 1 - pad_lo                     # padding of the dilated input before it
        before = max(0, _ceil_div(back, stride))
        shift = before * stride - back
        # Rows any tile can reach: up to (out - 1 + kernel - 1 + shift) // stride, plus one for a
        # window whose extent is the largest over the tiles (bound inference uses that).
        rows = (out + kernel - 2 + shift) // stride + 2
        after = max(0, rows - size - before)
        return cls(size, kernel, stride, out, shift, before, after)


@dataclass(frozen=True)
class Conv2DTransposeGeometry:
    """Sizes of a packed transposed convolution (channels in blocks) for tiling."""

    n_blocks: int
    ci_blocks: int
    co_blocks: int
    out_height: int
    out_width: int
    kh: int
    kw: int
    stride: tuple
    shift: tuple
    bias: int = 0
    residuals: int = 0
    alu_stages: int = 0


def conv2d_transpose_packed(data: Tensor, kernel: Tensor, strides: Any, padding: Any, out_dtype: str = "int32",
                            output_padding: Any = (0, 0)) -> Tensor:
    """The packed transposed convolution, tagged ``"packed_conv2d_transpose"`` (module docstring).

    Parameters
    ----------
    data, kernel : Tensor
        Packed as in the module docstring (the kernel flipped, OIHW blocks).
    strides : int or (int, int)
    padding : int, (pad_h, pad_w) or (top, left, bottom, right)
        The padding of the transposed convolution (cropped from the full output).
    out_dtype : str
        The accumulator type (int32).
    output_padding : int or (int, int)
        Extra rows/columns at the bottom/right of the output, each smaller than the stride.

    Raises
    ------
    ValueError
        If the operands are not 6-D or disagree on the input channels, a stride is not positive,
        a padding is negative or reaches past the kernel (``pad >= K``), an output padding is
        not smaller than its stride, or the output would be empty.
    """
    ds, ks = _ints(data.shape), _ints(kernel.shape)
    if len(ds) != 6 or len(ks) != 6:
        raise ValueError(f"conv2d_transpose_packed: expected 6-D packed data and kernel, got {ds!r} and {ks!r}")
    if ds[1] != ks[1] or ds[5] != ks[5]:
        raise ValueError(f"conv2d_transpose_packed: data {ds!r} and kernel {ks!r} disagree on the input channels")
    sh, sw = _pair(strides, "strides")
    oph, opw = _pair(output_padding, "output_padding")
    pt, pl, pb, pr = _padding(padding)
    if sh <= 0 or sw <= 0 or min(pt, pl, pb, pr) < 0:
        raise ValueError(f"conv2d_transpose_packed: strides {(sh, sw)!r} must be positive, padding {padding!r} "
                         "non-negative")
    if max(pt, pb) >= ks[2] or max(pl, pr) >= ks[3]:
        raise ValueError(f"conv2d_transpose_packed: padding {padding!r} must be smaller than the kernel {ks[2:4]!r}")
    if not (0 <= oph < sh and 0 <= opw < sw):
        raise ValueError(f"conv2d_transpose_packed: output_padding {(oph, opw)!r} must be smaller than the strides")
    ay = _Axis.make(ds[2], ks[2], sh, pt, pb, oph)
    ax = _Axis.make(ds[3], ks[3], sw, pl, pr, opw)
    if ay.out <= 0 or ax.out <= 0:
        raise ValueError(f"conv2d_transpose_packed: the output {(ay.out, ax.out)!r} is empty")
    padded = pad(data, [0, 0, ay.before, ax.before, 0, 0], [0, 0, ay.after, ax.after, 0, 0], name="pad_data") \
        if (ay.before, ay.after, ax.before, ax.after) != (0, 0, 0, 0) else data
    d_c = reduce_axis((0, ks[1]), name="d_c")
    d_h = reduce_axis((0, ks[2]), name="d_h")
    d_w = reduce_axis((0, ks[3]), name="d_w")
    d_ci = reduce_axis((0, ks[5]), name="d_ci")
    zero = n.const(0, out_dtype)

    def body(b_o, c_o, i, j, b_i, c_i):
        y = i + d_h.var + ay.shift
        x = j + d_w.var + ax.shift
        value = padded[b_o, d_c, y // sh if sh > 1 else y, x // sw if sw > 1 else x, b_i, d_ci].astype(out_dtype)
        conds = ([(y % sh).equal(0)] if sh > 1 else []) + ([(x % sw).equal(0)] if sw > 1 else [])
        if conds:
            cond = conds[0] if len(conds) == 1 else n.And(conds[0], conds[1])
            value = if_then_else(cond, value, zero)
        return te_sum(value * kernel[c_o, d_c, d_h, d_w, c_i, d_ci].astype(out_dtype), axis=[d_c, d_h, d_w, d_ci])

    attrs = {"strides": (sh, sw), "shift": (ay.shift, ax.shift), "output_padding": (oph, opw),
             "padding": (pt, pl, pb, pr)}
    return compute((ds[0], ks[0], ay.out, ax.out, ds[4], ks[4]), body, name="res_conv", tag=CONV2D_TRANSPOSE_TAG,
                   attrs=attrs)


def _geometry(op: ComputeOp) -> Conv2DTransposeGeometry:
    if not all(k in op.attrs for k in ("strides", "shift")):
        raise ScheduleError(
            f"stage {op.name!r} is tagged {CONV2D_TRANSPOSE_TAG!r} but was not made by conv2d_transpose_packed"
        )
    _data, kernel = op.input_tensors
    ks = _ints(kernel.shape)
    os_ = _ints(op.output(0).shape)
    return Conv2DTransposeGeometry(os_[0], ks[1], ks[0], os_[2], os_[3], ks[2], ks[3], tuple(op.attrs["strides"]),
                                   tuple(op.attrs["shift"]))


def _window(out_tile: int, kernel: int, stride: int, shift: int, out: int) -> int:
    """Largest number of input rows one tile of ``out_tile`` output rows reads."""
    most = 0
    for start in range(0, out, out_tile):
        lo = (start + shift) // stride
        hi = (start + out_tile - 1 + kernel - 1 + shift) // stride
        most = max(most, hi - lo + 1)
    return most


def _taps(kernel: int, stride: int) -> int:
    """Most real (non-inserted) taps one output position meets along an axis."""
    return _ceil_div(kernel, stride)


def conv2d_transpose_footprint(g: Conv2DTransposeGeometry, t: Conv2DTiling) -> dict:
    """SRAM entries (inp, wgt, acc) and uops a tiling of a transposed convolution needs.

    The input window is counted in undilated rows; with strides > 1 the GEMM micro-ops are one
    per real tap (guarded pushes keep no hardware loop), counted at the most taps a position
    can meet; the accumulator and ALU parts are the convolution's.
    """
    in_h = _window(t.tile_h, g.kh, g.stride[0], g.shift[0], g.out_height)
    in_w = _window(t.tile_w, g.kw, g.stride[1], g.shift[1], g.out_width)
    stand_in = Conv2DWorkload(g.n_blocks, g.ci_blocks, g.co_blocks, g.out_height + g.kh - 1, g.out_width + g.kw - 1,
                              g.kh, g.kw, (1, 1), (0, 0), g.bias, g.residuals, g.alu_stages)
    fp = dict(conv2d_footprint(stand_in, t))
    fp["inp"] = t.threads * t.tile_ci * in_h * in_w
    if g.stride != (1, 1):
        guarded = t.tile_co * t.tile_h * t.tile_w * t.tile_ci * _taps(g.kh, g.stride[0]) * _taps(g.kw, g.stride[1])
        # the convolution's GEMM kernel (two loops folded) replaced by one uop per real tap
        fp["uop"] += t.threads * (guarded - _folded_gemm(t, g))
    return fp


def _folded_gemm(t: Conv2DTiling, g: Conv2DTransposeGeometry) -> int:
    live = [e for e in (t.tile_co, t.tile_h, t.tile_ci, g.kh, g.kw, t.tile_w) if e > 1]
    total = 1
    for e in live[2:]:
        total *= e
    return total


def _divisors(x: int) -> list[int]:
    return [d for d in range(1, x + 1) if x % d == 0]


def _spatial_tiles(extent: int, stride: int) -> list[int]:
    """Tile sizes along an output axis: multiples of the stride (so the inserted-zero pattern is
    the same in every tile and the GEMM kernel does not depend on the tile), possibly ragged,
    and the whole extent."""
    return sorted(set(range(stride, extent + 1, stride)) | {extent})


def _check_stride_multiples(t: Conv2DTiling, g: Conv2DTransposeGeometry) -> None:
    for name, factor, extent, stride in (("tile_h", t.tile_h, g.out_height, g.stride[0]),
                                         ("tile_w", t.tile_w, g.out_width, g.stride[1])):
        if factor < extent and factor % stride:
            raise ScheduleError(
                f"schedule_conv2d_transpose_packed: {name}={factor!r} must be a multiple of the stride {stride} "
                f"(or the whole extent {extent}): the skipped taps must follow the same pattern in every tile"
            )


def choose_conv2d_transpose_tiling(env: Environment, g: Conv2DTransposeGeometry) -> Conv2DTiling:
    """The fitting tiling with the fewest estimated cycles: bytes loaded / 8 plus 32 per memory
    and GEMM instruction plus one per GEMM micro-op of real taps (overlapped by two virtual
    threads, as the convolution's chooser assumes).

    Raises
    ------
    ScheduleError
        If not even 1 x 1 pixel tiles of one channel block fit (the overflowing buffer named).
    """
    best, best_key = None, None
    real_taps = _taps(g.kh, g.stride[0]) * _taps(g.kw, g.stride[1])
    for th, tw, tco, tci, ocn, hn in product(_spatial_tiles(g.out_height, g.stride[0]),
                                             _spatial_tiles(g.out_width, g.stride[1]), _divisors(g.co_blocks),
                                             _divisors(g.ci_blocks), (1, 2), (1, 2)):
        h_tiles, w_tiles = _ceil_div(g.out_height, th), _ceil_div(g.out_width, tw)
        if ocn * hn > 2 or (g.co_blocks // tco) % ocn or h_tiles % hn:
            continue
        t = Conv2DTiling(th, tw, tco, tci, ocn, hn)
        fp = conv2d_transpose_footprint(g, t)
        if not fits(env, fp):
            continue
        tiles = h_tiles * w_tiles * (g.co_blocks // tco)
        steps = tiles * (g.ci_blocks // tci)
        in_rows = _window(th, g.kh, g.stride[0], g.shift[0], g.out_height)
        in_cols = _window(tw, g.kw, g.stride[1], g.shift[1], g.out_width)
        load = steps * tci * (in_rows * in_cols * env.INP_ELEM_BYTES + tco * g.kh * g.kw * env.WGT_ELEM_BYTES)
        insns = steps * (2 + tci) + tiles * (tco + 6)
        # ragged tiles compute their overhang too
        gemm = g.n_blocks * h_tiles * th * w_tiles * tw * g.co_blocks * g.ci_blocks * real_taps
        mem = load / 8 + 32 * insns
        cost = max(mem, gemm) if t.threads > 1 else mem + gemm
        key = (cost, insns, -tw)
        if best_key is None or key < best_key:
            best, best_key = t, key
    if best is None:
        check_fits(env, conv2d_transpose_footprint(g, Conv2DTiling(1, 1, 1, 1)), "conv2d_transpose_packed")
        raise ScheduleError(f"conv2d_transpose_packed: no tiling of {g!r} fits this configuration")
    return best


def schedule_conv2d_transpose_packed(outs: Any, tiling: Conv2DTiling | None = None) -> Schedule:
    """Schedule a packed transposed convolution and its element-wise epilogue on VTA.

    The tiling and data flow are the packed conv2d's (:func:`vta.topi.schedule_conv_tiles`):
    per output tile the (padded, undilated) input window and the weights are loaded for each
    ``tile_ci`` step, the epilogue runs on the ALU and the tile is stored; with strides > 1
    the GEMM is marked ``conv2d_transpose_gemm`` so that taps on inserted zeros are skipped, and
    spatial tiles are multiples of the strides (the last one may be ragged: it computes on zero
    padding and its store is cropped).

    Parameters
    ----------
    outs : Tensor or list of one Tensor
        The output (e.g. :func:`vta.topi.requantize` over :func:`conv2d_transpose_packed`).
    tiling : Conv2DTiling, optional
        Split factors; chosen by :func:`choose_conv2d_transpose_tiling` when omitted.

    Raises
    ------
    ScheduleError
        If the graph is not a packed transposed convolution with element-wise stages after it, a
        channel factor does not divide its axis, a spatial tile is not a multiple of its stride
        (nor the whole extent), or the tiling overflows an on-chip buffer.
    """
    env = get_env()
    graph = classify(outs, CONV2D_TRANSPOSE_TAG, "schedule_conv2d_transpose_packed")
    g = _geometry(graph.core)
    ep = epilogue_workload(graph, Conv2DWorkload(g.n_blocks, g.ci_blocks, g.co_blocks, 1, 1, 1, 1, (1, 1), (0, 0)))
    g = Conv2DTransposeGeometry(**{**g.__dict__, "bias": ep.bias, "residuals": ep.residuals,
                                   "alu_stages": ep.alu_stages})
    if tiling is None:
        tiling = choose_conv2d_transpose_tiling(env, g)
    check_tiling(tiling, g.out_height, g.out_width, g.co_blocks, g.ci_blocks, "schedule_conv2d_transpose_packed")
    _check_stride_multiples(tiling, g)
    check_fits(env, conv2d_transpose_footprint(g, tiling), f"schedule_conv2d_transpose_packed with {tiling!r}")
    return schedule_conv_tiles(graph, tiling, skip_zero_taps=g.stride != (1, 1))
