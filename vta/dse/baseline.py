"""Committed cycle baselines: one JSON file per configuration, compared against new tsim runs.

A baseline file (``baselines/<configuration file name>``) holds::

    {"format_version": 1,
     "config": {...the configuration keys...},
     "tsim_cycles": {"resnet18.C2": 552924, ...},
     "model_cycles": {"resnet18.C2": 552924, ...},
     "model_waivers": {"gemm.blocked": {"tolerance": 0.12, "reason": "..."}}}

``model_waivers`` (optional) accepts a larger model error for a named workload, with the reason,
the way lint waivers accept a warning: the check passes and the table shows the waiver.

:func:`compare` classifies a new count against the baseline with a relative threshold: above it
is a regression, below minus it an improvement (which passes, and asks for a baseline update).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..env import CONFIG_KEYS, check_keys
from ..errors import ConfigError

__all__ = ["FORMAT_VERSION", "Baseline", "BaselineError", "Verdict", "compare", "load", "save"]

FORMAT_VERSION = 1
#: The fields of a baseline file.
BASELINE_KEYS = ("format_version", "config", "tsim_cycles", "model_cycles", "model_waivers")


class BaselineError(ConfigError):
    """A baseline file is malformed or belongs to another configuration."""


@dataclass
class Baseline:
    """Cycle counts of one configuration."""

    config: dict
    tsim_cycles: dict
    model_cycles: dict
    model_waivers: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """The outcome of one comparison: ``status`` is ``"same"``, ``"regression"``, ``"faster"`` or ``"new"``."""

    status: str
    baseline: int | None
    cycles: int
    change: float | None  # relative change, (cycles - baseline) / baseline

    @property
    def percent(self) -> str:
        """The change as ``+1.23%`` (or ``new`` without a baseline)."""
        return "new" if self.change is None else f"{100 * self.change:+.2f}%"


def load(path: str | Path, config: dict | None = None) -> Baseline | None:
    """The baseline in ``path``, or None when the file does not exist.

    Parameters
    ----------
    config : dict, optional
        When given, the file's configuration must have the same ``LOG_*`` keys.

    Raises
    ------
    BaselineError
        If the file is not a baseline, holds an unknown field or configuration key (the message
        names the closest known one), or belongs to another configuration. BaselineError is a
        ConfigError.
    """
    path = Path(path)
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise BaselineError(f"baseline {str(path)!r} is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format_version") != FORMAT_VERSION:
        raise BaselineError(f"baseline {str(path)!r} is not a format_version {FORMAT_VERSION} baseline file")
    check_keys(doc, BASELINE_KEYS, f"baseline {str(path)!r}", BaselineError)
    for key in ("config", "tsim_cycles", "model_cycles"):
        if not isinstance(doc.get(key), dict):
            raise BaselineError(f"baseline {str(path)!r} lacks the object {key!r}")
    check_keys(doc["config"], CONFIG_KEYS, f"baseline {str(path)!r}: config", BaselineError)
    if config is not None:
        mine = {k: v for k, v in config.items() if k.startswith("LOG_")}
        theirs = {k: v for k, v in doc["config"].items() if k.startswith("LOG_")}
        if mine != theirs:
            raise BaselineError(f"baseline {str(path)!r} was recorded for another configuration: {theirs!r}, "
                                f"not {mine!r}")
    waivers = doc.get("model_waivers", {})
    if not isinstance(waivers, dict) or not all(
            isinstance(w, dict) and isinstance(w.get("tolerance"), (int, float)) and isinstance(w.get("reason"), str)
            and w["reason"] for w in waivers.values()):
        raise BaselineError(f"baseline {str(path)!r}: model_waivers must map workloads to "
                            "{\"tolerance\": number, \"reason\": non-empty text}")
    return Baseline(doc["config"], {k: int(v) for k, v in doc["tsim_cycles"].items()},
                    {k: int(v) for k, v in doc["model_cycles"].items()}, dict(waivers))


def save(path: str | Path, baseline: Baseline) -> Path:
    """Write ``baseline`` to ``path`` (keys sorted, one workload per line); return the path.

    Raises
    ------
    OSError
        If the file cannot be written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"format_version": FORMAT_VERSION, "config": baseline.config,
           "tsim_cycles": dict(sorted(baseline.tsim_cycles.items())),
           "model_cycles": dict(sorted(baseline.model_cycles.items()))}
    if baseline.model_waivers:
        doc["model_waivers"] = dict(sorted(baseline.model_waivers.items()))
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def compare(baseline: int | None, cycles: int, threshold: float) -> Verdict:
    """Classify ``cycles`` against ``baseline`` with the relative ``threshold`` (0.01 is 1%).

    Raises
    ------
    ValueError
        If ``threshold`` is negative.
    """
    if threshold < 0:
        raise ValueError(f"threshold must be non-negative, got {threshold!r}")
    if baseline is None or baseline <= 0:
        return Verdict("new", None, cycles, None)
    change = (cycles - baseline) / baseline
    if change > threshold:
        return Verdict("regression", baseline, cycles, change)
    if change < -threshold:
        return Verdict("faster", baseline, cycles, change)
    return Verdict("same", baseline, cycles, change)
