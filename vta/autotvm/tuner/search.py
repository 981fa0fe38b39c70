"""Tuners without a model: ``GridSearchTuner``, ``RandomTuner`` and ``GATuner``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .tuner import Tuner

__all__ = ["GATuner", "GridSearchTuner", "RandomTuner"]


class GridSearchTuner(Tuner):
    """Every valid point in index order."""

    def __init__(self, task: Any, **kwargs: Any):
        super().__init__(task, **kwargs)
        self._pos = 0

    def next_batch(self, batch_size: int) -> list:
        out = []
        while len(out) < batch_size and self._pos < len(self.valid):
            index = self.valid[self._pos]
            self._pos += 1
            if index not in self.visited:
                out.append(self.space.get(index))
        return out


class RandomTuner(Tuner):
    """Valid points in a seeded random order, none twice (``range_idx`` restricts the indices)."""

    def __init__(self, task: Any, range_idx: tuple | None = None, **kwargs: Any):
        super().__init__(task, **kwargs)
        if range_idx is not None:
            lo, hi = range_idx
            self.valid = [i for i in self.valid if lo <= i <= hi]
        self._order = list(self.rng.permutation(len(self.valid)))

    def next_batch(self, batch_size: int) -> list:
        out = []
        while len(out) < batch_size and self._order:
            index = self.valid[int(self._order.pop())]
            if index not in self.visited:
                out.append(self.space.get(index))
        return out


class GATuner(Tuner):
    """A genetic algorithm over the knob indices: fitness is the measured speed; parents are
    drawn in proportion to it, children take each knob from either parent and mutate knobs with
    probability ``mutation_prob``; a child outside the valid points is replaced by a random
    untried valid one.

    Parameters
    ----------
    pop_size : int
    elite_num : int
        The best kept from one generation to the next.
    mutation_prob : float
    """

    def __init__(self, task: Any, pop_size: int = 100, elite_num: int = 3, mutation_prob: float = 0.1, **kwargs: Any):
        super().__init__(task, **kwargs)
        self.pop_size = min(pop_size, len(self.valid))
        self.elite_num = min(elite_num, self.pop_size)
        self.mutation_prob = mutation_prob
        self._valid_set = set(self.valid)
        self._sizes = self.space.knob_sizes()
        self._scores: dict[int, float] = {}
        self._queue: list[int] = [int(self.valid[i]) for i in self.rng.permutation(len(self.valid))[:self.pop_size]]

    def update(self, inputs, results) -> None:
        for inp, res in zip(inputs, results, strict=True):
            self._scores[inp.config.index] = 1.0 / float(np.mean(res.costs)) if res.error_no == 0 else 0.0
        if not self._queue:
            self._queue = self._next_generation()

    def _next_generation(self) -> list[int]:
        ranked = sorted(self._scores.items(), key=lambda kv: -kv[1])[:self.pop_size]
        if not ranked:
            return []
        idx = np.array([k for k, _ in ranked])
        fit = np.array([v for _, v in ranked], dtype=float)
        probs = fit / fit.sum() if fit.sum() > 0 else np.full(len(fit), 1.0 / len(fit))
        children: list[int] = []
        tries = 0
        while len(children) < self.pop_size and tries < 20 * self.pop_size:
            tries += 1
            a, b = self.rng.choice(idx, size=2, p=probs)
            pa, pb = self.space.point(int(a)), self.space.point(int(b))
            child = [pa[k] if self.rng.random() < 0.5 else pb[k] for k in range(len(pa))]
            for k, n in enumerate(self._sizes):
                if self.rng.random() < self.mutation_prob:
                    child[k] = int(self.rng.integers(n))
            c = self.space.index_of(child)
            if c in self._valid_set and c not in self.visited and c not in children:
                children.append(c)
        return children

    def next_batch(self, batch_size: int) -> list:
        out: list = []
        chosen: set[int] = set()
        for _ in range(20 * batch_size + 20):
            if len(out) >= batch_size:
                break
            if not self._queue:
                self._queue = self._next_generation()
            if self._queue:
                index = self._queue.pop(0)
            else:
                untried = [i for i in self._untried() if i not in chosen]
                if not untried:
                    break
                index = untried[int(self.rng.integers(len(untried)))]
            if index not in self.visited and index not in chosen:
                chosen.add(index)
                out.append(self.space.get(index))
        if len(out) < batch_size:  # generations kept repeating points: fill with random untried ones
            untried = [i for i in self._untried() if i not in chosen]
            for k in self.rng.permutation(len(untried))[:batch_size - len(out)]:
                out.append(self.space.get(untried[int(k)]))
        return out
