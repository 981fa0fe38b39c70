"""Every third-party package the package's code imports is installed by the core dependencies or
by an extra of pyproject.toml (read from the source with ``ast``; lazy imports count)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Import names of the distributions pyproject.toml names, where they differ or add modules
#: (onnx brings google.protobuf; dask[distributed] brings distributed; xgboost-cpu is the CPU-only
#: wheel of xgboost).
PROVIDES = {"dask": {"dask", "distributed"}, "onnx": {"onnx", "google"}, "xgboost_cpu": {"xgboost"},
            "numba": {"numba", "llvmlite"}}  # numba requires llvmlite (its code generator)


def _requirements() -> dict[str, set[str]]:
    """Extra name ('' for the core) -> import names its requirements provide."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    groups = {"": project["dependencies"], **project["optional-dependencies"]}
    out = {}
    for extra, reqs in groups.items():
        names = set()
        for req in reqs:
            dist = re.match(r"[A-Za-z0-9_.-]+", req).group(0).lower().replace("-", "_")
            names |= PROVIDES.get(dist, {dist})
        out[extra] = names
    return out


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name.partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return names


def test_every_third_party_import_of_the_package_is_installed_by_a_requirement():
    provided = set().union(*_requirements().values())
    missing = {}
    for path in sorted((ROOT / "vta").rglob("*.py")):
        for name in _imports(path) - set(sys.stdlib_module_names) - {"vta", "__future__"}:
            if name not in provided:
                missing.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert not missing, f"imported but installed by no requirement of pyproject.toml: {missing}"


def test_the_onnx_extra_installs_what_onnxruntimes_quantizer_imports():
    # quant_pre_process (vta.models.quantize(..., preprocess=True)) imports sympy, which
    # onnxruntime does not install
    assert "sympy" in _requirements()["onnx"]
    from onnxruntime.quantization.shape_inference import quant_pre_process

    assert callable(quant_pre_process)
