"""export_library and the __tvm_dev_mblob import blob: nested round trips, corrupt blobs."""

from __future__ import annotations

import struct

import pytest

from vta.errors import ModuleLoadError
from vta.runtime import CompiledCModule, PyModule, load_module, register_func
from vta.runtime.blob import blob_c_source
from vta.runtime.native_lib import compile_shared
from vta.runtime.registry import remove_global_func

from .conftest import CSRC, build_object

KEY = "testcounter"


class CounterModule(PyModule):
    """A Python module type that serialises its name and value."""

    def __init__(self, name: str, value: int):
        super().__init__(KEY, {"value": lambda: value, f"name_{name}": lambda: name})
        self.name, self.value = name, value

    def save_to_binary(self) -> bytes:
        raw = self.name.encode()
        return struct.pack("<q", self.value) + raw

    @staticmethod
    def load(payload: bytes) -> "CounterModule":
        if len(payload) < 8:
            raise ValueError(f"payload of {len(payload)} bytes is too short")
        return CounterModule(payload[8:].decode(), struct.unpack("<q", payload[:8])[0])


@pytest.fixture(autouse=True)
def counter_loader():
    register_func(f"runtime.module.loadbinary_{KEY}", CounterModule.load, override=True)
    yield
    remove_global_func(f"runtime.module.loadbinary_{KEY}")


# ----------------------------------------------------------------------------- an independent reader
def _parse_blob(data: bytes):
    """Parse the blob layout of the reference (written here, independently of vta.runtime.blob)."""
    (size,) = struct.unpack_from("<Q", data, 0)
    pos = 8
    end = 8 + size

    def u64():
        nonlocal pos
        (v,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        return v

    def string():
        nonlocal pos
        n = u64()
        out = data[pos:pos + n]
        pos += n
        return out

    groups, tree = [], None
    for _ in range(u64()):
        key = string().decode()
        if key == "_import_tree":
            tree = ([u64() for _ in range(u64())], None)
            tree = (tree[0], [u64() for _ in range(u64())])
        elif key == "_lib":
            groups.append(("_lib", None))
        else:
            groups.append((key, string()))
    assert pos == end
    return groups, tree


def _tree(mod, depth=0):
    """(type_key, value or None, [children]) for comparing module trees."""
    value = mod.value if isinstance(mod, CounterModule) else None
    return (mod.type_key, value, [_tree(m) for m in mod.imported_modules])


@pytest.fixture
def cmodule(tmp_path):
    obj = build_object("kernels", tmp_path)
    return CompiledCModule((CSRC / "kernels.c").read_text(), obj, entry_name="add_int")


def _nested(root):
    a, b, c = CounterModule("a", 1), CounterModule("b", 2), CounterModule("c", 3)
    a.import_module(b)
    a.import_module(c)
    root.import_module(a)
    root.import_module(c)  # shared by two parents
    return root


@pytest.mark.parametrize("suffix", [".so", ".tar"])
def test_nested_imports_round_trip(cmodule, tmp_path, suffix):
    _nested(cmodule)
    out = tmp_path / f"net{suffix}"
    assert cmodule.export_library(out) == out
    mod = load_module(out)
    assert mod.type_key == "library"
    expected_c = (KEY, 3, [])
    assert _tree(mod) == ("library", None, [(KEY, 1, [(KEY, 2, []), expected_c]), expected_c])
    a, c = mod.imported_modules
    assert a.imported_modules[1] is c  # the shared module is restored once
    assert mod(2, 3) == 5  # the library's own entry function
    assert mod["call_env"]("value") == 1  # imports are searched depth first
    assert mod["call_env"]("name_c") == "c"
    assert mod.get_function("name_b", query_imports=True)() == "b"
    with pytest.raises(AttributeError):
        mod.get_function("name_b")


def test_blob_layout_matches_the_reference(cmodule, tmp_path):
    _nested(cmodule)
    mod = load_module(cmodule.export_library(tmp_path / "net.so"))
    groups, (row_ptr, children) = _parse_blob(mod.data_symbol("__tvm_dev_mblob"))
    assert [g[0] for g in groups] == ["_lib", KEY, KEY, KEY]
    assert [CounterModule.load(g[1]).name for g in groups[1:]] == ["a", "c", "b"]  # breadth first
    assert row_ptr == [0, 2, 4, 4, 4]
    assert children == [1, 2, 3, 2]


def test_python_root_without_library_code(tmp_path):
    root = _nested(CounterModule("root", 0))
    mod = load_module(root.export_library(tmp_path / "py.so"))
    assert isinstance(mod, CounterModule) and mod.name == "root"
    assert _tree(mod)[2][0] == (KEY, 1, [(KEY, 2, []), (KEY, 3, [])])


def test_module_without_imports_has_no_blob(cmodule, tmp_path):
    mod = load_module(cmodule.export_library(tmp_path / "plain.so"))
    assert mod.data_symbol("__tvm_dev_mblob") is None
    assert mod.imported_modules == []
    assert mod(40, 2) == 42


def test_unserialisable_import_is_refused(cmodule, tmp_path):
    from vta.errors import TVMError

    cmodule.import_module(PyModule("opaque", {"f": lambda: 1}))
    with pytest.raises(TVMError, match="cannot be serialised"):
        cmodule.export_library(tmp_path / "x.so")
    assert not (tmp_path / "x.so").exists()


def test_export_rejects_unknown_suffix(cmodule, tmp_path):
    with pytest.raises(ValueError, match=r"\.so, .*\.tar"):
        cmodule.export_library(tmp_path / "x.zip")


# ----------------------------------------------------------------------------- hand-made blobs
def _u64(v):
    return struct.pack("<Q", v)


def _s(raw):
    return _u64(len(raw)) + raw


def _lib_with_blob(tmp_path, payload: bytes, declared: int | None = None):
    """A shared library whose __tvm_dev_mblob holds ``payload`` behind a length prefix."""
    blob = _u64(len(payload) if declared is None else declared) + payload
    src = tmp_path / "devc.c"
    src.write_text(blob_c_source(blob))
    return compile_shared([src], tmp_path / "blob.so")


def _counter_group(name, value):
    return _s(KEY.encode()) + _s(struct.pack("<q", value) + name.encode())


def test_old_layout_attaches_every_module_to_the_library(tmp_path):
    payload = _u64(2) + _counter_group("x", 10) + _counter_group("y", 11)
    mod = load_module(_lib_with_blob(tmp_path, payload))
    assert _tree(mod) == ("library", None, [(KEY, 10, []), (KEY, 11, [])])


CORRUPT = {
    "length prefix past the symbol": (_u64(1) + _s(b"_lib"), 1 << 20, "needs 1048576 bytes"),
    "group count too large": (_u64(1 << 40), None, "group count"),
    "truncated key": (_u64(1) + _u64(50) + b"_li", None, "key of group 0"),
    "truncated payload": (_u64(1) + _s(KEY.encode()) + _u64(99) + b"abc", None, "payload of group 0"),
    "unknown key": (_u64(1) + _s(b"nosuchkind") + _s(b""), None, "'nosuchkind'.*registered keys"),
    "loader fails": (_u64(1) + _s(KEY.encode()) + _s(b"x"), None, "loadbinary_testcounter failed"),
    "trailing bytes": (_u64(1) + _s(b"_lib") + b"junk", None, "4 unexpected bytes"),
    "tree of wrong size": (_u64(2) + _s(b"_lib") + _s(b"_import_tree") + _u64(3) + _u64(0) * 3 + _u64(0),
                           None, "do not describe 1 modules"),
    "child out of range": (_u64(2) + _s(b"_lib") + _s(b"_import_tree") + _u64(2) + _u64(0) + _u64(1)
                           + _u64(1) + _u64(7), None, "child index 7"),
    "cyclic tree": (_u64(3) + _s(b"_lib") + _counter_group("z", 1) + _s(b"_import_tree")
                    + _u64(3) + _u64(0) + _u64(1) + _u64(2) + _u64(2) + _u64(1) + _u64(0),
                    None, "import cycle"),
    "empty tree": (_u64(1) + _s(b"_import_tree") + _u64(1) + _u64(0) + _u64(0), None, "no modules"),
    "huge vector": (_u64(2) + _s(b"_lib") + _s(b"_import_tree") + _u64(1 << 62), None, "row pointers"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_blob_is_a_load_error(tmp_path, case):
    payload, declared, message = CORRUPT[case]
    lib = _lib_with_blob(tmp_path, payload, declared)
    with pytest.raises(ModuleLoadError, match=message):
        load_module(lib)


def test_blob_shorter_than_its_length_prefix(tmp_path):
    src = tmp_path / "devc.c"
    src.write_text(blob_c_source(b"\x05\x00"))  # not even a whole length prefix
    with pytest.raises(ModuleLoadError, match="length prefix"):
        load_module(compile_shared([src], tmp_path / "short.so"))


def test_blob_c_source_compiles_to_the_exact_bytes(tmp_path):
    """Every byte value, and escapes followed by digits, survive the C source exactly."""
    import ctypes

    from vta.runtime.blob import BLOB_SYMBOL

    data = bytes(range(256)) * 3 + b"\x00123\x0789\xff0" + bytes(61)
    src = tmp_path / "devc.c"
    src.write_text(blob_c_source(data))
    so = compile_shared([src], tmp_path / "devc.so")
    lib = ctypes.CDLL(str(so))
    got = ctypes.string_at(ctypes.addressof(ctypes.c_ubyte.in_dll(lib, BLOB_SYMBOL)), len(data))
    assert got == data
