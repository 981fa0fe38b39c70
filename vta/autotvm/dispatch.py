"""Dispatch contexts: which configuration a template gets (AutoTVM's ``DispatchContext``,
``ApplyConfig``, ``FallbackContext``). The context of tuning logs, ``ApplyHistoryBest``, is in
:mod:`vta.autotvm.history`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .space import FallbackConfigEntity

__all__ = ["ApplyConfig", "DispatchContext", "FallbackContext", "target_model"]

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


#: The context of templates called outside any other (default configurations).
FALLBACK = FallbackContext()
