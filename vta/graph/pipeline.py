"""The graph pass pipeline: one ordered list, one comment per pass (compare ``vta/build.py``).

:func:`optimize` runs it; :func:`vta.graph.compile` runs it and lowers the result.
"""

from __future__ import annotations

from typing import Any

from ..env import Environment, get_env
from .ir import Graph
from .passes import (
    AnnotateAccumulatorBits,
    FoldConstants,
    FuseAccelerator,
    PackLayout,
    PadChannels,
    PlaceDevices,
)

__all__ = ["graph_passes", "optimize"]


def graph_passes(env: Environment, requant_mode: str = "fixed", pad_limit: float | None = None,
                 residual_rounding: str = "intermediate", fold_first_layer: bool = True) -> list[Any]:
    """The ordered passes for ``env``.

    Parameters
    ----------
    env : Environment
    requant_mode : {"fixed", "wide", "pow2"}
        How requantization multipliers are represented (``fixed``, default: 15 bits; ``wide``: up
        to 24 bits where the accumulator bound allows; ``pow2``: upstream's shift-only scheme).
    pad_limit : float, optional
        A convolution or dense layer whose channel padding would multiply its MACs by more than
        this stays on the CPU (e.g. 2.0 keeps a 3-channel first layer on the host, as upstream's
        deployments did); None: no limit.
    residual_rounding : {"intermediate", "direct"}
        A fused residual add rounds and saturates the layer's own result first, as the unfused
        graph (``intermediate``, bit-identical to it), or requantizes straight to the add's scale.
    fold_first_layer : bool
        Fold the kernel width of a few-channel first layer into its channels (fewer GEMM steps).
    """
    fuse = FuseAccelerator(env, requant_mode, pad_limit, residual_rounding, fold_first_layer)
    return [
        FoldConstants(),                   # nodes of constants only -> constants (e.g. quantized weights)
        AnnotateAccumulatorBits(requant_mode),  # each layer's requantize gets its worst accumulator bound
        fuse,                              # conv (grouped too)/dense+bias+requantize[+add][+relu/clip], add, mul,
                                           #   max_pool -> vta.* (one registration each: accel_ops.py);
                                           #   -z_in*sum(w) into the bias; uint8 -> int8 domain at region borders
        PadChannels(env),                  # channels up to BLOCK_IN/BLOCK_OUT: zero weights, logical count kept
        PackLayout(env),                   # NCHWnc inside accelerator regions, layout_transform at their borders
        PlaceDevices(env, fuse.reasons),   # device ("vta"/"cpu") and the reason, per node
    ]


def optimize(graph: Graph, env: Environment | None = None, requant_mode: str = "fixed",
             pad_limit: float | None = None, residual_rounding: str = "intermediate",
             fold_first_layer: bool = True) -> Graph:
    """Run :func:`graph_passes` over ``graph`` (options as there).

    Raises
    ------
    GraphError
        If a pass meets an inconsistent graph.
    UnsupportedOperatorError
        If a node runs neither on the accelerator nor on the host.
    """
    env = env or get_env()
    for p in graph_passes(env, requant_mode, pad_limit, residual_rounding, fold_first_layer):
        graph = p(graph)
    return graph
