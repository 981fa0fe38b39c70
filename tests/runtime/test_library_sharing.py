"""Modules loaded from one library share it; the loader forgets a library with its last module;
loading, looking up functions and allocating arrays leave no garbage for the cycle collector.

Oracles: ``/proc/self/maps`` (what the kernel has mapped into the process), the number of
unreachable objects ``gc.collect()`` reports, NumPy for results.
"""

from __future__ import annotations

import gc
import shutil
import weakref

import numpy as np
import pytest

from vta import nd
from vta.runtime import ext_dev, load_module
from vta.runtime.loader import opened_libraries

pytestmark = pytest.mark.native


def mapped(name: str) -> bool:
    with open("/proc/self/maps") as fh:
        return any(name in line for line in fh)


@pytest.fixture()
def library(kernels_obj, tmp_path):
    """The test kernels linked into a shared library of their own (``shared.o.so``)."""
    obj = tmp_path / "shared.o"
    shutil.copyfile(kernels_obj, obj)
    load_module(obj).close()  # links shared.o.so next to it
    return tmp_path / "shared.o.so"


def test_the_last_module_of_a_library_unloads_it(library):
    first = load_module(library)
    second = load_module(library)
    assert str(library.resolve()) in opened_libraries()
    first.close()
    assert mapped(library.name)  # the second module still runs its code
    assert second["add_int"](20, 22) == 42
    second.close()
    assert not mapped(library.name)
    assert str(library.resolve()) not in opened_libraries()


def test_the_loader_forgets_every_library_it_unloaded(kernels_obj, tmp_path):
    """A long-lived process (an RPC server) loads a library from every session's directory: the
    loader keeps nothing of the ones it unloaded."""
    obj = tmp_path / "k.o"
    shutil.copyfile(kernels_obj, obj)
    load_module(obj).close()
    before = opened_libraries()
    for k in range(60):
        session = tmp_path / f"session{k}"
        session.mkdir()
        shutil.copyfile(tmp_path / "k.o.so", session / "k.so")
        with load_module(session / "k.so") as mod:
            assert mod["add_int"](k, 1) == k + 1
            assert str((session / "k.so").resolve()) in opened_libraries()
        shutil.rmtree(session)
    assert opened_libraries() == before


def test_a_file_rewritten_after_its_module_closed_is_loaded_afresh(kernels_obj, tmp_path):
    """No private copy once the old version is unloaded: the new file itself is mapped."""
    lib = tmp_path / "again.so"
    obj = tmp_path / "again.o"
    shutil.copyfile(kernels_obj, obj)
    load_module(obj).close()
    shutil.copyfile(tmp_path / "again.o.so", lib)
    load_module(lib).close()
    shutil.copyfile(tmp_path / "again.o.so", tmp_path / "again.tmp")
    (tmp_path / "again.tmp").replace(lib)  # a new file (inode) under the same name
    with load_module(lib) as mod:
        assert mapped(str(lib)) and not mapped("vta_reload_")
        assert mod["add_int"](1, 2) == 3


def test_a_dropped_module_releases_its_library(library):
    keep = load_module(library)
    dropped = load_module(library)
    ref = weakref.ref(dropped)
    del dropped
    gc.collect()
    assert ref() is None
    keep.close()
    assert not mapped(library.name)
    assert str(library.resolve()) not in opened_libraries()


def _unreachable_after(fn, times: int = 20) -> int:
    """Run ``fn`` with the cycle collector off; how many objects only it could free afterwards."""
    fn()  # first use: caches, array types
    gc.collect()
    gc.disable()
    try:
        for _ in range(times):
            fn()
        return gc.collect()
    finally:
        gc.enable()


def test_loading_and_calling_leave_no_cyclic_garbage(library):
    """Before, every load made a ctypes library object with a class of its own (about 10 objects in
    cycles) and every function lookup a self-referencing function pointer: an RPC server's memory
    grew with them until a full collection."""
    data = np.arange(64, dtype=np.int32)
    with load_module(library) as keep:  # the runtime and the library stay loaded, as in a session

        def load_lookup_call() -> None:
            with load_module(library) as mod, nd.array(data, ext_dev(0)) as arr:
                assert mod["sum_i32"](arr) == int(data.sum())

        assert _unreachable_after(load_lookup_call) == 0
        assert keep["add_int"](1, 1) == 2


def test_arrays_leave_no_cyclic_garbage():
    def alloc() -> None:
        for shape in ((7,), (2, 3), (1, 2, 3, 4)):
            with nd.empty(shape, "int32", ext_dev(0)) as arr:
                arr.copyfrom(np.ones(shape, np.int32))
                assert arr.numpy().sum() == np.prod(shape)

    assert _unreachable_after(alloc) == 0


def _version_library(tmp_path, version: int):
    """A library whose function ``version`` returns ``version``."""
    from vta.runtime.native_lib import compile_object

    src = tmp_path / f"version{version}.c"
    src.write_text(
        '#include "tvm_c_abi.h"\n'
        "int version(TVMValue* a, int* c, int n, TVMValue* r, int* rc, void* h) {\n"
        f"  (void)a; (void)c; (void)n; (void)h; r->v_int64 = {version}; *rc = kTVMArgInt; return 0;\n"
        "}\n"
    )
    obj = compile_object(src, output=tmp_path / f"version{version}.o")
    load_module(obj).close()  # links version<N>.o.so
    return tmp_path / f"version{version}.o.so"


def test_a_library_held_elsewhere_is_remembered_so_a_new_file_is_not_shadowed(tmp_path):
    """When something else keeps the library loaded (here a plain ctypes handle), the dynamic loader
    would hand the old code back for a new file under the same name: the loader remembers the file
    and loads the new one from a private copy."""
    import ctypes
    import os

    lib = tmp_path / "held.so"
    shutil.copyfile(_version_library(tmp_path, 1), lib)
    other = ctypes.CDLL(str(lib))
    try:
        with load_module(lib) as mod:
            assert mod["version"]() == 1
        assert str(lib.resolve()) in opened_libraries()  # still mapped: remembered
        shutil.copyfile(_version_library(tmp_path, 2), tmp_path / "held.tmp")
        os.replace(tmp_path / "held.tmp", lib)
        with load_module(lib) as mod:
            assert mod["version"]() == 2
    finally:
        ctypes.CDLL(None).dlclose(ctypes.c_void_p(other._handle))
    with load_module(lib) as mod:  # the old mapping is gone: the file itself is loaded again
        assert mod["version"]() == 2 and mapped(str(lib))
    assert str(lib.resolve()) not in opened_libraries()
