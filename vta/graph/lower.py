"""``vta.graph.compile``: the pass pipeline, the accelerator functions, TVM's graph JSON.

The JSON is TVM's graph executor format: ``nodes`` (``op`` ``"null"`` for inputs and constants,
``"tvm_op"`` for operators, each with ``name``, ``inputs`` as ``[node, index, version]`` and
string ``attrs``), ``arg_nodes``, ``node_row_ptr``, ``heads`` and the graph ``attrs``
``shape``/``dltype``/``storage_id``. Accelerator nodes name a function of the library and take
its arguments in the ArgLayout order (packed tensors; the output is the node's entry). CPU nodes
have ``func_name`` ``"__host__"``, ``host_kernel`` (a key of :data:`vta.graph.host.KERNELS`) and
``host_attrs`` (JSON). Every operator node also carries ``device``, ``reason``, ``op`` and
``layer`` (the source node).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..env import Environment, get_env
from ..errors import GraphError
from .accel import AcceleratorBuilder, node_arguments, out_view_shape
from .ir import INPUT, PARAM, Graph, Node, Value
from .macs import node_macs
from .pipeline import optimize

__all__ = ["HOST_FUNC", "LoweredGraph", "compile", "host_attrs_json", "lower"]

#: ``func_name`` of the nodes the executor runs with a host kernel.
HOST_FUNC = "__host__"
_PLACEMENT_KEYS = ("device", "reason")


@dataclass
class LoweredGraph:
    """What :func:`lower` produces: the optimised graph, the JSON, the library and the parameters."""

    graph: Graph
    graph_json: str
    lib: Any
    params: dict[str, np.ndarray]


def _jsonable(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (tuple, list)):
        return [_jsonable(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise GraphError(f"attribute value {v!r} cannot be written to the graph JSON")


def host_attrs_json(node: Node) -> str:
    """The attributes of a CPU node as the ``host_attrs`` JSON string."""
    return json.dumps({k: _jsonable(v) for k, v in node.attrs.items() if k not in _PLACEMENT_KEYS},
                      sort_keys=True)


def _check_target(target: Any) -> None:
    if target is None:
        return
    text = str(getattr(target, "kind", target))
    if not text.split()[0].startswith(("ext_dev", "vta", "llvm", "c")) and not hasattr(target, "host"):
        raise ValueError(f"vta.graph.compile compiles for the VTA target ('ext_dev'), got {target!r}")


def _bind(graph: Graph, params: Mapping[str, np.ndarray] | None) -> Graph:
    if not params:
        return graph
    merged = dict(graph.params)
    for name, arr in params.items():
        arr = np.asarray(arr.numpy() if hasattr(arr, "numpy") else arr)
        v = graph.values.get(name)
        if v is None or v.kind != PARAM:
            raise GraphError(f"params names {name!r}, which is not a constant of the graph")
        if arr.shape != v.type.shape or str(arr.dtype) != v.type.dtype:
            raise GraphError(f"params[{name!r}] is {arr.dtype}{list(arr.shape)} but the constant is typed {v.type}")
        merged[name] = arr
    return graph.replace(params=merged)


class _JsonWriter:
    def __init__(self) -> None:
        self.nodes: list[dict] = []
        self.entry: dict[str, int] = {}   # value name -> node index
        self.shapes: list[list[int]] = []
        self.dtypes: list[str] = []
        self.arg_nodes: list[int] = []

    def null(self, name: str, shape, dtype: str) -> int:
        if name in self.entry:
            return self.entry[name]
        idx = len(self.nodes)
        self.nodes.append({"op": "null", "name": name, "inputs": []})
        self.arg_nodes.append(idx)
        self.entry[name] = idx
        self.shapes.append([int(d) for d in shape])
        self.dtypes.append(str(dtype))
        return idx

    def op(self, name: str, inputs: list[int], attrs: dict, shape, dtype: str) -> int:
        idx = len(self.nodes)
        self.nodes.append({"op": "tvm_op", "name": name, "attrs": attrs,
                           "inputs": [[i, 0, 0] for i in inputs]})
        self.entry[name] = idx
        self.shapes.append([int(d) for d in shape])
        self.dtypes.append(str(dtype))
        return idx

    def storage_ids(self, heads: list[int]) -> list[int]:
        """A storage plan: an operator's result reuses the storage of an earlier result of the same
        shape and dtype whose last reader has run; inputs, parameters and outputs keep their own."""
        last_read: dict[int, int] = {}
        for i, node in enumerate(self.nodes):
            for j, _, _ in node["inputs"]:
                last_read[j] = i
        pinned = set(heads) | set(self.arg_nodes)
        free: dict[tuple, list[int]] = {}
        sids: list[int] = []
        count = 0
        for i, node in enumerate(self.nodes):
            key = (tuple(self.shapes[i]), self.dtypes[i])
            pool = free.get(key)
            if i not in pinned and pool:
                sids.append(pool.pop())
            else:
                sids.append(count)
                count += 1
            # the inputs whose last reader this is free their storage (after the output took one,
            # so an operator never writes over its own input)
            for j in dict.fromkeys(j for j, _, _ in node["inputs"]):
                if last_read.get(j) == i and j not in pinned:
                    free.setdefault((tuple(self.shapes[j]), self.dtypes[j]), []).append(sids[j])
        return sids

    def dump(self, heads: list[int]) -> str:
        n = len(self.nodes)
        return json.dumps({
            "nodes": self.nodes,
            "arg_nodes": self.arg_nodes,
            "node_row_ptr": list(range(n + 1)),
            "heads": [[h, 0, 0] for h in heads],
            "attrs": {
                "shape": ["list_shape", self.shapes],
                "dltype": ["list_str", self.dtypes],
                "storage_id": ["list_int", self.storage_ids(heads)],
            },
        })


def lower(graph: Graph, params: Mapping[str, np.ndarray] | None = None, env: Environment | None = None,
          requant_mode: str = "fixed", pad_limit: float | None = None,
          residual_rounding: str = "intermediate", fold_first_layer: bool = True) -> LoweredGraph:
    """Optimise ``graph`` and lower it: like :func:`compile`, also returning the optimised graph.

    Raises
    ------
    GraphError, UnsupportedOperatorError
        From the passes or a mismatch between the graph and a compiled function.
    ScheduleError, BuildError
        From the accelerator builders.
    """
    env = env or get_env()
    graph = optimize(_bind(graph, params), env, requant_mode, pad_limit, residual_rounding, fold_first_layer)
    builder = AcceleratorBuilder(env)
    builder.prebuild(n for n in graph.nodes if n.attrs.get("device") == "vta")
    w = _JsonWriter()
    out_params: dict[str, np.ndarray] = {}
    for v in graph.inputs:
        w.null(v.name, v.type.shape, v.type.dtype)

    def source(v: Value) -> int:
        if v.name in w.entry:
            return w.entry[v.name]
        if v.kind == PARAM:
            data = graph.params[v.name]
            out_params[v.name] = np.ascontiguousarray(data).reshape(data.shape)  # keeps a 0-d constant 0-d
            return w.null(v.name, v.type.shape, v.type.dtype)
        raise GraphError(f"value {v.name!r} is used before it is computed")

    for node in graph.nodes:
        common = {"num_outputs": "1", "flatten_data": "0", "device": node.attrs.get("device", "cpu"),
                  "reason": node.attrs.get("reason", ""), "op": node.op, "layer": node.name}
        if node.attrs.get("device") == "vta":
            compiled = builder.build(node)
            inputs = []
            for kind, item in node_arguments(node, compiled.layout, dict(graph.params)):
                if kind == "value":
                    inputs.append(source(item))
                else:
                    pname, arr = item
                    out_params[pname] = arr
                    inputs.append(w.null(pname, arr.shape, arr.dtype))
            attrs = {"func_name": compiled.func_name, "num_inputs": str(len(inputs)), **common}
            view = out_view_shape(node, compiled.layout)
            if view is not None:   # the function writes the output's memory in this shape
                attrs["func_out_shape"] = ",".join(str(d) for d in view)
        else:
            inputs = [source(v) for v in node.inputs]
            attrs = {"func_name": HOST_FUNC, "num_inputs": str(len(inputs)), "host_kernel": node.op,
                     "host_attrs": host_attrs_json(node), **common}
        macs = node_macs(node)
        if macs:  # the reports' one count of multiply-accumulates (vta.graph.mac_share)
            attrs["macs"] = str(macs)
        w.op(node.name, inputs, attrs, node.output_type.shape, node.output_type.dtype)
    heads = []
    for v in graph.outputs:
        if v.kind == INPUT:
            heads.append(w.entry[v.name])
        else:
            heads.append(source(v))
    return LoweredGraph(graph, w.dump(heads), builder.root_module(), out_params)


def compile(graph: Graph, params: Mapping[str, np.ndarray] | None = None, target: Any = None,
            env: Environment | None = None, requant_mode: str = "fixed",
            pad_limit: float | None = None,
            residual_rounding: str = "intermediate",
            fold_first_layer: bool = True) -> tuple[str, Any, dict[str, np.ndarray]]:
    """Compile a graph for VTA: passes, accelerator functions, graph JSON.

    Parameters
    ----------
    graph : Graph
    params : dict of str to ndarray, optional
        Values for constants of the graph (replace the graph's own; same shapes and dtypes).
    target : str or Target, optional
        Accepted for TVM compatibility (``env.target``); the code is always for ext_dev + C host.
    env : Environment, optional
        The configuration; the current one by default.
    requant_mode : {"fixed", "wide", "pow2"}
        Requantization multipliers in 15-bit fixed point (``fixed``, default), with up to the 24
        bits of onnxruntime's float32 multiplier where the layer's accumulator bound allows
        (``wide``: convolutions, dense layers and products; 10-25x fewer outputs that differ from
        onnxruntime's, one more ALU multiply per output: ``benchmarks/requant_exactness.py``), or
        powers of two only (upstream's shift-only scheme, for configurations without MUL). See
        :mod:`vta.topi.qnn`.
    pad_limit : float, optional
        Keep on the CPU a convolution/dense layer whose channel padding would multiply its MACs
        by more than this (e.g. ``2.0``: a 3-channel first layer); None (default): no limit.
    residual_rounding : {"intermediate", "direct"}
        A fused residual add first rounds and saturates the layer's own result to int8 as the
        unfused graph does (default; bit-identical to it and to onnxruntime's materialised
        tensor), or requantizes the accumulator straight to the add's output scale.
    fold_first_layer : bool
        Run a convolution with few input channels fed from the host with its kernel's columns
        folded into the channels (default; e.g. ResNet's 7x7 stem on 3 channels).

    Returns
    -------
    (graph_json, lib, params)
        TVM's graph JSON (str), the library module (the accelerator functions; None when every
        node runs on the CPU), and the parameters by name (packed for accelerator arguments).

    Raises
    ------
    GraphError
        If ``params`` does not fit the graph, or shapes/dtypes are inconsistent.
    UnsupportedOperatorError
        If a node runs neither on the accelerator nor on the host.
    ScheduleError, BuildError
        If an accelerator operator cannot be compiled.
    ValueError
        If ``target`` is not a VTA/host target.
    """
    _check_target(target)
    low = lower(graph, params, env, requant_mode, pad_limit, residual_rounding, fold_first_layer)
    return low.graph_json, low.lib, low.params
