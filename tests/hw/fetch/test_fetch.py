"""pytest runner of the vta_fetch cocotb tests."""

from tests.hw.hwsim import needs_verilator, run

pytestmark = needs_verilator


def test_fetch(tmp_path):
    run("vta_fetch", "tests.hw.fetch.cocotb_fetch", tmp_path)


def test_fetch_extended(tmp_path):
    """The fetch unit of the extended configuration (ALU opcodes 5, REQ, and 6, MOV, accepted)."""
    run("vta_fetch", "tests.hw.fetch.cocotb_fetch", tmp_path, config="extended.json")
