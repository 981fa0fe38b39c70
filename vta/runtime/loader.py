"""Loading modules from files and exporting them (reference tvm-vta-software.md 5.5, 5.6).

:func:`load_module` turns ``.o`` and ``.tar`` files into a shared library next to the file,
linked against the native runtime library of the current configuration (so the undefined
``VTA*``/``TVM*`` symbols of host code resolve to it), then dispatches on the format to the
loader registered as ``runtime.module.loadfile_<fmt>``. The ``so`` loader opens the library,
fills its ``__TVM*`` context pointers, restores the modules of its ``__tvm_dev_mblob`` and
points ``__tvm_module_ctx`` at the root. :func:`export_library` writes exactly that format.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Callable

from ..atomic import publish
from ..env import get_env
from ..errors import BuildError, ModuleLoadError, TVMError
from . import elf
from .blob import BLOB_SYMBOL, blob_c_source, pack_blob, unpack_blob
from .module import LibraryModule, Module, set_exporter, symbol_address
from .native_lib import (INCLUDE_DIR, LOAD_MODE, NativeLibrary, compile_shared, global_runtime, loaded_libraries,
                         runtime_library)
from .registry import get_global_func, list_global_func_names, register_func

__all__ = ["load_module", "export_library", "load_library_module", "opened_libraries"]

_LOADFILE = "runtime.module.loadfile_"
_LOADBINARY = "runtime.module.loadbinary_"
#: Suffixes that mean a shared library.
_SO_ALIASES = ("so", "dll", "dylib", "dso")
#: Context pointers a library may define, filled with the runtime's functions (``__<name>``).
_CONTEXT_FUNCTIONS = (
    "TVMFuncCall", "TVMAPISetLastError", "TVMBackendGetFuncFromEnv", "TVMBackendAllocWorkspace",
    "TVMBackendFreeWorkspace", "TVMBackendParallelLaunch", "TVMBackendParallelBarrier",
)
_MODULE_CTX = "__tvm_module_ctx"
#: File name prefix of the native runtime libraries (``libvta_rt_<key>.so``, see native_lib).
_RUNTIME_PREFIX = "libvta_rt_"


def _registered(prefix: str) -> list[str]:
    return [name[len(prefix):] for name in list_global_func_names() if name.startswith(prefix)]


# ----------------------------------------------------------------------------- linking
def _link(inputs: list[Path], output: Path) -> Path:
    """Link objects (and C files) into ``output``, against the current runtime library."""
    runtime = runtime_library(get_env())
    try:
        return compile_shared(
            inputs, output, include_dirs=(INCLUDE_DIR,), libraries=[runtime.path],
            flags=[f"-Wl,-rpath,{runtime.path.parent}"],
        )
    except BuildError as exc:
        names = ", ".join(p.name for p in inputs)
        raise ModuleLoadError(f"cannot link {names} into a shared library: {exc}") from exc


def _untar(path: Path) -> list[Path]:
    """Unpack a tar into a fresh directory next to it and return its regular files."""
    try:
        target = Path(tempfile.mkdtemp(prefix=f"{path.name}.", dir=path.parent))
    except OSError as exc:
        raise ModuleLoadError(f"cannot unpack {str(path)!r} next to it: {exc}") from exc
    try:
        with tarfile.open(path) as tar:
            tar.extractall(target, filter="data")
    except (tarfile.TarError, OSError) as exc:
        shutil.rmtree(target, ignore_errors=True)
        raise ModuleLoadError(f"cannot unpack {str(path)!r}: {exc}") from exc
    members = sorted(p for p in target.rglob("*") if p.is_file())
    if not members:
        raise ModuleLoadError(f"{str(path)!r} holds no files to link")
    return members


def load_module(path: str | os.PathLike, fmt: str = "") -> Module:
    """Load a module from a file.

    Parameters
    ----------
    path : path
        A shared library (``.so``; ``.dll``, ``.dylib``, ``.dso`` are treated alike), an object
        file (``.o``), a ``.tar`` of objects and C files, or a file of any format a loader is
        registered for.
    fmt : str, optional
        The format, instead of the file suffix.

    Returns
    -------
    Module
        The root module (a registered loader may return its own module class with a
        ``type_key``, as ``runtime.module.loadfile_vta-tsim`` does).

    Raises
    ------
    ModuleLoadError
        If the file does not exist, cannot be linked or loaded, its import blob is corrupt, or
        no loader is registered for its format (the message lists the registered ones).
    """
    p = Path(path)
    if not p.is_file():
        raise ModuleLoadError(f"module file {str(path)!r} does not exist or is not a file")
    p = p.resolve()
    fmt = fmt or p.suffix.lstrip(".")
    if fmt in ("o", "obj"):
        p, fmt = _link([p], p.with_name(p.name + ".so")), "so"
    elif fmt == "tar":
        p, fmt = _link(_untar(p), p.with_name(p.name + ".so")), "so"
    if fmt in _SO_ALIASES:
        fmt = "so"
    loader = get_global_func(_LOADFILE + fmt, allow_missing=True)
    if loader is None:
        raise ModuleLoadError(
            f"unknown module format {fmt!r} of {str(path)!r}; registered formats: {_registered(_LOADFILE)} "
            "(plus 'o' and 'tar', which are linked into 'so')"
        )
    module = loader(str(p), fmt)
    # Loaders outside this package (the tsim hardware library) may return their own module
    # class; anything with a type_key is accepted.
    if not isinstance(module, Module) and not isinstance(getattr(module, "type_key", None), str):
        raise ModuleLoadError(f"loader {_LOADFILE + fmt} returned {module!r}, not a module (no type_key)")
    return module


# ----------------------------------------------------------------------------- the so loader
def _runtime_for(info: elf.DynamicInfo, path: Path) -> NativeLibrary | None:
    """The runtime library ``path`` was linked against, loaded (and bound to the DRAM arena).

    A library exported by another process names a runtime library this process has not loaded
    yet: when it is the current configuration's, it is loaded now, through
    :func:`runtime_library`, so that its hooks run before the library's code is called.

    Raises
    ------
    ModuleLoadError
        If the library needs a runtime library of another configuration.
    """
    needed = set(info.needed)
    for lib in loaded_libraries():
        if lib.path.name in needed:
            return lib
    wanted = sorted(n for n in needed if n.startswith(_RUNTIME_PREFIX))
    if not wanted:
        return None
    current = runtime_library(get_env())
    if current.path.name in needed:
        return current
    raise ModuleLoadError(
        f"{path.name!r} was linked against the VTA runtime {wanted[0]!r}, built for another configuration "
        f"than the current one (whose runtime is {current.path.name!r}); load it under the configuration it "
        "was built for (VTA_CONFIG) or rebuild it"
    )


def _runtime_address(cdll: ctypes.CDLL, runtime: NativeLibrary | None, name: str) -> int:
    """Address of ``name`` in the runtime the library was linked against, else in the current one.

    Raises
    ------
    ModuleLoadError
        If that runtime does not define ``name``.
    """
    # Without a runtime of this process, resolved through the library's own dependencies (the
    # runtime it was linked against), then in the current configuration's.
    for lib in (runtime.cdll,) if runtime is not None else (cdll, runtime_library(get_env()).cdll):
        address = symbol_address(lib, name)
        if address is not None:
            return address
    raise ModuleLoadError(f"the VTA runtime the library is bound to defines no {name}")


#: ``const char* TVMGetLastError(void)``.
_GetLastError = ctypes.CFUNCTYPE(ctypes.c_char_p)


def _error_reader(cdll: ctypes.CDLL, runtime: NativeLibrary | None) -> Callable[[], str]:
    if runtime is not None:
        return runtime.last_error
    getter = _GetLastError(_runtime_address(cdll, runtime, "TVMGetLastError"))
    return lambda: (getter() or b"").decode("utf-8", errors="replace")


def _check_pointer(info: elf.DynamicInfo, name: str, path: Path) -> None:
    """Require the data symbol ``name`` to be a pointer variable the loader may store into."""
    sym = info.data(name)
    if sym.size < ctypes.sizeof(ctypes.c_void_p) or not sym.writable:
        raise ModuleLoadError(
            f"{path.name!r}: {name} must be a writable pointer variable, but it is {sym.size} bytes "
            f"in a {'writable' if sym.writable else 'read-only'} segment"
        )


def _store_pointer(cdll: ctypes.CDLL, info: elf.DynamicInfo, name: str, value: int, path: Path) -> None:
    """Store ``value`` into the pointer variable ``name`` after checking it can hold it."""
    _check_pointer(info, name, path)
    ctypes.c_void_p.in_dll(cdll, name).value = value


def _fill_context(cdll: ctypes.CDLL, info: elf.DynamicInfo, runtime: NativeLibrary | None,
                  path: Path) -> None:
    for name in _CONTEXT_FUNCTIONS:
        if info.data(f"__{name}") is not None:
            address = _runtime_address(cdll, runtime, name)
            _store_pointer(cdll, info, f"__{name}", address, path)


class _Library:
    """One ``dlopen`` of a library file, shared by the modules loaded from it while any is open.

    ``identity`` is the file's (device, inode, size, mtime) when it was opened; ``cdll`` is None
    once the last module let go but the dynamic loader keeps the file mapped for another reason
    (a later load of a changed file must then go through a private copy).
    """

    __slots__ = ("key", "name", "identity", "cdll", "users")

    def __init__(self, key: str, name: str, identity: tuple[int, int, int, int], cdll: ctypes.CDLL | None):
        self.key = key
        self.name = name  # as given to dlopen, which the dynamic loader matches names against
        self.identity = identity
        self.cdll = cdll
        self.users = 1


# Reentrant: a module collected while the lock is held (gc runs at any allocation) releases its
# library through _release on the same thread.
_opened_lock = threading.RLock()
#: Resolved path -> the library loaded from it, while a module uses it (or the dynamic loader
#: still maps it). Entries go with the last module of their library, so the table is bounded by
#: the libraries actually loaded, however many distinct files a long-lived process loads.
_opened: dict[str, _Library] = {}
_libdl = ctypes.CDLL(None)
_libdl.dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libdl.dlopen.restype = ctypes.c_void_p
_libdl.dlclose.argtypes = [ctypes.c_void_p]
_libdl.dlclose.restype = ctypes.c_int


def opened_libraries() -> list[str]:
    """Paths of the libraries :func:`load_module` holds open (or the dynamic loader still maps).

    For diagnostics and tests: each entry is released with the last module loaded from it.
    """
    with _opened_lock:
        return sorted(_opened)


def _cdll(path: Path, shown: Path) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(str(path), mode=LOAD_MODE)
    except OSError as exc:
        raise ModuleLoadError(f"cannot load {str(shown)!r}: {exc}") from exc


def _still_mapped(path: str) -> bool:
    """True if the dynamic loader still has ``path`` loaded (``RTLD_NOLOAD`` takes no new load)."""
    noload = getattr(os, "RTLD_NOLOAD", None)
    if noload is None:
        return True  # cannot tell: assume it stays, so a changed file is loaded from a copy
    handle = _libdl.dlopen(path.encode(), os.RTLD_LAZY | noload)
    if not handle:
        return False
    _libdl.dlclose(handle)
    return True


def _release(lib: _Library) -> None:
    """One module less on ``lib``; the last one unloads it and drops its entry."""
    with _opened_lock:
        lib.users -= 1
        if lib.users > 0 or lib.cdll is None:
            return
        handle, lib.cdll = lib.cdll._handle, None
        _libdl.dlclose(handle)
        if _opened.get(lib.key) is lib and not _still_mapped(lib.name):
            del _opened[lib.key]


def _dlopen(path: Path) -> tuple[ctypes.CDLL, Callable[[], None]]:
    """``dlopen`` that shares one handle per library and sees a library rewritten in place.

    Modules loaded from the same unchanged file share one :class:`ctypes.CDLL` (the dynamic
    loader would hand back the same mapping anyway); the returned release function gives up one
    module's hold, and the last one unloads the library. The dynamic loader hands back the
    library already mapped under the same name however the file changed since (``vadd.o``
    rebuilt and reloaded while the old module lives); a changed file is therefore opened through
    a private copy, which its module unloads alone.

    Raises
    ------
    ModuleLoadError
        If the library cannot be loaded.
    """
    st = path.stat()
    identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    key = str(path.resolve())
    with _opened_lock:
        lib = _opened.get(key)
        if lib is None or (lib.cdll is None and (lib.identity == identity or not _still_mapped(lib.name))):
            lib = _Library(key, str(path), identity, _cdll(path, path))
            _opened[key] = lib
            return lib.cdll, functools.partial(_release, lib)
        if lib.identity == identity:
            lib.users += 1
            return lib.cdll, functools.partial(_release, lib)
    with tempfile.TemporaryDirectory(prefix="vta_reload_") as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        cdll = _cdll(copy, path)  # the mapping outlives the file
    return cdll, functools.partial(_dlclose_handle, cdll._handle)


def _dlclose_handle(handle: int) -> None:
    _libdl.dlclose(handle)


def _expose_runtime(info: elf.DynamicInfo, path: Path) -> None:
    """Make the current configuration's runtime global when a library linked against no runtime
    uses its symbols (upstream loads its runtime with ``RTLD_GLOBAL`` for such libraries).

    Raises
    ------
    ModuleLoadError
        If another configuration's runtime is already global: its symbols would be used.
    """
    current = runtime_library(get_env())
    used = sorted(info.undefined & current.exports)
    if not used:
        return
    active = global_runtime()
    if active is not None and active is not current:
        raise ModuleLoadError(
            f"{path.name!r} is linked against no VTA runtime and uses {', '.join(used[:3])}...; the symbols in "
            f"the global scope are those of configuration {active.env.BITSTREAM!r}, not of the current "
            f"{current.env.BITSTREAM!r}. Load its object file (.o) instead, which links it against the "
            "right runtime, or use one configuration per process"
        )
    try:
        current.make_global()
    except TVMError as exc:
        raise ModuleLoadError(f"cannot load {path.name!r}: {exc}") from exc


def load_library_module(path: str | os.PathLike, fmt: str = "so") -> Module:
    """``runtime.module.loadfile_so``: open a shared library and restore its module tree.

    The library's ``__TVM*`` context pointers are set to the functions of the runtime library
    it is linked against (else the current configuration's), and ``__tvm_module_ctx`` to a
    handle of the root module. A library linked against no runtime first gets the current
    configuration's runtime in the global symbol scope. Closing (or dropping) the root module
    unloads the library.

    Raises
    ------
    ModuleLoadError
        If the file is not a loadable ELF64 library or its import blob is corrupt.
    """
    path = Path(path)
    info = elf.read_dynamic_info(path)
    runtime = _runtime_for(info, path)
    if runtime is None:
        _expose_runtime(info, path)
    cdll, unload = _dlopen(path)
    try:
        reader = _error_reader(cdll, runtime)
    except BaseException:
        unload()
        raise
    lib_module = LibraryModule(path, cdll, info, reader, runtime, unload=unload)
    try:
        _fill_context(cdll, info, runtime, path)
        has_ctx = info.data(_MODULE_CTX) is not None
        if has_ctx:
            _check_pointer(info, _MODULE_CTX, path)  # before the root takes a handle
        root: Module = lib_module
        blob = lib_module.data_symbol(BLOB_SYMBOL)
        if blob is not None:
            root = unpack_blob(
                blob, lib_module, path.name,
                lambda key: get_global_func(_LOADBINARY + key, allow_missing=True),
                lambda: _registered(_LOADBINARY),
            )
        if has_ctx:
            ctypes.c_void_p.in_dll(cdll, _MODULE_CTX).value = root.context_handle()
    except BaseException:
        lib_module.close()  # unload what could not become a module
        raise
    if root is not lib_module:
        root.own(lib_module)  # closing the root unloads the library
        lib_module.context_root = root  # the library's code names the root: keep it alive with it
    return root


register_func(_LOADFILE + "so", load_library_module, override=True)


# ----------------------------------------------------------------------------- export
def export_library(module: Module, path: str | os.PathLike,
                   workspace_dir: str | os.PathLike | None = None) -> Path:
    """Write ``module`` with its imports as a shared library (``.so``) or a ``.tar``.

    The modules compiled to objects are saved as ``lib<i>.o``; when the tree holds other
    modules (or imports at all), a generated ``devc.c`` carries ``__tvm_dev_mblob``. A ``.so``
    is linked against the current runtime library; a ``.tar`` holds the files, and
    :func:`load_module` links them.

    Parameters
    ----------
    module : Module
        The root.
    path : path
        Output file ending in ``.so`` (``.dll``, ``.dylib``, ``.dso``) or ``.tar``.
    workspace_dir : path, optional
        Where the intermediate files go (default: a temporary directory, removed afterwards).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ValueError
        If the suffix is not one of the accepted ones.
    TVMError
        If an imported module cannot be serialised, or the library cannot be built.
    """
    out = Path(path)
    kind = out.suffix.lstrip(".")
    if kind not in (*_SO_ALIASES, "tar"):
        raise ValueError(f"cannot export a library to {str(path)!r}; accepted suffixes: .so, .dll, .dylib, .dso, .tar")
    blob, dso_modules = pack_blob(module)
    with tempfile.TemporaryDirectory(prefix="vta_export_", dir=workspace_dir) as ws:
        files = []
        for i, mod in enumerate(dso_modules):
            obj = Path(ws) / f"lib{i}.o"
            mod.save(obj)
            files.append(obj)
        if module.imported_modules or not module.is_dso_exportable:
            devc = Path(ws) / "devc.c"
            devc.write_text(blob_c_source(blob))
            files.append(devc)
        if kind == "tar":
            _write_tar(files, out)
        else:
            try:
                _link(files, out)
            except ModuleLoadError as exc:
                raise TVMError(f"cannot export {module!r} to {out.name!r}: {exc}") from exc
    return out


def _write_tar(files: list[Path], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    try:
        with tarfile.open(tmp, "w") as tar:
            for f in files:
                tar.add(f, arcname=f.name)
        publish(tmp, out)
    finally:
        Path(tmp).unlink(missing_ok=True)


set_exporter(export_library)
