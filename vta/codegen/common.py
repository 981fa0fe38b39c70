"""Definitions shared by the C emitter and the argument-check prologue."""

from __future__ import annotations

from ..errors import ScheduleError

__all__ = ["CodegenError", "ctype", "c_string"]


class CodegenError(ScheduleError):
    """The lowered function holds a construct the C host backend cannot emit."""


def ctype(dtype: str) -> str:
    """The C type of a TIR dtype.

    Raises
    ------
    CodegenError
        For a dtype the backend does not emit.
    """
    if dtype == "handle":
        return "void*"
    if dtype == "bool":
        return "int32_t"
    for prefix in ("uint", "int"):
        if dtype.startswith(prefix):
            if dtype[len(prefix):] not in ("8", "16", "32", "64"):
                raise CodegenError(
                    f"host code cannot compute on {dtype!r} values (C has no such type); keep sub-byte data "
                    "on VTA (dma_copy/alu/tensorize) or use 8, 16, 32 or 64-bit integers on the CPU"
                )
            return f"{prefix}{dtype[len(prefix):]}_t"
    if dtype == "float32":
        return "float"
    if dtype == "float64":
        return "double"
    raise CodegenError(f"the C host backend has no type for dtype {dtype!r}; accepted: int*, uint*, float32, "
                       "float64, bool, handle")


def c_string(text: str) -> str:
    """``text`` as a C string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
