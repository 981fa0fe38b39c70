"""Host code generation: lowered TIR -> C source -> object file -> runtime module."""

from __future__ import annotations

from .c_host import emit_c
from .common import CodegenError
from .compile import compile_object, include_dir

__all__ = ["emit_c", "compile_object", "include_dir", "CodegenError", "build_module"]


def build_module(func, name: str):
    """Emit, compile and wrap ``func`` as the runtime's compiled C module.

    Parameters
    ----------
    func : vta.tir.PrimFunc
        The lowered function.
    name : str
        The entry symbol.

    Returns
    -------
    vta.runtime.cmodule.CompiledCModule
        Holds the C source (``get_source()``) and the object file (``save("x.o")``).

    Raises
    ------
    CodegenError
        If the function cannot be emitted as C.
    BuildError
        If the C compiler fails.
    """
    from ..runtime.cmodule import CompiledCModule

    source = emit_c(func, name)
    obj = compile_object(source, name)
    return CompiledCModule(source, obj, entry_name=name)
