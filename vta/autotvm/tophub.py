"""``autotvm.tophub``: the context that applies pre-tuned schedule parameters.

Upstream downloaded per-target packages of tuned records; none ship here, so
:func:`context` applies the records of ``extra_files`` (logs written by ``python -m vta tune`` or
``autotvm.callback.log_to_file``) and the default chooser for every other workload.
"""

from __future__ import annotations

from typing import Any

from ..target import Target
from .dispatch import DispatchContext
from .history import ApplyHistoryBest

__all__ = ["DispatchContext", "context"]


def context(target: Any, extra_files: Any = None) -> ApplyHistoryBest:
    """A context manager for building under ``target`` with the records of ``extra_files``.

    Parameters
    ----------
    target : Target, str or list of them
        The target(s) the schedules are built for (``env.target``, ``env.target_vta_cpu``).
    extra_files : list of str, optional
        Tuning logs to apply.

    Returns
    -------
    ApplyHistoryBest
        Use it in a ``with`` statement; ``targets`` holds the targets, ``records`` the best
        record of each workload.

    Raises
    ------
    ValueError, TypeError
        If a target is not a valid target.
    FileNotFoundError, vta.errors.TuningLogError
        If a log does not exist or is malformed.
    """
    targets = target if isinstance(target, (list, tuple)) else [target]
    ctx = ApplyHistoryBest(list(extra_files or []))
    ctx.targets = tuple(t if isinstance(t, Target) else Target(t) for t in targets)
    return ctx
