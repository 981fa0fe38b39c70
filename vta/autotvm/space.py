"""Configuration spaces (AutoTVM's ``ConfigSpace``) and their points (``ConfigEntity``).

A template defines knobs on ``cfg``: ``define_split`` (factors of an axis, entity ``"sp"``),
``define_knob`` (a list of values, ``"ot"``) and ``define_reorder`` (axis orders, ``"re"``).
The space is the product of the knobs; a point's ``index`` counts through it with the first
knob varying fastest, as AutoTVM's. ``multi_filter`` drops the points a predicate refuses (for
VTA: tilings that overflow an on-chip buffer), so tuners only sample valid points while indices
stay those of the whole product (logs stay comparable).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from itertools import permutations
from typing import Any

from ..errors import ScheduleError

__all__ = [
    "ConfigEntity",
    "ConfigSpace",
    "FallbackConfigEntity",
    "InstantiationError",
    "OtherOptionEntity",
    "ReorderEntity",
    "SplitEntity",
]


class InstantiationError(ScheduleError):
    """A template refused a configuration (AutoTVM's ``InstantiationError``)."""


def _extent(axis: Any) -> int:
    """The extent of an axis given as an int, an IterVar with a domain, or a Range."""
    if isinstance(axis, int) and not isinstance(axis, bool):
        return axis
    dom = getattr(axis, "dom", axis)
    ext = getattr(dom, "extent", None)
    try:
        return int(getattr(ext, "value", ext))
    except (TypeError, ValueError):
        raise TypeError(f"define_split needs an int or an axis with a constant extent, got {axis!r}") from None


class SplitEntity:
    """One way to split an axis: ``size`` = ``[-1, f1, ..., fn]`` (outer extent left free)."""

    kind = "sp"

    def __init__(self, size):
        self.size = [int(x) for x in size]

    def apply(self, sch, op, axis):
        """Split ``axis`` of ``sch[op]`` by the inner factors; returns the new axes, outer first."""
        axes = []
        for factor in reversed(self.size[1:]):
            axis, inner = sch[op].split(axis, factor=factor)
            axes.append(inner)
        return [axis] + axes[::-1]

    @property
    def value(self):
        return self.size

    def __eq__(self, other):
        return isinstance(other, SplitEntity) and other.size == self.size

    def __hash__(self):
        return hash(tuple(self.size))

    def __repr__(self):
        return f"sp{self.size}"


class OtherOptionEntity:
    """One value of a ``define_knob``."""

    kind = "ot"

    def __init__(self, val):
        self.val = val

    @property
    def value(self):
        return self.val

    def __eq__(self, other):
        return isinstance(other, OtherOptionEntity) and other.val == self.val

    def __hash__(self):
        return hash(self.val)

    def __repr__(self):
        return f"ot{self.val!r}"


class ReorderEntity:
    """One order of a ``define_reorder``'s axes: ``perm`` indexes the axes given."""

    kind = "re"

    def __init__(self, perm):
        self.perm = [int(x) for x in perm]

    def apply(self, sch, op, axes):
        """Reorder ``axes`` of ``sch[op]``; returns them in the new order."""
        ordered = [axes[i] for i in self.perm]
        sch[op].reorder(*ordered)
        return ordered

    @property
    def value(self):
        return self.perm

    def __eq__(self, other):
        return isinstance(other, ReorderEntity) and other.perm == self.perm

    def __hash__(self):
        return hash(tuple(self.perm))

    def __repr__(self):
        return f"re{self.perm}"


_KINDS = {"sp": SplitEntity, "ot": OtherOptionEntity, "re": ReorderEntity}


def _factors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _split_sizes(extent: int, parts: int, policy: str, max_factor: int | None) -> list[list[int]]:
    """Inner factor lists (``parts - 1`` of them) whose product divides ``extent`` (``factors``),
    or any values up to the extent (``candidate`` lists are given directly)."""
    if policy == "factors":
        choices = _factors(extent)
    elif policy == "power2":
        choices = [1 << k for k in range(extent.bit_length()) if (1 << k) <= extent]
    else:
        raise ValueError(f"define_split: policy {policy!r} is not one of 'factors', 'power2', 'candidate'")
    if max_factor is not None:
        choices = [c for c in choices if c <= max_factor]
    out: list[list[int]] = [[]]
    for _ in range(parts - 1):
        out = [sizes + [c] for sizes in out for c in choices if _prod(sizes + [c]) <= extent
               and (policy != "factors" or extent % _prod(sizes + [c]) == 0)]
    return out


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


class ConfigSpace:
    """The space of a template's knobs, built while the template runs in definition mode.

    Inside a template, ``cfg[name]`` gives the knob's first point so the schedule can be built
    once while the space is defined.
    """

    is_fallback = False

    def __init__(self):
        self.space_map: OrderedDict[str, list] = OrderedDict()
        self._filters: list[Callable] = []
        self._valid: list[int] | None = None
        self.code_hash = None
        self.flop = 0

    # -------------------------------------------------------------------- definitions
    def define_split(self, name: str, axis: Any, num_outputs: int = 2, policy: str = "factors",
                     max_factor: int | None = None, filter: Callable | None = None, candidate=None):
        """Knob ``name``: the ways to split ``axis`` into ``num_outputs`` loops.

        Raises
        ------
        ValueError
            If ``num_outputs`` < 2, the policy is unknown, or no split passes ``filter``.
        """
        if name in self.space_map:
            return self._first(name)
        if num_outputs < 2:
            raise ValueError(f"define_split {name!r}: num_outputs must be at least 2, got {num_outputs!r}")
        extent = _extent(axis)
        if policy == "candidate":
            if not candidate:
                raise ValueError(f"define_split {name!r}: policy 'candidate' needs a candidate list")
            sizes = [list(c)[1:] for c in candidate]
        else:
            sizes = _split_sizes(extent, num_outputs, policy, max_factor)
        ents = [SplitEntity([-1] + s) for s in sizes]
        if filter is not None:
            ents = [e for e in ents if filter(e)]
        if not ents:
            raise ValueError(f"define_split {name!r}: no split of extent {extent} is left")
        return self._add(name, ents)

    def define_knob(self, name: str, candidate):
        """Knob ``name``: one of the values in ``candidate``.

        Raises
        ------
        ValueError
            If ``candidate`` is empty.
        """
        if name in self.space_map:
            return self._first(name)
        candidate = list(candidate)
        if not candidate:
            raise ValueError(f"define_knob {name!r}: the candidate list is empty")
        return self._add(name, [OtherOptionEntity(v) for v in candidate])

    def define_reorder(self, name: str, axes, policy: str = "all", candidate=None):
        """Knob ``name``: orders of ``axes`` (``"all"`` permutations, ``"identity"``, or
        ``"candidate"`` index lists).

        Raises
        ------
        ValueError
            If the policy is unknown or a candidate is not a permutation of the axes.
        """
        if name in self.space_map:
            return self._first(name)
        n = len(axes)
        if policy == "all":
            perms = [list(p) for p in permutations(range(n))]
        elif policy == "identity":
            perms = [list(range(n))]
        elif policy == "candidate":
            perms = [list(c) for c in candidate or []]
            for p in perms:
                if sorted(p) != list(range(n)):
                    raise ValueError(f"define_reorder {name!r}: {p!r} is not a permutation of {n} axes")
        else:
            raise ValueError(f"define_reorder {name!r}: policy {policy!r} is not 'all', 'identity' or 'candidate'")
        return self._add(name, [ReorderEntity(p) for p in perms])

    def multi_filter(self, filter: Callable[[Any], bool]) -> None:
        """Keep only the points for which ``filter(entity)`` is true (``entity[name]`` works)."""
        self._filters.append(filter)
        self._valid = None

    def add_flop(self, flop: float) -> None:
        """Record the operation count of the template (for GFLOPS figures)."""
        self.flop += flop

    def raise_error(self, msg: str) -> None:
        """Refuse the current configuration."""
        raise InstantiationError(msg)

    def _add(self, name: str, ents: list):
        self.space_map[name] = ents
        self._valid = None
        return ents[0]

    def _first(self, name: str):
        return self.space_map[name][0]

    # -------------------------------------------------------------------- the space
    @property
    def range_length(self) -> int:
        """Points of the whole product (valid or not)."""
        return _prod(len(v) for v in self.space_map.values())

    def valid_indices(self) -> list[int]:
        """Indices of the points every filter keeps, ascending."""
        if self._valid is None:
            n = self.range_length
            if not self._filters:
                self._valid = list(range(n))
            else:
                self._valid = [i for i in range(n) if all(f(self._entity(i)) for f in self._filters)]
        return self._valid

    def __len__(self) -> int:
        return len(self.valid_indices())

    def knob_sizes(self) -> list[int]:
        return [len(v) for v in self.space_map.values()]

    def point(self, index: int) -> list[int]:
        """The knob indices of point ``index`` (first knob fastest)."""
        out = []
        for n in self.knob_sizes():
            out.append(index % n)
            index //= n
        return out

    def index_of(self, point) -> int:
        index, mult = 0, 1
        for p, n in zip(point, self.knob_sizes(), strict=True):
            index += p * mult
            mult *= n
        return index

    def _entity(self, index: int) -> ConfigEntity:
        ents = OrderedDict((name, ents[i]) for (name, ents), i in
                           zip(self.space_map.items(), self.point(index), strict=True))
        return ConfigEntity(index, self.code_hash, ents)

    def get(self, index: int) -> ConfigEntity:
        """Point ``index`` of the whole product.

        Raises
        ------
        IndexError
            If ``index`` is outside ``[0, range_length)``.
        """
        if not 0 <= index < self.range_length:
            raise IndexError(f"config index {index!r} is outside [0, {self.range_length})")
        return self._entity(index)

    def __getitem__(self, name: str):
        return self._first(name)

    def __repr__(self):
        lines = [f"ConfigSpace ({len(self)} valid of {self.range_length} points)"]
        for i, (name, ents) in enumerate(self.space_map.items()):
            lines.append(f"  {i:2d} {name}: {ents[0].kind} len={len(ents)}")
        return "\n".join(lines)


class ConfigEntity:
    """One point of a space: its ``index`` and the value of every knob (``cfg[name]``)."""

    is_fallback = False

    def __init__(self, index: int, code_hash, entity_map: OrderedDict):
        self.index = int(index)
        self.code_hash = code_hash
        self._entity_map = entity_map

    # templates call the definitions on a point too: they change nothing
    def define_split(self, name, *args, **kwargs):
        return self._entity_map[name]

    define_knob = define_split
    define_reorder = define_split

    def multi_filter(self, *args, **kwargs) -> None:
        return None

    def add_flop(self, flop: float) -> None:
        return None

    def raise_error(self, msg: str) -> None:
        raise InstantiationError(msg)

    def __getitem__(self, name: str):
        try:
            return self._entity_map[name]
        except KeyError:
            raise KeyError(f"config has no knob {name!r}; knobs: {list(self._entity_map)!r}") from None

    def get_other_option(self) -> dict:
        return {k: v.val for k, v in self._entity_map.items() if isinstance(v, OtherOptionEntity)}

    def get_flatten_feature(self) -> list[float]:
        """Numbers describing the point (split factors, knob values, order), for cost models."""
        out: list[float] = []
        for e in self._entity_map.values():
            if isinstance(e, SplitEntity):
                out.extend(float(x) for x in e.size[1:])
            elif isinstance(e, ReorderEntity):
                out.extend(float(x) for x in e.perm)
            else:
                v = e.val
                out.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float(hash(v) % 97))
        return out

    def to_json_dict(self) -> dict:
        """AutoTVM's JSON form: ``{"index", "code_hash", "entity": [[name, kind, value], ...]}``."""
        return {"index": self.index, "code_hash": self.code_hash,
                "entity": [[name, e.kind, e.value] for name, e in self._entity_map.items()]}

    @classmethod
    def from_json_dict(cls, d: dict) -> ConfigEntity:
        """The point a :meth:`to_json_dict` wrote.

        Raises
        ------
        ValueError
            If an entity's kind is not ``sp``, ``ot`` or ``re``.
        """
        ents = OrderedDict()
        for name, kind, value in d["entity"]:
            if kind not in _KINDS:
                raise ValueError(f"config entity {name!r} has kind {kind!r}; accepted: sp, ot, re")
            ents[name] = _KINDS[kind](value)
        return cls(d["index"], d.get("code_hash"), ents)

    def __eq__(self, other):
        return isinstance(other, ConfigEntity) and self.to_json_dict()["entity"] == other.to_json_dict()["entity"]

    def __hash__(self):
        return hash(str(self))

    def __repr__(self):
        return f"{','.join(f'[{k!r}, {v!r}]' for k, v in self._entity_map.items())},{self.code_hash},{self.index}"


class FallbackConfigEntity(ConfigSpace):
    """The configuration of a workload with no tuning record: templates see ``is_fallback`` and
    take their default (for VTA operators, the default tiling chooser)."""

    is_fallback = True

    def __getitem__(self, name: str):
        return self._first(name)

    def __repr__(self):
        return "FallbackConfigEntity"
