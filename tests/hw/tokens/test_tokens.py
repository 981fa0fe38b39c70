"""pytest runner of the vta_tokens cocotb tests."""

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


def test_tokens(tmp_path):
    run("vta_tokens", "tests.hw.tokens.cocotb_tokens", tmp_path)
