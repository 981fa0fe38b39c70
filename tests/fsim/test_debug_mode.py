"""``vta.testing.simulator.debug_mode``: the executed-instruction dump on fsim and the cycle model,
and upstream fsim's ``DEBUG_SKIP_EXEC``.

Oracles: the vadd tutorial's stream of reference tvm-vta-software.md 3.1 (eight instructions, their
flags, and the token counts worked out by hand from them), and small hand-made streams whose
execution order differs from stream order, with the order derived by hand from their tokens.
"""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa, nd, runtime
from vta.build import build
from vta.dram import DRAM
from vta.env import Environment, get_env
from vta.errors import SRAMIndexError
from vta.sim.debug import DEBUG_DUMP_INSN, DEBUG_SKIP_EXEC
from vta.sim.fsim import FunctionalSimulator
from vta.sim.model import CycleModel
from vta.testing import simulator
from vta.testing.programs import ProgramBuilder
from vta.tvm import te

pytestmark = pytest.mark.native

VADD_TITLES = ["LOAD ACC", "LOAD ACC", "LOAD UOP", "ALU - add", "STORE OUT", "NOP-MEMORY-STAGE",
               "NOP-COMPUTE-STAGE", "FINISH"]
VADD_FLAGS = [(0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 1), (1, 0, 1, 0), (0, 0, 0, 1), (1, 1, 0, 0),
              (0, 0, 0, 0)]
# (l2g, g2l, s2g, g2s) after each instruction: the ALU pushes g2s, the store takes it and pushes
# s2g, the load-stage no-op pushes l2g, the compute no-op takes l2g and s2g.
VADD_TOKENS = [(0, 0, 0, 0)] * 3 + [(0, 0, 0, 1), (0, 0, 1, 0), (1, 0, 1, 0), (0, 0, 0, 0), (0, 0, 0, 0)]


def blocks(text: str) -> list[list[str]]:
    """The dump split into one list of lines per instruction (the header line dropped)."""
    out: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("INSTRUCTION "):
            out.append([line])
        elif out:
            out[-1].append(line)
    return out


def check_block(block, index, title, flags, tokens):
    assert block[0] == f"INSTRUCTION {index}: {title}"
    assert block[1] == "\tdep - pop prev: {}, pop next: {}, push prev: {}, push next: {}".format(*flags)
    assert block[-2] == f"\tl2g_queue = {tokens[0]}, g2l_queue = {tokens[1]}"
    assert block[-1] == f"\ts2g_queue = {tokens[2]}, g2s_queue = {tokens[3]}"


@pytest.fixture(autouse=True)
def _debug_off():
    """The flag lives on the device (as upstream's command queue flag, it persists until changed,
    and a module built with ``build_config(debug_flag=...)`` sets it): start and end each test
    with it off."""
    simulator.debug_mode(0)
    yield
    simulator.debug_mode(0)


@pytest.fixture
def vadd(env):
    shape = (1, 64, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    B = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    A_buf = te.compute(shape, lambda *i: A(*i), "A_buf")
    B_buf = te.compute(shape, lambda *i: B(*i), "B_buf")
    C_buf = te.compute(shape, lambda *i: A_buf(*i) + B_buf(*i), "C_buf")
    C = te.compute(shape, lambda *i: C_buf(*i).astype(env.inp_dtype), "C")
    s = te.create_schedule(C.op)
    for t in (A_buf, B_buf, C_buf):
        s[t].set_scope(env.acc_scope)
    for t in (A_buf, B_buf, C):
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    s[C_buf].pragma(s[C_buf].op.axis[0], env.alu)
    mod = build(s, [A, B, C], "ext_dev", name="vadd_dbg")
    rng = np.random.default_rng(3)
    a = rng.integers(-100, 100, size=shape).astype(np.int32)
    b = rng.integers(-100, 100, size=shape).astype(np.int32)
    dev = runtime.ext_dev(0)
    arrays = [nd.array(a, dev), nd.array(b, dev), nd.empty(shape, "int8", dev)]
    yield mod, arrays, (a + b).astype(np.int8)
    simulator.debug_mode(0)
    for arr in arrays:
        arr.close()
    mod.close()


@pytest.mark.parametrize("target", ["sim", "model"])
def test_prints_each_executed_instruction(env, vadd, capsys, target):
    with Environment({**env.cfg_dict, "TARGET": target}):
        try:
            _check_vadd_dump(vadd, capsys)
        finally:
            simulator.debug_mode(0)


def _stage(title: str) -> str:
    if title in ("LOAD INP", "LOAD WGT", "NOP-MEMORY-STAGE"):
        return "load"
    if title.startswith("STORE") or title == "NOP-STORE-STAGE":
        return "store"
    return "compute"


def check_running_tokens(got):
    """The token lines follow the flags in the printed order (pops, then pushes; per stage)."""
    tok = dict.fromkeys(("l2g", "g2l", "s2g", "g2s"), 0)
    # (pop prev, pop next, push prev, push next) -> channel, per stage
    channels = {"load": (None, "g2l", None, "l2g"), "compute": ("l2g", "s2g", "g2l", "g2s"),
                "store": ("g2s", None, "s2g", None)}
    for block in got:
        flags = [int(x) for x in block[1].replace(",", "").split()[4::3]]
        chans = channels[_stage(block[0].split(": ", 1)[1])]
        for k, sign in ((0, -1), (1, -1), (2, 1), (3, 1)):
            if flags[k]:
                tok[chans[k]] += sign
        assert block[-2:] == [f"\tl2g_queue = {tok['l2g']}, g2l_queue = {tok['g2l']}",
                              f"\ts2g_queue = {tok['s2g']}, g2s_queue = {tok['g2s']}"]


def check_unit_order(got, count):
    """Every instruction once; each stage's instructions in stream order."""
    indices = [int(b[0].split()[1].rstrip(":")) for b in got]
    assert sorted(indices) == list(range(count))
    for stage in ("load", "compute", "store"):
        mine = [i for i, b in zip(indices, got, strict=True) if _stage(b[0].split(": ", 1)[1]) == stage]
        assert mine == sorted(mine)


def _check_vadd_dump(vadd, capsys):
    mod, arrays, expect = vadd
    mod(*arrays)
    assert capsys.readouterr().out == ""  # off by default
    simulator.debug_mode(simulator.DEBUG_DUMP_INSN)
    simulator.clear_stats()
    mod(*arrays)
    text = capsys.readouterr().out
    np.testing.assert_equal(arrays[2].numpy(), expect)
    assert text.startswith("There are 8 instructions\n")
    got = blocks(text)
    check_unit_order(got, 8)
    check_running_tokens(got)
    by_index = sorted(got, key=lambda b: int(b[0].split()[1].rstrip(":")))
    if get_env().TARGET == "sim":  # fsim runs a valid stream in stream order
        assert got == by_index
        for k, block in enumerate(got):
            check_block(block, k, VADD_TITLES[k], VADD_FLAGS[k], VADD_TOKENS[k])
    for k, block in enumerate(by_index):
        assert block[0] == f"INSTRUCTION {k}: {VADD_TITLES[k]}"
        assert block[1] == "\tdep - pop prev: {}, pop next: {}, push prev: {}, push next: {}".format(*VADD_FLAGS[k])
    # The field lines are those of the static dump of the same stream.
    static = blocks(mod.disassemble(*arrays))
    assert [b[2:-2] for b in by_index] == [b[2:-2] for b in static]
    # clear_stats keeps the flag; 0 clears it.
    simulator.clear_stats()
    mod(*arrays)
    assert capsys.readouterr().out.count("INSTRUCTION ") == 8
    simulator.debug_mode(0)
    mod(*arrays)
    assert capsys.readouterr().out == ""


def test_skip_exec_counts_without_executing(env, vadd, capsys):
    mod, arrays, _ = vadd
    simulator.debug_mode(simulator.DEBUG_SKIP_EXEC | simulator.DEBUG_DUMP_INSN)
    simulator.clear_stats()
    mod(*arrays)
    stats = simulator.stats()
    assert not arrays[2].numpy().any(), "DEBUG_SKIP_EXEC must not store"
    assert (stats["alu_counter"], stats["acc_load_nbytes"], stats["out_store_nbytes"]) == (
        64, 2 * 64 * env.BATCH * env.BLOCK_OUT * 4, 64 * env.BATCH * env.BLOCK_OUT)
    assert capsys.readouterr().out.count("INSTRUCTION ") == 8


def _out_of_order(prog):
    """A compute no-op that waits for the load no-op after it: runs 1, 0, 2."""
    prog.nop(isa.STAGE_COMPUTE, pop_prev_dep=1)
    prog.nop(isa.STAGE_LOAD, push_next_dep=1)
    prog.finish()
    return prog.build()


@pytest.mark.parametrize("device", [FunctionalSimulator, CycleModel])
def test_execution_order_and_running_tokens(env, device, capsys):
    with DRAM(1 << 22) as dram, device(env, dram) as dev, ProgramBuilder(env, dram) as prog:
        addr, count = _out_of_order(prog)
        dev.set_debug_mode(DEBUG_DUMP_INSN)
        dev.run(addr, count)
    text = capsys.readouterr().out
    assert text.startswith("There are 3 instructions\n")
    got = blocks(text)
    check_block(got[0], 1, "NOP-MEMORY-STAGE", (0, 0, 0, 1), (1, 0, 0, 0))
    check_block(got[1], 0, "NOP-COMPUTE-STAGE", (1, 0, 0, 0), (0, 0, 0, 0))
    check_block(got[2], 2, "FINISH", (0, 0, 0, 0), (0, 0, 0, 0))
    assert len(got) == 3


def test_tokens_left_by_an_earlier_run_start_the_counts(env, capsys):
    with DRAM(1 << 22) as dram, FunctionalSimulator(env, dram) as dev, ProgramBuilder(env, dram) as prog:
        prog.nop(isa.STAGE_LOAD, push_next_dep=1)  # leaves one l2g token
        prog.finish()
        addr, count = prog.build()
        dev.run(addr, count)
        dev.set_debug_mode(DEBUG_DUMP_INSN)
        dev.run(addr, count)
    got = blocks(capsys.readouterr().out)
    check_block(got[0], 0, "NOP-MEMORY-STAGE", (0, 0, 0, 1), (2, 0, 0, 0))


def test_a_failing_run_prints_what_executed_before_the_failure(env, capsys):
    with DRAM(1 << 22) as dram, FunctionalSimulator(env, dram, engine="numpy") as dev, \
            ProgramBuilder(env, dram) as prog:
        src = prog.buffer(nbytes=64 * env.elem_bytes(isa.MEM_ACC))
        prog.load(isa.MEM_ACC, 0, src, 1, 1)
        prog.uops([(env.ACC_BUFF_DEPTH - 1, 0, 0)])
        # the second iteration's destination is beyond the accumulator: found while executing
        # (an error found from the fields alone stops the stream before anything runs)
        prog.append(isa.AluInsn(uop_bgn=0, uop_end=1, iter_in=2, dst_factor_in=1, use_imm=1, imm=1))
        prog.finish()
        addr, count = prog.build()
        dev.set_debug_mode(DEBUG_DUMP_INSN)
        with pytest.raises(SRAMIndexError):
            dev.run(addr, count)
    titles = [b[0] for b in blocks(capsys.readouterr().out)]
    assert titles[0] == "INSTRUCTION 0: LOAD ACC" and len(titles) == 2, titles
    assert not any("ALU" in t for t in titles)


def test_flags_are_checked(env):
    with DRAM(1 << 22) as dram, FunctionalSimulator(env, dram) as dev:
        with pytest.raises(ValueError, match=r"flag 8 is not supported by the sim device; accepted bits: "
                                             r"DEBUG_SKIP_EXEC \(1\) \| DEBUG_DUMP_INSN \(2\)"):
            dev.set_debug_mode(8)
        with pytest.raises(ValueError, match="not supported"):
            dev.set_debug_mode(-1)
        with pytest.raises(TypeError, match="must be an int"):
            dev.set_debug_mode("2")
        dev.set_debug_mode(DEBUG_SKIP_EXEC)
        assert dev.debug_flags == DEBUG_SKIP_EXEC
