"""Running a stream again: the checks made before a run see every change since the last one.

The compiled engine keeps the result of its pre-run checks for the last stream it checked
(:meth:`vta.sim.fsim.jit.JitEngine.prechecks`); a run of a changed stream, with other tokens or
over other allocations must be checked afresh. Each case runs on both engines and checks the
outcome against NumPy or the expected error.
"""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.errors import DeadlockError, DRAMAccessError
from vta.testing.programs import ProgramBuilder


def _copy_program(env, dram, src_rows: int = 2):
    """A stream copying ``src_rows`` OUT-sized rows of int8 data through the accumulator to two
    output buffers: LOAD ACC_8BIT, STORE to the first, STORE to the second, FINISH (compute and
    store serialised by tokens). Returns the builder, its (address, count), the data, both output
    addresses (allocated here, freed by the caller) and the index of the second STORE."""
    rng = np.random.default_rng(7)
    data = rng.integers(-128, 128, size=src_rows * env.OUT_ELEM_BYTES, dtype=np.int8)
    prog = ProgramBuilder(env, dram)
    src = prog.buffer(data)
    outs = [dram.alloc(data.size) for _ in range(2)]
    prog.load(isa.MEM_ACC_8BIT, 0, src, 1, src_rows, push_next_dep=1)
    prog.store(0, outs[0], 1, src_rows, pop_prev_dep=1)
    second = prog.store(0, outs[1], 1, src_rows)
    prog.finish()
    return prog, prog.build(), data, outs, second


def _outputs(dram, outs, n):
    return [np.frombuffer(dram.read(a, n), dtype=np.int8) for a in outs]


def _clear(dram, outs, n):
    for a in outs:
        dram.write(a, bytes(n))


def test_same_stream_again_gives_the_same_result(env, dram, sim):
    prog, (addr, count), data, outs, _ = _copy_program(env, dram)
    for _ in range(3):
        _clear(dram, outs, data.size)
        sim.run(addr, count)
        for got in _outputs(dram, outs, data.size):
            np.testing.assert_array_equal(got, data)
    for a in outs:
        dram.free(a)
    prog.close()


def _rewrite_second_store(env, dram, addr, second, outs):
    """The second STORE now writes past the end of the arena; the outputs the first writes remain."""
    bad = isa.MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, sram_base=0,
                      dram_base=(dram.data.size // env.OUT_ELEM_BYTES) - 1, y_size=1, x_size=2, x_stride=2)
    w0, w1 = isa.encode_words(bad, env)
    dram.write(addr + 16 * second, np.array([w0, w1], dtype="<u8").tobytes())
    return outs


def _free_second_output(env, dram, addr, second, outs):
    """The same words, but the second STORE's target is no longer allocated."""
    dram.free(outs[1])
    return outs[:1]


@pytest.mark.parametrize("change", [_rewrite_second_store, _free_second_output], ids=["rewritten", "freed"])
def test_changed_stream_or_allocation_is_checked_again(env, dram, sim, change):
    # after a clean run, the change makes the second STORE leave the arena's allocations: the
    # rerun is rejected before anything runs, so the first STORE writes nothing either
    prog, (addr, count), data, outs, second = _copy_program(env, dram)
    sim.run(addr, count)
    live = change(env, dram, addr, second, outs)
    _clear(dram, live, data.size)
    with pytest.raises(DRAMAccessError, match=f"instruction {second}"):
        sim.run(addr, count)
    assert not _outputs(dram, live, data.size)[0].any()
    for a in live:
        dram.free(a)
    prog.close()


def test_other_tokens_are_checked_again(env, dram, sim):
    # the stream pops an s2g token it is never given: a deadlock without an outstanding one
    prog = ProgramBuilder(env, dram)
    prog.nop(isa.STAGE_COMPUTE, pop_next_dep=1)
    prog.finish()
    addr, count = prog.build()
    with pytest.raises(DeadlockError):
        sim.run(addr, count)
    # a stream that leaves an s2g token, then the same popping stream again: now it runs
    with ProgramBuilder(env, dram) as give:
        give.nop(isa.STAGE_STORE, push_prev_dep=1)
        give.finish()
        sim.run(*give.build())
    sim.run(addr, count)
    assert sim.stats()["tokens_s2g"] == 0
    prog.close()
