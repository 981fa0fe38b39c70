"""load_module of .o, .so and .tar files, the library module, and every bad-input path."""

from __future__ import annotations

import shutil
import struct
import subprocess
import tarfile

import numpy as np
import pytest

from vta.errors import ModuleLoadError, TVMError
from vta.runtime import LibraryModule, load_module, register_func
from vta.runtime.native_lib import runtime_library
from vta.runtime.registry import remove_global_func

from .conftest import build_object


def _needed(path):
    """DT_NEEDED entries as ``readelf`` (an independent reader) reports them."""
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    return [line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines() if "(NEEDED)" in line]


def test_object_file_is_linked_next_to_it_against_the_runtime(kernels, kernels_obj):
    assert isinstance(kernels, LibraryModule) and kernels.type_key == "library"
    so = kernels.path
    assert so.name == "kernels.o.so" and so.is_file()
    assert runtime_library().path.name in _needed(so)
    assert kernels.runtime is runtime_library()


def test_entry_function_via_tvm_main(kernels):
    assert kernels.entry_name() == "add_int"
    assert kernels.entry_func(20, 22) == 42
    assert kernels(1, 2) == 3


def test_missing_function_names_function_and_module(kernels):
    with pytest.raises(AttributeError, match=r"kernels\.o\.so.*has no function 'nope'"):
        kernels["nope"]
    with pytest.raises(AttributeError, match="kernels.o.so"):
        kernels.get_function("nope")


def test_symbols_that_are_not_exported_functions_are_not_callable(kernels):
    # Data symbols and functions of the runtime library must never be wrapped as packed functions.
    for name in ("__tvm_module_ctx", "__tvm_main__x", "TVMGetLastError", "VTASynchronize"):
        with pytest.raises(AttributeError):
            kernels.get_function(name)


def test_shared_library_loads_directly(kernels_obj, tmp_path):
    obj = tmp_path / "k.o"
    shutil.copyfile(kernels_obj, obj)
    first = load_module(obj)
    for suffix in (".so", ".dll", ".dylib", ".dso"):
        lib = tmp_path / f"again{suffix}"
        shutil.copyfile(first.path, lib)
        mod = load_module(lib)
        assert mod["add_int"](1, 1) == 2
    mod = load_module(first.path, fmt="so")
    assert mod(3, 4) == 7


def test_tar_of_objects(tmp_path):
    obj = build_object("kernels", tmp_path)
    ctx = build_object("context", tmp_path)
    archive = tmp_path / "pack.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(obj, arcname=obj.name)
        tar.add(ctx, arcname=ctx.name)
    (tmp_path / "unrelated.txt").write_text("not part of the archive")
    mod = load_module(archive)
    assert mod.path == tmp_path / "pack.tar.so"
    assert mod["add_int"](5, 6) == 11
    register_func("test.load.neg", lambda x: -x, override=True)
    try:
        assert mod["ctx_call"]("test.load.neg", 5) == -5
    finally:
        remove_global_func("test.load.neg")
    unpacked = [p for p in tmp_path.iterdir() if p.is_dir() and p.name.startswith("pack.tar.")]
    assert len(unpacked) == 1
    assert sorted(p.name for p in unpacked[0].iterdir()) == ["context.o", "kernels.o"]


def test_context_pointers_are_filled(tmp_path):
    mod = load_module(build_object("context", tmp_path))
    register_func("test.load.square", lambda x: x * x, override=True)
    try:
        assert mod["ctx_call"]("test.load.square", 12) == 144
    finally:
        remove_global_func("test.load.square")
    with pytest.raises(TVMError, match="ctx_call: expects a name and a value"):
        mod["ctx_call"](1, 2)


def test_module_context_searches_imports_before_the_registry(kernels_obj, tmp_path):
    from vta.runtime import PyModule

    obj = tmp_path / "k.o"
    shutil.copyfile(kernels_obj, obj)
    mod = load_module(obj)
    mod.import_module(PyModule("helper", {"test.load.f": lambda: "from import"}))
    register_func("test.load.f", lambda: "from registry", override=True)
    try:
        assert mod["call_env"]("test.load.f") == "from import"
        assert mod["call_env"]("__tvm_set_device", 1, 0) is None  # not imported: the registry
    finally:
        remove_global_func("test.load.f")


def test_missing_file(tmp_path):
    with pytest.raises(ModuleLoadError, match="does not exist"):
        load_module(tmp_path / "absent.so")


def test_unknown_format_lists_registered_ones(tmp_path):
    path = tmp_path / "model.xyz"
    path.write_bytes(b"data")
    with pytest.raises(ModuleLoadError, match=r"'xyz'.*registered formats: \[.*'so'"):
        load_module(path)


def test_registered_file_loader_is_used(tmp_path):
    from vta.runtime import PyModule

    path = tmp_path / "m.pymod"
    path.write_text("7")
    register_func("runtime.module.loadfile_pymod",
                  lambda p, fmt: PyModule("pymod", {"value": lambda: int(open(p).read())}), override=True)
    try:
        assert load_module(path)["value"]() == 7
    finally:
        remove_global_func("runtime.module.loadfile_pymod")


@pytest.mark.parametrize("content", [b"", b"garbage, not a library", b"\x7fELF" + b"\x02\x01" + b"\0" * 20,
                                     b"\x7fELF\x02\x01\x01" + b"\0" * 57 + b"\xff" * 64])
def test_corrupt_shared_library(tmp_path, content):
    path = tmp_path / "bad.so"
    path.write_bytes(content)
    with pytest.raises(ModuleLoadError, match="bad.so"):
        load_module(path)


def test_truncated_shared_library(kernels, tmp_path):
    path = tmp_path / "cut.so"
    path.write_bytes(kernels.path.read_bytes()[:3000])
    with pytest.raises(ModuleLoadError, match="cut.so"):
        load_module(path)


def test_non_object_file_with_o_suffix(tmp_path):
    path = tmp_path / "fake.o"
    path.write_text("int main(void) { return 0; }\n")
    with pytest.raises(ModuleLoadError, match="cannot link fake.o"):
        load_module(path)


def test_corrupt_tar(tmp_path):
    path = tmp_path / "broken.tar"
    path.write_bytes(b"this is not a tar archive" * 40)
    with pytest.raises(ModuleLoadError, match="broken.tar"):
        load_module(path)


def test_tar_with_non_object_member(tmp_path):
    junk = tmp_path / "junk.o"
    junk.write_bytes(b"\x00\x01\x02 not an object")
    archive = tmp_path / "junk.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(junk, arcname="junk.o")
    with pytest.raises(ModuleLoadError, match="cannot link"):
        load_module(archive)


def test_loader_returning_a_non_module(tmp_path):
    path = tmp_path / "m.weird"
    path.write_text("")
    register_func("runtime.module.loadfile_weird", lambda p, fmt: 42, override=True)
    try:
        with pytest.raises(ModuleLoadError, match="not a module"):
            load_module(path)
    finally:
        remove_global_func("runtime.module.loadfile_weird")


def test_loader_may_return_its_own_module_class(tmp_path):
    class HardwareLibrary:
        type_key = "vta-tsim-test"

        def __init__(self, path):
            self.path = path

    path = tmp_path / "hw.so"
    path.write_bytes(b"not opened by this loader")
    register_func("runtime.module.loadfile_vta-tsim-test", lambda p, fmt="": HardwareLibrary(p), override=True)
    try:
        mod = load_module(path, "vta-tsim-test")
    finally:
        remove_global_func("runtime.module.loadfile_vta-tsim-test")
    assert isinstance(mod, HardwareLibrary) and mod.path == str(path)


def test_closed_module(tmp_path, kernels_obj):
    obj = tmp_path / "k.o"
    shutil.copyfile(kernels_obj, obj)
    mod = load_module(obj)
    mod.close()
    with pytest.raises(TVMError, match="closed"):
        mod["add_int"]
    mod.close()  # idempotent


def test_arrays_still_work_after_failures(kernels):
    # The process survives every failure above; a normal call still computes the right thing.
    from vta import nd
    from vta.runtime import ext_dev

    data = np.arange(100, dtype=np.int32)
    with nd.array(data, ext_dev(0)) as arr:
        assert kernels["sum_i32"](arr) == int(data.sum())


def test_rebuilt_object_is_reloaded_with_its_new_code(tmp_path):
    from vta.runtime.native_lib import compile_object

    src = tmp_path / "version.c"
    obj = tmp_path / "version.o"
    results = []
    for version in (1, 2, 3):
        src.write_text(
            '#include "tvm_c_abi.h"\n'
            "int version(TVMValue* a, int* c, int n, TVMValue* r, int* rc, void* h) {\n"
            f"  (void)a; (void)c; (void)n; (void)h; r->v_int64 = {version}; *rc = kTVMArgInt; return 0;\n"
            "}\n"
        )
        compile_object(src, output=obj)
        results.append(load_module(obj)["version"]())
    assert results == [1, 2, 3]


def test_directory_is_not_a_module(tmp_path):
    with pytest.raises(ModuleLoadError, match="not a file"):
        load_module(tmp_path)


def test_module_links_against_the_runtime_of_the_current_configuration(kernels_obj, tmp_path):
    from tests.conftest import make_env

    obj = tmp_path / "b2.o"
    shutil.copyfile(kernels_obj, obj)
    with make_env("batch2.json") as env:
        mod = load_module(obj)
    other = runtime_library(env)
    assert other is not runtime_library()
    assert mod.runtime is other
    assert other.path.name in _needed(mod.path)
    assert runtime_library().path.name not in _needed(mod.path)
    with pytest.raises(TVMError, match="deliberate failure 42"):
        mod["always_fails"]()
    assert other.last_error() == "always_fails: deliberate failure 42"


def _patch_symbol_size(path, name, size):
    """Rewrite st_size of a dynamic symbol (a scalar ELF64 walk written for this test)."""
    data = bytearray(path.read_bytes())
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for _name, sh_type, _f, _a, offset, size_, link, _i, _al, _es in headers:
        if sh_type == 11:  # SHT_DYNSYM
            strtab = headers[link][4]
            for k in range(size_ // 24):
                entry = offset + 24 * k
                st_name = struct.unpack_from("<I", data, entry)[0]
                end = data.index(b"\0", strtab + st_name)
                if data[strtab + st_name:end] == name.encode():
                    struct.pack_into("<Q", data, entry + 16, size)
                    path.write_bytes(bytes(data))
                    return
    raise AssertionError(f"symbol {name} not found")


def test_symbol_size_past_the_segments_is_a_load_error(tmp_path):
    from vta.runtime.blob import blob_c_source
    from vta.runtime.native_lib import compile_shared

    src = tmp_path / "devc.c"
    src.write_text(blob_c_source(struct.pack("<Q", 0)))
    lib = compile_shared([src], tmp_path / "huge.so")
    _patch_symbol_size(lib, "__tvm_dev_mblob", 1 << 40)
    with pytest.raises(ModuleLoadError, match="outside the library's loaded segments"):
        load_module(lib)


def test_read_only_context_pointer_is_a_load_error(tmp_path):
    from vta.runtime.native_lib import compile_shared

    src = tmp_path / "ro.c"
    src.write_text("const void* const __tvm_module_ctx = 0;\nconst void* const __TVMFuncCall = 0;\n")
    with pytest.raises(ModuleLoadError, match="__TVMFuncCall must be a writable pointer variable"):
        load_module(compile_shared([src], tmp_path / "ro.so"))
    src.write_text("const void* const __tvm_module_ctx = 0;\n")
    with pytest.raises(ModuleLoadError, match="__tvm_module_ctx must be a writable pointer variable"):
        load_module(compile_shared([src], tmp_path / "ro2.so"))
    src.write_text("char __tvm_module_ctx[2];\n")
    with pytest.raises(ModuleLoadError, match="2 bytes"):
        load_module(compile_shared([src], tmp_path / "small.so"))
