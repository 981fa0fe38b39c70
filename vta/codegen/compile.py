"""Compile generated C source into a position-independent object file with the system compiler.

Objects are cached under ``vta.cache.cache_dir("codegen")`` keyed by the source, the compiler
command line and the two ABI headers, so rebuilding an unchanged function costs one hash.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import atomic
from ..cache import cache_dir, content_key
from ..errors import BuildError

__all__ = ["include_dir", "compile_object", "compiler"]

#: ``-O1``: the generated host code is a driver (argument checks and loops around calls of the
#: VTA runtime, which is itself built with ``-O2``; its uop-recording functions run once per
#: kernel), so its time goes to the runtime and the device (one ResNet-18 layer on fsim: 2.0 ms of
#: CPU per call at ``-O1``, 2.2 ms at ``-O2``), while ``-O2`` costs the C compiler 60% more than
#: ``-O1`` (ResNet-18's 22 functions: 4.0 s against 2.5 s of CPU).
_FLAGS = ("-c", "-fPIC", "-O1", "-std=c99", "-Wall", "-Wno-unused-variable", "-Wno-unused-function", "-Werror=implicit-function-declaration")


def include_dir() -> Path:
    """The directory holding ``tvm_c_abi.h`` and ``vta_runtime.h``."""
    return Path(__file__).resolve().parent.parent / "runtime" / "native" / "include"


def compiler() -> str:
    """The C compiler: ``$CC`` when set, else ``cc``.

    Raises
    ------
    BuildError
        If the compiler cannot be found on ``PATH``.
    """
    cc = os.environ.get("CC") or "cc"
    if shutil.which(cc) is None:
        raise BuildError(f"the C compiler {cc!r} was not found on PATH; install gcc or set CC")
    return cc


def compile_object(source: str, name: str = "module") -> Path:
    """Compile ``source`` to an object file and return its (cached) path.

    Parameters
    ----------
    source : str
        A complete C translation unit.
    name : str
        A label used in the cached file name.

    Returns
    -------
    Path
        The object file; callers copy it, they never modify it.

    Raises
    ------
    BuildError
        If the compiler is missing or rejects the source (the message holds its diagnostics).
    """
    cc = compiler()
    inc = include_dir()
    headers = [(inc / h).read_bytes() for h in ("tvm_c_abi.h", "vta_runtime.h")]
    key = content_key([source, cc, " ".join(_FLAGS), *headers])
    out_dir = cache_dir("codegen")
    obj = out_dir / f"{name}-{key}.o"
    if obj.is_file():
        return obj
    with tempfile.TemporaryDirectory(prefix="vta_cc_") as tmp:
        src = Path(tmp) / f"{name}.c"
        src.write_text(source)
        tmp_obj = Path(tmp) / f"{name}.o"
        cmd = [cc, *_FLAGS, "-I", str(inc), "-o", str(tmp_obj), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(
                f"the C compiler failed on the generated source of {name!r} (exit {proc.returncode}):\n"
                f"{proc.stderr.strip()}"
            )
        # Publish atomically so a concurrent build (or the next run after a crash) never sees a
        # half-written object.
        atomic.copy_file(tmp_obj, obj)
    return obj
