"""Whole networks: the graph IR, its passes, the host kernels, lowering and the executor.

``GraphBuilder`` builds a :class:`Graph`; :func:`compile` runs the pass pipeline and lowers the
accelerator nodes, giving TVM's graph JSON, a library module and the parameters that
:class:`vta.graph.executor.GraphModule` runs (not imported here: the executor loads
``vta.graph.params`` lazily, which must not import the package back).
"""

from .builder import GraphBuilder
from .ir import Graph, Node, TensorType, Value
from .printer import astext
from .lower import compile, lower
from .pipeline import optimize

__all__ = ["Graph", "GraphBuilder", "Node", "TensorType", "Value", "astext", "compile", "lower", "optimize"]
