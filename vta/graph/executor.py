"""``GraphModule``: runs TVM's graph JSON with accelerator functions and host kernels.

Accelerator nodes call their function of ``lib`` on arrays of ``dev`` (``ext_dev``); CPU nodes
(``func_name`` ``"__host__"``) run :func:`vta.graph.host.run_kernel` on NumPy arrays. A value
crossing between the two is copied once per run. Each run records, per operator node, the wall
time and (for accelerator nodes, when a simulator runs in this process) the change of the
device statistics: :meth:`GraphModule.node_records`.
"""

from __future__ import annotations

import time
import contextlib
import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import GraphError
from ..runtime.devices import Device, ext_dev
from ..runtime.ndarray import NDArray, empty
from .graph_json import load_graph_json, node_host_attrs
from .host import run_kernel

__all__ = ["HOST_FUNC", "GraphModule", "NodeRecord"]

#: Tokens of graph runs (process-wide, never reused): a host kernel that shares work between
#: the nodes of one run (an onnxruntime region's outputs) keys it on the run's token.
_RUN_TOKENS = itertools.count(1)

HOST_FUNC = "__host__"


@dataclass
class NodeRecord:
    """What one operator node did in the last run.

    Attributes
    ----------
    name, op, device, reason, func_name : str
    shape : tuple
        Output shape.
    inputs : list of tuple
        Input shapes.
    time_s : float
        Wall time of the node (host kernel, or the accelerator call).
    stats : dict
        Device statistics accumulated by the node (empty for CPU nodes or without a simulator).
    """

    name: str
    op: str
    device: str
    reason: str
    func_name: str
    shape: tuple
    dtype: str
    inputs: list
    time_s: float = 0.0
    stats: dict = field(default_factory=dict)


def _stats_delta(before: dict, after: dict) -> dict:
    out = {}
    for k, v in after.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = v - before.get(k, 0)
        elif isinstance(v, dict):
            out[k] = _stats_delta(before.get(k, {}) or {}, v)
    return out


class GraphModule:
    """Run a compiled graph (TVM's ``graph_executor.GraphModule`` methods).

    Parameters
    ----------
    graph_json : str
        TVM graph JSON made by :func:`vta.graph.compile`.
    lib : Module or None
        The library with the accelerator functions (None if the graph has none).
    dev : Device, optional
        The accelerator device (``ext_dev(0)`` by default; a remote one works too).
    keep_outputs : bool
        Give every node its own output memory (no storage shared between entries) so that
        :meth:`get_node_output` returns any node's value after a run (a debugging aid: it costs
        the memory of every intermediate value).

    Raises
    ------
    GraphError
        If the JSON is malformed or names a function ``lib`` does not have.
    """

    def __init__(self, graph_json: str, lib: Any = None, dev: Device | None = None, keep_outputs: bool = False):
        g = load_graph_json(graph_json)
        try:
            self._nodes = g["nodes"]
            self._arg_nodes = list(g["arg_nodes"])
            self._heads = [h[0] for h in g["heads"]]
            attrs = g["attrs"]
            self._shapes = [tuple(s) for s in attrs["shape"][1]]
            self._dtypes = list(attrs["dltype"][1])
            self._storage = list(attrs.get("storage_id", ["list_int", list(range(len(self._nodes)))])[1])
            row_ptr = g.get("node_row_ptr", list(range(len(self._nodes) + 1)))
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise GraphError(f"malformed graph JSON: {exc!r}") from exc
        if (row_ptr != list(range(len(self._nodes) + 1)) or len(self._shapes) != len(self._nodes)
                or len(self._storage) != len(self._nodes)):
            raise GraphError("graph JSON: only nodes with exactly one output are supported")
        if keep_outputs:
            self._storage = list(range(len(self._nodes)))
        self.keep_outputs = bool(keep_outputs)
        self.lib = lib
        self.dev = dev if dev is not None else ext_dev(0)
        self._index = {n["name"]: i for i, n in enumerate(self._nodes)}
        # graph inputs: null nodes that are not parameters (set by load/set_input with a name
        # that is a parameter they become parameters)
        self._input_names = [self._nodes[i]["name"] for i in self._arg_nodes]
        self._host: dict[int, np.ndarray] = {}
        self._device: dict[int, NDArray] = {}
        self._by_storage: dict[int, NDArray] = {}
        self._fresh_on_host: set[int] = set()
        self._funcs: dict[int, Any] = {}
        self._records: list[NodeRecord] = []
        self._host_attrs: dict[int, dict] = {}
        self._on_vta: set[int] = set()
        #: None, or a function of a node name returning a context manager entered around that
        #: node's accelerator call (the profiler labels the device's runs with it).
        self.layer_scope: Any = None
        #: None, or a function called with each operator node's index right after the node ran
        #: (a debugging aid: with ``keep_outputs`` it may read the value and replace it with
        #: :meth:`set_node_output` before later nodes read it).
        self.after_node: Any = None
        for i, n in enumerate(self._nodes):
            if n["op"] == "null":
                continue
            fname = n.get("attrs", {}).get("func_name", HOST_FUNC)
            if fname == HOST_FUNC:
                continue
            if lib is None:
                raise GraphError(f"node {n['name']!r} calls {fname!r} but no library was given")
            try:
                self._funcs[i] = lib.get_function(fname, query_imports=True)
            except AttributeError as exc:
                raise GraphError(f"node {n['name']!r}: the library has no function {fname!r}") from exc
            self._on_vta.add(i)
            self._on_vta.update(inp[0] for inp in n["inputs"])

    # ------------------------------------------------------------------ inputs and parameters
    def _entry(self, key: int | str) -> int:
        if isinstance(key, str):
            idx = self._index.get(key)
            if idx is None or self._nodes[idx]["op"] != "null":
                raise GraphError(f"the graph has no input {key!r}; inputs: {self._input_names}")
            return idx
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= key < len(self._arg_nodes):
                raise GraphError(f"input index {key} is out of range (0..{len(self._arg_nodes) - 1})")
            return self._arg_nodes[int(key)]
        raise TypeError(f"an input is named by str or int, got {key!r}")

    def _store_input(self, idx: int, value: Any) -> None:
        arr = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
        shape, dtype = self._shapes[idx], self._dtypes[idx]
        if tuple(arr.shape) != shape or str(arr.dtype) != dtype:
            raise GraphError(f"input {self._nodes[idx]['name']!r} takes {dtype}{list(shape)}, "
                             f"got {arr.dtype}{list(arr.shape)}")
        self._host[idx] = np.array(arr, copy=True)
        self._fresh_on_host.add(idx)

    def set_input(self, key: int | str | None = None, value: Any = None, **params: Any) -> None:
        """Set an input by name or index, and/or any inputs or parameters by keyword.

        Raises
        ------
        GraphError
            If a name or index is unknown or an array has the wrong shape or dtype.
        """
        if key is not None:
            self._store_input(self._entry(key), value)
        for name, v in params.items():
            self._store_input(self._entry(name), v)

    def load_params(self, param_bytes: bytes) -> None:
        """Set parameters from a blob of ``vta.graph.params.save_param_dict``.

        Raises
        ------
        GraphError
            If a parameter is unknown or has the wrong shape or dtype.
        """
        from .params import load_param_dict

        for name, v in load_param_dict(param_bytes).items():
            self._store_input(self._entry(name), v)

    def get_input(self, index: int | str) -> np.ndarray:
        """The current value of an input (by index or name), as a NumPy array.

        Raises
        ------
        GraphError
            If the input is unknown or was never set.
        """
        idx = self._entry(index)
        if idx not in self._host:
            raise GraphError(f"input {self._nodes[idx]['name']!r} has not been set")
        return self._host[idx].copy()

    def get_input_index(self, name: str) -> int:
        """The index of the input called ``name`` (-1 if none)."""
        idx = self._index.get(name)
        return self._arg_nodes.index(idx) if idx in self._arg_nodes else -1

    def get_num_inputs(self) -> int:
        """Number of inputs (graph inputs and parameters, as TVM counts them)."""
        return len(self._arg_nodes)

    def get_num_outputs(self) -> int:
        """Number of outputs."""
        return len(self._heads)

    def get_output(self, index: int, out: Any = None) -> np.ndarray:
        """Output ``index`` of the last run (copied into ``out`` when given).

        Raises
        ------
        GraphError
            If the index is out of range or nothing has run yet.
        """
        if not 0 <= index < len(self._heads):
            raise GraphError(f"output index {index} is out of range (0..{len(self._heads) - 1})")
        idx = self._heads[index]
        value = self._host_value(idx) if (idx in self._host or idx in self._device) else None
        if value is None:
            raise GraphError(f"output {index} is not available: call run() first")
        if out is not None:
            out.copyfrom(value)
            return out
        return value.copy()

    def get_node_output(self, index: int | str) -> np.ndarray:
        """The output of node ``index`` (graph JSON index or node name) in the last run, as the
        executor holds it (packed on the accelerator).

        Raises
        ------
        GraphError
            If the module was not made with ``keep_outputs=True`` (a later node may have
            overwritten the value), the node is unknown, or it has not run.
        """
        if not self.keep_outputs:
            raise GraphError("intermediate node outputs are kept only by GraphModule(..., keep_outputs=True)")
        idx = self._index.get(index) if isinstance(index, str) else int(index)
        if idx is None or not 0 <= idx < len(self._nodes):
            raise GraphError(f"the graph has no node {index!r}")
        if idx not in self._host and idx not in self._device:
            raise GraphError(f"node {self._nodes[idx]['name']!r} has no value: call run() first")
        return self._host_value(idx).copy()

    def set_node_output(self, index: int | str, value: Any) -> None:
        """Replace the output of node ``index`` in the current run (from an :attr:`after_node`
        callback: the later nodes read ``value`` instead).

        Raises
        ------
        GraphError
            Without ``keep_outputs``, for an unknown node, or if ``value`` has not the node's
            shape and element type.
        """
        if not self.keep_outputs:
            raise GraphError("node outputs can be replaced only in GraphModule(..., keep_outputs=True)")
        idx = self._index.get(index) if isinstance(index, str) else int(index)
        if idx is None or not 0 <= idx < len(self._nodes):
            raise GraphError(f"the graph has no node {index!r}")
        arr = np.asarray(value)
        if tuple(arr.shape) != self._shapes[idx] or str(arr.dtype) != self._dtypes[idx]:
            raise GraphError(f"node {self._nodes[idx]['name']!r} holds {self._dtypes[idx]}{list(self._shapes[idx])}, "
                             f"got {arr.dtype}{list(arr.shape)}")
        if idx in self._funcs:
            self._device_array(idx).copyfrom(np.ascontiguousarray(arr))
            self._host.pop(idx, None)
        else:
            self._host[idx] = np.array(arr, copy=True)
            if idx in self._on_vta:
                self._fresh_on_host.add(idx)

    # ------------------------------------------------------------------ running
    def _host_value(self, idx: int) -> np.ndarray:
        if idx not in self._host:
            self._host[idx] = self._device[idx].numpy()
        return self._host[idx]

    def _device_array(self, idx: int) -> NDArray:
        """The device array of entry ``idx``: one per storage id (entries sharing a storage id have
        the same shape and dtype and never live at the same time)."""
        arr = self._device.get(idx)
        if arr is None:
            sid = self._storage[idx]
            arr = self._by_storage.get(sid)
            if arr is None or arr.shape != self._shapes[idx] or arr.dtype != self._dtypes[idx]:
                arr = empty(self._shapes[idx], self._dtypes[idx], self.dev)
                self._by_storage[sid] = arr
            self._device[idx] = arr
        return arr

    def _device_value(self, idx: int) -> NDArray:
        fresh = idx not in self._device
        arr = self._device_array(idx)
        if fresh and self._nodes[idx]["op"] == "null":
            self._fresh_on_host.add(idx)
        if idx in self._fresh_on_host:
            if idx not in self._host:
                raise GraphError(f"input {self._nodes[idx]['name']!r} has not been set")
            arr.copyfrom(self._host[idx])
            self._fresh_on_host.discard(idx)
        return arr

    def run(self, **inputs: Any) -> None:
        """Run the graph (after setting ``inputs`` by keyword, if any).

        Raises
        ------
        GraphError
            If an input was never set or a host kernel fails.
        TVMError
            If an accelerator function fails.
        """
        if inputs:
            self.set_input(**inputs)
        stats = _stats_reader()
        records = []
        token = next(_RUN_TOKENS)   # new for every run: a region's outputs are reused within it only
        for i, n in enumerate(self._nodes):
            if n["op"] == "null":
                if i not in self._host:
                    raise GraphError(f"input {n['name']!r} has not been set")
                continue
            a = n.get("attrs", {})
            ins = [inp[0] for inp in n["inputs"]]
            rec = NodeRecord(n["name"], a.get("op", "?"), a.get("device", "cpu"), a.get("reason", ""),
                             a.get("func_name", HOST_FUNC), self._shapes[i], self._dtypes[i],
                             [self._shapes[j] for j in ins])
            if i in self._funcs:
                args = [self._device_value(j) for j in ins]
                out = self._device_array(i)
                view = a.get("func_out_shape")
                if view:   # the function writes the output's memory in another shape
                    out = out.view(tuple(int(d) for d in view.split(",")))
                before = stats() if stats else None
                t0 = time.perf_counter()
                with self.layer_scope(n["name"]) if self.layer_scope else contextlib.nullcontext():
                    self._funcs[i](*args, out)
                rec.time_s = time.perf_counter() - t0
                if stats:
                    rec.stats = _stats_delta(before, stats())
                self._host.pop(i, None)
            else:
                host_attrs = self._host_attrs.get(i)
                if host_attrs is None:  # decoded once: a region's attributes hold its whole sub-model
                    host_attrs = self._host_attrs[i] = node_host_attrs(n)
                t0 = time.perf_counter()
                result = run_kernel(a.get("host_kernel", a.get("op")), host_attrs, [self._host_value(j) for j in ins],
                                    run_token=token)
                rec.time_s = time.perf_counter() - t0
                if tuple(result.shape) != self._shapes[i] or str(result.dtype) != self._dtypes[i]:
                    raise GraphError(f"node {n['name']!r}: host kernel produced {result.dtype}{list(result.shape)}, "
                                     f"the graph says {self._dtypes[i]}{list(self._shapes[i])}")
                self._host[i] = result
                if i in self._on_vta:
                    self._fresh_on_host.add(i)
            records.append(rec)
            if self.after_node is not None:
                self.after_node(i)
        self._records = records

    def node_records(self) -> list[NodeRecord]:
        """Per operator node of the last run: device, reason, shapes, wall time, statistics."""
        return list(self._records)

    def __getitem__(self, name: str):
        """TVM's ``module["run"]``-style access to the methods."""
        methods = {"set_input": self.set_input, "run": self.run, "get_output": self.get_output,
                   "get_input": self.get_input, "get_num_inputs": self.get_num_inputs,
                   "get_num_outputs": self.get_num_outputs, "load_params": self.load_params}
        if name not in methods:
            raise AttributeError(f"GraphModule has no function {name!r}")
        return methods[name]

    def close(self) -> None:
        """Release the device arrays (idempotent)."""
        for arr in self._by_storage.values():
            arr.close()
        self._by_storage.clear()
        self._device.clear()

    def __enter__(self) -> GraphModule:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _stats_reader():
    """``simulator.stats`` when a simulator runs in this process, else None."""
    from ..testing import simulator

    if not simulator.enabled():
        return None
    return simulator.stats
