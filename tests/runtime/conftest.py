"""Fixtures of the runtime tests: the test kernels compiled to an object file and loaded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vta.runtime import load_module
from vta.runtime.native_lib import INCLUDE_DIR, compile_object

CSRC = Path(__file__).resolve().parent / "csrc"


def build_object(name: str, out_dir: Path) -> Path:
    """Compile ``csrc/<name>.c`` to ``out_dir/<name>.o``."""
    return compile_object(CSRC / f"{name}.c", output=out_dir / f"{name}.o", include_dirs=(INCLUDE_DIR,))


@pytest.fixture(scope="module")
def kernels_obj(tmp_path_factory) -> Path:
    """The test kernels as an object file in a fresh directory."""
    return build_object("kernels", tmp_path_factory.mktemp("kernels"))


@pytest.fixture(scope="module")
def kernels(kernels_obj):
    """The test kernels loaded through ``load_module`` (a ``.o`` linked into a ``.so``)."""
    work = kernels_obj.parent / "load"
    work.mkdir(exist_ok=True)
    obj = work / kernels_obj.name
    shutil.copyfile(kernels_obj, obj)
    mod = load_module(obj)
    yield mod
    mod.close()
