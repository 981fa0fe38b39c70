"""Fixtures of the fsim tests: a simulator on a fresh arena, and running the oracle next to it."""

from __future__ import annotations

import numpy as np
import pytest

from vta.sim.fsim import jit
from vta.sim.fsim import FunctionalSimulator

from .oracle import Oracle


@pytest.fixture(params=["numpy", "jit"])
def engine(request):
    """Each execution engine: the NumPy opcode functions alone, and the compiled loop."""
    if request.param == "jit" and not jit.available():
        pytest.skip("numba is not installed: the compiled engine is unavailable")
    return request.param


@pytest.fixture
def sim(env, dram, engine):
    """A functional simulator of the default configuration, on each engine."""
    with FunctionalSimulator(env, dram, engine=engine) as dev:
        yield dev


def assert_same_state(dev: FunctionalSimulator, ref: Oracle) -> None:
    """The simulator's scratchpads equal the oracle's (every row of every buffer)."""
    sp = dev.sram
    uops = np.stack([sp.uop_dst, sp.uop_src, sp.uop_wgt], axis=1)
    for name, mine, theirs in (("ACC", sp.acc, ref.acc), ("INP", sp.inp, ref.inp), ("WGT", sp.wgt, ref.wgt),
                               ("UOP", uops, ref.uop)):
        expect = np.zeros(mine.shape, dtype=np.int64)
        for row, value in theirs.items():
            expect[row] = value
        np.testing.assert_array_equal(mine, expect, err_msg=f"{name} buffer")


def run_both(env, dram, outputs, addr, count, **kw):
    """Run a program on fsim and on the oracle (outputs zeroed before each); return both devices
    and both output byte lists."""
    for a, n in outputs:
        dram.write(a, bytes(n))
    dev = FunctionalSimulator(env, dram, **kw)
    dev.run(addr, count)
    got = [dram.read(a, n) for a, n in outputs]
    for a, n in outputs:
        dram.write(a, bytes(n))
    ref = Oracle(env, dram)
    ref.run(addr, count)
    want = [dram.read(a, n) for a, n in outputs]
    return dev, ref, got, want
