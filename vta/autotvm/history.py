"""The context of tuning logs: ``ApplyHistoryBest`` (AutoTVM's ``apply_history_best``).

:class:`ApplyHistoryBest` is also a tiling context of :mod:`vta.topi.dispatch`: inside its
``with`` block, :func:`vta.topi.schedule_conv2d_packed` / ``schedule_dense_packed`` called
without a tiling (and so the graph build and ``relay.build``) take the best record of their
workload, and the default chooser for workloads without one. Each decision is kept in
:attr:`ApplyHistoryBest.decisions` and logged to the ``vta.autotvm`` logger.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import Any

from ..errors import ScheduleError
from ..topi import dispatch as topi_dispatch
from .dispatch import DispatchContext
from .record import best_by_workload, load_from_file, workload_key
from .vta_ops import tiling_from_config, workload_of

__all__ = ["ApplyHistoryBest", "apply_history_best"]

logger = logging.getLogger("vta.autotvm")


class ApplyHistoryBest(DispatchContext):
    """The best (lowest-cost, error-free) record of every workload in some logs.

    Parameters
    ----------
    records : str, path, iterable of str/path, or iterable of ``(MeasureInput, MeasureResult)``
        Log files in AutoTVM's JSON-lines format, or records already loaded.

    Attributes
    ----------
    best_by_workload : dict
        ``(model, task name, args, kwargs)`` -> ``(MeasureInput, MeasureResult)``.
    decisions : list of dict
        What the VTA schedules asked inside this context: ``kind``, ``workload``, ``source``
        (``"tuned"`` or ``"default"``) and ``tiling`` (None for the default chooser), once per workload.

    Raises
    ------
    FileNotFoundError
        If a log file does not exist.
    vta.errors.TuningLogError
        If a line of a log is not a record (the message names the file and the line).
    """

    def __init__(self, records: Any = ()):
        super().__init__()
        self.best_by_workload: dict = {}
        self.decisions: list[dict] = []
        self.load(records)

    @property
    def records(self) -> dict:
        return self.best_by_workload

    def load(self, records: Any) -> None:
        """Add records (files or pairs), keeping the best of each workload."""
        if records is None:
            return
        if isinstance(records, (str, os.PathLike)):
            records = [records]
        for item in records:
            pairs: Iterable = load_from_file(item) if isinstance(item, (str, os.PathLike)) else [item]
            best_by_workload(pairs, self.best_by_workload)

    def _query_inside(self, target: Any, workload: Any) -> Any:
        """``workload`` is ``(task name, args, kwargs)`` as :attr:`Task.workload` gives it."""
        if workload is None:
            return None
        if len(workload) == 3 and isinstance(workload[2], dict):
            name, args, kwargs = workload
        else:  # AutoTVM's (task name, *args)
            name, args, kwargs = workload[0], tuple(workload[1:]), {}
        best = self.best_by_workload.get(workload_key(target, name, args, kwargs))
        return None if best is None else best[0].config

    # ------------------------------------------------------------ the vta.topi tiling hook
    def query(self, *a: Any) -> Any:
        """AutoTVM's ``query(target, workload)``; with three arguments ``(kind, env, workload)``
        the :mod:`vta.topi.dispatch` hook: a tuned tiling or None."""
        if len(a) == 3:
            return self._tiling(*a)
        return super().query(*a)

    def _tiling(self, kind: str, env: Any, wl: Any) -> Any:
        name, args, kwargs = workload_of(kind, env, wl)
        cfg = self._query_inside(env.target, (name, args, kwargs))
        tiling = None
        if cfg is not None:
            try:
                tiling = tiling_from_config(kind, cfg)
            except (KeyError, ValueError) as exc:
                raise ScheduleError(f"tuning record for {name} {args!r} has no valid tiling: {exc}") from exc
        source = "default" if tiling is None else "tuned"
        decision = {"kind": kind, "task": name, "args": args, "kwargs": kwargs, "source": source, "tiling": tiling}
        if decision in self.decisions:  # asked again for the same workload (e.g. planning, then building)
            return tiling
        self.decisions.append(decision)
        logger.info("%s %s: %s", name, args, f"tuned tiling {tiling}" if tiling else
                    "no tuning record, the default chooser's tiling")
        return tiling

    def summary(self) -> str:
        """One line per schedule decided inside this context: tuned or default, and the tiling."""
        lines = []
        for d in self.decisions:
            lines.append(f"{d['source']:8s} {d['task']} {d['args']!r} {d['kwargs']!r}"
                         + (f" -> {d['tiling']}" if d["tiling"] else ""))
        return "\n".join(lines)

    def __enter__(self):
        super().__enter__()
        topi_dispatch.push(self)
        return self

    def __exit__(self, *exc):
        topi_dispatch.pop(self)
        super().__exit__(*exc)

    def __repr__(self):
        return f"ApplyHistoryBest({len(self.best_by_workload)} workloads)"


def apply_history_best(log: Any) -> ApplyHistoryBest:
    """``autotvm.apply_history_best(log)``: a context with the best record of each workload.

    Raises
    ------
    FileNotFoundError, vta.errors.TuningLogError
        As :class:`ApplyHistoryBest`.
    """
    return ApplyHistoryBest(log)
