"""The executor factory: what ``relay.build`` returns and ``export_library`` packs into one file.

A :class:`GraphExecutorFactoryModule` (type_key ``"GraphExecutorFactory"``, as in TVM) holds
the graph executor JSON, the parameters and, as its one import, the library of compiled
operators (one host module per accelerator operator under a root). Its functions are TVM's:

==================  ==========================================================================
``default``         ``factory["default"](dev)``: a new graph executor on ``dev`` with the
                    parameters set (the name is the factory's ``libmod_name``)
``get_graph_json``  the JSON text
``get_graph_params``  the parameters, name -> NDArray
``debug_create``    ``("default", dev)``: a debug executor (:mod:`vta.graph.debug_executor`)
``remove_params``   a factory over the same graph and library without parameters
==================  ==========================================================================

``export_library("net.so")`` goes through the runtime's exporter: the objects of every compiled
operator are linked into one shared library (their ``__tvm_module_ctx``/``__tvm_main__`` are
weak, each operator keeps its own function name) and the factory itself is serialised into
``__tvm_dev_mblob`` by :meth:`save_to_binary`, in TVM's layout::

    dmlc string  graph JSON
    u64          number of parameters
    vector<string>  names
    the arrays, each in NDArray::Save layout (see :mod:`vta.graph.params`)
    dmlc string  module name ("default")

``vta.runtime.load_module("net.so")`` restores it through ``runtime.module.loadbinary_GraphExecutorFactory``,
registered when this module is imported, and re-attaches the library as its import.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ModuleLoadError
from .graph_json import GraphJSONError, load_graph_json
from ..runtime import Device, Module, NDArray, PackedFunc, cpu, register_func
from ..runtime import array as nd_array
from ..runtime.devices import CPU
from .params import (
    ByteReader,
    read_named_arrays,
    write_array,
    write_string,
    write_string_vector,
)

__all__ = ["GraphExecutorFactoryModule", "GraphExecutorModule", "executor_module", "pick_device", "TYPE_KEY"]

#: The factory's type key (TVM's), also the suffix of its binary loader's name.
TYPE_KEY = "GraphExecutorFactory"
#: Methods of an executor that its module form exposes as functions (TVM's names).
EXECUTOR_FUNCTIONS = ("set_input", "run", "get_output", "get_input", "get_num_inputs", "get_num_outputs",
                      "load_params", "get_input_index", "share_params")


def _check_graph_json(graph_json: Any) -> str:
    if not isinstance(graph_json, str):
        raise TypeError(f"graph_json must be the executor JSON text (str), got {type(graph_json).__name__}")
    doc = load_graph_json(graph_json, "graph_json")
    if not isinstance(doc.get("nodes"), list):
        raise GraphJSONError("graph_json must be a graph executor JSON object with a 'nodes' list")
    return graph_json


def _param_array(name: str, value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, NDArray):
        return value.numpy()
    raise TypeError(f"parameter {name!r} must be a NumPy array or an NDArray, got {type(value).__name__}")


class GraphExecutorModule(Module):
    """The module form of a graph executor (type_key ``"GraphExecutor"``).

    What ``factory["default"](dev)`` returns when the executor is not a module itself: its
    methods (``set_input``, ``run``, ``get_output``, ...) are the module's functions, so an
    RPC session can hand it back as a remote module, and every other attribute is the
    executor's own, so local code can use it as the executor.

    Parameters
    ----------
    executor : object
        A graph executor (:class:`vta.graph.executor.GraphModule` or the debug executor).
    """

    type_key = "GraphExecutor"

    def __init__(self, executor: Any):
        super().__init__()
        self.executor = executor

    def _local_function(self, name: str) -> PackedFunc | None:
        if name not in EXECUTOR_FUNCTIONS:
            return None
        method = getattr(self.executor, name, None)
        return None if method is None else PackedFunc(method, name=name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "executor":
            raise AttributeError(name)
        return getattr(self.executor, name)

    def __repr__(self) -> str:
        return f"Module(type_key='GraphExecutor', executor={type(self.executor).__name__})"

    def close(self) -> None:
        """Release the executor's device arrays (when it has ``close``) and the module (idempotent)."""
        closer = getattr(self.executor, "close", None)
        if callable(closer) and not self._closed:
            closer()
        super().close()


def executor_module(executor: Any) -> Module:
    """``executor`` itself when it is a Module, else a :class:`GraphExecutorModule` around it."""
    return executor if isinstance(executor, Module) else GraphExecutorModule(executor)


def pick_device(devs: tuple[Any, ...]) -> Device:
    """The device an executor runs on: the first non-CPU one of ``devs``, else the first.

    Raises
    ------
    TypeError
        If ``devs`` is empty or holds something else than Devices.
    """
    if not devs:
        raise TypeError("the executor needs a device: factory['default'](dev)")
    for dev in devs:
        if not isinstance(dev, Device):
            raise TypeError(f"devices must be vta.runtime.Device objects (ext_dev(0), cpu(0)), got {dev!r}")
    # CPU nodes always run on the host; the accelerator device is the one that matters.
    accel = [d for d in devs if d.device_type != CPU]
    return accel[0] if accel else devs[0]


class GraphExecutorFactoryModule(Module):
    """Graph JSON + compiled library + parameters, as TVM's executor factory.

    Parameters
    ----------
    graph_json : str
        The graph executor JSON.
    lib : Module or None
        The compiled operators (imported by the factory). None when the graph runs entirely on
        the CPU, and while a library is being restored (the loader imports it afterwards).
    params : mapping of str to array, optional
        Parameter arrays (NumPy or NDArray), set on every executor the factory creates.
    libmod_name : str
        The name of the executor-creating function (TVM's ``mod_name``, default ``"default"``).

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``graph_json`` is not a graph executor JSON object.

    Examples
    --------
    >>> lib = vta.graph.build(graph, params)                        # doctest: +SKIP
    >>> lib.export_library("net.so")                                # doctest: +SKIP
    >>> m = graph_executor.GraphModule(load_module("net.so")["default"](ext_dev(0)))  # doctest: +SKIP
    """

    type_key = TYPE_KEY

    def __init__(self, graph_json: str, lib: Module | None, params: Mapping[str, Any] | None = None,
                 libmod_name: str = "default"):
        super().__init__()
        self._graph_json = _check_graph_json(graph_json)
        if not isinstance(libmod_name, str) or not libmod_name:
            raise TypeError(f"libmod_name must be a non-empty str, got {libmod_name!r}")
        self.libmod_name = libmod_name
        params = {} if params is None else params
        if not isinstance(params, Mapping):
            raise TypeError(f"params must be a mapping of names to arrays, got {type(params).__name__}")
        self._params: dict[str, np.ndarray] = {}
        for name, value in params.items():
            if not isinstance(name, str):
                raise TypeError(f"parameter names must be str, got {name!r}")
            self._params[name] = _param_array(name, value)
        if lib is not None:
            if not isinstance(lib, Module):
                raise TypeError(f"lib must be a runtime Module, got {type(lib).__name__}")
            self.import_module(lib)

    def __repr__(self) -> str:
        return f"Module(type_key={TYPE_KEY!r}, params={len(self._params)})"

    # ------------------------------------------------------------------ TVM's Python accessors
    @property
    def graph_json(self) -> str:
        """The graph executor JSON."""
        return self._graph_json

    @property
    def lib(self) -> Module | None:
        """The compiled operators (see :meth:`get_lib`)."""
        return self.get_lib()

    @property
    def params(self) -> dict[str, np.ndarray]:
        """The parameters as NumPy arrays (a copy of the dict; the arrays are shared)."""
        return dict(self._params)

    @property
    def module(self) -> "GraphExecutorFactoryModule":
        """The factory module itself (TVM's ``GraphExecutorFactoryModule.module``)."""
        return self

    def get_graph_json(self) -> str:
        """The graph executor JSON."""
        return self._graph_json

    def get_lib(self) -> Module | None:
        """The library of compiled operators (the factory's import), or None when every node of
        the graph runs on the CPU (nothing was compiled)."""
        return self._imports[0] if self._imports else None

    def get_params(self) -> dict[str, NDArray]:
        """The parameters as new CPU NDArrays, name -> array (TVM's ``get_params``)."""
        return {name: nd_array(a, cpu(0)) for name, a in self._params.items()}

    def get_executor_config(self) -> str:
        """The graph JSON (TVM's ``get_executor_config`` for graph executors)."""
        return self._graph_json

    # ------------------------------------------------------------------ functions
    def _create(self, *devs: Any) -> Module:
        from .executor import GraphModule

        gm = GraphModule(self._graph_json, self.get_lib(), pick_device(devs))
        if self._params:
            gm.set_input(**self._params)
        return executor_module(gm)

    def _debug_create(self, name: str, *devs: Any) -> Module:
        from .debug_executor import GraphModuleDebug

        if name != self.libmod_name:
            raise ValueError(f"debug_create: this factory builds {self.libmod_name!r}, not {name!r}")
        gm = GraphModuleDebug(self._graph_json, self.get_lib(), pick_device(devs))
        if self._params:
            gm.set_input(**self._params)
        return executor_module(gm)

    def _without_params(self) -> "GraphExecutorFactoryModule":
        return GraphExecutorFactoryModule(self._graph_json, self.get_lib(), None, self.libmod_name)

    def _local_function(self, name: str) -> PackedFunc | None:
        table: dict[str, Callable[..., Any]] = {
            self.libmod_name: self._create,
            "get_graph_json": self.get_graph_json,
            "get_graph_params": self.get_params,
            "debug_create": self._debug_create,
            "remove_params": self._without_params,
        }
        func = table.get(name)
        return None if func is None else PackedFunc(func, name=name)

    # ------------------------------------------------------------------ persistence
    def save_to_binary(self) -> bytes:
        """The factory in TVM's ``GraphExecutorFactory::SaveToBinary`` layout (see the module doc)."""
        names = list(self._params)
        parts = [write_string(self._graph_json.encode("utf-8")), struct.pack("<Q", len(names)),
                 write_string_vector(names)]
        parts += [write_array(self._params[n]) for n in names]
        parts.append(write_string(self.libmod_name.encode("utf-8")))
        return b"".join(parts)

    @classmethod
    def load_from_binary(cls, payload: bytes) -> "GraphExecutorFactoryModule":
        """Rebuild a factory (without its library) from :meth:`save_to_binary` bytes.

        Raises
        ------
        ModuleLoadError
            If the payload is truncated or corrupt; the message names the field and its byte
            offset within the payload.
        """
        reader = ByteReader(payload, f"{TYPE_KEY} payload", error=ModuleLoadError)
        graph_json = reader.string("graph JSON")
        count = reader.count("number of parameters", 40)
        names = reader.string_vector("parameter names")
        params = read_named_arrays(reader, names, count)
        libmod_name = reader.string("module name")
        reader.finish()
        try:
            return cls(graph_json, None, params, libmod_name or "default")
        except (TypeError, ValueError) as exc:
            raise ModuleLoadError(f"corrupt {TYPE_KEY} payload: {exc}") from exc

    def export_library(self, path: str | os.PathLike, workspace_dir: str | os.PathLike | None = None,
                       **kwargs: Any) -> Path:
        """Write graph, parameters and compiled operators into one shared library (or ``.tar``).

        Parameters
        ----------
        path : path
            ``net.so`` (or ``.tar``).
        workspace_dir : path, optional
            Where the intermediate files go.
        **kwargs
            TVM's ``fcompile``/``cc`` options; only None values are accepted (the system
            compiler is always used).

        Returns
        -------
        Path

        Raises
        ------
        TypeError
            If a compiler option is given.
        TVMError
            If the library cannot be built or a module of the tree cannot be serialised.
        """
        given = {k: v for k, v in kwargs.items() if v is not None}
        if given:
            raise TypeError(f"export_library: options {sorted(given)} are not supported; the system C compiler "
                            "links the library")
        return super().export_library(path, workspace_dir=workspace_dir)


def _load_binary(payload: bytes) -> GraphExecutorFactoryModule:
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise ModuleLoadError(f"{TYPE_KEY} loader expects bytes, got {type(payload).__name__}")
    return GraphExecutorFactoryModule.load_from_binary(bytes(payload))


def _create_factory(graph_json: str, lib: Module, libmod_name: str, *named_params: Any) -> GraphExecutorFactoryModule:
    """``tvm.graph_executor_factory.create(graph_json, lib, name, p0_name, p0, p1_name, p1, ...)``."""
    if len(named_params) % 2:
        raise TypeError("graph_executor_factory.create takes parameters as name, array pairs")
    params = dict(zip(named_params[::2], named_params[1::2], strict=True))
    return GraphExecutorFactoryModule(graph_json, lib, params, libmod_name)


register_func(f"runtime.module.loadbinary_{TYPE_KEY}", _load_binary, override=True)
register_func("tvm.graph_executor_factory.create", _create_factory, override=True)
