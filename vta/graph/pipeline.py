"""The graph pass pipeline: one ordered list, one comment per pass (compare ``vta/build.py``).

:func:`optimize` runs it; :func:`vta.graph.compile` runs it and lowers the result.
"""

from __future__ import annotations

from typing import Any

from ..env import Environment, get_env
from .ir import Graph
from .passes import FoldConstants, FuseAccelerator, PackLayout, PadChannels, PlaceDevices

__all__ = ["graph_passes", "optimize"]


def graph_passes(env: Environment, requant_mode: str = "fixed") -> list[Any]:
    """The ordered passes for ``env``.

    Parameters
    ----------
    env : Environment
    requant_mode : {"fixed", "pow2"}
        How requantization multipliers are represented (``pow2``: upstream's shift-only scheme).
    """
    fuse = FuseAccelerator(env, requant_mode)
    return [
        FoldConstants(),                   # nodes of constants only -> constants (e.g. quantized weights)
        fuse,                              # conv/dense+bias+requantize[+add][+relu/clip], add, max_pool -> vta.*;
                                           #   -z_in*sum(w) into the bias; uint8 -> int8 domain at region borders
        PadChannels(env),                  # channels up to BLOCK_IN/BLOCK_OUT: zero weights, logical count kept
        PackLayout(env),                   # NCHWnc inside accelerator regions, layout_transform at their borders
        PlaceDevices(env, fuse.reasons),   # device ("vta"/"cpu") and the reason, per node
    ]


def optimize(graph: Graph, env: Environment | None = None, requant_mode: str = "fixed") -> Graph:
    """Run :func:`graph_passes` over ``graph``.

    Raises
    ------
    GraphError
        If a pass meets an inconsistent graph.
    UnsupportedOperatorError
        If a node runs neither on the accelerator nor on the host.
    """
    env = env or get_env()
    for p in graph_passes(env, requant_mode):
        graph = p(graph)
    return graph
