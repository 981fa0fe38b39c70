"""pytest runner of the whole-core cocotb tests (vta_top with a Python memory model).

The 1x32x32 configuration is marked ``slow``: its 8192-bit weight rows make the unoptimised
model the slowest to build and run.
"""

import pytest

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


@pytest.mark.parametrize("config", ["vta_config.json", "batch2.json", "narrow.json",
                                    pytest.param("block32.json", marks=pytest.mark.slow)])
def test_top(tmp_path, config):
    run("vta_top", "tests.hw.top.cocotb_top", tmp_path, config=config)
