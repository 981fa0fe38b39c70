"""``tvm.contrib.graph_executor``: run a deployed network (``GraphModule(lib["default"](dev))``).

:class:`GraphModule` wraps an executor module, local or remote, and calls its functions by
name (``set_input``, ``run``, ``get_output``, ...) as TVM's wrapper does, so the same code runs
in-process, through ``rpc.LocalSession`` and through a socket RPC server::

    lib = remote.load_module("net.so")
    m = graph_executor.GraphModule(lib["default"](remote.ext_dev(0)))
    m.set_input("data", x)
    m.run()
    y = m.get_output(0).numpy()
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...graph.factory import executor_module, pick_device
from ...runtime import Module, NDArray, cpu
from ...runtime import array as nd_array
from ...runtime.module import ProfileResult, time_calls
from .._missing import missing

__all__ = ["GraphModule", "create"]


def create(graph_json_str: str, libmod: Any, device: Any) -> "GraphModule":
    """``graph_executor.create``: an executor of ``graph_json_str`` over the library ``libmod``.

    Parameters
    ----------
    graph_json_str : str
        The graph executor JSON (``lib.get_graph_json()``).
    libmod : Module
        The compiled operators (``lib.get_lib()``).
    device : Device or list of Device
        Where the accelerator operators run (``ext_dev(0)``); a list may add ``cpu(0)``.

    Raises
    ------
    TypeError
        If ``graph_json_str`` is not a str or a device is not a Device.
    ValueError
        If the JSON is not a graph executor JSON (as the graph executor reports it).
    """
    from ...graph.executor import GraphModule as _Executor

    if not isinstance(graph_json_str, str):
        raise TypeError(f"graph_executor.create takes the graph JSON text, got {type(graph_json_str).__name__}")
    devs = list(device) if isinstance(device, (list, tuple)) else [device]
    return GraphModule(executor_module(_Executor(graph_json_str, libmod, pick_device(tuple(devs)))))


class GraphModule:
    """TVM's wrapper around a graph executor module.

    Parameters
    ----------
    module : Module, RemoteModule or executor
        What ``factory["default"](dev)`` returned (an executor module, local or remote), or a
        graph executor object (wrapped into its module form).

    Attributes
    ----------
    module : Module or RemoteModule
        The executor module (``m.module.time_evaluator("run", dev)`` times a run).
    """

    def __init__(self, module: Any):
        if isinstance(module, GraphModule):
            module = module.module
        if not isinstance(module, Module) and not _is_remote_module(module):
            module = executor_module(module)
        self.module = module
        self._set_input = module["set_input"]
        self._run = module["run"]
        self._get_output = module["get_output"]
        self._get_input = module["get_input"]
        self._get_num_outputs = module["get_num_outputs"]
        self._get_num_inputs = module["get_num_inputs"]
        self._load_params = module["load_params"]

    def set_input(self, key: Any = None, value: Any = None, **params: Any) -> None:
        """Set one input by name or index, and/or several by keyword (parameters included).

        Raises
        ------
        ValueError, TypeError
            As the executor reports them (unknown name, wrong shape or dtype).
        """
        if key is not None:
            self._set_input(key, _plain(value))
        for name, val in params.items():
            self._set_input(name, _plain(val))

    def run(self, **input_dict: Any) -> None:
        """Set the given inputs, then run the whole graph."""
        if input_dict:
            self.set_input(**input_dict)
        self._run()

    def get_num_outputs(self) -> int:
        """Number of graph outputs."""
        return int(self._get_num_outputs())

    def get_num_inputs(self) -> int:
        """Number of graph inputs (parameters excluded, as the executor counts them)."""
        return int(self._get_num_inputs())

    def get_input(self, index: Any, out: Any = None) -> Any:
        """The ``index``-th input (or the input named ``index``) as an NDArray; copied into ``out`` if given."""
        return _deliver(self._get_input(index), out)

    def get_output(self, index: int, out: Any = None) -> Any:
        """The ``index``-th output as an NDArray (``.numpy()`` for the values); copied into ``out`` if given."""
        return _deliver(self._get_output(index), out)

    def load_params(self, params_bytes: bytes) -> None:
        """Set parameters from a :func:`~vta.graph.params.save_param_dict` blob.

        Raises
        ------
        ParamFormatError
            If the blob is corrupt or truncated (through RPC: an RPCError naming it).
        """
        self._load_params(bytes(params_bytes))

    def benchmark(self, device: Any = None, func_name: str = "run", repeat: int = 5, number: int = 5,
                  min_repeat_ms: float | None = None, end_to_end: bool = False, **kwargs: Any) -> ProfileResult:
        """Time ``func_name`` (TVM's ``GraphModule.benchmark``): ``repeat`` rounds of ``number`` runs.

        ``end_to_end`` is accepted and ignored (inputs are already on the device side).
        Remote modules are timed in the server's process.

        Raises
        ------
        ValueError
            If ``number`` or ``repeat`` is below 1.
        """
        del end_to_end
        if kwargs:
            self.set_input(**kwargs)
        return time_evaluator(self.module, func_name, device, number=number, repeat=repeat,
                              min_repeat_ms=min_repeat_ms or 0.0)()

    def __getitem__(self, key: str) -> Any:
        return self.module[key]

    def __getattr__(self, name: str) -> Any:
        raise missing(__name__ + ".GraphModule", name, [n for n in dir(GraphModule) if not n.startswith("_")])


def time_evaluator(module: Any, func_name: str, dev: Any = None, number: int = 10, repeat: int = 1,
                   min_repeat_ms: float = 0.0):
    """``module.time_evaluator`` (local modules, and remote ones timed in the server's process); for a
    module without it, the same timing from this side.

    Raises
    ------
    ValueError
        If ``number`` or ``repeat`` is below 1 or ``min_repeat_ms`` is negative.
    """
    if isinstance(module, Module) or hasattr(module, "time_evaluator"):  # local, or timed on the server
        return module.time_evaluator(func_name, dev, number=number, repeat=repeat, min_repeat_ms=min_repeat_ms)
    return time_calls(module[func_name], number, repeat, min_repeat_ms)


def _is_remote_module(value: Any) -> bool:
    from ...rpc import RemoteModule

    return isinstance(value, RemoteModule)


def _plain(value: Any) -> Any:
    """Values handed to an executor (maybe remote): local NDArrays and lists become NumPy arrays,
    remote arrays stay handles."""
    if isinstance(value, NDArray):
        return value.numpy()
    if isinstance(value, (list, tuple, int, float)):
        return np.asarray(value)
    return value


def _as_numpy(value: Any) -> np.ndarray:
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def _deliver(value: Any, out: Any) -> Any:
    """An executor's result as TVM returns it: an NDArray (NumPy results become CPU arrays)."""
    if out is not None:
        out.copyfrom(_as_numpy(value))
        return out
    if isinstance(value, np.ndarray):
        return nd_array(value, cpu(0))
    return value
