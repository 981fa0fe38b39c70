"""Property tests: arbitrary bytes in the blob and ELF readers give ModuleLoadError or a result."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vta.errors import ModuleLoadError
from vta.runtime import Module, PyModule, register_func
from vta.runtime.blob import pack_blob, unpack_blob
from vta.runtime.elf import read_dynamic_info
from vta.runtime.registry import remove_global_func

KEY = "fuzzmod"


class FuzzModule(PyModule):
    def __init__(self, payload: bytes):
        super().__init__(KEY)
        self.payload = payload

    def save_to_binary(self) -> bytes:
        return self.payload


def _loader(payload: bytes) -> FuzzModule:
    return FuzzModule(payload)


@pytest.fixture(scope="module", autouse=True)
def fuzz_loader():
    register_func(f"runtime.module.loadbinary_{KEY}", _loader, override=True)
    yield
    remove_global_func(f"runtime.module.loadbinary_{KEY}")


def _unpack(data: bytes):
    return unpack_blob(data, PyModule("libstandin"), "fuzz.so",
                       lambda key: _loader if key == KEY else None, lambda: [KEY])


def _valid_blob() -> bytes:
    root = FuzzModule(b"root")
    child = FuzzModule(b"child")
    root.import_module(child)
    child.import_module(FuzzModule(b"grandchild"))
    return pack_blob(root)[0]


VALID = _valid_blob()


def test_valid_blob_unpacks():
    root = _unpack(VALID)
    assert root.payload == b"root"
    assert root.imported_modules[0].payload == b"child"
    assert root.imported_modules[0].imported_modules[0].payload == b"grandchild"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_random_bytes(data):
    try:
        result = _unpack(data)
    except ModuleLoadError:
        return  # the only acceptable failure
    assert isinstance(result, Module)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=4),
       st.integers(0, len(VALID)))
def test_mutated_valid_blob(edits, cut):
    data = bytearray(VALID[:max(cut, 8)] if cut < len(VALID) else VALID)
    for pos, value in edits:
        if pos < len(data):
            data[pos] = value
    # Keep the length prefix consistent half of the time so the mutation reaches the body.
    if edits[0][1] % 2:
        struct.pack_into("<Q", data, 0, len(data) - 8)
    try:
        result = _unpack(bytes(data))
    except ModuleLoadError:
        return
    assert isinstance(result, Module)


@pytest.fixture(scope="module")
def real_library(kernels):
    return kernels.path.read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_elf_headers(real_library, tmp_path_factory, data):
    image = bytearray(real_library)
    # Mutate the ELF header and the section header table, where the reader looks first.
    shoff = struct.unpack_from("<Q", image, 0x28)[0]
    regions = [(0, 64), (shoff, len(image) - shoff)]
    for _ in range(data.draw(st.integers(1, 6))):
        start, length = data.draw(st.sampled_from(regions))
        pos = start + data.draw(st.integers(0, max(length - 1, 0)))
        image[pos] = data.draw(st.integers(0, 255))
    path = tmp_path_factory.mktemp("elf") / "m.so"
    path.write_bytes(bytes(image))
    try:
        info = read_dynamic_info(path)
    except ModuleLoadError:
        return
    assert all(sym.kind in ("func", "object", "other") for sym in info.symbols.values())
