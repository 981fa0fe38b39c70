"""Shared fixtures: configurations, a fresh DRAM arena per test."""

from __future__ import annotations

import os

# Threaded BLAS on a small shared machine makes fsim's batched products 10-20x slower; the
# simulator's arithmetic is the same with one thread. Must happen before NumPy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# The suite builds tsim libraries without a profile (vta.sim.tsim.pgo): a profile changes no bit
# and no cycle (tests/e2e/test_tsim_pgo.py builds one and checks that), and it would add a
# training run and a second compile to every configuration's cold build.
os.environ.setdefault("VTA_TSIM_PGO", "0")

from pathlib import Path  # noqa: E402

import pytest

from vta.dram import DRAM
from vta.env import Environment, load_config

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
CONFIG_FILES = sorted(p.name for p in CONFIG_DIR.glob("*.json"))


#: Opt-in tiers: a test with one of these markers is skipped unless the marker expression names it.
#: ``slow``: whole networks on tsim, wheel installs, the large configurations' whole-core runs (CI
#: runs it); ``synth``: logic synthesis of a whole core with Yosys (about 11 CPU-minutes; not in CI).
OPT_IN = {"slow": "slow: run it with -m slow", "synth": "synth: whole-core synthesis, run it with -m synth"}


def pytest_collection_modifyitems(config, items):
    """Skip the opt-in tiers (:data:`OPT_IN`) the marker expression does not name."""
    expr = config.getoption("markexpr") or ""
    for marker, reason in OPT_IN.items():
        if marker in expr:
            continue
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if item.get_closest_marker(marker) is not None:
                item.add_marker(skip)


def make_env(name: str = "vta_config.json") -> Environment:
    """Build the environment of one shipped configuration file."""
    return Environment(load_config(CONFIG_DIR / name))


@pytest.fixture
def env():
    """The default configuration, made current for the test."""
    with make_env() as e:
        yield e


@pytest.fixture(params=CONFIG_FILES)
def any_env(request):
    """Every shipped configuration in turn, made current for the test."""
    with make_env(request.param) as e:
        yield e


@pytest.fixture
def dram():
    """A fresh 256 MiB arena."""
    with DRAM(1 << 28) as d:
        yield d
