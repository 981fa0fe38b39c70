"""AnnotateAccumulatorBits: every requantization of a layer gets the layer's accumulator bound.

``qnn.requantize`` after ``qnn.conv2d``/``qnn.dense`` (and an optional ``nn.bias_add``) with
constant weights gets ``acc_bits``: the bits of ``255 * sum|w| + |bias|``, the largest
accumulator any input can give. The fixed-point requantization takes a pre-shift exactly when
that bound passes 23 bits, on the accelerator (the fusion uses the same bound) and on the host,
so a layer gives the same bits wherever it is placed. With the ``wide`` requantisation mode those
``qnn.requantize`` nodes and every ``qnn.mul`` also get ``requant_mode="wide"``, which the host
kernels follow as the fusion does.
"""

from __future__ import annotations

import numpy as np

from ..ir import PARAM, Graph, Node

__all__ = ["AnnotateAccumulatorBits", "worst_accumulator_bits"]


def worst_accumulator_bits(weight: np.ndarray, kernel_zero_point: int, bias: np.ndarray | None) -> int:
    """Bits of the largest ``|sum((x - z_x) * (w - z_w)) + bias|`` over 8-bit inputs (``|x - z_x| <= 255``)."""
    w = np.asarray(weight, dtype=np.int64) - int(kernel_zero_point)
    total = np.abs(w).reshape(w.shape[0], -1).sum(axis=1) * 255
    if bias is not None:
        total = total + np.abs(np.asarray(bias, dtype=np.int64))
    return min(max(int(total.max(initial=1)).bit_length(), 1), 32)


class AnnotateAccumulatorBits:
    """Set ``acc_bits`` on the requantizations of conv/dense layers (module docstring)."""

    name = "AnnotateAccumulatorBits"

    def __init__(self, requant_mode: str = "fixed"):
        self.requant_mode = requant_mode

    def __call__(self, graph: Graph) -> Graph:
        nodes: list[Node] = []
        changed = False
        wide = {"requant_mode": "wide"} if self.requant_mode == "wide" else {}
        for node in graph.nodes:
            bits = self._bits(graph, node) if node.op == "qnn.requantize" else None
            attrs = dict(node.attrs, acc_bits=bits, **wide) if bits is not None else (
                dict(node.attrs, **wide) if node.op == "qnn.mul" else node.attrs)
            if attrs != node.attrs:
                node = node.with_(attrs=attrs)
                changed = True
            nodes.append(node)
        return graph.replace(nodes=nodes) if changed else graph

    @staticmethod
    def _bits(graph: Graph, node: Node) -> int | None:
        src = graph.producer(node.inputs[0])
        bias = None
        if src is not None and src.op == "nn.bias_add" and src.inputs[1].kind == PARAM:
            bias = graph.params[src.inputs[1].name]
            src = graph.producer(src.inputs[0])
        if src is None or src.op not in ("qnn.conv2d", "qnn.dense") or src.inputs[1].kind != PARAM:
            return None
        return worst_accumulator_bits(graph.params[src.inputs[1].name], src.attrs["kernel_zero_point"], bias)
