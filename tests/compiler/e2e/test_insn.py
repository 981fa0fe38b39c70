"""Upstream test_vta_insn.py on fsim (reference section 7.2): results and statistics.

Every case runs on the default configuration and on the BATCH=2 configuration (the runtime
loads one native library per configuration in-process). The statistics of section 7.2 are
given in tiles and micro-ops, so they hold for both once multiplied by each configuration's
element sizes.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import make_env

from .. import workloads as W
from .conftest import check, counters, run_case

CONFIGS = ["vta_config.json", "batch2.json"]


@pytest.fixture(params=CONFIGS)
def cfg_env(request):
    with make_env(request.param) as e:
        yield e


def _expect(env, stats, inp=0, wgt=0, acc=0, uop=0, out=0, gemm=0, alu=0):
    """Counters from tile counts: bytes = tiles x the configuration's element size."""
    assert counters(stats) == {
        "inp_load_nbytes": inp * env.INP_ELEM_BYTES, "wgt_load_nbytes": wgt * env.WGT_ELEM_BYTES,
        "acc_load_nbytes": acc * env.ACC_ELEM_BYTES, "uop_load_nbytes": uop * 4,
        "out_store_nbytes": out * env.OUT_ELEM_BYTES, "gemm_counter": gemm, "alu_counter": alu,
    }


def test_save_load_out(cfg_env, tmp_path):
    case = W.save_load_out(cfg_env, np.random.default_rng(3))
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    _expect(cfg_env, stats, acc=36, uop=1, alu=36, out=36)  # 2304, 4, 36, 576 bytes by default


@pytest.mark.parametrize("pad", sorted(W.PAD_CASES))
def test_padded_load(cfg_env, tmp_path, pad):
    before, after = W.PAD_CASES[pad]
    case = W.padded_load(cfg_env, np.random.default_rng(4), before, after)
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    tiles = case.out_shape[0] * case.out_shape[1]
    _expect(cfg_env, stats, acc=15, uop=1, alu=tiles, out=tiles)  # padding is not counted


@pytest.mark.parametrize("smt", [False, True], ids=["default", "smt"])
def test_gemm(cfg_env, tmp_path, smt):
    case = W.gemm(cfg_env, np.random.default_rng(5), smt)
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    if smt:  # weights loaded per thread; 10 one-uop kernels
        _expect(cfg_env, stats, inp=4, wgt=8, uop=10, gemm=16, alu=48, out=16)
    else:
        _expect(cfg_env, stats, inp=4, wgt=4, uop=5, gemm=16, alu=48, out=16)


@pytest.mark.parametrize("op", list(W.ALU_OPS))
def test_alu(cfg_env, tmp_path, op):
    case = W.alu(cfg_env, np.random.default_rng(6), op)
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    two = W.ALU_OPS[op].uses_b
    kernels = 3 if op == "sub" else 1  # a - b with a in place: MUL -1, ADD b, MUL -1
    _expect(cfg_env, stats, acc=128 if two else 64, uop=kernels, alu=64 * kernels, out=64)


def test_relu(cfg_env, tmp_path):
    case = W.relu(cfg_env, np.random.default_rng(7))
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    _expect(cfg_env, stats, acc=80, uop=2, alu=160, out=80)


def test_shift_and_scale(cfg_env, tmp_path):
    case = W.shift_and_scale(cfg_env, np.random.default_rng(8))
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    _expect(cfg_env, stats, acc=16, uop=2, alu=32, out=16)


@pytest.mark.parametrize("seed", range(8))
def test_random_alu_pipelines(cfg_env, tmp_path, seed):
    """Random chains of ALU stages (immediates, a second tensor, int32 wrap-around) against NumPy."""
    case = W.random_alu_pipeline(cfg_env, np.random.default_rng(100 + seed))
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)


@pytest.mark.parametrize("smt, o, n, m", [(False, 1, 3, 2), (False, 3, 2, 1), (True, 2, 4, 3), (True, 6, 1, 1)])
def test_gemm_shapes(cfg_env, tmp_path, smt, o, n, m):
    """test_gemm's schedule on other tile counts (several ko iterations, uneven grids, two threads)."""
    case = W.gemm(cfg_env, np.random.default_rng(9), smt, o, n, m)
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    assert stats["gemm_counter"] == o * n * m  # one uop execution per (batch tile, out tile, in tile)


@pytest.mark.parametrize("skip_odd", [False, True], ids=["dense", "skip"])
def test_gemm_by_pragma(cfg_env, tmp_path, skip_odd):
    """conv2d_transpose_gemm regions become GEMM uops; guarded reduction steps are skipped."""
    case = W.gemm_by_pragma(cfg_env, np.random.default_rng(11), skip_odd)
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    # 3 output tiles x 4 reduction steps, half of them skipped by the guard; skipped steps emit
    # no GEMM instruction at all (one reset + one update per kept step).
    assert stats["gemm_counter"] == (6 if skip_odd else 12)
    assert stats["insn_gemm"] == (3 if skip_odd else 5)


def test_acc_8bit_load(cfg_env, tmp_path):
    """int8 DRAM data loaded into int32 accumulator tiles with sign extension (memory type ACC_8BIT)."""
    case = W.acc_8bit_load(cfg_env, np.random.default_rng(12))
    out, stats, mod = run_case(case, tmp_path)
    check(case, out)
    assert f", {cfg_env.dev.MEM_ID_ACC_8BIT});" in mod.get_source()  # the load's memory type
    assert stats["alu_counter"] == 8


def test_conv2d_transpose_skips_inserted_zeros(cfg_env, tmp_path):
    """A stride-2 transposed convolution through conv2d_transpose_gemm: correct results, and only
    the (position, tap) pairs that read real input elements run a GEMM uop (49 of 225)."""
    case = W.conv2d_transpose(cfg_env, np.random.default_rng(13))
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    assert stats["gemm_counter"] == W.conv2d_transpose_macs() == 49
    assert stats["insn_gemm"] == 2  # one reset kernel, one accumulate kernel


def test_residual_keeps_a_live_input(cfg_env, tmp_path):
    """An ALU stage whose input is still needed later: copy (MUL 0, ADD), MAX in place, then ADD."""
    case = W.residual(cfg_env, np.random.default_rng(14))
    out, stats, _ = run_case(case, tmp_path)
    check(case, out)
    assert stats["insn_alu"] == 4 and stats["alu_counter"] == 4 * 8


def test_strided_window_load(cfg_env, tmp_path):
    """A load with three dimensions of tiles becomes one 2-D transfer per plane."""
    case = W.strided_window_load(cfg_env, np.random.default_rng(15))
    out, stats, mod = run_case(case, tmp_path)
    check(case, out)
    assert stats["acc_load_nbytes"] == 18 * cfg_env.ACC_ELEM_BYTES and stats["alu_counter"] == 18
    assert "for (int32_t dma_h0 = 0; dma_h0 < (0 + 3); ++dma_h0)" in mod.get_source()
