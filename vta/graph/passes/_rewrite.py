"""A small helper for passes: rebuild a graph node by node with values substituted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..opdefs import infer_type
from ..ir import PARAM, Graph, Node, TensorType, Value

__all__ = ["Rewriter"]


class Rewriter:
    """Builds the new graph of a pass.

    ``map(value)`` gives the new value standing for an old one (itself unless replaced);
    ``emit`` appends a node with its type inferred; ``keep`` re-emits an old node on the mapped
    inputs; ``const`` adds a constant; ``finish`` returns the new graph.
    """

    def __init__(self, graph: Graph):
        self.graph = graph
        self.nodes: list[Node] = []
        self.params: dict[str, np.ndarray] = dict(graph.params)
        self.subst: dict[str, Value] = {}
        self.names: set[str] = set(graph.values)

    def map(self, v: Value) -> Value:
        """The new value for ``v``."""
        return self.subst.get(v.name, v)

    def fresh(self, base: str) -> str:
        """A name used nowhere yet, ``base`` itself if free."""
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def emit(self, op: str, inputs: list[Value], attrs: Mapping[str, Any], name: str) -> Value:
        """Append ``op`` named ``name`` (unique in the new graph; the Graph checks); return its output."""
        self.names.add(name)
        out = infer_type(op, inputs, attrs, name)
        node = Node(op, tuple(inputs), dict(attrs), name, out)
        self.nodes.append(node)
        return node.output

    def keep(self, node: Node) -> Value:
        """Re-emit ``node`` on the mapped inputs (its type re-inferred; the node's own quantization
        labels kept when shape and dtype agree) under its own name."""
        inputs = [self.map(v) for v in node.inputs]
        if all(a is b or a == b for a, b in zip(inputs, node.inputs, strict=True)):
            self.nodes.append(node)
            return node.output
        out = self.emit(node.op, inputs, node.attrs, node.name)
        t = node.output_type
        if out.type != t and out.type.shape == t.shape and out.type.dtype == t.dtype:
            # the same values under the node's own quantization labels (a relabelling reshape
            # keeps the scale it was given, not its new input's)
            self.nodes[-1] = self.nodes[-1].with_(output_type=t)
            out = self.nodes[-1].output
        if out.name != node.name:
            self.subst[node.name] = out
        return out

    def const(self, name: str, data: np.ndarray, like: TensorType | None = None) -> Value:
        """A new constant (``like`` gives the quantisation parameters to keep)."""
        data = np.ascontiguousarray(data)
        t = TensorType(data.shape, str(data.dtype))
        if like is not None:
            t = t.with_(scale=like.scale, zero_point=like.zero_point, axis=like.axis)
        self.params[name] = data
        return Value(name, t, PARAM)

    def finish(self, outputs: list[Value] | None = None) -> Graph:
        """The new graph (outputs mapped unless given), without nodes nothing reads."""
        outputs = [self.map(v) for v in self.graph.outputs] if outputs is None else outputs
        live = {v.name for v in outputs}
        kept = []
        for node in reversed(self.nodes):
            if node.name in live:
                kept.append(node)
                live.update(v.name for v in node.inputs)
        return Graph(self.graph.inputs, outputs, kept[::-1], self.params)
