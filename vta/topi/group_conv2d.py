"""Packed grouped 2-D convolution for VTA (upstream ``vta.top.group_conv2d_packed`` /
``schedule_group_conv2d_packed``).

Layouts: data ``(N/BATCH, CI/BLOCK_IN, H, W, BATCH, BLOCK_IN)``, kernel ``(CO/BLOCK_OUT,
CI_per_group/BLOCK_IN, KH, KW, BLOCK_OUT, BLOCK_IN)``, result ``(N/BATCH, CO/BLOCK_OUT, OH, OW,
BATCH, BLOCK_OUT)``. A group holds whole channel blocks (``CI/group`` a multiple of BLOCK_IN and
``CO/group`` of BLOCK_OUT): output block ``co`` reads the input blocks of its group,
``co // (CO_blocks/group) * CI_blocks_per_group + k``. The schedule is the packed conv2d's with
output-channel tiles that never straddle two groups, so each reduction step loads one window
of one group's input.
"""

from __future__ import annotations

from typing import Any

from ..env import get_env
from ..errors import ScheduleError
from ..te import compute, reduce_axis
from ..te import sum as te_sum
from ..te.schedule import Schedule
from ..te.tensor import ComputeOp, Tensor
from ._traverse import classify
from .conv2d import (
    _padding,
    _pair,
    check_tiling,
    check_windows,
    dilated_extent,
    epilogue_workload,
    schedule_conv_tiles,
)
from .pad import pad
from .tiling import (
    Conv2DTiling,
    Conv2DWorkload,
    check_fits,
    choose_conv2d_tiling,
    conv2d_footprint,
)

__all__ = ["GROUP_CONV2D_TAG", "group_conv2d_packed", "group_conv2d_workload", "schedule_group_conv2d_packed"]

#: Tag of the grouped convolution stage (as upstream).
GROUP_CONV2D_TAG = "packed_group_conv2d"


def _ints(shape) -> tuple:
    return tuple(int(s) for s in shape)


def group_conv2d_packed(data: Tensor, kernel: Tensor, strides: Any, padding: Any, dilation: Any, group: int,
                        out_dtype: str = "int32") -> Tensor:
    """The packed grouped convolution, tagged ``"packed_group_conv2d"``.

    ``res[b, co, i, j, bi, ci] = sum(pad(data)[b, g(co) * KB + k, i*sh + di*dh, j*sw + dj*dw, bi, kk]
    * kernel[co, k, di, dj, ci, kk])`` with ``KB = kernel.shape[1]`` input blocks per group and
    ``g(co) = co // (CO_blocks / group)``.

    Parameters
    ----------
    data, kernel : Tensor
        Packed as in the module docstring.
    strides, dilation : int or (int, int)
    padding : int, (pad_h, pad_w) or (top, left, bottom, right)
    group : int
        Number of groups; divides the input and output channel blocks.
    out_dtype : str
        The accumulator type (int32).

    Raises
    ------
    ValueError
        If the operands are not 6-D, ``group`` does not split the channel blocks as the kernel
        says, a stride or dilation is not positive, a padding negative, or the padded input is
        smaller than the dilated kernel.
    """
    ds, ks = _ints(data.shape), _ints(kernel.shape)
    if len(ds) != 6 or len(ks) != 6:
        raise ValueError(f"group_conv2d_packed: expected 6-D packed data and kernel, got {ds!r} and {ks!r}")
    if isinstance(group, bool) or not isinstance(group, int) or group <= 0:
        raise ValueError(f"group_conv2d_packed: group must be a positive int, got {group!r}")
    if ds[1] != group * ks[1] or ks[0] % group or ds[5] != ks[5]:
        raise ValueError(
            f"group_conv2d_packed: data {ds!r} and kernel {ks!r} do not form {group} groups of whole channel "
            f"blocks (need data.shape[1] == group * kernel.shape[1] and kernel.shape[0] % group == 0)"
        )
    sh, sw = _pair(strides, "strides")
    dh, dw = _pair(dilation, "dilation")
    pads = _padding(padding)
    pt, pl, pb, pr = pads
    if min(sh, sw, dh, dw) <= 0 or min(pads) < 0:
        raise ValueError(f"group_conv2d_packed: strides {(sh, sw)!r} and dilation {(dh, dw)!r} must be positive, "
                         f"padding {padding!r} non-negative")
    ekh, ekw = dilated_extent(ks[2], dh), dilated_extent(ks[3], dw)
    if ds[2] + pt + pb < ekh or ds[3] + pl + pr < ekw:
        raise ValueError(f"group_conv2d_packed: the padded input is smaller than the (dilated) kernel {(ekh, ekw)!r}")
    pad_data = pad(data, [0, 0, pt, pl, 0, 0], [0, 0, pb, pr, 0, 0], name="pad_data") if any(pads) else data
    oh = (ds[2] + pt + pb - ekh) // sh + 1
    ow = (ds[3] + pl + pr - ekw) // sw + 1
    co_per_group, ci_per_group = ks[0] // group, ks[1]
    d_i = reduce_axis((0, ks[2]), name="d_i")
    d_j = reduce_axis((0, ks[3]), name="d_j")
    k_o = reduce_axis((0, ks[1]), name="k_o")
    k_i = reduce_axis((0, ks[5]), name="k_i")
    attrs = {"strides": (sh, sw), "padding": pads, "dilation": (dh, dw), "groups": group}
    return compute(
        (ds[0], ks[0], oh, ow, ds[4], ks[4]),
        lambda b_o, c_o, i, j, b_i, c_i: te_sum(
            pad_data[b_o, (c_o // co_per_group) * ci_per_group + k_o, i * sh + d_i.var * dh, j * sw + d_j.var * dw,
                     b_i, k_i].astype(out_dtype)
            * kernel[c_o, k_o, d_i, d_j, c_i, k_i].astype(out_dtype),
            axis=[k_o, d_i, d_j, k_i]),
        name="res_conv", tag=GROUP_CONV2D_TAG, attrs=attrs)


def group_conv2d_workload(op: ComputeOp) -> tuple[Conv2DWorkload, int]:
    """``(workload of one group, groups)`` of a stage made by :func:`group_conv2d_packed`.

    Raises
    ------
    ScheduleError
        If the stage lacks the attributes :func:`group_conv2d_packed` records.
    """
    if not all(k in op.attrs for k in ("strides", "padding", "dilation", "groups")):
        raise ScheduleError(f"stage {op.name!r} is tagged {GROUP_CONV2D_TAG!r} but was not made by group_conv2d_packed")
    data, kernel = op.input_tensors
    ks = _ints(kernel.shape)
    pads = tuple(op.attrs["padding"])
    ds = _ints(data.shape) if not any(pads) else _ints(data.op.input_tensors[0].shape)
    groups = int(op.attrs["groups"])
    dh, dw = op.attrs["dilation"]
    wl = Conv2DWorkload(ds[0], ks[1], ks[0] // groups, ds[2], ds[3], dilated_extent(ks[2], dh),
                        dilated_extent(ks[3], dw), tuple(op.attrs["strides"]), pads)
    return wl, groups


def schedule_group_conv2d_packed(outs: Any, tiling: Conv2DTiling | None = None) -> Schedule:
    """Schedule a packed grouped convolution and its element-wise epilogue on VTA.

    As :func:`vta.topi.schedule_conv2d_packed`; the tiling is chosen for one group
    (``tile_co`` divides the output blocks of a group; ``tile_ci`` need not divide its input
    blocks: the last reduction chunk of a group reads zero-filled weights past the group's
    input blocks, so the input channels it multiplies there add nothing).

    Parameters
    ----------
    outs : Tensor or list of one Tensor
        The output (e.g. :func:`vta.topi.requantize` over :func:`group_conv2d_packed`).
    tiling : Conv2DTiling, optional
        Split factors; chosen by :func:`~vta.topi.tiling.choose_conv2d_tiling` when omitted.

    Raises
    ------
    ScheduleError
        If the graph is not a packed grouped convolution with element-wise stages after it, a
        tile exceeds its extent, ``tile_co`` does not divide the output blocks of one group, a
        spatial tile reads only padding, or the tiling overflows an on-chip buffer.
    """
    env = get_env()
    graph = classify(outs, GROUP_CONV2D_TAG, "schedule_group_conv2d_packed")
    wl, _ = group_conv2d_workload(graph.core)
    wl = epilogue_workload(graph, wl)
    if tiling is None:
        tiling = choose_conv2d_tiling(env, wl)
    # per group: tile_co divides the output blocks of one group, so no tile straddles two groups;
    # tile_ci may be ragged (the weights past a group's last input block are zero-filled)
    check_tiling(tiling, wl.out_height, wl.out_width, wl.co_blocks, wl.ci_blocks, "schedule_group_conv2d_packed",
                 ragged_ci=True)
    check_windows(wl, tiling, "schedule_group_conv2d_packed")
    check_fits(env, conv2d_footprint(wl, tiling), f"schedule_group_conv2d_packed with {tiling!r}")
    return schedule_conv_tiles(graph, tiling)
