"""Packaging hook: ship the top-level ``configs/``, ``hw/`` and ``sim/`` inside the package.

Everything else is declared in ``pyproject.toml``. In a source checkout the code reads these
directories where they are; an installed package (``pip install .``, a wheel) reads the copies
this hook places under ``vta/share/`` (see :func:`vta.env.data_dir`).
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
#: Top-level directory -> the files of it that the package needs (glob patterns).
SHARED = {
    "configs": ("*.json",),
    "hw": ("*.sv", "sim/*.sv", "syn/*.sv", "lint/*.vlt", "README.md"),
    "sim": ("*.cc", "*.h"),
}


class BuildPyWithSharedFiles(build_py):
    """``build_py`` that also copies :data:`SHARED` into ``vta/share/<dir>/`` of the build."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout itself
        for name, patterns in SHARED.items():
            for pattern in patterns:
                for src in sorted((ROOT / name).glob(pattern)):
                    dst = Path(self.build_lib) / "vta" / "share" / name / src.relative_to(ROOT / name)
                    self.mkpath(str(dst.parent))
                    self.copy_file(str(src), str(dst))


setup(cmdclass={"build_py": BuildPyWithSharedFiles})
