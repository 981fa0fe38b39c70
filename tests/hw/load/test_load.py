"""pytest runner of the vta_load cocotb tests."""

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


def test_load(tmp_path):
    run("vta_load", "tests.hw.load.cocotb_load", tmp_path)
