"""pytest runner of the vta_store cocotb tests."""

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


def test_store(tmp_path):
    run("vta_store", "tests.hw.store.cocotb_store", tmp_path)
