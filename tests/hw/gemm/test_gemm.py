"""pytest runner of the vta_gemm cocotb tests (the default configuration; the 4-bit-input one in the
slow tier).

BATCH=2 GEMM is covered by the whole-core tests (tests/hw/top, slow tier) and, with the 4-bit
inputs, by the tsim differential tests of the default tier."""

import pytest

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


@pytest.mark.parametrize("config", ["vta_config.json", pytest.param("narrow.json", marks=pytest.mark.slow)])
def test_gemm(tmp_path, config):
    run("vta_gemm", "tests.hw.gemm.cocotb_gemm", tmp_path, config=config)
