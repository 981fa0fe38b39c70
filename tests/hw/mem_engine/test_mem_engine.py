"""pytest runner of the vta_mem_engine cocotb tests."""

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


def test_mem_engine(tmp_path):
    run("vta_mem_engine", "tests.hw.mem_engine.cocotb_mem_engine", tmp_path)
