"""The native runtime library: build, cache, coexisting configurations, the C ABI functions."""

from __future__ import annotations

import ctypes
import subprocess
import threading

import pytest

from tests.conftest import make_env
from vta.cache import cache_dir
from vta.errors import BuildError
from vta.runtime import native_lib
from vta.runtime.abi import TVMValue
from vta.runtime.native_lib import compile_object, compile_shared, on_load, runtime_library


def _readelf(*args):
    return subprocess.run(["readelf", *args], capture_output=True, text=True, check=True).stdout


def test_library_is_cached_per_process_and_on_disk(env):
    lib = runtime_library(env)
    assert runtime_library(env) is lib
    assert runtime_library() is lib  # env is the current configuration
    assert lib.path.parent == cache_dir("native")
    assert lib.path.name == f"libvta_rt_{lib.key}.so"
    assert f"Library soname: [{lib.path.name}]" in _readelf("-d", str(lib.path))
    dynsyms = _readelf("--dyn-syms", "-W", str(lib.path))
    for name in ("TVMAPISetLastError", "TVMGetLastError", "TVMBackendGetFuncFromEnv", "TVMFuncCall",
                 "VTART_SetCallbacks"):
        assert f" {name}\n" in dynsyms or dynsyms.rstrip().endswith(f" {name}")


def test_configurations_coexist_with_separate_state(env):
    other = runtime_library(make_env("batch2.json"))
    lib = runtime_library(env)
    assert other is not lib and other.path != lib.path and other.key != lib.key
    lib.set_last_error("message of the default configuration")
    other.set_last_error("message of batch2")
    assert lib.last_error() == "message of the default configuration"
    assert other.last_error() == "message of batch2"


def test_last_error_is_thread_local(env):
    lib = runtime_library(env)
    lib.set_last_error("main thread")
    seen = {}

    def worker():
        seen["before"] = lib.last_error()
        lib.set_last_error("worker thread " + "x" * 1000)
        seen["after"] = lib.last_error()

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == {"before": "", "after": "worker thread " + "x" * 1000}
    assert lib.last_error() == "main thread"


def test_c_abi_rejects_null_handles(env):
    lib = runtime_library(env).cdll
    call = lib.TVMFuncCall
    call.restype = ctypes.c_int
    ret, code = TVMValue(), ctypes.c_int(-1)
    assert call(None, None, None, 0, ctypes.byref(ret), ctypes.byref(code)) == -1
    assert runtime_library(env).last_error() == "TVMFuncCall: the function handle is NULL"
    get = lib.TVMBackendGetFuncFromEnv
    get.restype = ctypes.c_int
    assert get(None, b"x", None) == -1
    assert "must not be NULL" in runtime_library(env).last_error()


def test_workspaces_and_serial_parallel_launch(env):
    lib = runtime_library(env).cdll
    alloc, free = lib.TVMBackendAllocWorkspace, lib.TVMBackendFreeWorkspace
    alloc.restype = ctypes.c_void_p
    alloc.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_uint64, ctypes.c_int, ctypes.c_int]
    free.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    ptr = alloc(1, 0, 100, 0, 8)
    assert ptr and ptr % 64 == 0
    ctypes.memset(ptr, 0xAB, 100)
    assert free(1, 0, ptr) == 0
    assert alloc(12, 0, 100, 0, 8) is None
    assert "only CPU" in runtime_library(env).last_error()

    tasks = []
    lam_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int64 * 2), ctypes.c_void_p)

    def lam(task_id, penv, cdata):
        tasks.append((task_id, penv.contents[1] & 0xFFFFFFFF, cdata))
        return 0

    launch = lib.TVMBackendParallelLaunch
    launch.argtypes = [lam_type, ctypes.c_void_p, ctypes.c_int]
    assert launch(lam_type(lam), 77, 8) == 0
    assert tasks == [(0, 1, 77)]


def test_on_load_hooks_run_for_loaded_and_new_libraries(env, monkeypatch):
    monkeypatch.setattr(native_lib, "_hooks", list(native_lib._hooks))
    runtime_library(env)
    calls = []

    def hook(lib, hook_env):
        calls.append((lib.key, hook_env))

    assert on_load(hook) is hook
    # (a library already loaded for another TARGET of the same core is reported with the
    # environment it was loaded with: the key depends on the core, not on the target)
    key = runtime_library(env).key
    assert any(k == key and e.BITSTREAM == env.BITSTREAM for k, e in calls), calls
    n = len(calls)
    on_load(hook)  # a second registration is ignored
    assert len(calls) == n
    with pytest.raises(TypeError):
        on_load(42)


def test_compiler_failure_is_a_build_error_with_stderr(tmp_path):
    src = tmp_path / "broken.c"
    src.write_text("int f(void) { return undefined_identifier_xyz; }\n")
    with pytest.raises(BuildError, match="undefined_identifier_xyz") as info:
        compile_shared([src], tmp_path / "broken.so")
    assert "exit status" in str(info.value)
    with pytest.raises(BuildError, match="undefined_identifier_xyz"):
        compile_object(src, output=tmp_path / "broken.o")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.c"]  # no partial outputs


def test_compile_object_refuses_an_output_path_as_its_name(tmp_path):
    src = tmp_path / "ok.c"
    src.write_text("int answer(void) { return 42; }\n")
    with pytest.raises(TypeError, match="output="):
        compile_object(src, tmp_path / "ok.o")
    assert compile_object(src, output=tmp_path / "ok.o").is_file()
    assert compile_object(src.read_text(), "answer").name.startswith("answer-")


def test_missing_compiler_is_a_build_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", "no-such-compiler-vta")
    with pytest.raises(BuildError, match="'no-such-compiler-vta' not found"):
        compile_object(tmp_path / "x.c", output=tmp_path / "x.o")


def test_concurrent_builds_of_one_output_are_safe(tmp_path):
    src = tmp_path / "ok.c"
    src.write_text("int answer(void) { return 42; }\n")
    out = tmp_path / "ok.so"
    errors = []

    def build():
        try:
            compile_shared([src], out, soname="ok.so")
        except BuildError as exc:  # recorded and asserted on below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert ctypes.CDLL(str(out)).answer() == 42
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.c", "ok.so"]


def test_fresh_cache_builds_from_scratch(env, tmp_path, monkeypatch):
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(native_lib, "_by_env", {})
    monkeypatch.setattr(native_lib, "_by_key", {})
    monkeypatch.setattr(native_lib, "_hooks", [])  # the bridge must not re-bind its callbacks
    lib = runtime_library(env)
    assert lib.path.parent == tmp_path / "native"
    assert sorted(p.name for p in (tmp_path / "native").iterdir()) == [lib.path.name]
    lib.set_last_error("fresh")
    assert lib.last_error() == "fresh"


def test_unwritable_output_is_a_build_error(tmp_path):
    src = tmp_path / "ok.c"
    src.write_text("int answer(void) { return 42; }\n")
    blocker = tmp_path / "file"
    blocker.write_text("a file where a directory is expected")
    with pytest.raises(BuildError, match="cannot write"):
        compile_shared([src], blocker / "out.so")


def test_object_flags_block_compiles_with_its_flags_and_explicit_flags_win(monkeypatch):
    import uuid

    seen = []
    real = native_lib._run
    monkeypatch.setattr(native_lib, "_run", lambda cmd, what: seen.append(list(cmd)) or real(cmd, what))
    src = f"int vta_probe_{uuid.uuid4().hex}(int x) {{ return x + 41; }}\n"  # never cached before
    plain = compile_object(src, "flags_probe")
    with native_lib.object_flags(native_lib.TUNING_OBJECT_FLAGS):
        quick = compile_object(src, "flags_probe")
        explicit = compile_object(src, "flags_probe", flags=native_lib.OBJECT_FLAGS)
    again = compile_object(src, "flags_probe")
    assert quick != plain and explicit == plain and again == plain  # one cached object per flags
    assert len(seen) == 2  # the explicit and the later plain build hit the cache
    assert "-O1" in seen[0] and "-O0" not in seen[0]
    assert "-O0" in seen[1] and "-O1" not in seen[1]
