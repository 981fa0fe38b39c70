"""Whole networks: the graph IR, its passes, the host kernels, lowering, the executor and deployment.

``GraphBuilder`` builds a :class:`Graph`; :func:`compile` runs the pass pipeline and lowers the
accelerator nodes, giving TVM's graph JSON, a library module and the parameters that
:class:`vta.graph.executor.GraphModule` runs. :func:`build` wraps it into an executor factory
(TVM's ``relay.build`` result: ``export_library``, ``["default"](dev)``), and the parameters
travel in TVM's byte layout (:func:`save_param_dict`, :func:`load_param_dict`). The executor and
the debug executor are imported from their modules (``vta.graph.executor``,
``vta.graph.debug_executor``). :func:`mac_share` gives the multiply-accumulates on the
accelerator and on the CPU of a placed graph.
"""

from .builder import GraphBuilder
from .ir import Graph, Node, TensorType, Value
from .printer import astext
from .lower import compile, lower
from .pipeline import optimize
from .build_module import build
from .factory import GraphExecutorFactoryModule
from .params import load_param_dict, save_param_dict
from .macs import mac_share

__all__ = ["Graph", "GraphBuilder", "GraphExecutorFactoryModule", "Node", "TensorType", "Value", "astext", "build",
           "compile", "load_param_dict", "lower", "mac_share", "optimize", "save_param_dict"]
