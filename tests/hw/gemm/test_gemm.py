"""pytest runner of the vta_gemm cocotb tests (default and BATCH=2 configurations)."""

import pytest

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


@pytest.mark.parametrize("config", ["vta_config.json", "batch2.json"])
def test_gemm(tmp_path, config):
    run("vta_gemm", "tests.hw.gemm.cocotb_gemm", tmp_path, config=config)
