"""The RTL's checks written as immediate assertions behind one guard still fire, and the build's
expansion limit follows the accumulator row.

Most checks of ``hw/`` are labelled immediate assertions on the clock edge that run only in an
edge where one of the module's checks fails (a cheaper form of a same-cycle concurrent
assertion). A copy of ``hw/`` whose store check AckExpected is made to fail at the first write
acknowledgement must stop a run with that assertion's label and message; so must copies whose
memory engine checks (each evaluated only in an edge with its own event) are made to fail at the
first read response and at the first read request. The copies are built into temporary caches
(a cold tsim build each: the memory engine's two run in the slow tier).
"""

from __future__ import annotations

import re
import shutil

import pytest

from tests.conftest import make_env
from tests.e2e import gemm_program
from tests.hw.hwsim import needs_verilator
from vta.dram import DRAM
from vta.errors import HardwareAssertionError

_SOUND = "ack_ok    = !wr_ack_i || acks_q != '0;"
_BROKEN = "ack_ok    = !wr_ack_i;"
_CONFIGS = ("vta_config.json", "batch2.json", "block32.json", "extended.json", "narrow.json")


@pytest.mark.parametrize("config", _CONFIGS)
def test_expand_limit_covers_an_accumulator_row(config):
    from vta.sim.tsim import library

    env = make_env(config)
    words = env.ACC_ELEM_BYTES // 4  # 32-bit words of an accumulator row
    assert library.expand_limit(env) == max(16, words)


def test_expand_limit_must_be_positive():
    from vta.sim.tsim import library

    with pytest.raises(ValueError, match="positive"):
        library.build_sources([], "", expand=0)


def _run_broken(tmp_path, name: str, sound: str, broken: str) -> str:
    """Build a copy of ``hw/`` whose file ``name`` has ``sound`` replaced by ``broken``, run a small
    GEMM on it and return the message of the hardware assertion that stops the run."""
    from vta.sim.tsim import TSim, hwgen, library

    hw = tmp_path / "hw"
    shutil.copytree(library._hw_dir(), hw)
    path = hw / name
    text = path.read_text()
    assert text.count(sound) == 1, f"the check {sound!r} of {name} changed; update this test"
    path.write_text(text.replace(sound, broken))
    env = make_env()
    sv = sorted(hw.glob("*.sv")) + sorted((hw / "sim").glob("*.sv"))
    lib = library.build_sources(sv, hwgen.sv_package(env), cache=tmp_path / "cache",
                                expand=library.expand_limit(env))
    with env, DRAM(1 << 26) as dram, TSim(env, dram, library=lib) as dev:
        prog = gemm_program.build(env, dram, m=2, k=2)
        try:
            with pytest.raises(HardwareAssertionError) as info:
                dev.run(prog.insn_addr, prog.insn_count)
        finally:
            prog.free(dram)
    return str(info.value)


@needs_verilator[0]
@needs_verilator[1]
def test_guarded_check_fires(tmp_path):
    msg = _run_broken(tmp_path, "vta_store.sv", _SOUND, _BROKEN)
    assert "RTL assertion failed" in msg
    assert "AckExpected" in msg
    assert "vta_store: write ack without an outstanding burst" in msg
    assert re.search(r"vta_store\.sv:\d+", msg)


# vta_mem_engine's checks, each made to fail at the first edge with its event: (sound text,
# broken text, label, message).
_MEM_CHECKS = {
    "read-response": ("id_ok = mem_rd_id_i < 8'(NumRd);", "id_ok = mem_rd_id_i < 8'(0);",
                      "RdIdKnown", "vta_mem_engine: read response with unknown id 0"),
    "read-request": ("&& (mem_rd_req_len_o < 8'(MAX_BURST_BEATS));",
                     "&& (mem_rd_req_len_o < 8'(0));",
                     "RdReqNoCross", "vta_mem_engine: read burst crosses a 128-byte boundary"),
}


@pytest.mark.slow
@needs_verilator[0]
@needs_verilator[1]
@pytest.mark.parametrize("event", sorted(_MEM_CHECKS))
def test_memory_engine_check_fires_on_its_event(tmp_path, event):
    sound, broken, label, message = _MEM_CHECKS[event]
    msg = _run_broken(tmp_path, "vta_mem_engine.sv", sound, broken)
    assert "RTL assertion failed" in msg
    assert label in msg
    assert message in msg
    assert re.search(r"vta_mem_engine\.sv:\d+", msg)
