"""The last library module of a configuration to close releases that configuration's runtime: its
two staging buffers go back to the DRAM arena and the runtime is loaded afresh on next use."""

from __future__ import annotations

import ctypes
import shutil

from vta.dram import global_dram
from vta.env import Environment, data_dir, load_config
from vta.runtime import load_module
from vta.runtime.native_lib import loaded_libraries, runtime_library

from .conftest import build_object


def _stage(lib) -> None:
    """Synchronise the (empty) queue: the runtime allocates its staging buffers."""
    handle = lib.cdll.VTATLSCommandHandle
    handle.restype = ctypes.c_void_p
    sync = lib.cdll.VTASynchronize
    sync.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    sync.restype = ctypes.c_int
    sync(handle(), 0)


def test_last_module_releases_the_staging_buffers_and_the_runtime(tmp_path):
    env = Environment(load_config(data_dir("configs") / "block32.json"))  # a configuration of its own
    with env:
        obj = build_object("kernels", tmp_path)
        mods = []
        for name in ("a.o", "b.o"):
            shutil.copyfile(obj, tmp_path / name)
            mods.append(load_module(tmp_path / name))
        lib = runtime_library(env)
        assert lib.modules == 2 and all(m.runtime is lib for m in mods)
        _stage(lib)
        assert lib.staging_buffers() == 2
        live = len(list(global_dram().allocations()))
        mods[0].close()
        assert lib.staging_buffers() == 2 and lib in loaded_libraries()  # one module still open
        mods[1].close()
        assert lib.modules == 0 and lib.staging_buffers() == 0
        assert len(list(global_dram().allocations())) == live - 2
        assert lib not in loaded_libraries()
        # the configuration still works: a new module loads the runtime afresh
        again = load_module(tmp_path / "a.o")
        try:
            assert again["add_int"](20, 22) == 42
            fresh = runtime_library(env)
            assert fresh is not lib and again.runtime is fresh and fresh.modules == 1
            _stage(fresh)
            assert fresh.staging_buffers() == 2
        finally:
            again.close()
        assert fresh.staging_buffers() == 0


def test_a_module_dropped_without_close_releases_too(tmp_path):
    env = Environment(load_config(data_dir("configs") / "batch2.json"))
    with env:
        obj = build_object("kernels", tmp_path)
        mod = load_module(obj)
        lib = mod.runtime
        _stage(lib)
        assert lib.staging_buffers() == 2
        del mod  # garbage: its finaliser releases the runtime
        import gc
        gc.collect()
        assert lib.staging_buffers() == 0 and lib not in loaded_libraries()
