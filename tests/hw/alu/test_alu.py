"""pytest runner of the vta_alu cocotb tests."""

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


def test_alu(tmp_path):
    run("vta_alu", "tests.hw.alu.cocotb_alu", tmp_path)


def test_alu_extended(tmp_path):
    """The ALU of the extended configuration (REQ and MOV built)."""
    run("vta_alu", "tests.hw.alu.cocotb_alu", tmp_path, config="extended.json")
