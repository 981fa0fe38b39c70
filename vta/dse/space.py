"""The design space: configuration parameters, their values, grid and random sampling, SPEC files.

A SPEC file is JSON::

    {
      "base": "vta_config.json",            # a shipped configuration name or a path (optional)
      "parameters": {"LOG_BATCH": [0, 1], "LOG_BLOCK": [3, 4, 5],
                     "LOG_INP_BUFF_SIZE": [14, 15, 16]},
      "sampling": "grid",                    # or "random" (then "samples" and "seed")
      "samples": 50,
      "seed": 0,
      "workloads": ["resnet18"],             # workload or group names (vta.dse.workloads)
      "area": false                          # true: synthesise every configuration (vta.hw.area)
    }

Every parameter is a configuration key of :data:`vta.env.INT_KEYS` (the ``LOG_*`` widths, batch,
block and buffer sizes); keys not swept keep the base configuration's value. Points are plain
dicts of configuration keys; whether a point can be encoded is decided later, by the evaluation,
which records an infeasible point with its reason instead of failing.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..env import INT_KEYS, OPTION_KEYS, check_keys, load_config, unknown_key_error
from ..errors import ConfigError

__all__ = ["AXIS_KEYS", "Space", "Spec", "SpecError", "load_spec", "shipped_config"]

#: Where the shipped configurations live (``configs/`` at the repository root).
CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"
SAMPLINGS = ("grid", "random")
#: The fields of a SPEC file.
SPEC_KEYS = ("base", "parameters", "sampling", "samples", "seed", "workloads", "area")
#: The keys a sweep may vary: the integer configuration keys, then the hardware options (booleans).
AXIS_KEYS = tuple(INT_KEYS) + tuple(OPTION_KEYS)


class SpecError(ConfigError):
    """A SPEC file or a space definition is malformed (the message says where and what is accepted)."""


def shipped_config(name_or_path: str | Path | None) -> dict:
    """The configuration dict of a shipped name (``batch2.json``) or a file path (default: the default).

    Raises
    ------
    SpecError
        If neither a shipped configuration nor a file of that name exists.
    vta.errors.ConfigError
        If the file is not a valid configuration.
    """
    if name_or_path is None:
        return load_config()
    path = Path(name_or_path)
    if not path.exists() and (CONFIG_DIR / path.name).exists() and path.parent == Path("."):
        path = CONFIG_DIR / path.name
    if not path.exists():
        shipped = ", ".join(sorted(p.name for p in CONFIG_DIR.glob("*.json")))
        raise SpecError(f"configuration {str(name_or_path)!r} is neither a file nor a shipped name ({shipped})")
    return load_config(path)


@dataclass
class Space:
    """Values of each swept parameter over a base configuration.

    Parameters
    ----------
    parameters : dict
        ``key -> list of values``: integers for the keys of :data:`vta.env.INT_KEYS`, ``true`` /
        ``false`` for the hardware options of :data:`vta.env.OPTION_KEYS`.
    base : dict, optional
        The configuration the unswept keys come from (default: the default configuration).

    Raises
    ------
    SpecError
        For an unknown key (a ConfigError naming the closest known key), an empty or non-integer
        value list.
    """

    parameters: dict
    base: dict = field(default_factory=load_config)

    def __post_init__(self):
        if not isinstance(self.parameters, dict) or not self.parameters:
            raise SpecError(f"parameters must be a non-empty object of key -> values, got {self.parameters!r}")
        clean = {}
        for key, values in self.parameters.items():
            if key not in AXIS_KEYS:
                raise unknown_key_error(key, AXIS_KEYS, "parameters", SpecError)
            if key in OPTION_KEYS:
                if isinstance(values, bool):
                    values = [values]
                if not isinstance(values, list) or not values or any(not isinstance(v, bool) for v in values):
                    raise SpecError(f"parameter {key!r} is a hardware option: values must be a non-empty list of "
                                    f"true/false, got {values!r}")
                clean[key] = sorted(set(values))
                continue
            if isinstance(values, int) and not isinstance(values, bool):
                values = [values]
            if (not isinstance(values, list) or not values
                    or any(isinstance(v, bool) or not isinstance(v, int) for v in values)):
                raise SpecError(f"parameter {key!r}: values must be a non-empty list of integers, got {values!r}")
            clean[key] = sorted(set(values))
        self.parameters = clean
        self.base = {k: v for k, v in dict(self.base).items() if not k.startswith("LOG_") or k in INT_KEYS}

    @property
    def size(self) -> int:
        """Number of points of the full grid."""
        return int(np.prod([len(v) for v in self.parameters.values()]))

    def _point(self, values) -> dict:
        cfg = dict(self.base)
        cfg.update(zip(self.parameters, (v if isinstance(v, bool) else int(v) for v in values), strict=True))
        return cfg

    def grid(self) -> list[dict]:
        """Every combination, in a fixed order (the last parameter varies fastest)."""
        return [self._point(vals) for vals in itertools.product(*self.parameters.values())]

    def random(self, samples: int, seed: int = 0) -> list[dict]:
        """``samples`` distinct grid points drawn uniformly with ``seed`` (all of them if fewer exist).

        Raises
        ------
        SpecError
            If ``samples`` is not positive.
        """
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise SpecError(f"samples must be a positive integer, got {samples!r}")
        sizes = [len(v) for v in self.parameters.values()]
        rng = np.random.default_rng(seed)
        if samples >= self.size:
            return self.grid()
        picks = rng.choice(self.size, size=samples, replace=False)
        out = []
        for flat in sorted(int(p) for p in picks):
            idx = np.unravel_index(flat, sizes)
            out.append(self._point([vals[i] for vals, i in zip(self.parameters.values(), idx, strict=True)]))
        return out


@dataclass
class Spec:
    """A parsed SPEC file: the space, how to sample it, and the workloads."""

    space: Space
    sampling: str
    samples: int | None
    seed: int
    workloads: list
    area: bool = False

    def points(self) -> list[dict]:
        """The configurations this spec evaluates."""
        if self.sampling == "grid":
            return self.space.grid()
        return self.space.random(self.samples, self.seed)


def load_spec(source) -> Spec:
    """Parse a SPEC file (a path) or an already-loaded dict.

    Raises
    ------
    SpecError
        If the file is missing, not JSON, or a field is unknown (the message names the closest
        known field), missing or malformed (the message names it). SpecError is a ConfigError.
    """
    if isinstance(source, dict):
        doc, where = source, "spec"
    else:
        where = str(source)
        try:
            doc = json.loads(Path(source).read_text())
        except FileNotFoundError:
            raise SpecError(f"spec file {where!r} does not exist") from None
        except json.JSONDecodeError as exc:
            raise SpecError(f"spec file {where!r} is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise SpecError(f"{where}: the top level must be an object")
    check_keys(doc, SPEC_KEYS, where, SpecError)
    base = shipped_config(doc.get("base"))
    space = Space(doc.get("parameters"), base)
    sampling = doc.get("sampling", "grid")
    if sampling not in SAMPLINGS:
        raise SpecError(f"{where}: sampling {sampling!r} is not one of {SAMPLINGS!r}")
    samples = doc.get("samples")
    if sampling == "random" and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 1):
        raise SpecError(f"{where}: random sampling needs \"samples\", a positive integer, got {samples!r}")
    seed = doc.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise SpecError(f"{where}: seed must be an integer, got {seed!r}")
    workloads = doc.get("workloads", ["resnet18"])
    if isinstance(workloads, str):
        workloads = [workloads]
    if not isinstance(workloads, list) or not all(isinstance(w, str) for w in workloads) or not workloads:
        raise SpecError(f"{where}: workloads must be a non-empty list of names, got {workloads!r}")
    area = doc.get("area", False)
    if not isinstance(area, bool):
        raise SpecError(f"{where}: area must be true or false, got {area!r}")
    return Spec(space, sampling, samples, seed, workloads, area)
