"""Runtime modules: named packed functions plus a tree of imported modules (DESIGN contract 3).

Kinds of module:

* :class:`LibraryModule` (type_key ``"library"``): a loaded shared library; its functions are
  the packed functions it exports, ``__tvm_main__`` names the entry function.
* :class:`~vta.runtime.cmodule.CompiledCModule` (type_key ``"c"``, in :mod:`vta.runtime.cmodule`,
  above the loader it uses): what the compiler produces, C source plus an object file.
* :class:`PyModule`: functions written in Python, for tests and for module types restored from
  a ``__tvm_dev_mblob`` by a ``runtime.module.loadbinary_<type_key>`` loader.
"""

from __future__ import annotations

import ctypes
import os
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple

from ..errors import ModuleLoadError, TVMError
from .abi import ArgTypeCode
from .capture import CaptureViews, capture
from .elf import DynamicInfo
from .packed import PackedFunc, handles
from .registry import get_global_func

__all__ = ["Module", "LibraryModule", "PyModule", "ProfileResult", "set_exporter"]

#: Symbol holding the name of the entry function.
ENTRY_SYMBOL = "__tvm_main__"


#: Writes a module tree as a library. The loader builds on this module, never the other way
#: round, so :mod:`vta.runtime.loader` installs its ``export_library`` here when imported.
_exporter: Callable[..., Path] | None = None


def set_exporter(exporter: Callable[..., Path]) -> None:
    """Make :meth:`Module.export_library` call ``exporter`` (called once, by the loader)."""
    global _exporter
    _exporter = exporter


class ProfileResult(NamedTuple):
    """What a :meth:`Module.time_evaluator` closure returns: seconds per call."""

    mean: float
    results: tuple[float, ...]


def time_calls(func: Callable[..., Any], number: int = 10, repeat: int = 1,
               min_repeat_ms: float = 0.0) -> Callable[..., ProfileResult]:
    """An evaluator timing ``func``: one warm-up call, then ``repeat`` rounds of ``number`` calls
    (``number`` doubling until a round lasts ``min_repeat_ms``); the time per call of each round.

    Raises
    ------
    ValueError
        If ``number`` or ``repeat`` is below 1 or ``min_repeat_ms`` is negative.
    """
    if number < 1 or repeat < 1 or min_repeat_ms < 0:
        raise ValueError(
            f"time_evaluator needs number >= 1, repeat >= 1 and min_repeat_ms >= 0, got "
            f"number={number!r}, repeat={repeat!r}, min_repeat_ms={min_repeat_ms!r}"
        )

    def evaluator(*args: Any) -> ProfileResult:
        func(*args)  # warm-up
        results = []
        n = number
        for _ in range(repeat):
            while True:
                start = time.perf_counter()
                for _ in range(n):
                    func(*args)
                elapsed = time.perf_counter() - start
                if elapsed * 1e3 >= min_repeat_ms:
                    break
                n *= 2
            results.append(elapsed / n)
        return ProfileResult(sum(results) / len(results), tuple(results))

    return evaluator


class Module(CaptureViews):
    """Base class of every runtime module.

    Subclasses implement :meth:`_local_function` (and, when they can, :meth:`save`,
    :meth:`get_source` and :meth:`save_to_binary`).

    Attributes
    ----------
    type_key : str
        The module kind (``"library"``, ``"c"``, or a PyModule's own key).
    """

    type_key = "module"
    #: True for modules whose code is linked into an exported shared library.
    is_dso_exportable = False

    def __init__(self) -> None:
        self._imports: list[Module] = []
        self._functions: dict[str, PackedFunc] = {}
        self._env_functions: dict[str, PackedFunc] = {}
        self._handle: int | None = None
        self._closed = False
        self._owned: list[Module] = []  # closed with this module (the library behind a loaded root)
        self._ctx_handle: int | None = None

    # ---------------------------------------------------------------- functions
    def _local_function(self, name: str) -> PackedFunc | None:
        """This module's own function ``name``, or None."""
        raise NotImplementedError

    def get_function(self, name: str, query_imports: bool = False) -> PackedFunc:
        """Look up a function of this module (and optionally of its imports, depth first).

        Raises
        ------
        AttributeError
            If no such function exists; the message names the function and the module.
        TVMError
            If the module is closed.
        """
        self._check_open()
        func = self._functions.get(name)
        if func is None:
            func = self._local_function(name)
            if func is not None:
                self._functions[name] = func
        if func is None and query_imports:
            for mod in self._imports:
                try:
                    return mod.get_function(name, query_imports=True)
                except AttributeError:
                    continue
        if func is None:
            where = " or its imports" if query_imports else ""
            raise AttributeError(f"module {self!r} has no function {name!r}{where}")
        return func

    def __getitem__(self, name: str) -> PackedFunc:
        if not isinstance(name, str):
            raise TypeError(f"function names are str, got {name!r}")
        return self.get_function(name)

    @property
    def entry_func(self) -> PackedFunc:
        """The entry function (``__tvm_main__``).

        Raises
        ------
        AttributeError
            If the module has no entry function.
        """
        return self.get_function(ENTRY_SYMBOL)

    def __call__(self, *args: Any) -> Any:
        """Call the entry function."""
        return self.entry_func(*args)

    def time_evaluator(self, func_name: str, dev: Any = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0.0) -> Callable[..., "ProfileResult"]:
        """A closure that times ``func_name``: one warm-up call, then ``repeat`` rounds of ``number``.

        Parameters
        ----------
        func_name : str
            The function to time.
        dev : Device, optional
            Accepted for compatibility (local calls need no device switch).
        number : int
            Calls per round; the round's time is divided by it.
        repeat : int
            Rounds.
        min_repeat_ms : float
            Grow ``number`` (doubling) until a round lasts at least this long.

        Returns
        -------
        callable
            ``evaluator(*args) -> ProfileResult`` with ``mean`` and ``results`` in seconds.

        Raises
        ------
        AttributeError
            If the module has no function ``func_name``.
        ValueError
            If ``number`` or ``repeat`` is below 1 or ``min_repeat_ms`` is negative.
        """
        del dev
        return time_calls(self.get_function(func_name), number, repeat, min_repeat_ms)

    # ---------------------------------------------------------------- seeing what was built
    def capture(self, *args: Any, execute: bool = False, func_name: str | None = None):
        """Call a function on ``args`` and record every instruction stream it hands the device.

        Parameters
        ----------
        *args
            The function's arguments (arrays on ``ext_dev``, as for a normal call).
        execute : bool
            Also run the streams on the device. By default they are only recorded: the outputs
            are not written and the device's statistics do not change.
        func_name : str, optional
            The function to call (default: the entry function).

        Returns
        -------
        vta.runtime.capture.Capture
            ``runs`` (one per ``VTADeviceRun``), ``disassemble()``, ``instructions()``,
            ``uop_kernels()``.

        Raises
        ------
        AttributeError
            If the module has no such function.
        TVMError
            If the call fails (bad arguments, runtime errors).
        """
        func = self.entry_func if func_name is None else self.get_function(func_name)
        with capture(execute=execute) as cap:
            func(*args)
        return cap

    def function_from_env(self, name: str) -> PackedFunc | None:
        """What ``TVMBackendGetFuncFromEnv`` finds: the imports first, then the global registry."""
        func = self._env_functions.get(name)
        if func is None:
            for mod in self._imports:
                try:
                    func = mod.get_function(name, query_imports=True)
                    break
                except AttributeError:
                    continue
            if func is None:

                func = get_global_func(name, allow_missing=True)
            if func is not None:
                self._env_functions[name] = func
        return func

    # ---------------------------------------------------------------- imports
    @property
    def imported_modules(self) -> list["Module"]:
        """The modules this one imports (a copy of the list)."""
        return list(self._imports)

    def import_module(self, module: "Module") -> None:
        """Add ``module`` to this module's imports.

        Raises
        ------
        TypeError
            If ``module`` is not a Module.
        ValueError
            If the import would make the import graph cyclic.
        """
        if not isinstance(module, Module):
            raise TypeError(f"import_module expects a Module, got {module!r}")
        if module is self or self in module._descendants():
            raise ValueError(f"importing {module!r} into {self!r} would create an import cycle")
        self._imports.append(module)
        self._env_functions.clear()

    def _descendants(self) -> list["Module"]:
        seen: dict[int, Module] = {}
        stack = list(self._imports)
        while stack:
            mod = stack.pop()
            if id(mod) not in seen:
                seen[id(mod)] = mod
                stack.extend(mod._imports)
        return list(seen.values())

    # ---------------------------------------------------------------- persistence
    def save(self, path: str | os.PathLike, fmt: str = "") -> None:
        """Save this module alone (imports are not saved; use :meth:`export_library`).

        Raises
        ------
        TVMError
            If this kind of module cannot be saved in that format.
        """
        raise TVMError(f"module {self!r} cannot be saved; only compiled C modules save to .o or .c")

    def get_source(self, fmt: str = "") -> str:
        """The module's source code.

        Raises
        ------
        TVMError
            If the module has no source.
        """
        raise TVMError(f"module {self!r} has no source code")

    def save_to_binary(self) -> bytes:
        """Serialise the module for the import blob of an exported library.

        Raises
        ------
        TVMError
            If the module type cannot be serialised.
        """
        raise TVMError(
            f"module {self!r} cannot be serialised into an exported library; give its class a "
            "save_to_binary() and register runtime.module.loadbinary_<type_key>"
        )

    def export_library(self, path: str | os.PathLike, workspace_dir: str | os.PathLike | None = None) -> Path:
        """Write this module and its imports as a shared library (``.so``) or a ``.tar``.

        See :func:`vta.runtime.loader.export_library`.

        Raises
        ------
        TVMError
            If the loader was never imported (``vta.runtime`` imports it), a module of the tree
            cannot be serialised, or the library cannot be built.
        """
        if _exporter is None:
            raise TVMError("export_library needs vta.runtime.loader; import vta.runtime first")
        return _exporter(self, path, workspace_dir=workspace_dir)

    # ---------------------------------------------------------------- lifetime and ABI
    def _check_open(self) -> None:
        if self._closed:
            raise TVMError(f"module {self!r} has been closed")

    def handle(self) -> int:
        """An opaque handle naming this module for native code (stable until :meth:`close`)."""
        self._check_open()
        if self._handle is None:
            self._handle = handles.acquire(self)
        return self._handle

    def context_handle(self) -> int:
        """A handle for a library's ``__tvm_module_ctx``: it names this module without keeping
        it alive, and dies with it (or at :meth:`close`)."""
        self._check_open()
        if self._ctx_handle is None:
            self._ctx_handle = handles.acquire_weak(self)
        return self._ctx_handle

    def _as_packed_arg(self) -> tuple[int, int]:
        return ArgTypeCode.MODULE_HANDLE, self.handle()

    def own(self, module: "Module") -> None:
        """Close ``module`` when this module is closed (the loader ties a library to its root)."""
        self._owned.append(module)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """Release the module's handle and cached functions, and close the modules it owns
        (idempotent). A library module also unloads its shared library; its functions obtained
        earlier raise :class:`~vta.errors.TVMError` when called afterwards.
        """
        if self._closed:
            return
        self._closed = True
        self._functions.clear()
        self._env_functions.clear()
        if self._handle is not None:
            handles.release(self._handle)
            self._handle = None
        if self._ctx_handle is not None:
            handles.release(self._ctx_handle)
            self._ctx_handle = None
        owned, self._owned = self._owned, []
        for mod in owned:
            mod.close()

    def __enter__(self) -> "Module":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Module(type_key={self.type_key!r})"


class LibraryModule(Module):
    """A loaded shared library (type_key ``"library"``).

    Created by the ``runtime.module.loadfile_so`` loader; see :func:`vta.runtime.load_module`.

    Parameters
    ----------
    path : Path
        The library file.
    cdll : ctypes.CDLL
        The loaded library.
    info : DynamicInfo
        Its dynamic symbols, read from the file.
    last_error : callable
        ``TVMGetLastError()`` of the runtime library it is linked against.
    runtime : NativeLibrary or None
        That runtime library, when it is one this process built.
    unload : callable, optional
        Called once when the module is closed or collected, to give up its hold on the library
        (default: ``dlclose`` of ``cdll``'s handle). The loader passes its own, which unloads a
        library shared by several modules with the last of them.
    """

    type_key = "library"

    def __init__(self, path: Path, cdll: ctypes.CDLL, info: DynamicInfo,
                 last_error: Callable[[], str], runtime: Any = None,
                 unload: Callable[[], None] | None = None):
        super().__init__()
        self.path = Path(path)
        self.cdll = cdll
        self.info = info
        self.runtime = runtime
        self._last_error = last_error
        #: The module ``__tvm_module_ctx`` names when it is not this one (a root from the blob).
        self.context_root: Module | None = None
        # The library is unloaded by close(), or when the module is garbage collected (its
        # functions keep it alive); never at interpreter exit, when nothing gains from it.
        if unload is None:
            self._unload = weakref.finalize(self, _dlclose, cdll._handle)
        else:
            self._unload = weakref.finalize(self, unload)
        self._unload.atexit = False
        # the last open module of a configuration releases its runtime's buffers (native_lib)
        self._release = None
        if hasattr(runtime, "retain"):
            runtime.retain()
            self._release = weakref.finalize(self, runtime.release)
            self._release.atexit = False

    def close(self) -> None:
        """Close the module and unload its library (``dlclose``); see :meth:`Module.close`. When
        it was the last open module linked against its configuration's runtime, that runtime's
        buffers are released (:func:`vta.runtime.native_lib.release_runtime`)."""
        super().close()
        self.cdll = None
        self._unload()
        if self._release is not None:
            self._release()

    def __repr__(self) -> str:
        return f"Module(type_key='library', path={self.path.name!r})"

    def data_symbol(self, name: str) -> bytes | None:
        """The bytes of a data symbol the library defines (bounded by its ELF size), or None.

        Raises
        ------
        ModuleLoadError
            If the symbol table places the symbol outside the library's loaded segments.
        """
        self._check_open()
        sym = self.info.data(name)
        if sym is None:
            return None
        if not sym.mapped:
            raise ModuleLoadError(
                f"{self.path.name!r}: symbol {name} ({sym.size} bytes) lies outside the library's "
                "loaded segments; the file is corrupt"
            )
        address = ctypes.addressof(ctypes.c_char.in_dll(self.cdll, name))
        return ctypes.string_at(address, sym.size) if sym.size else b""

    def entry_name(self) -> str | None:
        """The function ``__tvm_main__`` names, or None if the library has no entry symbol."""
        raw = self.data_symbol(ENTRY_SYMBOL)
        if raw is None:
            return None
        return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")

    def _local_function(self, name: str) -> PackedFunc | None:
        if name == ENTRY_SYMBOL:
            # Normally a data symbol holding the entry function's name; a function of that
            # name (the C host convention of upstream) is accepted too.
            entry = self.entry_name()
            if entry is not None:
                name = entry
        if not self.info.function(name):
            return None
        address = symbol_address(self.cdll, name)
        if address is None:
            raise ModuleLoadError(f"{self.path.name!r}: function {name} is in the symbol table but the dynamic "
                                  "loader does not find it")
        return PackedFunc.from_native(address, name, self._last_error, owner=self)


def symbol_address(cdll: ctypes.CDLL, name: str) -> int | None:
    """Address of symbol ``name`` in the loaded library ``cdll`` (``dlsym``), or None.

    Unlike ``cdll[name]``, this makes no ctypes function object: each of those refers to itself,
    garbage that only the next full collection frees.
    """
    return _libdl.dlsym(cdll._handle, name.encode())


_libdl = ctypes.CDLL(None)
_libdl.dlclose.argtypes = [ctypes.c_void_p]
_libdl.dlclose.restype = ctypes.c_int
_libdl.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_libdl.dlsym.restype = ctypes.c_void_p


def _dlclose(handle: int) -> None:
    """Drop one ``dlopen`` reference; the loader unmaps the library with its last one."""
    _libdl.dlclose(handle)


class PyModule(Module):
    """A module whose functions are Python callables.

    Parameters
    ----------
    type_key : str
        The module kind; an exported library restores it through
        ``runtime.module.loadbinary_<type_key>``.
    functions : mapping of str to callable, optional
        The module's functions.
    entry : str, optional
        Name of the function ``__tvm_main__`` resolves to.

    Raises
    ------
    TypeError
        If ``type_key`` is not a non-empty str or a function is not callable.
    """

    def __init__(self, type_key: str, functions: Mapping[str, Callable[..., Any]] | None = None,
                 entry: str | None = None):
        super().__init__()
        if not isinstance(type_key, str) or not type_key or type_key.startswith("_"):
            raise TypeError(f"type_key must be a non-empty str not starting with '_', got {type_key!r}")
        self.type_key = type_key
        self.functions = dict(functions or {})
        for fname, func in self.functions.items():
            if not callable(func):
                raise TypeError(f"function {fname!r} of a PyModule must be callable, got {func!r}")
        self.entry = entry

    def __repr__(self) -> str:
        return f"Module(type_key={self.type_key!r})"

    def _local_function(self, name: str) -> PackedFunc | None:
        if name == ENTRY_SYMBOL and self.entry is not None:
            name = self.entry
        func = self.functions.get(name)
        return None if func is None else PackedFunc(func, name=name)
