"""The cycle model of COMPUTE_OVERLAP: the footprint table against a scalar enumeration written
here, the refusal without the DRAM, and the lanes' effect on small streams (their exact cycles
are checked against tsim in tests/e2e/test_option_differential.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import make_env
from vta import isa
from vta.dram import DRAM
from vta.env import Environment
from vta.sim.model import CycleModel, time_stream
from vta.sim.model.lanes import footprints
from vta.sim.model.loop import F_DHI, F_DLO, F_DV, F_LANE, F_SCAN, F_SHI, F_SLO, F_SV, F_UF, F_UHI, F_ULO
from vta.testing.programs import ProgramBuilder


def _envs():
    env = make_env("extended.json")
    assert env.COMPUTE_OVERLAP
    return env, Environment(dict(env.cfg_dict, COMPUTE_OVERLAP=False))


def _rows(uops, x, field: str) -> list[int]:
    """Every row index instruction ``x`` touches through uop ``field`` (dst or src), by its loops."""
    f_out = getattr(x, f"{field}_factor_out")
    f_in = getattr(x, f"{field}_factor_in")
    return [uops[u][0 if field == "dst" else 1] + i * f_out + j * f_in
            for i in range(x.iter_out) for j in range(x.iter_in) for u in range(x.uop_bgn, x.uop_end)]


def test_footprints_are_the_extremes_of_the_loop_nests():
    env, _ = _envs()
    rng = np.random.default_rng(3)
    uops = [(int(d), int(s), int(w)) for d, s, w in rng.integers(0, 40, (12, 3))]
    gemm = isa.GemmInsn(uop_bgn=2, uop_end=9, iter_out=3, iter_in=4, dst_factor_out=17, dst_factor_in=5,
                        src_factor_out=1, src_factor_in=2)
    alu = isa.AluInsn(uop_bgn=1, uop_end=6, iter_out=2, iter_in=3, dst_factor_out=9, dst_factor_in=1,
                      src_factor_out=4, src_factor_in=7, alu_opcode=isa.ALU_ADD)
    imm = isa.AluInsn(uop_bgn=0, uop_end=1, iter_out=5, iter_in=1, dst_factor_out=2, alu_opcode=isa.ALU_MAX,
                      use_imm=1, imm=-1)
    with env, DRAM(1 << 24) as dram, ProgramBuilder(env, dram) as prog:
        prog.uops(uops, sram_base=0)
        prog.append(isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_ACC, sram_base=100,
                                dram_base=prog.elem_index(prog.buffer(nbytes=64 * env.ACC_ELEM_BYTES), isa.MEM_ACC),
                                y_size=2, x_size=3, x_stride=3, y_pad_0=1, x_pad_1=2))
        for x in (gemm, alu, imm):
            prog.append(x)
        prog.append(isa.GemmInsn(uop_bgn=3, uop_end=3, iter_out=1, iter_in=1))  # empty: a no-op
        prog.finish()
        addr, n = prog.build()
        words = dram.data[addr:addr + 16 * n].view("<u8").reshape(-1, 2)
        foot = footprints(env, words, dram)
    load_uop, load_acc, g, a, i, empty, fin = foot
    assert (load_uop[F_LANE], load_uop[F_UF], load_uop[F_ULO], load_uop[F_UHI]) == (1, 2, 0, 11)
    assert (load_acc[F_DV], load_acc[F_DLO], load_acc[F_DHI]) == (1, 100, 100 + 3 * 5 - 1)
    dst = _rows(uops, gemm, "dst")
    assert (g[F_LANE], g[F_DV], g[F_DLO], g[F_DHI], g[F_SV]) == (0, 1, min(dst), max(dst), 0)
    assert (g[F_UF], g[F_ULO], g[F_UHI], g[F_SCAN]) == (1, 2, 8, 4 + 1)
    dst, src = _rows(uops, alu, "dst"), _rows(uops, alu, "src")
    assert (a[F_LANE], a[F_DLO], a[F_DHI], a[F_SV], a[F_SLO], a[F_SHI]) == (1, min(dst), max(dst), 1, min(src),
                                                                           max(src))
    assert a[F_SCAN] == 3 + 1
    assert (i[F_SV], i[F_DLO], i[F_DHI]) == (0, min(_rows(uops, imm, "dst")), max(_rows(uops, imm, "dst")))
    assert F_LANE == 0 and empty[F_LANE] == 1 and not empty[1:].any() and fin[F_LANE] == 1 and not fin[1:].any()


def _program(env, dram, alu_dst: int) -> tuple[ProgramBuilder, int, int]:
    """A GEMM of 64 x 8 micro-ops on rows 0..63, then an ALU of as many on rows alu_dst.."""
    prog = ProgramBuilder(env, dram)
    prog.uops([(0, 0, 0), (alu_dst, alu_dst, 0)], sram_base=0)
    prog.append(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=64, iter_in=8, dst_factor_out=1, src_factor_out=1))
    prog.append(isa.AluInsn(uop_bgn=1, uop_end=2, iter_out=64, iter_in=8, dst_factor_out=1, src_factor_out=1,
                            alu_opcode=isa.ALU_ADD, use_imm=1, imm=1))
    prog.finish()
    addr, n = prog.build()
    return prog, addr, n


@pytest.mark.parametrize("alu_dst, overlaps", [(64, True), (32, False)])
def test_the_alu_runs_under_the_gemm_only_on_other_rows(alu_dst, overlaps):
    env, serial_env = _envs()
    cycles = {}
    with DRAM(1 << 24) as dram:
        prog, addr, n = _program(env, dram, alu_dst)
        try:
            for e in (env, serial_env):
                with e, CycleModel(e, dram, functional=False) as model:
                    model.run(addr, n)
                    cycles[e.COMPUTE_OVERLAP] = model.stats()["cycle_count"]
        finally:
            prog.close()
    saved = cycles[False] - cycles[True]
    if overlaps:  # the ALU's 512 micro-ops hide under the GEMM's
        assert 500 <= saved <= 514, cycles
    else:  # it waits; the footprint scanner's cycles hide under the load of the uops
        assert abs(saved) <= 2, cycles


def test_time_stream_needs_the_dram_with_the_option():
    env, serial_env = _envs()
    with DRAM(1 << 24) as dram:
        prog, addr, n = _program(env, dram, 64)
        try:
            words = dram.data[addr:addr + 16 * n].view("<u8").reshape(-1, 2).astype(np.int64)
            with pytest.raises(ValueError, match="COMPUTE_OVERLAP"):
                time_stream(env, words, [0, 0, 0, 0], addr)
            with_dram = time_stream(env, words, [0, 0, 0, 0], addr, dram=dram)["cycle_count"]
            serial = time_stream(serial_env, words, [0, 0, 0, 0], addr)["cycle_count"]
        finally:
            prog.close()
    assert with_dram < serial
