"""Multiply-accumulates per node and the share of them on the accelerator.

An accelerator node counts the MACs of the layer it fused (its ``macs`` attribute, set by the
fusion pass from the logical sizes, so channel padding does not inflate it; else its
registration's :attr:`~vta.graph.accel_ops.AccelOp.macs` of the spec). A CPU node counts its
``macs`` attribute when it has one (e.g. a region run by another runtime), else the MACs of a
convolution or dense operator computed from its shapes.

This is the one count of the reports: :func:`vta.graph.lower` writes it into the graph JSON as
each node's ``macs`` attribute, and the run report (``python -m vta run``) and the debug
executor's profile take the share from that JSON through :func:`mac_share`.
"""

from __future__ import annotations

from typing import Any

from ..errors import GraphError
from .accel_ops import ACCEL_OPS
from .graph_json import GraphJSONError, load_graph_json
from .ir import Graph, Node

__all__ = ["mac_share", "node_macs"]

#: Graph operators whose MACs are computed from their shapes when they run on the CPU.
_CONV = ("qnn.conv2d", "nn.conv2d")
_DENSE = ("qnn.dense", "nn.dense")


def node_macs(node: Node) -> int:
    """The multiply-accumulates of one node (0 for operators without any)."""
    macs = node.attrs.get("macs")
    if macs is not None:
        return int(macs)
    op = ACCEL_OPS.get(node.op)
    if op is not None:
        return int(op.macs(node.attrs["spec"]))
    if node.op in _CONV:
        w = node.inputs[1].type.shape
        return node.output_type.size * w[1] * w[2] * w[3]
    if node.op in _DENSE:
        return node.output_type.size * node.inputs[1].type.shape[1]
    return 0


def mac_share(graph: Any) -> dict[str, Any]:
    """The MACs on the accelerator and on the CPU of a placed graph.

    Parameters
    ----------
    graph : Graph, LoweredGraph or str
        A graph after the pass pipeline (:func:`vta.graph.optimize`), every node with its
        ``device``, or what :func:`vta.graph.lower` returns, or the graph JSON it wrote (each
        node's ``device`` and ``macs`` attributes, the counts of :func:`node_macs`).

    Returns
    -------
    dict
        ``vta_macs`` and ``cpu_macs`` (int), ``share`` (float: ``vta_macs`` over the total, 0.0
        when the graph has no MACs).

    Raises
    ------
    TypeError
        If ``graph`` is neither a Graph, a lowered graph nor a graph JSON string.
    GraphError
        If ``graph`` is a string but not a graph JSON.
    """
    if isinstance(graph, str):
        counts = _json_counts(graph)
    else:
        graph = getattr(graph, "graph", graph)
        if not isinstance(graph, Graph):
            raise TypeError(f"mac_share needs a Graph, a LoweredGraph or a graph JSON string, "
                            f"got {type(graph).__name__!r}")
        counts = ((node.attrs.get("device", "vta" if node.op in ACCEL_OPS else "cpu"), node_macs(node))
                  for node in graph.nodes)
    vta = cpu = 0
    for device, m in counts:
        if device == "vta":
            vta += m
        else:
            cpu += m
    total = vta + cpu
    return {"vta_macs": vta, "cpu_macs": cpu, "share": vta / total if total else 0.0}


def _json_counts(graph_json: str):
    """(device, MACs) of every operator node of a graph JSON written by :func:`vta.graph.lower`."""
    try:
        nodes = load_graph_json(graph_json)["nodes"]
    except GraphJSONError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise GraphError(f"mac_share needs a graph JSON with a 'nodes' list, got {graph_json[:60]!r} "
                         f"({type(exc).__name__}: {exc})") from exc
    for node in nodes:
        if node.get("op") != "null":
            attrs = node.get("attrs") or {}
            yield attrs.get("device", "cpu"), int(attrs.get("macs", 0))
