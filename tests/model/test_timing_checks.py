"""The compiled checks of the timing-only run (``replay._timing_run``) against two oracles.

* fsim's own compiled pre-pass (:meth:`vta.sim.fsim.jit.JitEngine.prechecks`, written separately):
  the same streams run in stream order and the same LOAD/STORE rows are suspects;
* the timing-only run that checks in Python (the path taken with the probe on, which makes fsim's
  checks the way fsim makes them): every damaged stream raises the same error, type and message,
  or runs with the same counters.
"""

from __future__ import annotations

import numpy as np
import pytest

from vta.errors import VTAError
from vta.sim.model import CycleModel
from vta.sim.model import replay as rp
from vta.testing.malformed import KINDS, malformed_program
from vta.testing.programs import random_program

pytestmark = pytest.mark.skipif(rp.compiled() is None, reason="numba is not installed")


def _words(dram, addr, count):
    return dram.data[addr:addr + 16 * count].copy().view("<i8").reshape(count, 2)


def _scan(dev, words, tokens):
    """Run the compiled pass alone; return (status, suspects, fsim counters)."""
    consts = dev._scratch.packed(dev.env, dev.timing)
    n = words.shape[0]
    io = np.zeros(rp.IO_SIZE, np.int64)
    io[rp.IO_TOKENS:rp.IO_TOKENS + 4] = tokens
    io[rp.IO_CHECK] = 1
    flat = dev._scratch.flat_for(n)
    allocs = np.array(list(dev.dram.allocations()) or [(0, 0)], np.int64)
    allocs[:, 1] += allocs[:, 0]
    rp._TIMING_RUN(np.ascontiguousarray(words), consts, allocs, flat, io, np.zeros(26, np.int64))
    start = rp.suspects_at(n)
    return int(io[rp.IO_STATUS]), flat[start:start + int(io[rp.IO_SUSPECTS])].tolist()


def _flip(words, rng, flips):
    """A copy of ``words`` with ``flips`` random bits flipped."""
    out = words.copy().view(np.uint64)
    for _ in range(flips):
        i, w, b = rng.integers(words.shape[0]), rng.integers(2), rng.integers(64)
        out[i, w] ^= np.uint64(1) << np.uint64(b)
    return out.view(np.int64)


def test_checks_match_fsims_prepass(any_env, dram):
    """Status and suspects of the compiled pass against fsim's pre-pass, on valid and damaged streams."""
    rng = np.random.default_rng(7)
    with CycleModel(any_env, dram, functional=False) as dev:
        checked = 0
        for seed in range(8):
            p = random_program(any_env, dram, seed, length=40)
            try:
                base = _words(dram, p.insn_addr, p.insn_count)
                for k in range(25):
                    words = base if k == 0 else _flip(base, rng, 1 + k % 3)
                    after, suspects = dev._jit.prechecks(words, [0, 0, 0, 0], dram)
                    status, got = _scan(dev, words, [0, 0, 0, 0])
                    if after is None:
                        assert status == 1, (seed, k)  # fsim checks it the slow way: so does the model
                    else:
                        assert status == 0, (seed, k)
                        assert got == suspects, (seed, k)
                        checked += 1
            finally:
                p.close()
        assert checked >= 20  # enough damaged streams pass the stream checks to test the suspects


def _outcome(dev, addr, count):
    dev.clear_stats()
    try:
        dev.run(addr, count)
    except VTAError as exc:
        return type(exc).__name__, str(exc), exc.insn_index
    stats = dev.stats()
    return "ran", stats, dev.last_run


@pytest.mark.parametrize("kind", list(KINDS))
def test_errors_are_those_of_the_python_checks(env, dram, kind):
    """Every damaged stream: the compiled run raises what the run that checks in Python raises."""
    with CycleModel(env, dram, functional=False) as fast, CycleModel(env, dram, functional=False) as slow:
        slow.set_probe(True)  # (the probe takes the path that checks in Python)
        for seed in range(6):
            bad = malformed_program(env, dram, seed, kind)
            try:
                want = _outcome(slow, bad.insn_addr, bad.insn_count)
                got = _outcome(fast, bad.insn_addr, bad.insn_count)
            finally:
                bad.close()
            assert got == want, (kind, seed)
            assert fast.tokens == slow.tokens


def test_bit_flips_fail_or_run_as_with_the_python_checks(env, dram):
    rng = np.random.default_rng(3)
    with CycleModel(env, dram, functional=False) as fast, CycleModel(env, dram, functional=False) as slow:
        slow.set_probe(True)
        outcomes = set()
        for seed in range(6):
            p = random_program(env, dram, seed, length=30)
            try:
                base = _words(dram, p.insn_addr, p.insn_count)
                for k in range(15):
                    words = _flip(base, rng, 1 + k % 2)
                    dram.data[p.insn_addr:p.insn_addr + words.nbytes] = words.view(np.uint8).reshape(-1)
                    want = _outcome(slow, p.insn_addr, p.insn_count)
                    got = _outcome(fast, p.insn_addr, p.insn_count)
                    assert got == want, (seed, k)
                    outcomes.add(want[0])
            finally:
                p.close()
        assert "ran" in outcomes and len(outcomes) >= 3  # both kinds of streams were tried


def test_outstanding_tokens_are_checked_as_in_python(env, dram):
    """A run lent tokens by the previous one: the same errors and counters on both paths."""
    with CycleModel(env, dram, functional=False) as fast, CycleModel(env, dram, functional=False) as slow:
        slow.set_probe(True)
        for seed in range(4):
            p = random_program(env, dram, seed, length=20)
            try:
                for dev in (fast, slow):
                    dev.tokens = [1, 0, 2, 0]  # left by an earlier run
                want = _outcome(slow, p.insn_addr, p.insn_count)
                got = _outcome(fast, p.insn_addr, p.insn_count)
            finally:
                p.close()
            assert got == want, seed
            assert fast.tokens == slow.tokens


def _expected_suspect(env, op, mt, sram_base, dram_base, y, x, stride, pads, allocs) -> bool:
    """The rule of a suspect, written plainly: a LOAD/STORE whose SRAM rectangle passes its buffer
    or whose DRAM rows leave every allocation (or a LOAD of OUT, a padded STORE, a STORE not of OUT)."""
    from vta import isa

    depth = {isa.MEM_UOP: env.UOP_BUFF_DEPTH, isa.MEM_WGT: env.WGT_BUFF_DEPTH, isa.MEM_INP: env.INP_BUFF_DEPTH}
    yp0, yp1, xp0, xp1 = pads
    if op == isa.OPCODE_LOAD:
        if mt == isa.MEM_OUT or sram_base + (yp0 + y + yp1) * (xp0 + x + xp1) > depth.get(mt, env.ACC_BUFF_DEPTH):
            return True
        elem = env.elem_bytes(mt)
    else:
        if mt != isa.MEM_OUT or any(pads) or sram_base + x * y > env.ACC_BUFF_DEPTH:
            return True
        elem = env.OUT_ELEM_BYTES
    lo, hi = dram_base * elem, (dram_base + (y - 1) * stride + x) * elem
    return y > 0 and not any(a <= lo and hi <= a + size for a, size in allocs)


def test_suspects_at_the_edges_of_buffers_and_allocations(any_env, dram):
    from vta import isa
    from tests.model import streams

    env = any_env
    buf = dram.alloc(1 << 16)
    try:
        allocs = list(dram.allocations())
        insns, want = [], []
        depth = {isa.MEM_UOP: env.UOP_BUFF_DEPTH, isa.MEM_WGT: env.WGT_BUFF_DEPTH, isa.MEM_INP: env.INP_BUFF_DEPTH,
                 isa.MEM_ACC: env.ACC_BUFF_DEPTH, isa.MEM_ACC_8BIT: env.ACC_BUFF_DEPTH, isa.MEM_OUT: env.ACC_BUFF_DEPTH}
        for op in (isa.OPCODE_LOAD, isa.OPCODE_STORE):
            for mt in (isa.MEM_UOP, isa.MEM_WGT, isa.MEM_INP, isa.MEM_ACC, isa.MEM_OUT, isa.MEM_ACC_8BIT):
                elem = env.OUT_ELEM_BYTES if op == isa.OPCODE_STORE else env.elem_bytes(mt)
                for pads in ((0, 0, 0, 0), (1, 0, 2, 1)):
                    y, x = 2, 3
                    area = (pads[0] + y + pads[1]) * (pads[2] + x + pads[3]) if op == isa.OPCODE_LOAD else x * y
                    last = (buf + (1 << 16)) // elem - ((y - 1) * 5 + x)  # the last row ends at the allocation's end
                    for sram_base in (depth[mt] - area - 1, depth[mt] - area, depth[mt] - area + 1):
                        for dram_base in (buf // elem, last, last + 1):
                            insns.append(isa.MemInsn(opcode=op, memory_type=mt, sram_base=max(sram_base, 0),
                                                     dram_base=dram_base, y_size=y, x_size=x, x_stride=5,
                                                     y_pad_0=pads[0], y_pad_1=pads[1], x_pad_0=pads[2],
                                                     x_pad_1=pads[3]))
                            want.append(_expected_suspect(env, op, mt, max(sram_base, 0), dram_base, y, x, 5, pads,
                                                          allocs))
        insns.append(isa.FinishInsn())
        words = streams.words(insns, env)
        with CycleModel(env, dram, functional=False) as dev:
            status, got = _scan(dev, words, [0, 0, 0, 0])
            fsim = dev._jit.prechecks(words, [0, 0, 0, 0], dram)[1]
    finally:
        dram.free(buf)
    assert status == 0
    assert got == [i for i, w in enumerate(want) if w]
    assert got == fsim
    assert 0 < len(got) < len(want)


def test_the_debug_dump_is_the_full_models(env, dram, capsys):
    """DEBUG_DUMP_INSN on the timing-only run prints what the full model prints (timed order, tokens)."""
    from vta.sim.debug import DEBUG_DUMP_INSN

    texts = {}
    for functional in (True, False):
        with CycleModel(env, dram, functional=functional) as dev:
            dev.set_debug_mode(DEBUG_DUMP_INSN)
            for seed in range(3):
                p = random_program(env, dram, seed, length=12)
                try:
                    dev.run(p.insn_addr, p.insn_count)
                finally:
                    p.close()
        texts[functional] = capsys.readouterr().out
    assert texts[False] == texts[True]
    assert texts[True].count("INSTRUCTION") > 30
