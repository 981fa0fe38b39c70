"""pytest runner of the vta_insn_seq cocotb tests."""

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


def test_insn_seq(tmp_path):
    run("vta_insn_seq", "tests.hw.insn_seq.cocotb_insn_seq", tmp_path)
