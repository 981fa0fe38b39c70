"""``XGBTuner``: a learned cost model (gradient-boosted trees, xgboost) ranks the untried points.

Each point is described by its knob values (log2 of the split factors, the knob values, the
order); after the first ``plan_size`` points (a task's ``prior`` when it has one: for the VTA
convolutions, the points the default chooser's cycle estimate ranks best; else random) a model
is fitted on the measured points (log of the cost; failed points get the worst cost seen times
two) and the next batch takes the best-predicted untried points, a share ``1 - eps_greedy`` of
it, the rest random untried ones. As AutoTVM's, the model is refitted every ``plan_size`` measurements, not after every
batch. The spaces of the VTA operators hold at most a few thousand valid points, so every
untried point is scored (AutoTVM anneals over larger spaces).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .tuner import Tuner

__all__ = ["XGBTuner"]


class XGBTuner(Tuner):
    """Model-based tuner (AutoTVM's ``XGBTuner``).

    Parameters
    ----------
    task : Task
    plan_size : int
        Random points measured before the first model.
    feature_type, loss_type, num_threads, optimizer, diversity_filter_ratio, log_interval
        Accepted for compatibility.
    eps_greedy : float
        Share of each batch drawn at random.

    Raises
    ------
    ImportError
        If xgboost is not installed (``pip install 'vta[tune]'``).
    """

    def __init__(self, task: Any, plan_size: int = 16, feature_type: str = "knob", loss_type: str = "reg",
                 num_threads: int | None = 1, optimizer: str = "sa", diversity_filter_ratio: Any = None,
                 log_interval: int = 50, eps_greedy: float = 0.05, **kwargs: Any):
        del feature_type, loss_type, optimizer, diversity_filter_ratio, log_interval
        try:
            import xgboost
        except ImportError as exc:
            raise ImportError("XGBTuner needs xgboost: pip install 'vta[tune]' (or use GATuner / RandomTuner)") from exc
        super().__init__(task, **kwargs)
        self._xgb = xgboost
        self.plan_size = plan_size
        self.eps_greedy = eps_greedy
        self.num_threads = num_threads or 1
        self._features = np.array([self._feature(i) for i in self.valid], dtype=float)
        self._row = {index: k for k, index in enumerate(self.valid)}
        self._ranked: list[int] | None = None
        self._fit_at = 0

    def _feature(self, index: int) -> list[float]:
        out: list[float] = []
        for (name, ents), k in zip(self.space.space_map.items(), self.space.point(index), strict=True):
            e = ents[k]
            if e.kind == "sp":
                out.extend(float(np.log2(max(x, 1))) for x in e.size[1:])
            elif e.kind == "re":
                out.extend(float(x) for x in e.perm)
            elif isinstance(e.val, (int, float)) and not isinstance(e.val, bool):
                out.append(float(e.val))
            else:
                out.append(float(k))
            del name
        return out

    def next_batch(self, batch_size: int) -> list:
        untried = self._untried()
        if not untried:
            return []
        if len(self.xs) < self.plan_size:
            # the first plan: the task's prior (a VTA task's estimator ranking), else random points
            prior = [i for i in getattr(self.task, "prior", None) or [] if i not in self.visited][:batch_size]
            pick = [untried[int(k)] for k in self.rng.permutation(len(untried)) if untried[int(k)] not in prior]
            return [self.space.get(i) for i in (prior + pick)[:batch_size]]
        if self._ranked is None or len(self.xs) - self._fit_at >= self.plan_size:
            self._ranked = self._fit_and_rank(untried)
            self._fit_at = len(self.xs)
        order = [i for i in self._ranked if i not in self.visited]
        n_random = round(batch_size * self.eps_greedy)
        chosen = order[:batch_size - n_random]
        rest = [i for i in untried if i not in set(chosen)]
        if n_random and rest:
            chosen += [rest[int(k)] for k in self.rng.permutation(len(rest))[:n_random]]
        return [self.space.get(i) for i in chosen]

    def _fit_and_rank(self, untried: list[int]) -> list[int]:
        """Fit the model on every measured point; the untried points, best predicted first."""
        ys = np.array(self.ys, dtype=float)
        ok = np.isfinite(ys)
        worst = ys[ok].max() * 2 if ok.any() else 1.0
        target = np.log(np.where(ok, ys, worst))
        x = self._features[[self._row[i] for i in self.xs]]
        params = {"max_depth": 6, "eta": 0.3, "nthread": self.num_threads, "seed": self.seed, "verbosity": 0,
                  "objective": "reg:squarederror"}
        booster = self._xgb.train(params, self._xgb.DMatrix(x, label=target), num_boost_round=100)
        pred = booster.predict(self._xgb.DMatrix(self._features[[self._row[i] for i in untried]]))
        return [untried[int(k)] for k in np.argsort(pred, kind="stable")]

