"""The tuning loop shared by every tuner (AutoTVM's ``Tuner.tune``).

A tuner proposes a batch of untried points (:meth:`Tuner.next_batch`), the batch is measured in
parallel (:func:`vta.autotvm.measure.measure_batch`), the tuner learns from the results
(:meth:`Tuner.update`) and the callbacks see them (log file, progress bar). A task with a
``default_index`` (a VTA operator's default chooser) has that point measured first, so the best
found is never worse than the default.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..measure import MeasureInput, measure_batch, parallelism

__all__ = ["Tuner"]

logger = logging.getLogger("vta.autotvm")


class Tuner:
    """Base class: subclasses implement :meth:`next_batch` and may override :meth:`update`.

    Attributes
    ----------
    best_config, best_flops, best_cost, best_measure_pair, best_iter
        The best error-free measurement so far (``best_flops`` from the task's FLOP count).
    """

    def __init__(self, task: Any, **kwargs: Any):
        if task.config_space is None:
            raise ValueError(f"task {task.name!r} has no configuration space (make it with autotvm.task.create)")
        self.task = task
        self.space = task.config_space
        self.valid = list(self.space.valid_indices())
        if not self.valid:
            raise ValueError(f"task {task.name!r}: no configuration of its space is valid")
        self.visited: set[int] = set()
        self.best_config = None
        self.best_flops = 0.0
        self.best_cost = float("inf")
        self.best_measure_pair = None
        self.best_iter = 0
        self.xs: list[int] = []
        self.ys: list[float] = []
        self.seed = int(kwargs.get("seed", 0))
        self.rng = np.random.default_rng(self.seed)

    # --------------------------------------------------------------- subclass interface
    def has_next(self) -> bool:
        return len(self.visited) < len(self.valid)

    def next_batch(self, batch_size: int) -> list:
        """Up to ``batch_size`` untried configurations."""
        raise NotImplementedError

    def update(self, inputs: Sequence, results: Sequence) -> None:
        """Learn from measured ``inputs`` / ``results`` (default: nothing)."""
        del inputs, results

    # --------------------------------------------------------------- the loop
    def tune(self, n_trial: int, measure_option: dict, early_stopping: int | None = None,
             callbacks: Sequence[Callable] = (), si_prefix: str = "G") -> None:
        """Measure up to ``n_trial`` configurations (fewer if the space is smaller).

        Parameters
        ----------
        n_trial : int
        measure_option : dict
            From :func:`vta.autotvm.measure_option`.
        early_stopping : int, optional
            Stop after this many trials without improvement.
        callbacks : sequence of callable
            Each called as ``callback(tuner, inputs, results)`` after every batch.
        si_prefix : str
            Accepted for compatibility (progress shows cycles).

        Raises
        ------
        ValueError
            If ``n_trial`` is not positive.
        """
        del si_prefix
        if n_trial < 1:
            raise ValueError(f"n_trial must be positive, got {n_trial!r}")
        n_trial = min(n_trial, len(self.valid))
        runner = measure_option["runner"]
        batch = max(1, int(getattr(runner, "batch_size", 0) or 2 * parallelism(runner)))
        first = getattr(self.task, "default_index", None)
        i = 0
        while i < n_trial and self.has_next():
            size = min(batch, n_trial - i)
            configs = []
            if first is not None and first not in self.visited:
                configs.append(self.space.get(first))
                self.visited.add(first)
            configs += self.next_batch(size - len(configs))
            if not configs:
                break
            for c in configs:
                self.visited.add(c.index)
            start = time.time()
            results = measure_batch(self.task, configs, measure_option)
            inputs = [MeasureInput(self.task.target, self.task, c) for c in configs]
            for k, (inp, res) in enumerate(zip(inputs, results, strict=True)):
                if res.error_no == 0:
                    cost = float(np.mean(res.costs))
                    if cost < self.best_cost:
                        self.best_cost = cost
                        self.best_flops = self.task.flop / cost if cost > 0 else 0.0
                        self.best_config = inp.config
                        self.best_measure_pair = (inp, res)
                        self.best_iter = i + k
                logger.debug("task %s trial %d: %s %s", self.task.name, i + k, inp.config, res)
            i += len(configs)
            logger.debug("batch of %d measured in %.1f s", len(configs), time.time() - start)
            self._record(inputs, results)
            self.update(inputs, results)
            for cb in callbacks:
                cb(self, inputs, results)
            if early_stopping is not None and i - self.best_iter >= early_stopping:
                logger.info("early stopped at trial %d (no improvement in %d)", i, early_stopping)
                break

    def _record(self, inputs, results) -> None:
        for inp, res in zip(inputs, results, strict=True):
            self.xs.append(inp.config.index)
            self.ys.append(float(np.mean(res.costs)) if res.error_no == 0 else float("inf"))

    def reset(self) -> None:
        self.visited.clear()
        self.xs.clear()
        self.ys.clear()

    def load_history(self, data_set, min_seed_records: int = 500) -> None:
        """Accepted for compatibility (transfer learning is not implemented)."""
        del data_set, min_seed_records

    def _untried(self) -> list[int]:
        return [i for i in self.valid if i not in self.visited]
