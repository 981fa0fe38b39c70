"""The hardware options on tsim: random programs of ``configs/extended.json`` (they use REQ
and MOV, and run on the two-lane compute unit of COMPUTE_OVERLAP) on fsim and tsim, byte- and
statistics-identical, with the cycle model's count equal to tsim's; and tsim's refusal of REQ and
MOV on the default core. Every other program works in 128 rows of each buffer instead of 24, so
that more of its GEMMs and ALUs have disjoint footprints: a share of the programs must run in
fewer cycles than on the serial compute unit (the cycle model of the same configuration without
COMPUTE_OVERLAP), which shows the lanes overlapped."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import make_env
from vta import isa
from vta.dram import DRAM
from vta.env import Environment
from vta.errors import InvalidInstructionError

from .test_differential import _compare_run

pytestmark = pytest.mark.verilator

#: Random programs of the slow tier (the default tier runs the first FAST of them).
PROGRAMS = 1000
FAST = 40


@pytest.fixture(scope="module")
def extended(tsim_library):
    """(env, dram, TSim, FunctionalSimulator, CycleModel) of the extended configuration."""
    from vta.sim.fsim import FunctionalSimulator
    from vta.sim.model import CycleModel
    from vta.sim.tsim import TSim

    env = make_env("extended.json")
    assert env.COMPUTE_OVERLAP and env.ALU_REQUANT
    serial_env = Environment(dict(env.cfg_dict, COMPUTE_OVERLAP=False))
    lib = tsim_library("extended.json")
    with env, DRAM(1 << 28) as dram, TSim(env, dram, library=lib) as dev, \
            FunctionalSimulator(env, dram) as fsim, CycleModel(env, dram, functional=False) as model, \
            CycleModel(serial_env, dram, functional=False) as serial:
        yield env, dram, dev, fsim, model, serial


def _run(extended, seeds):
    from vta.testing.programs import random_program

    env, dram, tsim, fsim, model, serial = extended
    failures, req, mov, overlapped = [], 0, 0, 0
    for seed in seeds:
        prog = random_program(env, dram, seed, length=int(8 + seed % 24), region=24 if seed % 2 == 0 else 128)
        try:
            words = dram.data[prog.insn_addr:prog.insn_addr + 16 * prog.insn_count].view("<u8").reshape(-1, 2)
            alu = [i.alu_opcode for i in isa.decode_program(words, env) if isinstance(i, isa.AluInsn)]
            req += alu.count(isa.ALU_REQ)
            mov += alu.count(isa.ALU_MOV)
            msg = _compare_run(env, dram, fsim, tsim, prog.insn_addr, prog.insn_count, prog.outputs,
                               f"seed {seed} ({prog.insn_count} instructions)")
            if msg is None:
                model.clear_stats()
                model.run(prog.insn_addr, prog.insn_count)
                t, m = tsim.stats()["cycle_count"], model.stats()["cycle_count"]
                if t != m:
                    msg = f"seed {seed}: cycles tsim {t} model {m}"
                serial.clear_stats()
                serial.run(prog.insn_addr, prog.insn_count)
                overlapped += t < serial.stats()["cycle_count"]
        finally:
            prog.close()
        if msg:
            failures.append(msg)
    assert not failures, f"{len(failures)} of {len(seeds)} programs differ:\n" + "\n".join(failures[:10])
    assert req > len(seeds) // 4, f"only {req} REQ instructions in {len(seeds)} programs"
    # (11-30% of the programs gain: the scanner also delays some; 5% is the floor)
    assert overlapped >= len(seeds) // 20, f"only {overlapped} of {len(seeds)} programs gained from the lanes"
    assert mov > len(seeds) // 4, f"only {mov} MOV instructions in {len(seeds)} programs"


def test_extended_random_programs_fast(extended):
    _run(extended, range(FAST))


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(PROGRAMS // 100))
def test_extended_random_programs(extended, chunk):
    _run(extended, range(chunk * 100, (chunk + 1) * 100))


@pytest.mark.parametrize("opcode, option", [(isa.ALU_REQ, "ALU_REQUANT"), (isa.ALU_MOV, "ALU_MOV")])
def test_option_opcode_refused_by_the_default_rtl(tsim_library, opcode, option):
    """The default core refuses REQ and MOV naming the option: in the stream check before launch,
    and (with that check off) in the RTL's fetch unit."""
    from vta.sim.tsim import TSim
    from vta.testing.programs import ProgramBuilder

    env, ext = make_env(), make_env("extended.json")
    lib = tsim_library()
    with env, DRAM(1 << 24) as dram, ProgramBuilder(env, dram) as prog:
        prog.uops([(0, 0, 0)], sram_base=0)
        at = prog.append(isa.AluInsn(alu_opcode=isa.ALU_MIN, use_imm=1, imm=3, uop_bgn=0, uop_end=1))
        prog.finish()
        addr, count = prog.build()
        words = isa.encode_words(isa.AluInsn(alu_opcode=opcode, use_imm=1, imm=3, uop_bgn=0, uop_end=1), ext)
        dram.write(addr + 16 * at, np.array(words, dtype="<u8").tobytes())
        for checks in (True, False):
            with TSim(env, dram, library=lib, check_streams=checks) as dev, \
                    pytest.raises(InvalidInstructionError, match=option):
                dev.run(addr, count)


@pytest.mark.parametrize("rows", [1, 16])
def test_lane_waits_for_its_load_although_its_token_is_in(extended, rows):
    """An ALU whose pop was pushed long before waits, in the compute unit's second lane, for the
    accumulator LOAD in flight ahead of it (the model once let the ready token stand in for the
    lane's answer "not known yet" and started the ALU 2 cycles early): cycles equal to tsim's."""
    from vta.testing.programs import ProgramBuilder

    env, dram, tsim, _fsim, model, _serial = extended
    with ProgramBuilder(env, dram) as prog:
        inp = prog.buffer(nbytes=env.INP_ELEM_BYTES)
        acc = prog.buffer(nbytes=rows * 16 * env.ACC_ELEM_BYTES)
        prog.uops([(0, 0, 0)], sram_base=0)
        prog.load(isa.MEM_INP, 0, inp, 1, 1, push_next_dep=1)  # the token, pushed early
        prog.load(isa.MEM_ACC, 0, acc, rows, 16)  # in flight in the ALU's lane
        prog.append(isa.AluInsn(uop_bgn=0, uop_end=1, alu_opcode=isa.ALU_ADD, use_imm=1, imm=1, pop_prev_dep=1))
        prog.finish()
        addr, count = prog.build()
        tsim.clear_stats()
        tsim.run(addr, count)
        model.clear_stats()
        model.run(addr, count)
        assert model.stats()["cycle_count"] == tsim.stats()["cycle_count"]
