"""Libraries linked without the runtime, unloading on release, and no growth of mappings.

Oracles: ``/proc/self/maps`` (the kernel's list of what is mapped into the process), ``objdump``
for the libraries' ``DT_NEEDED`` entries, NumPy for results, and the last-error text of each
configuration's runtime library for which runtime a library bound to.
"""

from __future__ import annotations

import gc
import shutil
import subprocess

import numpy as np
import pytest

from vta import nd
from vta.errors import ModuleLoadError, TVMError
from vta.runtime import ext_dev, load_module
from vta.runtime.native_lib import c_compiler, global_runtime, runtime_library

pytestmark = pytest.mark.native


def plain_shared(obj, out):
    """``cc -shared`` of a host object with no runtime library: as a user would link it."""
    subprocess.run([c_compiler(), "-shared", "-o", str(out), str(obj)], check=True, capture_output=True)
    return out


def mappings(path_part: str | None = None) -> list[str]:
    with open("/proc/self/maps") as fh:
        lines = fh.read().splitlines()
    return [ln for ln in lines if path_part is None or path_part in ln]


def test_a_library_linked_without_the_runtime_loads_and_runs(env, kernels_obj, tmp_path):
    lib = plain_shared(kernels_obj, tmp_path / "plain.so")
    if shutil.which("objdump"):
        needed = [ln.split()[-1] for ln in subprocess.run(["objdump", "-p", str(lib)], capture_output=True,
                                                           text=True).stdout.splitlines() if "NEEDED" in ln]
        assert runtime_library(env).path.name not in needed  # linked against no runtime
    with load_module(lib) as mod:
        assert global_runtime() is runtime_library(env)
        data = np.arange(50, dtype=np.int32)
        with nd.array(data, ext_dev(0)) as arr:
            assert mod["sum_i32"](arr) == int(data.sum())
        # Its TVMAPISetLastError binds to the global runtime, whose error text the call reports.
        with pytest.raises(TVMError, match="deliberate failure 42"):
            mod["always_fails"]()


def test_a_vta_host_object_linked_by_hand_runs_on_the_device(env, tmp_path):
    from vta.build import build
    from vta.tvm import te

    shape = (1, 8, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    A_buf = te.compute(shape, lambda *i: A(*i), "A_buf")
    B_buf = te.compute(shape, lambda *i: A_buf(*i) + 3, "B_buf")
    C = te.compute(shape, lambda *i: B_buf(*i).astype(env.inp_dtype), "C")
    s = te.create_schedule(C.op)
    for t in (A_buf, B_buf):
        s[t].set_scope(env.acc_scope)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.alu)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    build(s, [A, C], "ext_dev", name="add3").save(tmp_path / "add3.o")
    lib = plain_shared(tmp_path / "add3.o", tmp_path / "add3.so")
    a = np.random.default_rng(1).integers(-100, 100, size=shape).astype(np.int32)
    with load_module(lib) as mod, nd.array(a, ext_dev(0)) as x, nd.empty(shape, "int8", ext_dev(0)) as y:
        mod(x, y)
        np.testing.assert_array_equal(y.numpy(), (a + 3).astype(np.int8))


def test_other_configurations_keep_their_own_runtime(env, kernels_obj, tmp_path):
    """Once the default runtime is global, a module linked against batch2's still binds to batch2's,
    and a library linked against none is refused under batch2 (it would get the default's)."""
    from tests.conftest import make_env

    with load_module(plain_shared(kernels_obj, tmp_path / "plain.so")):
        pass
    assert global_runtime() is runtime_library(env)
    obj = tmp_path / "b2.o"
    shutil.copyfile(kernels_obj, obj)
    with make_env("batch2.json") as b2:
        other = runtime_library(b2)
        with load_module(obj) as mod:
            with pytest.raises(TVMError, match="deliberate failure 42"):
                mod["always_fails"]()
            assert other.last_error() == "always_fails: deliberate failure 42"
        with pytest.raises(ModuleLoadError, match="linked against no VTA runtime"):
            load_module(plain_shared(kernels_obj, tmp_path / "plain_b2.so"))


def test_closing_a_module_unloads_its_library(kernels_obj, tmp_path):
    lib = plain_shared(kernels_obj, tmp_path / "unload_me.so")
    mod = load_module(lib)
    add = mod["add_int"]
    assert add(2, 3) == 5 and mappings("unload_me.so")
    mod.close()
    assert mappings("unload_me.so") == []
    with pytest.raises(TVMError, match="has been closed and its code unloaded"):
        add(2, 3)


def test_dropping_a_module_unloads_its_library(kernels_obj, tmp_path):
    lib = plain_shared(kernels_obj, tmp_path / "dropped.so")
    mod = load_module(lib)
    assert mod["add_int"](1, 1) == 2
    del mod
    gc.collect()
    assert mappings("dropped.so") == []


def test_closing_a_root_restored_from_the_blob_unloads_its_library(tmp_path):
    from vta.runtime import register_func
    from vta.runtime.registry import remove_global_func

    from .test_module_blob import KEY, CounterModule

    register_func(f"runtime.module.loadbinary_{KEY}", CounterModule.load, override=True)
    try:
        root = CounterModule("root", 7)
        root.import_module(CounterModule("child", 1))
        mod = load_module(root.export_library(tmp_path / "pyroot.so"))
        assert isinstance(mod, CounterModule) and mappings("pyroot.so")
        mod.close()
        assert mappings("pyroot.so") == []
    finally:
        remove_global_func(f"runtime.module.loadbinary_{KEY}")


def test_no_growth_over_a_thousand_load_unload_cycles(kernels_obj, tmp_path):
    """Each cycle loads a distinct copy (so nothing is shared) and closes it; without unloading,
    every cycle would add the copy's mappings."""
    lib = plain_shared(kernels_obj, tmp_path / "cycle.so")
    copies = [tmp_path / f"cycle_{k % 50}.so" for k in range(50)]
    for c in copies:
        shutil.copyfile(lib, c)

    def cycle(k: int) -> None:
        mod = load_module(copies[k % len(copies)])
        assert mod["add_int"](k, 1) == k + 1
        mod.close()

    for k in range(20):  # warm up: caches, allocator arenas
        cycle(k)
    before = len(mappings())
    for k in range(1000):
        cycle(k)
    after = len(mappings())
    assert after <= before + 4, f"{after - before} new mappings after 1000 load/unload cycles"
    assert mappings("cycle_") == []
