"""Building and loading the native runtime library, and the system C compiler helpers.

:func:`runtime_library` compiles every ``vta/runtime/native/*.c`` (the TVM C ABI functions of
``c_runtime_api.c`` and the VTA runtime) together with a header generated from the
configuration (``hw_spec.h`` = :func:`vta.isa.c_header`) into one shared library per
configuration, cached on disk under a content key and in memory per process. Each library is
loaded with ``RTLD_LOCAL | RTLD_DEEPBIND``, so libraries of several configurations coexist in
one process (each binds its own symbols first); host modules are linked against the library of
their configuration (see :mod:`vta.runtime.loader`). A library linked without any runtime (a
plain ``cc -shared`` of a host object) needs the runtime's symbols in the global scope, as
upstream's ``RTLD_GLOBAL`` load of its runtime provided: :meth:`NativeLibrary.make_global`
puts one configuration's library there (:func:`global_runtime` says which).

After loading, the library gets the Python callbacks behind ``TVMBackendGetFuncFromEnv`` and
``TVMFuncCall``, and every hook registered with :func:`on_load` runs (the VTA runtime uses
this to hand the library the DRAM arena and the device callbacks).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..atomic import crash_point, publish
from ..cache import cache_dir, content_key
from ..env import Environment, get_env
from ..errors import BuildError, TVMError
from .abi import FuncCallCallback, GetFuncFromEnvCallback
from .elf import read_dynamic_info
from .packed import PackedFunc, call_from_native, handles, set_pending_exception

__all__ = [
    "NativeLibrary", "runtime_library", "on_load", "loaded_libraries", "global_runtime", "release_runtime",
    "LOAD_MODE", "NATIVE_DIR", "INCLUDE_DIR", "C_FLAGS", "OBJECT_FLAGS", "TUNING_OBJECT_FLAGS", "object_flags",
    "c_compiler", "compile_shared", "compile_object",
]

#: Directory of the runtime's C sources.
NATIVE_DIR = Path(__file__).resolve().parent / "native"
#: Headers host code and the runtime include (``tvm_c_abi.h``, ``vta_runtime.h``).
INCLUDE_DIR = NATIVE_DIR / "include"
#: Flags of every runtime library build.
C_FLAGS = ("-O2", "-fPIC", "-shared", "-std=c11")

#: ``dlopen`` mode of runtime and module libraries: private symbols, own definitions first.
LOAD_MODE = os.RTLD_LOCAL | getattr(os, "RTLD_DEEPBIND", 0)

_lock = threading.RLock()
_global: "NativeLibrary | None" = None  # the runtime library in the global symbol scope
_by_key: dict[str, "NativeLibrary"] = {}
_by_env: dict[Environment, "NativeLibrary"] = {}
_hooks: list[Callable[["NativeLibrary", Environment], Any]] = []


# ----------------------------------------------------------------------------- compiler helpers
def c_compiler() -> str:
    """The system C compiler: ``$CC`` if set, else ``cc``, as an absolute path.

    Raises
    ------
    BuildError
        If the compiler cannot be found on ``PATH``.
    """
    name = os.environ.get("CC") or "cc"
    path = shutil.which(name)
    if path is None:
        raise BuildError(f"C compiler {name!r} not found on PATH; install gcc or set CC")
    return path


def _run(cmd: Sequence[str], what: str) -> None:
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, check=False)
    except OSError as exc:
        raise BuildError(f"{what}: cannot run {cmd[0]!r}: {exc}") from exc
    if proc.returncode != 0:
        raise BuildError(
            f"{what} failed (exit status {proc.returncode}).\ncommand: {' '.join(cmd)}\n"
            f"{proc.stderr.strip()}"
        )


def _atomic_build(output: Path, build: Callable[[Path], None]) -> Path:
    """Run ``build(temp_path)`` next to ``output`` and rename the result into place."""
    output = Path(output)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent)
        os.close(fd)
    except OSError as exc:
        raise BuildError(f"cannot write {str(output)!r}: {exc}") from exc
    tmp_path = Path(tmp)
    try:
        build(tmp_path)
        crash_point("atomic.partial")  # built beside the destination, not yet published
        publish(tmp_path, output)  # synced, then renamed: a crash leaves no torn library
    except OSError as exc:
        raise BuildError(f"cannot write {str(output)!r}: {exc}") from exc
    finally:
        tmp_path.unlink(missing_ok=True)
    return output


def compile_shared(sources: Iterable[str | os.PathLike], output: str | os.PathLike, *,
                   include_dirs: Iterable[str | os.PathLike] = (),
                   flags: Iterable[str] = (), soname: str | None = None,
                   libraries: Iterable[str | os.PathLike] = ()) -> Path:
    """Compile and link C sources and objects into a shared library, atomically.

    Parameters
    ----------
    sources : iterable of path
        ``.c`` files and object files; shared libraries listed here are linked as dependencies.
    output : path
        The library to write; it appears only once complete.
    include_dirs : iterable of path
        ``-I`` directories.
    flags : iterable of str
        Extra compiler and linker flags (e.g. ``-Wl,-rpath,...``), after the inputs.
    soname : str, optional
        ``DT_SONAME`` of the library.
    libraries : iterable of path
        Shared libraries to depend on even if no symbol of theirs is referenced yet
        (``DT_NEEDED`` is kept despite ``--as-needed``).

    Returns
    -------
    Path
        ``output``.

    Raises
    ------
    BuildError
        If the compiler fails; the message holds its standard error.
    """
    cc = c_compiler()
    srcs = [str(s) for s in sources]
    incs = [f"-I{d}" for d in include_dirs]
    libs = [str(lib) for lib in libraries]
    extra = (["-Wl,--no-as-needed", *libs] if libs else []) + list(flags)
    extra += [f"-Wl,-soname,{soname}"] if soname else []

    def build(tmp: Path) -> None:
        _run([cc, *C_FLAGS, *incs, "-o", str(tmp), *srcs, *extra], f"building {Path(output).name}")

    return _atomic_build(Path(output), build)


#: Flags of every object file (generated host code and hand-written kernels) besides ``-c``.
#: ``-O1``: generated host code is a driver (argument checks and loops around calls of the VTA
#: runtime, which is itself built with ``-O2``; its uop-recording functions run once per kernel),
#: so its time goes to the runtime and the device (one ResNet-18 layer on fsim: 2.0 ms of CPU per
#: call at ``-O1``, 2.2 ms at ``-O2``), while ``-O2`` costs the C compiler 60% more than ``-O1``
#: (ResNet-18's 22 functions: 4.0 s against 2.5 s of CPU).
OBJECT_FLAGS = ("-fPIC", "-O1", "-std=c99", "-Wall", "-Wno-unused-variable", "-Wno-unused-function",
                "-Werror=implicit-function-declaration")


#: Flags of throwaway objects whose host code speed does not matter, e.g. the candidates a tuner
#: builds once and runs once on a simulator (device cycles do not depend on the host code):
#: ``-O0`` costs the C compiler about 40% less than ``-O1``.
TUNING_OBJECT_FLAGS = ("-fPIC", "-O0") + OBJECT_FLAGS[2:]

_FLAGS = threading.local()


@contextlib.contextmanager
def object_flags(flags: Iterable[str]):
    """Compile the objects of this thread with ``flags`` instead of :data:`OBJECT_FLAGS` inside
    the ``with`` block (an explicit ``flags=`` of :func:`compile_object` still wins)."""
    stack = _FLAGS.__dict__.setdefault("stack", [])
    stack.append(tuple(flags))
    try:
        yield
    finally:
        stack.pop()


def compile_object(source: str | os.PathLike, name: str | None = None, *, output: str | os.PathLike | None = None,
                   include_dirs: Iterable[str | os.PathLike] = (INCLUDE_DIR,),
                   flags: Iterable[str] | None = None) -> Path:
    """Compile one C translation unit to a position-independent object file.

    Objects are cached under ``vta.cache.cache_dir("codegen")``, keyed by the source, the compiler,
    the flags and every header of ``include_dirs``, so rebuilding an unchanged unit costs a hash.

    Parameters
    ----------
    source : str or path-like
        The C source text (a ``str``) or the ``.c`` file to compile (a path object).
    name : str, optional
        A label for the cached file name and messages (default: the file's stem, or ``module``).
    output : path-like, optional
        Where to copy the object, atomically. Without it the cached object is returned: callers
        copy it, they never modify it.
    include_dirs : iterable of path
        ``-I`` directories (default: the runtime's C ABI headers).
    flags : iterable of str
        Compiler flags (default: those of the innermost :func:`object_flags` block, else
        :data:`OBJECT_FLAGS`).

    Returns
    -------
    Path
        ``output``, or the cached object.

    Raises
    ------
    BuildError
        If the compiler is missing, the file cannot be read, or the compiler rejects the source
        (the message holds its diagnostics). Nothing is left half-written.
    TypeError
        If ``name`` is not a plain label (an output path passed positionally).
    """
    if name is not None and (not isinstance(name, str) or not name or "/" in name):
        raise TypeError(f"compile_object: name {name!r} must be a label without '/' (pass the object file to "
                        "write as output=)")
    cc = c_compiler()
    if isinstance(source, str):
        text, name = source, name or "module"
    else:
        path = Path(source)
        name = name or path.stem
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise BuildError(f"cannot read the C source {str(path)!r}: {exc}") from exc
    if flags is None:
        stack = getattr(_FLAGS, "stack", None)
        flags = stack[-1] if stack else OBJECT_FLAGS
    flags = tuple(flags)
    incs = [Path(d) for d in include_dirs]
    headers = [h.read_bytes() for d in incs if d.is_dir() for h in sorted(d.glob("*.h"))]
    key = content_key([text, cc, " ".join(flags), *map(str, incs), *headers])
    obj = cache_dir("codegen") / f"{name}-{key}.o"
    if not obj.is_file():
        with tempfile.TemporaryDirectory(prefix="vta_cc_") as tmp:
            src = Path(tmp) / f"{name}.c"
            src.write_text(text)

            def build(tmp_obj: Path) -> None:
                _run([cc, "-c", *flags, *(f"-I{d}" for d in incs), "-o", str(tmp_obj), str(src)],
                     f"compiling {name!r}")

            _atomic_build(obj, build)
    if output is None:
        return obj
    return _atomic_build(Path(output), lambda tmp: shutil.copyfile(obj, tmp))


# ----------------------------------------------------------------------------- the library
class NativeLibrary:
    """One loaded native runtime library (one per configuration and source state).

    Attributes
    ----------
    path : Path
        The shared library file.
    key : str
        Content key of its sources, generated header and compiler flags.
    env : Environment
        The configuration it was built for.
    cdll : ctypes.CDLL
        The loaded library (:data:`LOAD_MODE`).
    """

    def __init__(self, path: Path, key: str, env: Environment):
        self.path = Path(path)
        self.key = key
        self.env = env
        self.cdll = ctypes.CDLL(str(self.path), mode=LOAD_MODE)
        self._exports: frozenset[str] | None = None
        self._get_last_error = self.cdll.TVMGetLastError
        self._get_last_error.restype = ctypes.c_char_p
        self._get_last_error.argtypes = []
        self._set_last_error = self.cdll.TVMAPISetLastError
        self._set_last_error.restype = None
        self._set_last_error.argtypes = [ctypes.c_char_p]
        self._install_callbacks()
        #: Library modules linked against this runtime that are open (:meth:`retain`).
        self.modules = 0

    def __repr__(self) -> str:
        return f"NativeLibrary({self.path.name!r})"

    def last_error(self) -> str:
        """``TVMGetLastError()`` of this library in the calling thread."""
        raw = self._get_last_error()
        return raw.decode("utf-8", errors="replace") if raw else ""

    def set_last_error(self, message: str) -> None:
        """``TVMAPISetLastError(message)`` in the calling thread."""
        self._set_last_error(message.encode("utf-8", errors="replace").replace(b"\0", b"?"))

    @property
    def exports(self) -> frozenset[str]:
        """Names of the dynamic symbols the library defines (read from the file once)."""
        if self._exports is None:
            self._exports = frozenset(read_dynamic_info(self.path).symbols)
        return self._exports

    def make_global(self) -> None:
        """Put this library's symbols into the process's global scope (``RTLD_GLOBAL``).

        Libraries opened afterwards resolve their undefined ``VTA*``/``TVM*`` symbols to it.
        Only one runtime library may be global (the scope cannot be undone); modules linked
        against another configuration's library still bind to theirs (``RTLD_DEEPBIND``).

        Raises
        ------
        TVMError
            If another configuration's runtime library is already global, or ``dlopen`` fails.
        """
        global _global
        with _lock:
            if _global is self:
                return
            if _global is not None:
                raise TVMError(
                    f"the runtime library of configuration {_global.env.BITSTREAM!r} is already in the global "
                    f"symbol scope; that of {self.env.BITSTREAM!r} cannot join it"
                )
            try:
                ctypes.CDLL(str(self.path), mode=os.RTLD_GLOBAL | getattr(os, "RTLD_NOLOAD", 0) | LOAD_MODE)
            except OSError as exc:
                raise TVMError(f"cannot make {self.path.name!r} global: {exc}") from exc
            _global = self

    def retain(self) -> None:
        """Count one more open library module linked against this runtime."""
        with _lock:
            self.modules += 1

    def release(self) -> None:
        """Count one library module less; with the last one, :func:`release_runtime`."""
        with _lock:
            self.modules = max(self.modules - 1, 0)
            if self.modules:
                return
        release_runtime(self)

    def staging_buffers(self) -> int:
        """How many of the runtime's two staging buffers (32 MiB each) are allocated in the arena."""
        fn = self.cdll.VTABridgeStagingBuffers
        fn.restype = ctypes.c_uint32
        fn.argtypes = []
        return int(fn())

    def symbol_address(self, name: str) -> int:
        """Address of an exported symbol.

        Raises
        ------
        AttributeError
            If the library does not export ``name``.
        """
        return ctypes.cast(getattr(self.cdll, name), ctypes.c_void_p).value

    def _install_callbacks(self) -> None:
        lib = self

        def get_func_from_env(mod_handle, name, out) -> int:
            try:
                fname = name.decode("utf-8", errors="replace") if name else ""
                if mod_handle:
                    func = handles.get(mod_handle).function_from_env(fname)
                    where = "the module's imports or the global registry"
                else:
                    from .registry import get_global_func  # registry imports packed, not us

                    func = get_global_func(fname, allow_missing=True)
                    where = "the global registry (no module context)"
                if func is None:
                    lib.set_last_error(f"TVMBackendGetFuncFromEnv: function {fname!r} not found in {where}")
                    return -1
                # Host code caches the handle for the life of the process: keep it alive.
                out[0] = handles.acquire(func)
                return 0
            except BaseException as exc:  # noqa: BLE001 - must not unwind through C; re-raised later
                set_pending_exception(exc)
                lib.set_last_error(f"TVMBackendGetFuncFromEnv: {type(exc).__name__}: {exc}")
                return -1

        def func_call(handle, args, codes, num_args, ret, ret_code) -> int:
            try:
                func = handles.get(handle)
                if not isinstance(func, PackedFunc):
                    raise TVMError(f"TVMFuncCall: handle {handle!r} names a {type(func).__name__}, not a function")
            except TVMError as exc:
                lib.set_last_error(str(exc))
                return -1
            return call_from_native(func, args, codes, num_args, ret, ret_code, lib.set_last_error)

        # Keep the ctypes thunks alive as long as the library.
        self._callbacks = (GetFuncFromEnvCallback(get_func_from_env), FuncCallCallback(func_call))
        setter = self.cdll.VTART_SetCallbacks
        setter.restype = None
        setter.argtypes = [GetFuncFromEnvCallback, FuncCallCallback]
        setter(*self._callbacks)


def release_runtime(lib: NativeLibrary) -> None:
    """Release what a configuration's runtime holds: its queue's buffers and its two staging
    buffers in the DRAM arena (64 MiB; allocated again on next use), and forget it, so that the
    next :func:`runtime_library` of the configuration loads it afresh (the same loaded file). A
    runtime in the global symbol scope stays known. Called when the last library module linked
    against it closes (:meth:`NativeLibrary.release`), so one process can go through any number
    of configurations.
    """
    with _lock:
        if lib.modules:
            return
        fn = lib.cdll.VTABridgeRelease
        fn.restype = None
        fn.argtypes = []
        fn()
        if lib is _global:
            return
        for env in [e for e, known in _by_env.items() if known is lib]:
            del _by_env[env]
        if _by_key.get(lib.key) is lib:
            del _by_key[lib.key]


def global_runtime() -> NativeLibrary | None:
    """The runtime library whose symbols are in the global scope (:meth:`NativeLibrary.make_global`)."""
    return _global


def on_load(fn: Callable[[NativeLibrary, Environment], Any]) -> Callable[[NativeLibrary, Environment], Any]:
    """Register ``fn(lib, env)`` to run whenever a runtime library is loaded.

    It also runs at once for every library already loaded in this process. Usable as a
    decorator; registering the same function twice has no further effect.

    Raises
    ------
    TypeError
        If ``fn`` is not callable.
    """
    if not callable(fn):
        raise TypeError(f"on_load needs a callable fn(lib, env), got {fn!r}")
    with _lock:
        if fn in _hooks:
            return fn
        _hooks.append(fn)
        loaded = list(_by_key.values())
    for lib in loaded:
        fn(lib, lib.env)
    return fn


def loaded_libraries() -> list[NativeLibrary]:
    """The runtime libraries loaded in this process."""
    with _lock:
        return list(_by_key.values())


def _sources() -> list[Path]:
    return sorted(p for p in NATIVE_DIR.glob("*.c") if p.is_file())


def runtime_library(env: Environment | None = None) -> NativeLibrary:
    """Build (if needed) and load the native runtime library of a configuration.

    Parameters
    ----------
    env : Environment, optional
        The configuration (default: the current one).

    Returns
    -------
    NativeLibrary
        The same object for every call with this configuration in this process.

    Raises
    ------
    BuildError
        If the compiler fails (the message holds its standard error) or the library cannot be
        loaded.
    """
    env = env or get_env()
    with _lock:
        lib = _by_env.get(env)
        if lib is not None:
            return lib
        from .. import isa  # the ISA module is large; import on first build only

        header = isa.c_header(env)
        sources = _sources()
        cc = c_compiler()
        parts: list[bytes | str] = [cc, " ".join(C_FLAGS), header]
        for src in sources + sorted(INCLUDE_DIR.glob("*.h")):
            parts += [src.name, src.read_bytes()]
        key = content_key(parts)
        lib = _by_key.get(key)
        if lib is None:
            lib = _load(_build(key, header, sources), key, env)
            for hook in list(_hooks):
                hook(lib, env)
            _by_key[key] = lib
        _by_env[env] = lib
        return lib


def _build(key: str, header: str, sources: list[Path]) -> Path:
    name = f"libvta_rt_{key}.so"
    out = cache_dir("native") / name
    if out.exists():
        return out
    with tempfile.TemporaryDirectory(prefix=f"gen_{key}_", dir=out.parent) as gen:
        (Path(gen) / "hw_spec.h").write_text(header)
        compile_shared(sources, out, include_dirs=(INCLUDE_DIR, gen), soname=name)
    return out


def _load(path: Path, key: str, env: Environment) -> NativeLibrary:
    try:
        return NativeLibrary(path, key, env)
    except (OSError, AttributeError) as exc:
        raise BuildError(f"cannot load the native runtime library {path.name!r}: {exc}") from exc
