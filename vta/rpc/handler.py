"""The server side of one RPC session: decode a request, run it, encode the reply.

A request header is ``{"id": n, "op": name, "args": {...}}``; the reply is ``{"id": n, "ok":
true, "result": value}`` or ``{"id": n, "ok": false, "error": {"type": name, "message": text}}``.
Objects that must stay on the server (arrays, modules, functions) are kept in a handle table
and cross the connection as ``{"handle": h, "kind": ...}``. Operations:

=================  ===========================================  ==========================
op                 args                                         result
=================  ===========================================  ==========================
ping               {}                                           "pong"
upload             name, data (bytes)                           None
download           name                                         bytes
remove             name                                         None
listdir            {}                                           list of names
load_module        name                                         module handle
get_function       name                                         function handle (global)
module_function    module (handle), name (None = entry)         function handle
module_capture     module, args (list), execute, func_name      captured streams (dict)
call               func (handle), args (list)                   any value
alloc_array        shape, dtype, device_type, device_id         array handle
array_copyfrom     array (handle), data (ndarray)               None
array_numpy        array (handle)                               ndarray
free               handle (handle)                              None
=================  ===========================================  ==========================
"""

from __future__ import annotations

import inspect
import logging
import threading
from typing import Any, Callable

from ..errors import RPCError
from . import _runtime
from .protocol import REQUEST_KEYS, ProtocolKeyError, check_protocol_keys, decode_value, encode_value
from .workspace import DEFAULT_MAX_UPLOAD, Workspace

__all__ = ["SessionHandler"]

log = logging.getLogger(__name__)

def _time_evaluator(module: Any, func_name: str, number: int = 10, repeat: int = 1,
                    min_repeat_ms: float = 0.0) -> Any:
    """``runtime.RPCTimeEvaluator``: a function timing ``func_name`` of ``module`` in this process.

    What ``RemoteModule.time_evaluator`` calls on the server, so the timing excludes the
    connection. The returned function gives ``[mean, [seconds per round, ...]]``.

    Raises
    ------
    RPCError
        If ``module`` is not a module.
    """
    if not _runtime.is_module(module):
        raise RPCError(f"runtime.RPCTimeEvaluator needs a module, got {module!r}")
    evaluator = module.time_evaluator(func_name, None, number=int(number), repeat=int(repeat),
                                      min_repeat_ms=float(min_repeat_ms))
    return _runtime.packed(lambda *args: list(evaluator(*args)), "time_evaluator")


_runtime.register("runtime.RPCTimeEvaluator", _time_evaluator)

#: One command queue, one DRAM arena and one device serve every session of the process, so the
#: sessions' operations run one at a time (each session still has its own thread and files).
_RUNTIME_LOCK = threading.Lock()


class SessionHandler:
    """State and operations of one server session (one connection).

    Parameters
    ----------
    workdir_parent : path-like, optional
        Directory in which the session's private work directory is created.
    max_upload : int
        Largest upload accepted, in bytes.
    """

    def __init__(self, workdir_parent=None, max_upload: int = DEFAULT_MAX_UPLOAD):
        self.workspace = Workspace(workdir_parent, max_upload)
        self._handles: dict[int, tuple[str, Any]] = {}  # handle -> (kind, object)
        self._by_id: dict[int, int] = {}  # id(object) -> handle; the table keeps objects alive
        self._next = 1
        self._ops: dict[str, Callable[..., Any]] = {
            "ping": lambda: "pong",
            "upload": self.workspace.upload,
            "download": self.workspace.download,
            "remove": self.workspace.remove,
            "listdir": self.workspace.listdir,
            "load_module": self._load_module,
            "get_function": _runtime.get_global_func,
            "module_function": self._module_function,
            "module_capture": self._module_capture,
            "call": self._call,
            "alloc_array": self._alloc_array,
            "array_copyfrom": self._array_copyfrom,
            "array_numpy": self._array_numpy,
            "free": self._free,
        }

    # ------------------------------------------------------------------ handles
    def _kind_of(self, value: Any) -> str | None:
        if _runtime.is_ndarray(value):
            return "array"
        if _runtime.is_packed_func(value):
            return "func"
        if _runtime.is_module(value):
            return "module"
        return None

    def _tag(self, value: Any) -> dict | None:
        kind = self._kind_of(value)
        if kind is None:
            return None
        h = self._by_id.get(id(value))
        if h is None:  # one handle per object, however often it is returned
            h = self._next
            self._next += 1
            self._handles[h] = (kind, value)
            self._by_id[id(value)] = h
        tagged = {"handle": h, "kind": kind}
        if kind == "array":
            dev = value.device
            tagged.update(shape=list(value.shape), dtype=str(value.dtype), device=[dev.device_type, dev.device_id])
        return tagged

    def _resolve(self, tagged: dict) -> Any:
        if "device" in tagged and "handle" not in tagged:  # a device of this process
            dev = tagged["device"]
            if not (isinstance(dev, list) and len(dev) == 2 and all(isinstance(v, int) for v in dev)):
                raise RPCError(f"a device must be sent as [device_type, device_id], got {dev!r}")
            return _runtime.make_device(dev[0], dev[1])
        h = tagged.get("handle")
        if not isinstance(h, int) or h not in self._handles:
            raise RPCError(f"handle {h!r} does not name a live object of this session")
        return self._handles[h][1]

    def _get(self, value: Any, kind: str, what: str) -> Any:
        h = self._by_id.get(id(value))
        if h is None or self._handles[h][0] != kind:
            raise RPCError(f"{what} must be a {kind} handle of this session, got {value!r}")
        return value

    def handle_count(self) -> int:
        """Number of live handles (for tests and diagnostics)."""
        return len(self._handles)

    # ------------------------------------------------------------------ operations
    def _load_module(self, name: str) -> Any:
        return _runtime.load_module(str(self.workspace.file(name)))

    def _module_function(self, module: Any, name: str | None = None) -> Any:
        mod = self._get(module, "module", "module")
        if name is None:
            entry = getattr(mod, "entry_func", None)
            if entry is None:
                raise RPCError("the module has no entry function")
            return entry
        if not isinstance(name, str):
            raise RPCError(f"function name must be a string, got {name!r}")
        return mod.get_function(name)

    def _module_capture(self, module: Any, args: list | None = None, execute: bool = False,
                        func_name: str | None = None) -> dict:
        mod = self._get(module, "module", "module")
        if not isinstance(args, list):
            raise RPCError(f"capture arguments must be a list, got {args!r}")
        if func_name is not None and not isinstance(func_name, str):
            raise RPCError(f"function name must be a string, got {func_name!r}")
        return mod.capture(*args, execute=bool(execute), func_name=func_name).to_wire()

    def _call(self, func: Any, args: list | None = None) -> Any:
        f = self._get(func, "func", "func")
        if not isinstance(args, list):
            raise RPCError(f"call arguments must be a list, got {args!r}")
        return f(*args)

    def _alloc_array(self, shape: list, dtype: str, device_type: int, device_id: int = 0) -> Any:
        return _runtime.nd_empty(shape, dtype, device_type, device_id)

    def _array_copyfrom(self, array: Any, data: Any) -> None:
        self._get(array, "array", "array").copyfrom(data)

    def _array_numpy(self, array: Any) -> Any:
        return self._get(array, "array", "array").numpy()

    def _free(self, handle: Any) -> None:
        h = self._by_id.pop(id(handle), None)
        if h is None:
            raise RPCError(f"free: {handle!r} is not a live handle of this session")
        kind, obj = self._handles.pop(h)
        if kind == "array":
            obj.close()

    # ------------------------------------------------------------------ dispatch
    def handle(self, header: dict, payloads: list) -> tuple[dict, list]:
        """Run one request and build its reply; never raises for a bad request.

        Returns
        -------
        (dict, list)
            The reply header and its payloads (bytes-like objects).
        """
        req_id = header.get("id")
        try:
            op = header.get("op")
            if not self._ops:
                raise RPCError("this session is closed")
            check_protocol_keys(header, REQUEST_KEYS, "request")
            if op not in self._ops:
                raise RPCError(f"unknown operation {op!r}; accepted: {', '.join(sorted(self._ops))}")
            raw_args = header.get("args", {})
            if not isinstance(raw_args, dict):
                raise RPCError(f"request args must be a JSON object, got {type(raw_args).__name__}")
            fn = self._ops[op]
            signature = inspect.signature(fn)
            if raw_args and not signature.parameters:
                raise ProtocolKeyError(f"request {op!r} takes no arguments, got {', '.join(map(repr, raw_args))}")
            check_protocol_keys(raw_args, signature.parameters, f"request {op!r} arguments")
            args = {str(k): decode_value(v, payloads, self._resolve) for k, v in raw_args.items()}
            try:
                signature.bind(**args)
            except TypeError as exc:
                raise RPCError(f"bad arguments for {op!r}: {exc}; its arguments: "
                               f"{', '.join(signature.parameters) or 'none'}") from exc
            with _RUNTIME_LOCK:
                result = fn(**args)
            out: list = []
            return {"id": req_id, "ok": True, "result": encode_value(result, out, self._tag)}, out
        except Exception as exc:  # any failure becomes an error reply; the session lives on
            log.debug("request %r failed", header.get("op"), exc_info=True)
            return {"id": req_id, "ok": False, "error": {"type": type(exc).__name__, "message": str(exc)}}, []

    def close(self) -> None:
        """Close every array and module the session holds and remove the work directory."""
        for kind, obj in self._handles.values():
            if kind in ("array", "module"):
                obj.close()
        self._handles.clear()
        self._by_id.clear()
        # The table holds bound methods of this handler: clearing it breaks that cycle, so the
        # handler is freed when the server drops it instead of at the next full collection.
        self._ops.clear()
        self.workspace.close()
