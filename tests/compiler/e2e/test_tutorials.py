"""The tutorials on fsim: vadd, matrix multiply, blocked GEMM, convolution (sections 3.1-3.3):
results against NumPy, simulator statistics, instruction counts."""

from __future__ import annotations

import numpy as np

from . import schedules
from .conftest import check, counters, run_case


def test_vadd(env, tmp_path):
    case = schedules.vadd(env, np.random.default_rng(1))
    out, stats, mod = run_case(case, tmp_path, name="my_vadd")
    check(case, out)
    assert counters(stats) == {"inp_load_nbytes": 0, "wgt_load_nbytes": 0, "acc_load_nbytes": 8192,
                               "uop_load_nbytes": 4, "out_store_nbytes": 1024, "gemm_counter": 0, "alu_counter": 64}
    # Section 3.1: LOAD-ACC x2, LOAD-UOP, ALU, STORE, NOP-LD, NOP-CMP, FINISH.
    assert (stats["insn_load"], stats["insn_alu"], stats["insn_store"], stats["insn_nop"], stats["insn_finish"]) == (3, 1, 1, 2, 1)
    assert "int my_vadd(" in mod.get_source()


def test_matrix_multiply(env, tmp_path):
    case = schedules.matmul(env, np.random.default_rng(2))
    out, stats, _ = run_case(case, tmp_path, name="my_gemm")
    check(case, out)
    assert counters(stats) == {"inp_load_nbytes": 256, "wgt_load_nbytes": 65536, "acc_load_nbytes": 0,
                               "uop_load_nbytes": 8, "out_store_nbytes": 256, "gemm_counter": 256, "alu_counter": 0}
    # Section 3.2: 56 instructions = LOAD-INP 16, LOAD-WGT 16, LOAD-UOP 2, GEMM 17, STORE 1, NOP 3, FINISH 1.
    assert (stats["insn_load"], stats["insn_gemm"], stats["insn_store"], stats["insn_nop"], stats["insn_finish"]) == (34, 17, 1, 3, 1)


def test_blocked_gemm(env, tmp_path):
    case = schedules.blocked_gemm(env, np.random.default_rng(3))
    out, stats, _ = run_case(case, tmp_path, name="blocked_gemm")
    check(case, out)
    assert counters(stats) == {"inp_load_nbytes": 4096, "wgt_load_nbytes": 1048576, "acc_load_nbytes": 0,
                               "uop_load_nbytes": 20, "out_store_nbytes": 1024, "gemm_counter": 4096, "alu_counter": 192}
    # Section 3.3 (first call): GEMM 20 (4 resets), ALU 12, FINISH 1; LOAD-INP 16 + LOAD-WGT 16 +
    # LOAD-UOP 5. (The number of STOREs depends on whether the store pragma on oc_inn wraps that
    # loop (4 stores of 16 tiles, the frontend's placement) or sits inside it (upstream: 64).)
    assert (stats["insn_gemm"], stats["insn_alu"], stats["insn_finish"]) == (20, 12, 1)
    assert stats["insn_load"] == 37


def test_conv2d(env, tmp_path):
    case = schedules.conv2d(env, np.random.default_rng(4))
    out, stats, _ = run_case(case, tmp_path, name="conv2d")
    check(case, out)
    assert counters(stats) == {"inp_load_nbytes": 114688, "wgt_load_nbytes": 1179648, "acc_load_nbytes": 0,
                               "uop_load_nbytes": 1144, "out_store_nbytes": 50176, "gemm_counter": 451584,
                               "alu_counter": 9408}
