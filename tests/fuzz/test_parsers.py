"""Short seeded fuzzing of every parser that takes outside bytes (:mod:`vta.testing.fuzz`).

Each target must return or raise one of its own specific errors. The inputs that once broke a
target are kept in ``regressions/<target>/`` (``.bin`` raw, ``.json`` structured) and replayed.
Long runs: ``python scripts/fuzz_parsers.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from vta.testing.fuzz import TARGETS, run_target

from .strategies import inputs

REGRESSIONS = Path(__file__).resolve().parent / "regressions"
EXAMPLES = 150


def _kept():
    for path in sorted(REGRESSIONS.glob("*/*")):
        if path.parent.name in TARGETS:
            yield pytest.param(path, id=f"{path.parent.name}/{path.name}")


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz(name):
    target = TARGETS[name]

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(inputs(target))
    def check(data):
        problem = run_target(target, data)
        assert problem is None, f"{name}: {problem} for input {data!r}"

    check()


@pytest.mark.parametrize("path", list(_kept()))
def test_kept_inputs(path):
    target = TARGETS[path.parent.name]
    data = json.loads(path.read_text()) if path.suffix == ".json" else path.read_bytes()
    assert run_target(target, data) is None
