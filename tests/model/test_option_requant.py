"""The hardware option ``ALU_REQUANT`` on the cycle model: REQ times as every ALU opcode (one
micro-op per cycle), computes what fsim computes, and is refused without the option."""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.errors import InvalidInstructionError
from vta.sim.fsim import FunctionalSimulator
from vta.sim.model import CycleModel
from vta.testing.programs import ProgramBuilder, random_program

from ..conftest import make_env


def _program(env, dram, op, rows=24):
    rng = np.random.default_rng(3)
    lanes = env.BATCH * env.BLOCK_OUT
    vals = rng.integers(-(1 << 20), 1 << 20, (rows + 1) * lanes).astype("<i4")
    vals[rows * lanes:] = isa.req_operand(20000, 19) if op == isa.ALU_REQ else 3
    prog = ProgramBuilder(env, dram)
    acc = prog.buffer(vals)
    out = prog.buffer(nbytes=rows * env.OUT_ELEM_BYTES)
    prog.load(isa.MEM_ACC, 0, acc, 1, rows + 1)
    prog.uops([(0, rows, 0)], sram_base=0)
    for use_imm in (0, 1, 0):
        prog.append(isa.AluInsn(alu_opcode=op, use_imm=use_imm, imm=1234, uop_bgn=0, uop_end=1, iter_out=2,
                                iter_in=rows // 2, dst_factor_out=rows // 2, dst_factor_in=1))
    prog.store(0, out, 1, rows)
    prog.finish()
    prog.serialize()
    return prog, out


@pytest.mark.parametrize("functional", [True, False])
def test_req_times_like_any_alu_opcode(dram, functional):
    env = make_env("extended.json")
    cycles = {}
    for op in (isa.ALU_MUL, isa.ALU_REQ):
        with env:
            prog, out = _program(env, dram, op)
            addr, count = prog.build()
            with CycleModel(env, dram, functional=functional) as dev:
                dev.run(addr, count)
                cycles[op] = dev.stats()["cycle_count"]
            got = dram.read(out, 24 * env.OUT_ELEM_BYTES)
            if functional and op == isa.ALU_REQ:
                dram.write(out, bytes(len(got)))
                with FunctionalSimulator(env, dram) as ref:
                    ref.run(addr, count)
                assert got == dram.read(out, len(got))
            prog.close()
    assert cycles[isa.ALU_MUL] == cycles[isa.ALU_REQ] > 0


def test_random_programs_with_req_time_the_same_as_fsim_counts(dram):
    """Random programs of the extended configuration use REQ; the model runs them (both paths)."""
    env = make_env("extended.json")
    seen = 0
    with env:
        for seed in range(6):
            p = random_program(env, dram, seed, length=24)
            words = dram.data[p.insn_addr:p.insn_addr + 16 * p.insn_count].view("<u8").reshape(-1, 2)
            seen += sum(isinstance(i, isa.AluInsn) and i.alu_opcode == isa.ALU_REQ
                        for i in isa.decode_program(words, env))
            stats = []
            for functional in (True, False):
                with CycleModel(env, dram, functional=functional) as dev:
                    dev.run(p.insn_addr, p.insn_count)
                    stats.append(dev.stats())
            assert stats[0]["cycle_count"] == stats[1]["cycle_count"]
            assert stats[0]["alu_counter"] == stats[1]["alu_counter"]
            p.close()
    assert seen > 0


@pytest.mark.parametrize("functional", [True, False])
def test_req_refused_without_the_option(env, dram, functional):
    ext = make_env("extended.json")
    with ProgramBuilder(env, dram) as prog:
        prog.uops([(0, 0, 0)], sram_base=0)
        at = prog.append(isa.AluInsn(alu_opcode=isa.ALU_MIN, use_imm=1, imm=3, uop_bgn=0, uop_end=1))
        prog.finish()
        addr, count = prog.build()
        words = isa.encode_words(isa.AluInsn(alu_opcode=isa.ALU_REQ, use_imm=1, imm=3, uop_bgn=0, uop_end=1), ext)
        dram.write(addr + 16 * at, np.array(words, dtype="<u8").tobytes())
        with CycleModel(env, dram, functional=functional) as dev, \
                pytest.raises(InvalidInstructionError, match="ALU_REQUANT"):
            dev.run(addr, count)


def test_req_streams_take_the_compiled_checks(dram, monkeypatch):
    """With ALU_REQUANT, a stream of REQs passes the compiled pre-run checks of both fsim and the
    timing-only model (no fallback to the checks in Python) and times as on the full model; the
    same stream on the default configuration is flagged by both compiled checks, then refused by
    the Python checks, whose message names the option."""
    from vta.sim.model import replay as rp

    if rp.compiled() is None:
        pytest.skip("numba is not installed")
    ext = make_env("extended.json")
    slow = []
    real = CycleModel._check_stream
    monkeypatch.setattr(CycleModel, "_check_stream", lambda self, *a: slow.append(1) or real(self, *a))
    with ext:
        prog, _ = _program(ext, dram, isa.ALU_REQ)
        addr, count = prog.build()
        words = dram.data[addr:addr + 16 * count].copy().view("<i8").reshape(count, 2)
        with FunctionalSimulator(ext, dram) as fsim:
            after, _ = fsim._jit.prechecks(words, [0, 0, 0, 0], dram)
            assert after == [0, 0, 0, 0]  # valid, runs in stream order
        with CycleModel(ext, dram, functional=False) as fast, CycleModel(ext, dram) as full:
            fast.run(addr, count)
            assert slow == []
            full.run(addr, count)
            assert fast.last_run == full.last_run
    default = make_env()
    with default:
        with FunctionalSimulator(default, dram) as fsim:
            assert fsim._jit.prechecks(words, [0, 0, 0, 0], dram)[0] is None
            with pytest.raises(InvalidInstructionError, match="ALU_REQUANT"):
                fsim.run(addr, count)
        with CycleModel(default, dram, functional=False) as fast, \
                pytest.raises(InvalidInstructionError, match="ALU_REQUANT"):
            fast.run(addr, count)
        assert slow == [1]  # flagged by the compiled pass, refused by the checks in Python
    prog.close()
