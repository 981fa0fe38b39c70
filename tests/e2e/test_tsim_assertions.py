"""A failing RTL assertion stops a tsim run with HardwareAssertionError; a sound build runs clean.

The faulty design is a copy of ``hw/`` whose FIFO assertion ``ReadWhenEmpty`` is inverted, so it
fires at the first pop of any queue. It is built into a temporary cache, not the shared one.
"""

from __future__ import annotations

import ctypes
import re
import shutil

import numpy as np
import pytest

from tests.conftest import make_env
from vta.dram import DRAM
from vta.errors import HardwareAssertionError, SimulationError

from . import gemm_program

pytestmark = pytest.mark.verilator

_SOUND = "read_ok  = !rready_i || rvalid_o;"
_INVERTED = "read_ok  = !rready_i || !rvalid_o;"


def _assertion_line(fifo_text: str) -> int:
    """1-based line of ReadWhenEmpty's failure action (where Verilator locates the failure)."""
    for number, line in enumerate(fifo_text.splitlines(), start=1):
        if '$error("vta_fifo: pop from an empty FIFO")' in line:
            return number
    raise AssertionError("the $error of ReadWhenEmpty is not found in vta_fifo.sv")


@pytest.fixture(scope="module")
def faulty_library(tmp_path_factory, tsim_library):
    """Library built from a copy of hw/ with ReadWhenEmpty inverted; and the assertion's line."""
    tsim_library()  # skips without Verilator
    from vta.sim.tsim import hwgen, library

    root = tmp_path_factory.mktemp("faulty")
    hw = root / "hw"
    shutil.copytree(library._hw_dir(), hw)
    fifo = hw / "vta_fifo.sv"
    text = fifo.read_text()
    assert text.count(_SOUND) == 1, "the ReadWhenEmpty condition changed; update this test"
    fifo.write_text(text.replace(_SOUND, _INVERTED))
    sv = sorted(hw.glob("*.sv")) + sorted((hw / "sim").glob("*.sv"))
    lib = library.build_sources(sv, hwgen.sv_package(make_env()), cache=root / "cache")
    return lib, _assertion_line(text)


def _assertion_count(dev) -> int:
    return int(dev._lib.lib.vta_tsim_assertions(dev._handle, None))


def test_failing_assertion_raises(faulty_library):
    from vta.sim.tsim import TSim

    lib, line = faulty_library
    env = make_env()
    with env, DRAM(1 << 26) as dram, TSim(env, dram, library=lib) as dev:
        prog = gemm_program.build(env, dram, m=2, k=2)
        try:
            for _ in range(2):  # the device is reset and reports the next run afresh
                with pytest.raises(HardwareAssertionError) as info:
                    dev.run(prog.insn_addr, prog.insn_count)
                msg = str(info.value)
                assert isinstance(info.value, SimulationError)
                assert "RTL assertion failed" in msg
                assert f"vta_fifo.sv:{line}" in msg
                assert "Assertion failed in TOP.vta_tsim_top." in msg
                assert "ReadWhenEmpty: vta_fifo: pop from an empty FIFO" in msg
                cycle = int(re.search(r"in cycle (\d+) of the run", msg).group(1))
                assert 0 < cycle <= 64 * 1000  # a pop happens early in any program
                assert _assertion_count(dev) == 0  # the context's error state was cleared
                assert all(n == 0 for n in dev.state()["tokens"].values())  # reset: no token left
        finally:
            prog.free(dram)


def test_sound_build_runs_clean(tsim_default):
    env, dram, dev = tsim_default
    prog = gemm_program.build(env, dram, m=4, k=3, reps=2, seed=5)
    try:
        assert dev.run(prog.insn_addr, prog.insn_count) == 0
        np.testing.assert_array_equal(prog.output(dram), prog.expected)
        assert _assertion_count(dev) == 0
        cycle = ctypes.c_uint64(7)
        assert dev._lib.lib.vta_tsim_assertions(dev._handle, ctypes.byref(cycle)) == 0
        assert cycle.value == 7  # untouched when nothing failed
    finally:
        prog.free(dram)
