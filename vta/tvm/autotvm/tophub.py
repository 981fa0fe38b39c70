"""``autotvm.tophub``: the context that would load pre-tuned schedule parameters.

There is no tuning log here, so :func:`context` only validates its targets and records them
while it is active (:meth:`DispatchContext.current`); schedules take their defaults.
"""

from __future__ import annotations

import threading
from typing import Any

from ...target import Target

__all__ = ["context", "DispatchContext"]

_state = threading.local()


class DispatchContext:
    """The active ``tophub.context``: the targets it was opened for, and no tuning records.

    Attributes
    ----------
    targets : tuple of Target
    records : dict
        Always empty: no pre-tuned parameters exist, so every workload falls back to its
        default schedule.
    """

    def __init__(self, targets: tuple[Target, ...]):
        self.targets = targets
        self.records: dict = {}

    def query(self, target: Any, workload: Any) -> None:
        """The tuned parameters of ``workload`` on ``target``: always None (use the default)."""
        del target, workload
        return None

    def __enter__(self) -> "DispatchContext":
        stack = getattr(_state, "stack", None)
        if stack is None:
            stack = _state.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _state.stack.pop()

    @staticmethod
    def current() -> "DispatchContext | None":
        """The innermost active context of this thread, or None."""
        stack = getattr(_state, "stack", None)
        return stack[-1] if stack else None

    def __repr__(self) -> str:
        return f"DispatchContext(targets={[str(t) for t in self.targets]!r}, records=0)"


def context(target: Any, extra_files: Any = None) -> DispatchContext:
    """A context manager for building under ``target`` with its pre-tuned parameters (none here).

    Parameters
    ----------
    target : Target, str or list of them
        The target(s) the schedules are built for (``env.target``, ``env.target_vta_cpu``).
    extra_files : None or empty list
        Tuning logs to load; there is no log format here, so only None or an empty list is
        accepted.

    Returns
    -------
    DispatchContext
        Use it in a ``with`` statement.

    Raises
    ------
    ValueError, TypeError
        If a target is not a valid target, or ``extra_files`` names files.
    """
    if extra_files:
        raise ValueError(
            f"autotvm.tophub.context: tuning logs {extra_files!r} cannot be loaded here (there is no tuner); "
            "the default schedules apply"
        )
    targets = target if isinstance(target, (list, tuple)) else [target]
    return DispatchContext(tuple(t if isinstance(t, Target) else Target(t) for t in targets))
