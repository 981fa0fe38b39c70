"""The tutorials on fsim: vadd, matrix multiply, blocked GEMM, convolution (sections 3.1-3.3):
results against NumPy, simulator statistics, instruction counts."""

from __future__ import annotations

import re

import numpy as np

from .. import workloads as W
from .conftest import check, counters, run_case


def test_vadd(env, tmp_path):
    case = W.vadd(env, np.random.default_rng(1))
    out, stats, mod = run_case(case, tmp_path, name="my_vadd")
    check(case, out)
    assert counters(stats) == {"inp_load_nbytes": 0, "wgt_load_nbytes": 0, "acc_load_nbytes": 8192,
                               "uop_load_nbytes": 4, "out_store_nbytes": 1024, "gemm_counter": 0, "alu_counter": 64}
    # Section 3.1: LOAD-ACC x2, LOAD-UOP, ALU, STORE, NOP-LD, NOP-CMP, FINISH.
    assert (stats["insn_load"], stats["insn_alu"], stats["insn_store"], stats["insn_nop"], stats["insn_finish"]) == (
        3,
        1,
        1,
        2,
        1,
    )
    assert "int my_vadd(" in mod.get_source()


def test_matrix_multiply(env, tmp_path):
    case = W.matrix_multiply(env, np.random.default_rng(2))
    out, stats, _ = run_case(case, tmp_path, name="my_gemm")
    check(case, out)
    assert counters(stats) == {"inp_load_nbytes": 256, "wgt_load_nbytes": 65536, "acc_load_nbytes": 0,
                               "uop_load_nbytes": 8, "out_store_nbytes": 256, "gemm_counter": 256, "alu_counter": 0}
    # Section 3.2: 56 instructions = LOAD-INP 16, LOAD-WGT 16, LOAD-UOP 2, GEMM 17, STORE 1, NOP 3, FINISH 1.
    assert (stats["insn_load"], stats["insn_gemm"], stats["insn_store"], stats["insn_nop"], stats["insn_finish"]) == (
        34,
        17,
        1,
        3,
        1,
    )


def test_blocked_gemm(env, tmp_path):
    case = W.blocked_gemm(env, np.random.default_rng(3), store_at="row")
    out, per_call, _ = run_case(case, tmp_path, name="blocked_gemm", calls=2)
    check(case, out)
    stats = per_call[0]
    # The function body is one loop with a loop-carried token; its epilogue pop precedes the
    # final sync, so a second call runs exactly the same stream (upstream: one extra NOP).
    assert {k: v for k, v in per_call[1].items() if k.startswith("insn")} == \
        {k: v for k, v in stats.items() if k.startswith("insn")}
    assert counters(stats) == {
        "inp_load_nbytes": 4096,
        "wgt_load_nbytes": 1048576,
        "acc_load_nbytes": 0,
        "uop_load_nbytes": 20,
        "out_store_nbytes": 1024,
        "gemm_counter": 4096,
        "alu_counter": 192,
    }
    # Section 3.3 (first call): GEMM 20 (4 resets), ALU 12, FINISH 1; LOAD-INP 16 + LOAD-WGT 16 +
    # LOAD-UOP 5. (The number of STOREs depends on whether the store pragma on oc_inn wraps that
    # loop (4 stores of 16 tiles, the frontend's placement) or sits inside it (upstream: 64).)
    assert (stats["insn_gemm"], stats["insn_alu"], stats["insn_finish"]) == (20, 12, 1)
    assert stats["insn_load"] == 37


def test_conv2d(env, tmp_path):
    case = W.conv2d(env, np.random.default_rng(4))
    out, stats, _ = run_case(case, tmp_path, name="conv2d")
    check(case, out)
    assert counters(stats) == {"inp_load_nbytes": 114688, "wgt_load_nbytes": 1179648, "acc_load_nbytes": 0,
                               "uop_load_nbytes": 1144, "out_store_nbytes": 50176, "gemm_counter": 451584,
                               "alu_counter": 9408}


def _dumped_stream(text: str) -> list[tuple[str, str]]:
    """(instruction name, dependency flags) of every instruction in a DEBUG_DUMP_INSN dump."""
    out, lines = [], text.splitlines()
    for k, line in enumerate(lines):
        m = re.match(r"INSTRUCTION \d+: (.*)", line)
        if m:
            flags = re.findall(r"(pop prev|pop next|push prev|push next): (\d)", lines[k + 1])
            short = {"pop prev": "pp", "pop next": "pn", "push prev": "sp", "push next": "sn"}
            out.append((m.group(1).strip(), " ".join(short[f] for f, v in flags if v == "1")))
    return out


def test_vadd_instruction_stream(env, tmp_path, capfd):
    """build_config(debug_flag=DEBUG_DUMP_INSN): the runtime dumps the stream of section 3.1."""
    case = W.vadd(env, np.random.default_rng(5))
    capfd.readouterr()
    out, _, _ = run_case(case, tmp_path, name="my_vadd", debug_flag=env.DEBUG_DUMP_INSN)
    check(case, out)
    assert _dumped_stream(capfd.readouterr().out) == [
        ("LOAD ACC", ""), ("LOAD ACC", ""), ("LOAD UOP", ""), ("ALU - add", "sn"), ("STORE OUT", "pp sp"),
        ("NOP-MEMORY-STAGE", "sn"), ("NOP-COMPUTE-STAGE", "pp pn"), ("FINISH", ""),
    ]


def test_matrix_multiply_instruction_stream(env, tmp_path, capfd):
    """The 56-instruction stream of section 3.2, flags included."""
    case = W.matrix_multiply(env, np.random.default_rng(6))
    capfd.readouterr()
    out, _, _ = run_case(case, tmp_path, name="my_gemm", debug_flag=env.DEBUG_DUMP_INSN)
    check(case, out)
    stream = _dumped_stream(capfd.readouterr().out)
    names = [name.split(" - ")[0] for name, _ in stream]
    expect = ["LOAD UOP", "GEMM", "LOAD INP", "LOAD WGT", "LOAD UOP", "GEMM"]
    expect += ["LOAD INP", "LOAD WGT", "GEMM"] * 15
    expect += ["STORE OUT", "NOP-MEMORY-STAGE", "NOP-MEMORY-STAGE", "NOP-COMPUTE-STAGE", "FINISH"]
    assert names == expect
    flags = [f for _, f in stream]
    assert flags[:6] == ["", "sp", "pn", "sn", "pp", "sp"]
    assert flags[6:9] == ["pn", "sn", "pp sp"] and flags[48:51] == ["pn", "sn", "pp sp sn"]
    assert flags[51:] == ["pp sp", "pn", "sn", "pp pn", ""]


def test_cpu_stages_around_the_accelerator(env, tmp_path):
    """CPU code before the DMA (A2 = A * 2) and after the store (D = C + 1) in one function:
    intermediates live in VTA DRAM, and a sync precedes the CPU stage that reads VTA results."""
    case = W.vadd_with_cpu_stages(env, np.random.default_rng(7))
    out, stats, mod = run_case(case, tmp_path, name="mixed")
    check(case, out)
    assert stats["alu_counter"] == 8 and stats["acc_load_nbytes"] == 16 * env.ACC_ELEM_BYTES
    src = mod.get_source()
    assert src.count("VTABufferAlloc(") == 2 and src.count("VTABufferFree(") >= 2
    assert src.index("VTASynchronize") < src.index("((int8_t*)D_ptr)[")  # sync, then the CPU stage
