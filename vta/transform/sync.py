"""InjectCoProcSync and add_debug.

*InjectCoProcSync* first applies two debugging pragmas — ``pragma_coproc_sync`` appends a
``coproc_sync`` after its body, ``pragma_trim_loop`` cuts the loop under it to 2 iterations —
then runs the generic CoProcSync pass (dependency tokens and the final synchronisation).

*add_debug* (only with ``build_config(debug_flag=...)``) prepends
``VTASetDebugMode(cmd, debug_flag)`` to the function body.
"""

from __future__ import annotations

import dataclasses

from ..errors import ScheduleError
from ..tir import nodes as n
from ..tir.functor import stmt_map
from ..tir.transform.coproc_sync import coproc_sync
from ._util import Pass, call_extern, command_handle

__all__ = ["inject_coproc_sync", "add_debug"]


def _pragmas(stmt: n.Stmt) -> n.Stmt:
    if not isinstance(stmt, n.AttrStmt):
        return stmt
    if stmt.attr_key == "pragma_coproc_sync":
        return n.seq(stmt.body, n.Evaluate(n.Call("int32", "tir.vta.coproc_sync", ())))
    if stmt.attr_key == "pragma_trim_loop":
        if not isinstance(stmt.body, n.For):
            raise ScheduleError(f"pragma trim_loop must be on a loop axis, found {type(stmt.body).__name__}")
        return dataclasses.replace(stmt.body, extent=n.IntImm(2, stmt.body.extent.dtype))
    return stmt


def inject_coproc_sync() -> Pass:
    """The InjectCoProcSync pass (module docstring)."""
    return Pass("InjectCoProcSync", lambda f: coproc_sync(f.with_body(stmt_map(f.body, _pragmas))))


def add_debug(debug_flag: int) -> Pass:
    """Prepend ``VTASetDebugMode(cmd, debug_flag)``.

    Raises
    ------
    ValueError
        If ``debug_flag`` is not a non-negative int.
    """
    if isinstance(debug_flag, bool) or not isinstance(debug_flag, int) or debug_flag < 0:
        raise ValueError(f"debug_flag must be a non-negative int (e.g. env.DEBUG_DUMP_INSN), got {debug_flag!r}")
    call = n.Evaluate(call_extern("int32", "VTASetDebugMode", command_handle(), debug_flag))
    return Pass("add_debug", lambda f: f.with_body(n.seq(call, f.body)))
