"""pytest runner of the vta_gemm cocotb tests (default and 4-bit-input configurations).

BATCH=2 GEMM is covered by the whole-core tests (tests/hw/top), which build that package."""

import pytest

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


@pytest.mark.parametrize("config", ["vta_config.json", "narrow.json"])
def test_gemm(tmp_path, config):
    run("vta_gemm", "tests.hw.gemm.cocotb_gemm", tmp_path, config=config)
