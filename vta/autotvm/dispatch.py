"""Dispatch contexts: which configuration a template or a VTA schedule gets (AutoTVM's
``DispatchContext``, ``ApplyConfig``, ``ApplyHistoryBest``, ``FallbackContext``).

:class:`ApplyHistoryBest` is also a tiling context of :mod:`vta.topi.dispatch`: inside its
``with`` block, :func:`vta.topi.schedule_conv2d_packed` / ``schedule_dense_packed`` called
without a tiling (and so the graph build and ``relay.build``) take the best record of their
workload, and the default chooser for workloads without one. Each decision is kept in
:attr:`ApplyHistoryBest.decisions` and logged to the ``vta.autotvm`` logger.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from typing import Any, ClassVar

from ..errors import ScheduleError
from ..topi import dispatch as topi_dispatch
from .space import FallbackConfigEntity

__all__ = ["ApplyConfig", "ApplyHistoryBest", "DispatchContext", "FallbackContext", "apply_history_best",
           "target_model"]

logger = logging.getLogger("vta.autotvm")


def target_model(target: Any) -> str:
    """The configuration part of a target's ``-model`` (``sim_1x16_i8w8a32_15_15_18_17`` ->
    ``1x16_i8w8a32_15_15_18_17``): records apply whatever level measured them."""
    text = str(target)
    for word in text.split():
        if word.startswith("-model="):
            model = word[len("-model="):]
            return model.split("_", 1)[1] if "_" in model else model
    return text


class DispatchContext:
    """Base of the contexts; ``current()`` is the innermost one (process-wide, as in AutoTVM)."""

    _stack: ClassVar[list] = []

    def __init__(self):
        self.targets: tuple = ()

    @property
    def records(self) -> dict:
        return {}

    def query(self, target: Any, workload: Any) -> Any:
        """The configuration of ``workload`` on ``target``, or None."""
        return self._query_inside(target, workload)

    def _query_inside(self, target: Any, workload: Any) -> Any:
        return None

    def update(self, target: Any, workload: Any, cfg: Any) -> None:
        """Remember ``cfg`` for ``workload`` (the fallback context keeps defaults this way)."""
        raise NotImplementedError(f"{type(self).__name__} does not take updates")

    def __enter__(self):
        DispatchContext._stack.append(self)
        return self

    def __exit__(self, *exc):
        DispatchContext._stack.remove(self)

    @staticmethod
    def current() -> DispatchContext | None:
        return DispatchContext._stack[-1] if DispatchContext._stack else None


class ApplyConfig(DispatchContext):
    """Every workload gets one configuration (how a tuner instantiates a candidate)."""

    def __init__(self, config: Any):
        super().__init__()
        self._config = config
        self.workload = None

    def _query_inside(self, target: Any, workload: Any) -> Any:
        self.workload = workload
        return self._config


class FallbackContext(DispatchContext):
    """Workloads without a configuration get a :class:`FallbackConfigEntity` (the default)."""

    def __init__(self):
        super().__init__()
        self.memory: dict = {}

    def _query_inside(self, target: Any, workload: Any) -> Any:
        key = (target_model(target), repr(workload))
        cfg = self.memory.get(key)
        if cfg is None:
            cfg = self.memory[key] = FallbackConfigEntity()
        return cfg

    def update(self, target: Any, workload: Any, cfg: Any) -> None:
        self.memory[(target_model(target), repr(workload))] = cfg


def _clean(x: Any) -> Any:
    """JSON lists -> tuples (hashable), recursively."""
    if isinstance(x, list):
        return tuple(_clean(a) for a in x)
    return x


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
        from .record import load_from_file

        if records is None:
            return
        if isinstance(records, (str, os.PathLike)):
            records = [records]
        for item in records:
            pairs: Iterable = load_from_file(item) if isinstance(item, (str, os.PathLike)) else [item]
            for inp, res in pairs:
                if res.error_no != 0:
                    continue
                key = (target_model(inp.target), inp.task.name, _clean(json.loads(json.dumps(list(inp.task.args)))),
                       json.dumps(inp.task.kwargs, sort_keys=True))
                best = self.best_by_workload.get(key)
                if best is None or _mean(res.costs) < _mean(best[1].costs):
                    self.best_by_workload[key] = (inp, res)

    def _query_inside(self, target: Any, workload: Any) -> Any:
        """``workload`` is ``(task name, args, kwargs)`` as :attr:`Task.workload` gives it."""
        if workload is None:
            return None
        if len(workload) == 3 and isinstance(workload[2], dict):
            name, args, kwargs = workload
        else:  # AutoTVM's (task name, *args)
            name, args, kwargs = workload[0], tuple(workload[1:]), {}
        key = (target_model(target), name, _clean(json.loads(json.dumps(list(args)))),
               json.dumps(kwargs, sort_keys=True))
        best = self.best_by_workload.get(key)
        return None if best is None else best[0].config

    # ------------------------------------------------------------ the vta.topi tiling hook
    def query(self, *a: Any) -> Any:
        """AutoTVM's ``query(target, workload)``; with three arguments ``(kind, env, workload)``
        the :mod:`vta.topi.dispatch` hook: a tuned tiling or None."""
        if len(a) == 3:
            return self._tiling(*a)
        return super().query(*a)

    def _tiling(self, kind: str, env: Any, wl: Any) -> Any:
        from .vta_ops import tiling_from_config, workload_of

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


def _mean(costs) -> float:
    costs = list(costs)
    return sum(costs) / len(costs) if costs else float("inf")


def apply_history_best(log: Any) -> ApplyHistoryBest:
    """``autotvm.apply_history_best(log)``: a context with the best record of each workload.

    Raises
    ------
    FileNotFoundError, vta.errors.TuningLogError
        As :class:`ApplyHistoryBest`.
    """
    return ApplyHistoryBest(log)


#: The context of templates called outside any other (default configurations).
FALLBACK = FallbackContext()
