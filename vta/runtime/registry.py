"""The global function registry: named functions for the module-loading contract.

Loaders are found here by name (``runtime.module.loadfile_<fmt>``,
``runtime.module.loadbinary_<type_key>``), and host code finds functions such as
``__tvm_set_device`` through ``TVMBackendGetFuncFromEnv``. It is not an internal message bus:
Python code inside this package calls Python code by importing it.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from .packed import PackedFunc

__all__ = ["register_func", "get_global_func", "list_global_func_names", "remove_global_func"]

_lock = threading.Lock()
_functions: dict[str, PackedFunc] = {}


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a global function name must be a non-empty str, got {name!r}")
    return name


def register_func(name: str, f: Callable[..., Any] | None = None, override: bool = False):
    """Register ``f`` under ``name``, or return a decorator that does.

    Parameters
    ----------
    name : str
        The global name.
    f : callable, optional
        The function (or a :class:`PackedFunc`). When omitted, a decorator is returned that
        registers the function it decorates and returns it unchanged.
    override : bool
        Replace an existing registration instead of failing.

    Returns
    -------
    PackedFunc or callable
        The registered PackedFunc, or the decorator.

    Raises
    ------
    TypeError
        If ``name`` is not a non-empty string or ``f`` is not callable.
    ValueError
        If ``name`` is already registered and ``override`` is false.

    Examples
    --------
    >>> @register_func("demo.add", override=True)
    ... def add(a, b):
    ...     return a + b
    >>> get_global_func("demo.add")(1, 2)
    3
    """
    _check_name(name)
    if f is None:
        def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
            register_func(name, func, override=override)
            return func

        return decorator
    packed = f if isinstance(f, PackedFunc) else PackedFunc(f, name=name)
    with _lock:
        if name in _functions and not override:
            raise ValueError(
                f"global function {name!r} is already registered; pass override=True to replace it"
            )
        _functions[name] = packed
    return packed


def get_global_func(name: str, allow_missing: bool = False) -> PackedFunc | None:
    """Look a global function up by name.

    Parameters
    ----------
    name : str
        The global name.
    allow_missing : bool
        Return None instead of raising when the name is not registered.

    Raises
    ------
    TypeError
        If ``name`` is not a non-empty string.
    ValueError
        If the name is not registered and ``allow_missing`` is false.
    """
    _check_name(name)
    with _lock:
        func = _functions.get(name)
    if func is None and not allow_missing:
        raise ValueError(f"global function {name!r} is not registered")
    return func


def list_global_func_names() -> list[str]:
    """The names of every registered function, sorted."""
    with _lock:
        return sorted(_functions)


def remove_global_func(name: str) -> None:
    """Unregister a function.

    Raises
    ------
    ValueError
        If ``name`` is not registered.
    """
    _check_name(name)
    with _lock:
        if name not in _functions:
            raise ValueError(f"cannot remove global function {name!r}: it is not registered")
        del _functions[name]
