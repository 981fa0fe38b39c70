"""PackedFunc: one calling convention for Python callables and native packed functions.

A :class:`PackedFunc` wraps either a Python callable or the address of a native function with
the classic TVM signature ``int f(TVMValue* args, int* codes, int n, TVMValue* ret, int*
ret_code, void* resource_handle)`` (DESIGN contract 3). Calling a native one converts each
Python argument to a ``TVMValue`` and a type code, and converts the return value back; a
non-zero status becomes :class:`vta.errors.TVMError` carrying the message of
``TVMGetLastError()`` from the library that owns the function.

Native code calls back into Python (``TVMFuncCall``, device callbacks of the VTA runtime). An
exception raised there cannot unwind through C, so the callback records it with
:func:`set_pending_exception` and returns -1; when the outermost native call returns, the
pending exception is re-raised with its own type (chained to the native error), so that, say,
a ``DeadlockError`` raised by fsim inside ``VTASynchronize`` reaches the caller unchanged.

Python objects handed to native code (functions, modules) travel as opaque handles: small
integers that name an entry of a process-wide :class:`HandleTable`.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from typing import Any, Callable

import numpy as np

from ..errors import TVMError
from .abi import (
    ArgTypeCode, DLDevice, TVMByteArray, TVMValue, dl_to_dtype, dtype_to_dl,
)
from .devices import Device

__all__ = [
    "PackedFunc", "HandleTable", "handles", "set_pending_exception", "take_pending_exception",
    "to_tvm_value", "from_tvm_value", "call_from_native",
]

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

# ----------------------------------------------------------------------------- pending exceptions
_tls = threading.local()


def set_pending_exception(exc: BaseException) -> None:
    """Record an exception raised inside a callback that native code made.

    The callback then returns an error status to native code; the Python frame that made the
    outermost native call re-raises the exception (see :meth:`PackedFunc.__call__`). A second
    exception recorded before the first is taken keeps the first one, which is the root cause,
    and attaches the later one as its ``__context__`` when it has none.

    Parameters
    ----------
    exc : BaseException
        The exception to deliver.

    Raises
    ------
    TypeError
        If ``exc`` is not an exception instance.
    """
    if not isinstance(exc, BaseException):
        raise TypeError(f"set_pending_exception expects an exception instance, got {exc!r}")
    current = getattr(_tls, "pending", None)
    if current is None:
        _tls.pending = exc
    elif current is not exc and current.__context__ is None:
        current.__context__ = exc


def take_pending_exception() -> BaseException | None:
    """Return and clear the exception recorded by :func:`set_pending_exception` in this thread."""
    exc = getattr(_tls, "pending", None)
    _tls.pending = None
    return exc


# ----------------------------------------------------------------------------- handles
class HandleTable:
    """Opaque handles for Python objects that native code holds (functions, modules).

    A handle is a small positive integer passed as ``void*``. Each object has at most one
    handle; :meth:`acquire` counts references so that temporary handles (arguments of one
    call) can be dropped with :meth:`release` while long-lived ones (functions that host code
    caches) stay.
    """

    def __init__(self) -> None:
        # Reentrant: a garbage collection started by any allocation under the lock can drop a
        # weakly held object, whose callback (``forget`` in :meth:`acquire_weak`) takes the lock
        # again in the same thread; a plain lock deadlocked there.
        self._lock = threading.RLock()
        self._objects: dict[int, Any] = {}
        self._counts: dict[int, int] = {}
        self._by_identity: dict[int, int] = {}
        self._weak: dict[int, weakref.ref] = {}
        self._next = 1

    def acquire_weak(self, obj: Any) -> int:
        """A new handle of ``obj`` that does not keep it alive (a library's module context:
        native code uses it only while one of the module's functions runs, which holds the module).
        It dies with ``obj`` or by :meth:`release`."""
        with self._lock:
            handle = self._next
            self._next += 1

            def forget(_ref, handle=handle) -> None:
                with self._lock:
                    self._weak.pop(handle, None)

            self._weak[handle] = weakref.ref(obj, forget)
            return handle

    def acquire(self, obj: Any) -> int:
        """Return the handle of ``obj``, creating it if needed, and add one reference."""
        with self._lock:
            handle = self._by_identity.get(id(obj))
            if handle is None:
                handle = self._next
                self._next += 1
                self._objects[handle] = obj
                self._counts[handle] = 0
                self._by_identity[id(obj)] = handle
            self._counts[handle] += 1
            return handle

    def release(self, handle: int) -> None:
        """Drop one reference; the handle dies with its last reference.

        Raises
        ------
        TVMError
            If ``handle`` is not live.
        """
        with self._lock:
            if self._weak.pop(handle, None) is not None:
                return
            if handle not in self._objects:
                raise TVMError(f"handle {handle!r} is not a live function or module handle")
            self._counts[handle] -= 1
            if self._counts[handle] <= 0:
                obj = self._objects.pop(handle)
                del self._counts[handle]
                del self._by_identity[id(obj)]

    def get(self, handle: int | None) -> Any:
        """The object a handle names.

        Raises
        ------
        TVMError
            If ``handle`` is NULL or names no live object.
        """
        with self._lock:
            obj = self._objects.get(handle or 0)
            if obj is None and handle in self._weak:
                obj = self._weak[handle]()
        if obj is None:
            raise TVMError(
                f"handle {handle!r} does not name a live function or module; handles come from "
                "TVMBackendGetFuncFromEnv or from arguments of the current call"
            )
        return obj

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)


#: The process-wide table of handles given to native code.
handles = HandleTable()


# ----------------------------------------------------------------------------- conversion
def to_tvm_value(arg: Any, slot: TVMValue, keep: list, temp_handles: list[int], index: int = 0) -> int:
    """Store one Python argument into ``slot`` and return its type code.

    Parameters
    ----------
    arg : object
        ``None``, bool, int, float, str, bytes, :class:`~vta.runtime.devices.Device`, a NumPy
        dtype, an NDArray, a Module, a PackedFunc or a ``ctypes.c_void_p``.
    slot : TVMValue
        Where the value goes.
    keep : list
        Receives Python objects that must outlive the native call (strings, byte arrays).
    temp_handles : list of int
        Receives handles acquired for this call; release them afterwards.
    index : int
        Position of the argument, for error messages.

    Returns
    -------
    int
        The ``TVMArgTypeCode``.

    Raises
    ------
    TypeError
        If the argument has a type with no packed representation.
    OverflowError
        If an integer does not fit in 64 bits.
    """
    kind = type(arg)
    if kind is int and _INT64_MIN <= arg <= _INT64_MAX:  # the common case first
        slot.v_int64 = arg
        return ArgTypeCode.INT
    if arg is None:
        slot.v_handle = None
        return ArgTypeCode.NULLPTR
    if isinstance(arg, (bool, np.bool_)):
        slot.v_int64 = int(arg)
        return ArgTypeCode.INT
    if isinstance(arg, (int, np.integer)):
        value = int(arg)
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise OverflowError(f"argument {index}: integer {value!r} does not fit in int64")
        slot.v_int64 = value
        return ArgTypeCode.INT
    if isinstance(arg, (float, np.floating)):
        slot.v_float64 = float(arg)
        return ArgTypeCode.FLOAT
    if isinstance(arg, str):
        data = arg.encode("utf-8")
        if b"\0" in data:
            raise TypeError(f"argument {index}: string {arg!r} contains a NUL character")
        keep.append(data)
        slot.v_str = data
        return ArgTypeCode.STR
    if isinstance(arg, (bytes, bytearray, memoryview)):
        data = bytes(arg)
        buf = ctypes.create_string_buffer(data, len(data))
        arr = TVMByteArray(ctypes.cast(buf, ctypes.c_void_p), len(data))
        keep.extend((buf, arr))
        slot.v_handle = ctypes.addressof(arr)
        return ArgTypeCode.BYTES
    if isinstance(arg, Device):
        slot.v_device = DLDevice(arg.device_type, arg.device_id)
        return ArgTypeCode.DEVICE
    if isinstance(arg, np.dtype):
        slot.v_type = dtype_to_dl(arg)
        return ArgTypeCode.DATA_TYPE
    if isinstance(arg, ctypes.c_void_p):
        slot.v_handle = arg.value
        return ArgTypeCode.OPAQUE_HANDLE
    as_packed = getattr(arg, "_as_packed_arg", None)
    if as_packed is not None:
        # NDArray -> (DLTensorHandle, its DLTensor's address); Module -> (ModuleHandle, its
        # lasting handle).
        code, address = as_packed()
        slot.v_handle = address
        return code
    if isinstance(arg, PackedFunc):
        handle = handles.acquire(arg)
        temp_handles.append(handle)
        slot.v_handle = handle
        return ArgTypeCode.PACKED_FUNC_HANDLE
    hint = ""
    if isinstance(arg, np.ndarray):
        hint = " (wrap NumPy arrays with vta.nd.array first)"
    elif callable(arg):
        hint = " (wrap Python callables with vta.runtime.PackedFunc first)"
    raise TypeError(
        f"argument {index}: cannot pass a {type(arg).__name__} to a packed function{hint}; accepted: "
        "None, bool, int, float, str, bytes, Device, numpy dtype, NDArray, Module, PackedFunc, ctypes.c_void_p"
    )


def from_tvm_value(value: TVMValue, code: int) -> Any:
    """Convert a ``TVMValue`` with its type code to a Python object (copying strings and bytes).

    DLTensor handles become NDArray views that do not own their memory.

    Raises
    ------
    TypeError
        If the type code is unknown or not convertible.
    TVMError
        If a module or function handle is not live.
    """
    if code in (ArgTypeCode.INT, ArgTypeCode.UINT):
        return int(value.v_int64)
    if code == ArgTypeCode.FLOAT:
        return float(value.v_float64)
    if code == ArgTypeCode.NULLPTR:
        return None
    if code == ArgTypeCode.STR:
        raw = ctypes.cast(value.v_handle, ctypes.c_char_p).value if value.v_handle else b""
        return raw.decode("utf-8", errors="replace")
    if code == ArgTypeCode.BYTES:
        if not value.v_handle:
            return b""
        arr = TVMByteArray.from_address(value.v_handle)
        return ctypes.string_at(arr.data, arr.size) if arr.size else b""
    if code == ArgTypeCode.DATA_TYPE:
        return dl_to_dtype(value.v_type)
    if code == ArgTypeCode.DEVICE:
        return Device(int(value.v_device.device_type), int(value.v_device.device_id))
    if code == ArgTypeCode.OPAQUE_HANDLE:
        return ctypes.c_void_p(value.v_handle)
    if code in (ArgTypeCode.DLTENSOR_HANDLE, ArgTypeCode.NDARRAY_HANDLE):
        from .ndarray import NDArray  # ndarray imports this module

        return NDArray.from_dltensor_address(value.v_handle)
    if code in (ArgTypeCode.MODULE_HANDLE, ArgTypeCode.PACKED_FUNC_HANDLE):
        return handles.get(value.v_handle)
    name = ArgTypeCode.NAMES.get(code, "unknown")
    raise TypeError(f"type code {code!r} ({name}) cannot be converted to a Python value")


def _write_return(result: Any, ret: Any, ret_code: Any) -> None:
    """Store a Python callback's result in the caller's return slots."""
    keep: list = []
    temps: list[int] = []
    slot = TVMValue()
    if isinstance(result, PackedFunc):
        # A returned function must outlive this call: give it a lasting handle. (Modules
        # always pass their own lasting handle.)
        slot.v_handle = handles.acquire(result)
        code = ArgTypeCode.PACKED_FUNC_HANDLE
    else:
        code = to_tvm_value(result, slot, keep, temps, index=0)
    # Strings and bytes stay alive until the next callback of this thread returns.
    _tls.returned = keep
    if ret:
        ctypes.memmove(ret, ctypes.addressof(slot), ctypes.sizeof(TVMValue))
    if ret_code:
        ret_code[0] = code


def call_from_native(func: Callable[..., Any], args, codes, num_args: int, ret, ret_code,
                     set_last_error: Callable[[str], None]) -> int:
    """Run a Python callable on behalf of native code (``TVMFuncCall``) and report the status.

    Arguments are converted from the packed representation; the result is written to the
    return slots. Any exception is recorded with :func:`set_pending_exception`, its text is
    stored with ``set_last_error``, and -1 is returned; it never propagates into C.

    Returns
    -------
    int
        0 on success, -1 on failure.
    """
    try:
        if num_args < 0:
            raise TVMError(f"TVMFuncCall: negative argument count {num_args!r}")
        py_args = [from_tvm_value(args[i], codes[i]) for i in range(num_args)]
        result = func(*py_args)
        _write_return(result, ret, ret_code)
        return 0
    except BaseException as exc:  # noqa: BLE001 - it must not unwind through C; re-raised later
        set_pending_exception(exc)
        set_last_error(f"{type(exc).__name__}: {exc}")
        return -1


# ----------------------------------------------------------------------------- PackedFunc
#: The packed signature with untyped pointers: the caller passes addresses, which ctypes
#: converts faster than typed pointer arguments.
_RawPackedCFunc = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_void_p,
)
_VALUE_ARRAYS = [TVMValue * max(n, 1) for n in range(9)]
_CODE_ARRAYS = [ctypes.c_int * max(n, 1) for n in range(9)]


def _value_array(n: int):
    return (_VALUE_ARRAYS[n] if n < 9 else TVMValue * n)()


def _code_array(n: int):
    return (_CODE_ARRAYS[n] if n < 9 else ctypes.c_int * n)()


class PackedFunc:
    """A function callable with the packed convention, backed by Python or native code.

    Parameters
    ----------
    func : callable
        The Python callable to wrap.
    name : str, optional
        Name used in error messages (default: the callable's ``__name__``).

    Raises
    ------
    TypeError
        If ``func`` is not callable.

    Examples
    --------
    >>> f = PackedFunc(lambda a, b: a + b, name="add")
    >>> f(1, 2)
    3
    """

    def __init__(self, func: Callable[..., Any], name: str | None = None):
        if not callable(func):
            raise TypeError(f"PackedFunc needs a callable, got {func!r}")
        self._py = func
        self._native: Any = None
        self._last_error: Callable[[], str] | None = None
        self._owner: Any = None
        self.name = name or getattr(func, "__name__", "<python function>")

    @classmethod
    def from_native(cls, address: int, name: str, last_error: Callable[[], str],
                    owner: Any = None) -> "PackedFunc":
        """Wrap the address of a native packed function.

        Parameters
        ----------
        address : int
            Address of ``int f(TVMValue*, int*, int, TVMValue*, int*, void*)``.
        name : str
            Name used in error messages.
        last_error : callable
            Returns ``TVMGetLastError()`` of the library that owns the function.
        owner : object, optional
            Kept alive as long as the function (the module whose library holds the code).

        Raises
        ------
        ValueError
            If ``address`` is NULL.
        """
        if not address:
            raise ValueError(f"native packed function {name!r} has a NULL address")
        self = cls.__new__(cls)
        self._py = None
        self._native = _RawPackedCFunc(address)
        self._last_error = last_error
        self._owner = owner
        self.name = name
        return self

    @property
    def is_native(self) -> bool:
        """True when the function is native code."""
        return self._native is not None

    def __repr__(self) -> str:
        kind = "native" if self.is_native else "python"
        return f"PackedFunc({self.name!r}, {kind})"

    def __call__(self, *args: Any) -> Any:
        """Call the function.

        Raises
        ------
        TVMError
            If native code returns a non-zero status and no Python exception was pending; the
            message is ``TVMGetLastError()`` of the owning library.
        BaseException
            An exception raised by a Python callback that the native code made while running
            (re-raised with its own type, chained to the native error).
        TypeError
            If an argument cannot be passed to native code.
        """
        if self._native is None:
            return self._py(*args)
        if getattr(self._owner, "closed", False):
            raise TVMError(f"{self.name}: its module {self._owner!r} has been closed and its code unloaded")
        n = len(args)
        values = _value_array(n)
        codes = _code_array(n)
        keep: list = []
        temps: list[int] = []
        try:
            for i, arg in enumerate(args):
                codes[i] = to_tvm_value(arg, values[i], keep, temps, index=i)
            ret = TVMValue()
            ret_code = ctypes.c_int(ArgTypeCode.NULLPTR)
            status = self._native(ctypes.addressof(values), ctypes.addressof(codes), n,
                                  ctypes.addressof(ret), ctypes.addressof(ret_code), None)
        finally:
            for handle in temps:
                handles.release(handle)
        pending = take_pending_exception()
        if status != 0:
            error = TVMError(f"{self.name}: {self._last_error()}")
            if pending is not None:
                raise pending from error
            raise error
        if pending is not None:
            # The native code ignored a failing callback; its exception is still the truth.
            raise pending
        return from_tvm_value(ret, ret_code.value)
