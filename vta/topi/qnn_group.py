"""Grouped and depthwise convolutions as the accelerator runs them: groups of whole channel blocks.

The GEMM core multiplies a ``BLOCK_OUT x BLOCK_IN`` weight block per micro-op whatever its
entries, so a group narrower than a block (a depthwise layer has one channel per group) costs a
whole block anyway. :func:`accel_grouping` therefore gathers ``k`` consecutive groups into one
accelerator group, the fewest whose input and output channels fill whole blocks, and
:func:`expand_group_weight` gives that group a block-diagonal weight (each original group's
weights on the diagonal, zeros elsewhere). A depthwise layer of ``C`` channels becomes ``C /
BLOCK`` groups of one block with a diagonal ``BLOCK x BLOCK`` weight per tap: one GEMM micro-op
per output pixel, tap and channel block, the cost of a dense convolution of one block
(``benchmarks/depthwise_schemes.py`` compares it with the other schemes on the cycle model).

When the groups do not divide evenly into accelerator groups, zero groups are appended, as long
as the padded channel counts are the block-rounded ones every neighbour in the packed layout
uses; otherwise the layer is one dense convolution with a block-diagonal weight (``k`` = all
groups).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["AccelGrouping", "accel_grouping", "expand_group_weight"]


def _round_up(n: int, b: int) -> int:
    return -(-n // b) * b


@dataclass(frozen=True)
class AccelGrouping:
    """How a grouped convolution runs: ``groups`` accelerator groups of ``per_group`` original
    groups each, over ``in_channels``/``out_channels`` channels (the original ones plus zero
    groups)."""

    groups: int
    per_group: int
    in_channels: int
    out_channels: int


def accel_grouping(in_channels: int, out_channels: int, groups: int, block_in: int,
                   block_out: int) -> AccelGrouping:
    """The accelerator groups of a convolution with ``groups`` groups (module docstring).

    Raises
    ------
    ValueError
        If ``groups`` does not divide the channel counts.
    """
    if groups <= 0 or in_channels % groups or out_channels % groups:
        raise ValueError(f"groups={groups!r} must divide {in_channels} input and {out_channels} output channels")
    ci, co = in_channels // groups, out_channels // groups
    k = math.lcm(block_in // math.gcd(block_in, ci), block_out // math.gcd(block_out, co))
    if groups % k == 0:
        return AccelGrouping(groups // k, k, in_channels, out_channels)
    padded = _round_up(groups, k)
    if padded * ci == _round_up(in_channels, block_in) and padded * co == _round_up(out_channels, block_out):
        return AccelGrouping(padded // k, k, padded * ci, padded * co)
    return AccelGrouping(1, groups, in_channels, out_channels)


def expand_group_weight(weight: np.ndarray, groups: int, grouping: AccelGrouping) -> np.ndarray:
    """The ``(grouping.out_channels, in_channels per accelerator group, KH, KW)`` weight: each
    original group's ``(co, ci, KH, KW)`` block on the diagonal of its accelerator group."""
    w = np.asarray(weight)
    cout, ci, kh, kw = w.shape
    co = cout // groups
    k = grouping.per_group
    out = np.zeros((grouping.out_channels, k * ci, kh, kw), dtype=w.dtype)
    for g in range(groups):
        local = g % k
        out[g * co:(g + 1) * co, local * ci:(local + 1) * ci] = w[g * co:(g + 1) * co]
    return out
