"""The DRAM keys of the configuration: presets, validation, and that they never touch the RTL."""

from __future__ import annotations

import pytest

from tests.conftest import make_env
from vta.env import DRAM_KEYS, DRAM_PRESETS, Environment
from vta.errors import ConfigError
from vta.sim.tsim import hwgen


def _with(**keys) -> Environment:
    return Environment({**make_env().cfg_dict, **keys})


def test_default_is_the_ideal_memory():
    env = make_env()
    assert env.DRAM == "ideal"
    assert env.dram_timing == (1, 8, 0)


def test_ddr4_preset_and_overrides():
    env = _with(DRAM="ddr4")
    # DDR4-2400 x64 at a 1 GHz accelerator clock: 90 ns -> 90 cycles, 19.2 GB/s -> 19 B/cycle
    assert env.dram_timing == (90, 19, 8)
    assert _with(DRAM="ddr4", DRAM_MAX_OUTSTANDING=16).dram_timing == (90, 19, 16)
    assert _with(DRAM_LATENCY=20).dram_timing == (20, 8, 0)


@pytest.mark.parametrize("key", sorted(DRAM_KEYS))
def test_out_of_range_names_the_key_and_the_range(key):
    lo, hi = DRAM_KEYS[key]
    for bad in (lo - 1, hi + 1):
        with pytest.raises(ConfigError, match=rf"{key}.*{lo}\.\.{hi}"):
            _with(**{key: bad})
    with pytest.raises(ConfigError, match=key):
        _with(**{key: 2.5})
    with pytest.raises(ConfigError, match=key):
        _with(**{key: True})


def test_unknown_preset_lists_the_accepted_ones():
    with pytest.raises(ConfigError, match="'DRAM'.*'ideal'.*'ddr4'"):
        _with(DRAM="hbm3")


@pytest.mark.parametrize("name", sorted(DRAM_PRESETS))
def test_the_rtl_does_not_depend_on_the_memory(name):
    # the generated package is all the RTL build sees of a configuration (and its cache key)
    base = make_env()
    assert hwgen.sv_package(_with(DRAM=name, DRAM_LATENCY=7)) == hwgen.sv_package(base)
    assert _with(DRAM=name).MODEL == base.MODEL
