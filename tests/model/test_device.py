"""CycleModel as a device: bit-identical to fsim, statistics keys, errors, TARGET selection."""

from __future__ import annotations

import pytest

from tests.conftest import make_env
from vta import isa
from vta.errors import (
    DeadlockError,
    DRAMAccessError,
    InvalidInstructionError,
    SRAMIndexError,
)
from vta.sim.device import STAT_KEYS
from vta.sim.fsim import INSN_KEYS, TOKEN_KEYS, FunctionalSimulator
from vta.sim.model import HW_STAT_KEYS, CycleModel
from vta.testing.programs import ProgramBuilder, random_program

from . import streams as s

UNITS = ("fetch", "load", "compute", "store")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_identical_to_fsim(any_env, dram, seed):
    prog = random_program(any_env, dram, seed, length=24)
    try:
        results = []
        for cls in (FunctionalSimulator, CycleModel):
            prog.clear_outputs()
            with cls(any_env, dram) as dev:
                dev.run(prog.insn_addr, prog.insn_count)
                results.append((prog.read_outputs(), {k: dev.stats()[k] for k in STAT_KEYS + INSN_KEYS}))
        assert results[0][0] == results[1][0]
        assert results[0][1] == results[1][1]
        assert any(any(b) for b in results[1][0])  # the program produced something
    finally:
        prog.close()


def _finish_program(env, dram):
    b = ProgramBuilder(env, dram)
    b.append(s.gemm(10))
    b.finish()
    return b, *b.build()


def test_stats_keys_and_clear(env, dram):
    b, addr, n = _finish_program(env, dram)
    with b, CycleModel(env, dram) as dev:
        st = dev.stats()
        assert list(st)[:len(STAT_KEYS)] == list(STAT_KEYS)
        assert set(INSN_KEYS) | set(TOKEN_KEYS) | set(HW_STAT_KEYS) <= set(st)
        assert set(HW_STAT_KEYS) == {"cycle_count"} | {f"{u}_{k}" for u in UNITS
                                                       for k in ("busy_cycles", "stall_cycles", "retired")}
        dev.run(addr, n)
        dev.run(addr, n)
        st = dev.stats()
        # two runs of [GEMM 10 uops, FINISH]: (5 + (10 + 2) + 1) cycles each, by the derivation of
        # test_timing
        assert st["cycle_count"] == 2 * (5 + (10 + 2) + 1)
        assert st["gemm_counter"] == 20 and st["compute_retired"] == 4 and st["fetch_retired"] == 4
        assert dev.last_run["cycle_count"] == 5 + (10 + 2) + 1
        dev.clear_stats()
        assert all(v == 0 for k, v in dev.stats().items() if not k.startswith("tokens_"))


def _error_of(cls, env, dram, insns):
    b = ProgramBuilder(env, dram)
    for insn in insns:
        b.append(insn)
    addr, n = b.build()
    with b, cls(env, dram) as dev:
        with pytest.raises(Exception) as info:
            dev.run(addr, n)
        return type(info.value), dev.stats()


@pytest.mark.parametrize("insns, expected", [
    ([isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, dst_factor_in=0), ], DeadlockError),  # no FINISH
    ([isa.AluInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, alu_opcode=7), isa.FinishInsn()],
     InvalidInstructionError),
    ([isa.FinishInsn(pop_prev_dep=1)], DeadlockError),
    ([s.mem(isa.OPCODE_LOAD, isa.MEM_INP, 1, 4, dram_base=1 << 24), isa.FinishInsn()], DRAMAccessError),
], ids=["no-finish", "alu-opcode", "missing-token", "dram-range"])
def test_errors_as_fsim(env, dram, insns, expected):
    want, _ = _error_of(FunctionalSimulator, env, dram, insns)
    got, st = _error_of(CycleModel, env, dram, insns)
    assert want is expected and got is expected
    assert st["cycle_count"] == 0  # a failed run adds no cycles


def test_sram_index_error(env, dram):
    big = isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=2, dst_factor_in=env.ACC_BUFF_DEPTH - 1)
    for cls in (FunctionalSimulator, CycleModel):
        b = ProgramBuilder(env, dram)
        b.uops([isa.Uop(1, 0, 0)])  # dst row 1: row 1 + (ACC_BUFF_DEPTH - 1) is out of range
        b.append(big)
        b.finish()
        addr, n = b.build()
        with b, cls(env, dram) as dev, pytest.raises(SRAMIndexError):
            dev.run(addr, n)


def test_bad_arguments(env, dram):
    with CycleModel(env, dram) as dev, pytest.raises(ValueError, match="insn_count"):
        dev.run(4096, -1)


def test_target_model_selects_the_cycle_model():
    from vta.sim.targets import make_device

    env = make_env()
    env.TARGET = "model"
    dev = make_device(env)
    try:
        assert isinstance(dev, CycleModel) and dev.name == "model"
    finally:
        dev.close()
