"""Which tiling a schedule takes when none is passed: the hook for tuning records.

:func:`~vta.topi.schedule_conv2d_packed` and :func:`~vta.topi.schedule_dense_packed` called
without a tiling ask :func:`tuned_tiling` first and use the default chooser
(:mod:`vta.topi.tiling`) only when it answers None. An answer comes from the innermost active
*tiling context*: any object with a method ``query(kind, env, workload)`` returning a tiling or
None, made active by :func:`push` / :func:`pop` (``vta.autotvm.apply_history_best`` does this in
its ``with`` block). Without an active context nothing changes.

The graph build compiles its operators in worker processes and caches them; it asks
:func:`vta.topi.tuned.operator_tiling` for each ``vta.conv2d`` (plain or grouped) / ``vta.dense`` /
``vta.add`` / ``vta.multiply`` node in the parent process and passes the answer explicitly (it
is part of the cache key).
"""

from __future__ import annotations

from typing import Any

from ..env import Environment

__all__ = ["active", "pop", "push", "tuned_tiling"]

#: The active tiling contexts, innermost last (process-wide, as TVM's dispatch context).
_STACK: list = []


def push(context: Any) -> None:
    """Make ``context`` the innermost tiling context.

    Raises
    ------
    TypeError
        If it has no ``query`` method.
    """
    if not callable(getattr(context, "query", None)):
        raise TypeError(f"a tiling context needs a query(kind, env, workload) method, got {context!r}")
    _STACK.append(context)


def pop(context: Any) -> None:
    """Remove ``context`` (the innermost one).

    Raises
    ------
    ValueError
        If ``context`` is not the innermost active context.
    """
    if not _STACK or _STACK[-1] is not context:
        raise ValueError(f"tiling context {context!r} is not the innermost active one")
    _STACK.pop()


def active() -> Any:
    """The innermost active tiling context, or None."""
    return _STACK[-1] if _STACK else None


def tuned_tiling(kind: str, env: Environment, workload: Any) -> Any:
    """The tiling the active context holds for ``workload`` (``kind`` ``"conv2d"``,
    ``"group_conv2d"``, ``"dense"``, ``"add"`` or ``"multiply"``), or None (no context, or no
    record: use the default chooser)."""
    ctx = active()
    return None if ctx is None else ctx.query(kind, env, workload)
