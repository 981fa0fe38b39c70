"""The compiler's product as a module: C source plus the object file compiled from it.

A :class:`CompiledCModule` can be saved (``.o``/``.c``), exported as a library and, for
convenience, called in-process: on first use it is exported and loaded exactly as a library,
which is why it sits above the loader.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..errors import TVMError
from .loader import load_module
from .module import Module
from .packed import PackedFunc

__all__ = ["CompiledCModule"]


class CompiledCModule(Module):
    """The compiler's product: C source and the object file compiled from it (type_key ``"c"``).

    Parameters
    ----------
    source : str
        The C source.
    object_path : path
        The object file compiled from ``source`` (read when saved or exported).
    entry_name : str, optional
        Name of the entry function, for documentation; the object's ``__tvm_main__`` symbol is
        what calls use.

    Raises
    ------
    TypeError
        If ``source`` is not a str.
    """

    type_key = "c"
    is_dso_exportable = True

    def __init__(self, source: str, object_path: str | os.PathLike, entry_name: str | None = None):
        super().__init__()
        if not isinstance(source, str):
            raise TypeError(f"source must be a str, got {type(source).__name__}")
        self.source = source
        self.object_path = Path(object_path)
        self.entry_name = entry_name
        self._loaded: Module | None = None
        self._workdir: str | None = None

    def __repr__(self) -> str:
        return f"Module(type_key='c', object={self.object_path.name!r})"

    def get_source(self, fmt: str = "") -> str:
        """The C source (``fmt`` ``""`` or ``"c"``).

        Raises
        ------
        TVMError
            For any other format.
        """
        if fmt not in ("", "c"):
            raise TVMError(f"a compiled C module has source in format 'c' only, not {fmt!r}")
        return self.source

    def save(self, path: str | os.PathLike, fmt: str = "") -> None:
        """Save the object file (``.o``/``.obj``) or the source (``.c``); imports are not saved.

        Raises
        ------
        TVMError
            If the format is not one of ``o``, ``obj``, ``c``, or the object file is missing.
        """
        path = Path(path)
        fmt = fmt or path.suffix.lstrip(".")
        if fmt in ("o", "obj"):
            if not self.object_path.is_file():
                raise TVMError(f"the object file {str(self.object_path)!r} of {self!r} no longer exists")
            shutil.copyfile(self.object_path, path)
        elif fmt == "c":
            path.write_text(self.source)
        else:
            raise TVMError(f"cannot save a compiled C module as {fmt!r}; accepted formats: 'o', 'obj', 'c'")

    def _local_function(self, name: str) -> PackedFunc | None:
        # Link and load on first use, with the imports, exactly as an exported library.
        if self._loaded is None:
            self._workdir = tempfile.mkdtemp(prefix="vta_cmod_")
            lib_path = Path(self._workdir) / "module.so"
            self.export_library(lib_path)
            self._loaded = load_module(lib_path)
        try:
            return self._loaded.get_function(name)
        except AttributeError:
            return None

    def close(self) -> None:
        """Release the in-process copy (if it was loaded) and its temporary directory."""
        if self._loaded is not None:
            self._loaded.close()
            self._loaded = None
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        super().close()
