"""Tiles of the element-wise operators that run on the ALU alone (``vta.add``, ``vta.multiply``).

Both operands of such an operator are loaded into the accumulator, combined by a short ALU
program and stored; the whole packed tensor ``(N/BATCH, C/BLOCK, H, W, BATCH, BLOCK)`` goes
through the accumulator one tile at a time. A tile is ``tile_c`` channel blocks x ``tile_h``
rows x every column (:class:`AluTiling`). The default chooser (:func:`choose_alu_tiling`) keeps
one channel block per tile and takes the most rows whose two operand tiles fit the accumulator;
tuning (``add.vta`` / ``multiply.vta`` in :mod:`vta.autotvm.vta_ops`) searches both factors:
fewer, larger tiles need fewer instructions, smaller ones let the store of one tile overlap the
loads of the next.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..env import Environment
from ..errors import ScheduleError

__all__ = ["AluTiling", "AluWorkload", "alu_candidates", "alu_footprint", "choose_alu_tiling"]


@dataclass(frozen=True)
class AluWorkload:
    """An element-wise operator on the ALU: its packed sizes and its ALU program's length.

    Attributes
    ----------
    kind : str
        ``"add"`` or ``"multiply"``.
    n_blocks, c_blocks : int
        Batch and channel blocks.
    height, width : int
    rhs_broadcast : bool
        The right operand is ``(N, C, 1, 1)``, broadcast over the pixels.
    alu_stages : int
        ALU stages of the operator's program (it tells two requantisations apart).
    extra_tiles : int
        Full-size tiles the program keeps beside the two operands (a fitted sum rounded half to
        even keeps its quotient).
    vectors : int
        Accumulator entries of constant vectors the program builds on the ALU (a multiplier
        beyond the 16-bit immediate).
    """

    kind: str
    n_blocks: int
    c_blocks: int
    height: int
    width: int
    rhs_broadcast: bool = False
    alu_stages: int = 0
    extra_tiles: int = 0
    vectors: int = 0


@dataclass(frozen=True)
class AluTiling:
    """Channel blocks and rows per accumulator tile."""

    tile_c: int
    tile_h: int


def alu_footprint(wl: AluWorkload, t: AluTiling) -> int:
    """Accumulator entries of one tile: the left operand's tile and the right one's (one entry per
    channel block when it is broadcast), the program's extra tiles and its constant vectors."""
    tile = t.tile_c * t.tile_h * wl.width
    return tile * (1 + wl.extra_tiles) + (t.tile_c if wl.rhs_broadcast else tile) + wl.vectors


def _divisors(x: int) -> list[int]:
    return [d for d in range(1, x + 1) if x % d == 0]


def alu_candidates(env: Environment, wl: AluWorkload) -> list[AluTiling]:
    """Every tiling whose factors divide their axes and whose operand tiles fit the accumulator."""
    return [AluTiling(c, h) for c in _divisors(wl.c_blocks) for h in _divisors(wl.height)
            if alu_footprint(wl, AluTiling(c, h)) <= env.ACC_BUFF_DEPTH]


def choose_alu_tiling(env: Environment, wl: AluWorkload) -> AluTiling:
    """The default tiling: one channel block, the most rows (a divisor of the height) whose two
    full-size operand tiles, extra tiles and constant vectors fit the accumulator.

    Raises
    ------
    ScheduleError
        If one row of the operands overflows the accumulator.
    """
    cap, buffers = env.ACC_BUFF_DEPTH, 2 + wl.extra_tiles
    for rows in range(wl.height, 0, -1):
        if wl.height % rows == 0 and rows * wl.width * buffers + wl.vectors <= cap:
            return AluTiling(1, rows)
    raise ScheduleError(f"{wl.kind}: one row of {wl.width} entries x {buffers} tiles (+ {wl.vectors} entries "
                        f"of constant vectors) overflows the accumulator ({cap} entries)")
