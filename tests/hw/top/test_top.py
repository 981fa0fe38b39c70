"""pytest runner of the whole-core cocotb tests (vta_top with a Python memory model)."""

import pytest

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


@pytest.mark.parametrize("config", ["vta_config.json", "batch2.json"])
def test_top(tmp_path, config):
    run("vta_top", "tests.hw.top.cocotb_top", tmp_path, config=config)
