"""``tvm.relay``: build a network for deployment (``relay.build``), import models (``relay.frontend``).

Upstream deployment code ports by changing its imports::

    from vta.tvm import relay
    mod, params = relay.frontend.from_onnx(onnx_model, shape)     # mod is a vta.graph.Graph
    with vta.build_config():
        lib = relay.build(mod, target=tvm.target.Target(env.target, host=env.target_host), params=params)
    lib.export_library("net.so")
"""

from __future__ import annotations

from typing import Any, Mapping

from ...graph.build_module import build as _graph_build
from ...graph.factory import GraphExecutorFactoryModule
from ...graph.params import load_param_dict, save_param_dict
from .._missing import missing
from . import frontend, nn

__all__ = ["build", "frontend", "nn", "save_param_dict", "load_param_dict", "GraphExecutorFactoryModule"]


def build(ir_mod: Any, target: Any = None, target_host: Any = None, executor: Any = None, runtime: Any = None,
          workspace_memory_pools: Any = None, params: Mapping[str, Any] | None = None,
          mod_name: str = "default") -> GraphExecutorFactoryModule:
    """``relay.build``: compile a network into an executor factory.

    Parameters
    ----------
    ir_mod : vta.graph.Graph
        The network (what ``relay.frontend.from_onnx`` returns first, or a graph built in code).
    target : Target or str, optional
        ``Target(env.target, host=env.target_host)``, ``env.target``, ``"ext_dev"`` or None.
    target_host : Target or str, optional
        Accepted for compatibility; host code is C compiled by the system compiler.
    executor, runtime, workspace_memory_pools : None
        Only TVM's defaults (graph executor, C++ runtime) exist here; pass None.
    params : mapping of str to array, optional
        Weights by name.
    mod_name : str
        Name of the executor-creating function (``lib["default"]``).

    Returns
    -------
    GraphExecutorFactoryModule

    Raises
    ------
    TypeError
        If ``ir_mod`` is not a :class:`vta.graph.Graph`.
    ValueError
        If an executor, runtime or memory pools are given, or the target is not the accelerator.
    GraphError, UnsupportedOperatorError, ScheduleError, BuildError
        As :func:`vta.graph.build`.
    """
    from ...graph.ir import Graph

    del target_host
    if not isinstance(ir_mod, Graph):
        raise TypeError(f"relay.build takes a vta.graph.Graph (from relay.frontend.from_onnx or GraphBuilder), "
                        f"got {type(ir_mod).__name__}")
    for name, value in (("executor", executor), ("runtime", runtime),
                        ("workspace_memory_pools", workspace_memory_pools)):
        if value is not None:
            raise ValueError(f"relay.build: {name}={value!r} is not supported; the graph executor is the only one")
    return _graph_build(ir_mod, params, target=_target(target), mod_name=mod_name)


def _target(target: Any) -> Any:
    """The accelerator target: None, or a string/Target whose kind is ext_dev (``env.target``)."""
    if target is None:
        return None
    if isinstance(target, dict):
        raise ValueError(f"relay.build: a dict of targets {target!r} is not supported; pass env.target")
    from ..target import Target

    kind = (target if isinstance(target, Target) else Target(target)).kind.name
    if kind != "ext_dev":
        raise ValueError(f"relay.build compiles for the VTA accelerator: target kind {kind!r} (from {target!r}) "
                         "is not accepted; use Target(env.target, host=env.target_host)")
    return target


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
