"""``build``: a graph and its parameters to a deployable executor factory (TVM's ``relay.build``).

::

    lib = vta.graph.build(graph, params)            # GraphExecutorFactoryModule
    lib.export_library("net.so")
    m = GraphModule(lib["default"](ext_dev(0)))

The work is :func:`vta.graph.compile` (passes, placement, lowering of the accelerator
operators); this module only wraps its three products into the factory.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

from ..env import Environment
from .factory import GraphExecutorFactoryModule
from .lower import compile as graph_compile

__all__ = ["build"]


def build(graph: Any, params: Mapping[str, Any] | None = None, target: Any = None,
          env: Environment | None = None, mod_name: str = "default") -> GraphExecutorFactoryModule:
    """Compile ``graph`` for the accelerator and the host; return TVM's executor factory.

    Parameters
    ----------
    graph : vta.graph.Graph
        The network (built with :class:`vta.graph.GraphBuilder` or imported from ONNX).
    params : mapping of str to array, optional
        Constant inputs (weights, biases) by name; merged over the graph's own ``params``.
    target : str or Target, optional
        ``env.target`` / ``Target("ext_dev", host=env.target_host)`` (default: the accelerator).
    env : Environment, optional
        The configuration (default: the current one).
    mod_name : str
        Name of the executor-creating function (``lib[mod_name](dev)``).

    Returns
    -------
    GraphExecutorFactoryModule
        ``get_graph_json()``, ``get_lib()``, ``get_params()``, ``export_library(path)``,
        ``["default"](dev)``; ``build_seconds`` holds the compile time.

    Raises
    ------
    GraphError
        If the graph is malformed (inconsistent shapes or dtypes, unknown values).
    UnsupportedOperatorError
        If no device supports an operator (the message names the node and the operator).
    ScheduleError, BuildError
        If an accelerator operator cannot be lowered or compiled.
    """
    start = time.perf_counter()
    graph_json, lib, lowered_params = graph_compile(graph, params, target=target, env=env)
    factory = GraphExecutorFactoryModule(graph_json, lib, lowered_params, mod_name)
    factory.build_seconds = time.perf_counter() - start
    return factory
