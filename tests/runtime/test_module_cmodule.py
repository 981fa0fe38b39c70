"""The compiled C module the compiler produces: save, source, export, in-process calls."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vta import nd
from vta.errors import TVMError
from vta.runtime import CompiledCModule, PyModule, ext_dev, load_module

from .conftest import CSRC, build_object


@pytest.fixture
def cmod(tmp_path):
    (tmp_path / "build").mkdir()
    obj = build_object("kernels", tmp_path / "build")
    mod = CompiledCModule((CSRC / "kernels.c").read_text(), obj, entry_name="add_int")
    yield mod
    mod.close()


def test_type_and_source(cmod):
    assert cmod.type_key == "c" and cmod.is_dso_exportable
    assert cmod.get_source() == (CSRC / "kernels.c").read_text()
    assert cmod.get_source("c") == cmod.get_source()
    with pytest.raises(TVMError, match="'ll'"):
        cmod.get_source("ll")


def test_save_object_and_source(cmod, tmp_path):
    cmod.save(tmp_path / "vadd.o")
    assert (tmp_path / "vadd.o").read_bytes() == cmod.object_path.read_bytes()
    cmod.save(tmp_path / "vadd.c")
    assert (tmp_path / "vadd.c").read_text() == cmod.source
    cmod.save(tmp_path / "obj.bin", fmt="o")
    assert (tmp_path / "obj.bin").read_bytes() == cmod.object_path.read_bytes()
    with pytest.raises(TVMError, match=r"'ll'.*accepted formats"):
        cmod.save(tmp_path / "vadd.ll")


def test_saved_object_loads_and_runs(cmod, tmp_path):
    cmod.save(tmp_path / "saved.o")
    mod = load_module(tmp_path / "saved.o")
    assert mod(19, 23) == 42


def test_called_in_process(cmod):
    assert cmod(1, 2) == 3
    assert cmod["add_int"](5, 5) == 10
    data = np.arange(10, dtype=np.int32)
    with nd.array(data, ext_dev(0)) as arr:
        assert cmod["sum_i32"](arr) == 45
    with pytest.raises(AttributeError, match="'missing'"):
        cmod["missing"]
    workdir = Path(cmod._workdir)
    assert workdir.is_dir()
    cmod.close()
    assert not workdir.exists()
    with pytest.raises(TVMError, match="closed"):
        cmod["add_int"]


def test_export_tar_and_load(cmod, tmp_path):
    out = cmod.export_library(tmp_path / "lib.tar")
    mod = load_module(out)
    assert mod(2, 2) == 4


def test_missing_object_file(tmp_path):
    mod = CompiledCModule("int x;", tmp_path / "gone.o")
    with pytest.raises(TVMError, match="gone.o"):
        mod.save(tmp_path / "copy.o")


def test_python_module_basics():
    mod = PyModule("pytest_kind", {"f": lambda x: x + 1}, entry="f")
    assert mod(1) == 2 and mod["f"](2) == 3
    with pytest.raises(AttributeError, match=r"pytest_kind.*'g'"):
        mod["g"]
    with pytest.raises(TypeError):
        PyModule("_lib")
    with pytest.raises(TVMError, match="cannot be saved"):
        mod.save("x.o")
    with pytest.raises(TVMError, match="no source"):
        mod.get_source()


def test_import_cycles_are_refused():
    a, b = PyModule("k"), PyModule("k")
    a.import_module(b)
    with pytest.raises(ValueError, match="cycle"):
        b.import_module(a)
    with pytest.raises(ValueError, match="cycle"):
        a.import_module(a)
    with pytest.raises(TypeError):
        a.import_module("not a module")
    assert a.imported_modules == [b] and b.imported_modules == []


def test_time_evaluator_calls_warm_up_plus_number_times_repeat():
    calls = []
    mod = PyModule("timed", {"f": lambda *a: calls.append(a)})
    result = mod.time_evaluator("f", None, number=3, repeat=2)(1, 2)
    assert calls == [(1, 2)] * 7  # 1 warm-up + 3 x 2
    assert len(result.results) == 2 and all(r >= 0 for r in result.results)
    assert result.mean == pytest.approx(sum(result.results) / 2)
    with pytest.raises(ValueError, match="number"):
        mod.time_evaluator("f", number=0)
    with pytest.raises(AttributeError, match="'g'"):
        mod.time_evaluator("g")


def test_time_evaluator_on_native_code(cmod):
    assert cmod.time_evaluator("add_int", ext_dev(0), number=5)(1, 2).mean >= 0
