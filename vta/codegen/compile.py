"""Compile generated C source into a position-independent object file with the system compiler.

The compiler lookup and the cached, atomic compilation are the runtime's
(:func:`vta.runtime.native_lib.compile_object`, shared with every other C build of the package);
this module names them for the code generator.
"""

from __future__ import annotations

from pathlib import Path

from ..runtime.native_lib import INCLUDE_DIR, compile_object

__all__ = ["include_dir", "compile_object"]


def include_dir() -> Path:
    """The directory holding ``tvm_c_abi.h`` and ``vta_runtime.h``."""
    return INCLUDE_DIR
