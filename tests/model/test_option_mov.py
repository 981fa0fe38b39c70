"""The hardware option ``ALU_MOV`` on the cycle model: MOV times as every ALU opcode (one micro-op
per cycle), computes what fsim computes, passes the compiled pre-run checks of a configuration
that has it, and is refused, naming the option, by one that lacks it."""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.env import Environment, load_config
from vta.errors import InvalidInstructionError
from vta.sim.fsim import FunctionalSimulator
from vta.sim.model import CycleModel
from vta.testing.programs import ProgramBuilder, random_program

from ..conftest import make_env

ROWS = 24


def _program(env, dram, op):
    """A tile of ALU work in both forms (tensor, immediate, tensor) between a LOAD and a STORE."""
    rng = np.random.default_rng(4)
    lanes = env.BATCH * env.BLOCK_OUT
    vals = rng.integers(-(1 << 20), 1 << 20, (ROWS + 1) * lanes).astype("<i4")
    prog = ProgramBuilder(env, dram)
    acc = prog.buffer(vals)
    out = prog.buffer(nbytes=ROWS * env.OUT_ELEM_BYTES)
    prog.load(isa.MEM_ACC, 0, acc, 1, ROWS + 1)
    prog.uops([(0, ROWS, 0)], sram_base=0)
    for use_imm in (0, 1, 0):
        prog.append(isa.AluInsn(alu_opcode=op, use_imm=use_imm, imm=-77, uop_bgn=0, uop_end=1, iter_out=2,
                                iter_in=ROWS // 2, dst_factor_out=ROWS // 2, dst_factor_in=1))
    prog.store(0, out, 1, ROWS)
    prog.finish()
    prog.serialize()
    return prog, out, vals[ROWS * lanes:]


@pytest.mark.parametrize("functional", [True, False])
def test_mov_times_like_any_alu_opcode(dram, functional):
    env = make_env("extended.json")
    cycles = {}
    for op in (isa.ALU_ADD, isa.ALU_MOV):
        with env:
            prog, out, last = _program(env, dram, op)
            addr, count = prog.build()
            with CycleModel(env, dram, functional=functional) as dev:
                dev.run(addr, count)
                cycles[op] = dev.stats()["cycle_count"]
            got = dram.read(out, ROWS * env.OUT_ELEM_BYTES)
            if functional and op == isa.ALU_MOV:
                dram.write(out, bytes(len(got)))
                with FunctionalSimulator(env, dram) as ref:
                    ref.run(addr, count)
                assert got == dram.read(out, len(got))
                # the last MOV copies row ROWS (never written) over the whole tile
                stored = np.frombuffer(got, np.int8).reshape(ROWS, -1)
                np.testing.assert_array_equal(stored, np.broadcast_to(last.astype(np.int8), stored.shape))
            prog.close()
    assert cycles[isa.ALU_ADD] == cycles[isa.ALU_MOV] > 0


def test_random_programs_with_mov_run_on_both_model_paths(dram):
    """Random programs of the extended configuration use MOV; both model paths agree on them."""
    env = make_env("extended.json")
    seen = 0
    with env:
        for seed in range(6):
            p = random_program(env, dram, seed, length=24)
            words = dram.data[p.insn_addr:p.insn_addr + 16 * p.insn_count].view("<u8").reshape(-1, 2)
            seen += sum(isinstance(i, isa.AluInsn) and i.alu_opcode == isa.ALU_MOV
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


def _config(name):
    if name == "mov_only":
        return Environment(dict(load_config(), ALU_MOV=True))
    if name == "requant_only":
        return Environment(dict(load_config(), ALU_REQUANT=True))
    return make_env(name)


@pytest.mark.parametrize("accepting, refusing", [("extended.json", "vta_config.json"),
                                                 ("mov_only", "requant_only")])
def test_mov_streams_take_the_compiled_checks(dram, monkeypatch, accepting, refusing):
    """A stream of MOVs passes the compiled pre-run checks of fsim and of the timing-only model on
    a configuration with ALU_MOV (no fallback to the checks in Python) and times as on the full
    model; a configuration without it (even one with REQ, the opcode below) flags the stream in
    both compiled checks, then refuses it in Python, naming the option."""
    from vta.sim.model import replay as rp

    if rp.compiled() is None:
        pytest.skip("numba is not installed")
    ext, other = _config(accepting), _config(refusing)
    slow = []
    real = CycleModel._check_stream
    monkeypatch.setattr(CycleModel, "_check_stream", lambda self, *a: slow.append(1) or real(self, *a))
    with ext:
        prog, _, _ = _program(ext, dram, isa.ALU_MOV)
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
    with other:
        with FunctionalSimulator(other, dram) as fsim:
            assert fsim._jit.prechecks(words, [0, 0, 0, 0], dram)[0] is None
            with pytest.raises(InvalidInstructionError, match="ALU_MOV"):
                fsim.run(addr, count)
        with CycleModel(other, dram, functional=False) as fast, \
                pytest.raises(InvalidInstructionError, match="ALU_MOV"):
            fast.run(addr, count)
        assert slow == [1]  # flagged by the compiled pass, refused by the checks in Python
    prog.close()
