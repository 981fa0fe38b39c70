"""The C runtime and the hardware option ``ALU_MOV``: a micro-op of ALU opcode 6 (MOV) is recorded
and runs on a configuration with the option, and is refused, naming the option, without it."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from vta.dram import global_dram
from vta.runtime import vta_bridge

from ..conftest import make_env
from .test_configs import FINIT, declare

pytestmark = pytest.mark.native

ROWS = 4
MOV, ADD = 6, 2


def _push_alu(lib, body) -> int:
    """Record one ALU kernel whose micro-ops ``body(lib)`` pushes; the runtime's return code."""
    def init(_closure):
        body(lib)
        return 0

    cb = FINIT(init)
    handle = ctypes.c_void_p()
    return lib.VTAPushALUOp(ctypes.byref(handle), cb, None, 0)


def test_mov_fill_and_broadcast_run_with_the_option():
    """MOV -3 into four rows, ADD 5 to row 0, MOV row 0 over rows 1..3, ADD 7 to row 1: rows
    (2, 9, 2, 2) in every lane, as NumPy computes them here."""
    want = np.full(ROWS, -3, np.int64)
    want[0] += 5
    want[1:] = want[0]
    want[1] += 7
    with make_env("extended.json") as env:
        lib = vta_bridge.runtime(env)
        declare(lib)
        dram = global_dram()
        out_phys = dram.alloc(ROWS * env.OUT_ELEM_BYTES)
        try:
            cmd = lib.VTATLSCommandHandle()

            def fill(lib):
                lib.VTAUopLoopBegin(ROWS, 1, 0, 0)
                lib.VTAUopPush(1, 0, 0, 0, 0, MOV, 1, -3)
                lib.VTAUopLoopEnd()

            def broadcast(lib):
                lib.VTAUopLoopBegin(ROWS - 1, 1, 0, 0)
                lib.VTAUopPush(1, 0, 1, 0, 0, MOV, 0, 0)
                lib.VTAUopLoopEnd()

            assert _push_alu(lib, fill) == 0, lib.TVMGetLastError()
            assert _push_alu(lib, lambda lib: lib.VTAUopPush(1, 0, 0, 0, 0, ADD, 1, 5)) == 0
            assert _push_alu(lib, broadcast) == 0, lib.TVMGetLastError()
            assert _push_alu(lib, lambda lib: lib.VTAUopPush(1, 0, 1, 0, 0, ADD, 1, 7)) == 0
            assert lib.VTADepPush(cmd, 2, 3) == 0
            assert lib.VTADepPop(cmd, 2, 3) == 0
            lib.VTAStoreBuffer2D(cmd, 0, 4, dram.host_address + out_phys, 0, ROWS, 1, ROWS)
            assert lib.VTASynchronize(cmd, 1 << 31) == 0, lib.TVMGetLastError()
            got = np.frombuffer(dram.read(out_phys, ROWS * env.OUT_ELEM_BYTES), dtype=np.int8)
            np.testing.assert_array_equal(got.reshape(ROWS, -1), np.repeat(want[:, None], got.size // ROWS, 1))
        finally:
            dram.free(out_phys)


@pytest.mark.parametrize("opcode, option", [(MOV, "ALU_MOV"), (7, None)])
def test_mov_refused_without_the_option(env, opcode, option):
    """The default configuration's runtime refuses opcode 6 naming ALU_MOV (and 7 as unknown)."""
    lib = vta_bridge.runtime(env)
    declare(lib)
    assert _push_alu(lib, lambda lib: lib.VTAUopPush(1, 0, 0, 0, 0, opcode, 1, 1)) != 0
    message = lib.TVMGetLastError().decode()
    if option:
        assert f"ALU opcode {opcode} (MOV) needs the hardware option '{option}'" in message
    else:
        assert f"ALU opcode {opcode} is not one of" in message and "MOV" not in message
    cmd = lib.VTATLSCommandHandle()
    assert lib.VTASynchronize(cmd, 1 << 31) == 0, lib.TVMGetLastError()  # the runtime recovered
