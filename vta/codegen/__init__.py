"""Host code generation: lowered TIR -> C source -> object file -> runtime module."""

from __future__ import annotations

from .c_host import emit_c
from .common import CodegenError
from .compile import compile_object, include_dir
from .packed_args import CPU, EXT_DEV

__all__ = ["CPU", "EXT_DEV", "emit_c", "compile_object", "include_dir", "CodegenError", "build_module"]


def build_module(func, name: str, device_type: int = EXT_DEV):
    """Emit, compile and wrap ``func`` as the runtime's compiled C module.

    Parameters
    ----------
    func : vta.tir.PrimFunc
        The lowered function.
    name : str
        The entry symbol.
    device_type : int
        Where the array arguments live: ``EXT_DEV`` (12) or ``CPU`` (1), see :func:`emit_c`.

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

    source = emit_c(func, name, device_type)
    obj = compile_object(source, name)
    return CompiledCModule(source, obj, entry_name=name)
