"""Upstream test_vta_insn.py on fsim (reference section 7.2): results and statistics.

Every case runs on the default configuration with the statistics of section 7.2, and on the
BATCH=2 configuration for the results (the runtime loads one native library per configuration
in-process).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import make_env

from . import schedules
from .conftest import check, counters, run_case

CONFIGS = ["vta_config.json", "batch2.json"]


@pytest.fixture(params=CONFIGS)
def cfg_env(request):
    with make_env(request.param) as e:
        yield e


def _expect(stats, **want):
    base = {"inp_load_nbytes": 0, "wgt_load_nbytes": 0, "acc_load_nbytes": 0, "uop_load_nbytes": 0,
            "out_store_nbytes": 0, "gemm_counter": 0, "alu_counter": 0}
    base.update(want)
    assert counters(stats) == base


def _default(env) -> bool:
    return env.BATCH == 1 and env.BLOCK_OUT == 16


def test_save_load_out(cfg_env, tmp_path):
    case = schedules.save_load_out(cfg_env, np.random.default_rng(3))
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    if _default(cfg_env):
        _expect(stats, acc_load_nbytes=2304, uop_load_nbytes=4, alu_counter=36, out_store_nbytes=576)


@pytest.mark.parametrize("pad", sorted(schedules.PAD_CASES))
def test_padded_load(cfg_env, tmp_path, pad):
    before, after = schedules.PAD_CASES[pad]
    case = schedules.padded_load(cfg_env, np.random.default_rng(4), before, after)
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    if _default(cfg_env):
        tiles = case.out_shape[0] * case.out_shape[1]
        _expect(stats, acc_load_nbytes=960, uop_load_nbytes=4, alu_counter=tiles, out_store_nbytes=16 * tiles)


@pytest.mark.parametrize("smt", [False, True], ids=["default", "smt"])
def test_gemm(cfg_env, tmp_path, smt):
    case = schedules.gemm(cfg_env, np.random.default_rng(5), smt)
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    if _default(cfg_env):
        if smt:
            _expect(stats, inp_load_nbytes=64, wgt_load_nbytes=2048, uop_load_nbytes=40, gemm_counter=16,
                    alu_counter=48, out_store_nbytes=256)
        else:
            _expect(stats, inp_load_nbytes=64, wgt_load_nbytes=1024, uop_load_nbytes=20, gemm_counter=16,
                    alu_counter=48, out_store_nbytes=256)


@pytest.mark.parametrize("op", list(schedules.ALU_OPS))
def test_alu(cfg_env, tmp_path, op):
    case = schedules.alu(cfg_env, np.random.default_rng(6), op)
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    if _default(cfg_env):
        two = not schedules.ALU_OPS[op][0]
        _expect(stats, acc_load_nbytes=8192 if two else 4096, uop_load_nbytes=4, alu_counter=64, out_store_nbytes=1024)


def test_relu(cfg_env, tmp_path):
    case = schedules.relu(cfg_env, np.random.default_rng(7))
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    if _default(cfg_env):
        _expect(stats, acc_load_nbytes=5120, uop_load_nbytes=8, alu_counter=160, out_store_nbytes=1280)


def test_shift_and_scale(cfg_env, tmp_path):
    case = schedules.shift_and_scale(cfg_env, np.random.default_rng(8))
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    if _default(cfg_env):
        _expect(stats, acc_load_nbytes=1024, uop_load_nbytes=8, alu_counter=32, out_store_nbytes=256)


@pytest.mark.parametrize("seed", range(8))
def test_random_alu_pipelines(cfg_env, tmp_path, seed):
    """Random chains of ALU stages (immediates, a second tensor, int32 wrap-around) against NumPy."""
    case = schedules.random_alu_pipeline(cfg_env, np.random.default_rng(100 + seed))
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)


@pytest.mark.parametrize("smt, o, n, m", [(False, 1, 3, 2), (False, 3, 2, 1), (True, 2, 4, 3), (True, 6, 1, 1)])
def test_gemm_shapes(cfg_env, tmp_path, smt, o, n, m):
    """test_gemm's schedule on other tile counts (several ko iterations, uneven grids, two threads)."""
    case = schedules.gemm(cfg_env, np.random.default_rng(9), smt, o, n, m)
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    assert stats["gemm_counter"] == o * n * m  # one uop execution per (batch tile, out tile, in tile)
