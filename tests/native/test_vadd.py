"""The "Get Started" vector add through the native runtime (tvm-vta-software.md 3.1)."""

from __future__ import annotations

import numpy as np
import pytest

import vta.nd
from vta import isa
from vta.isa import AluInsn, FinishInsn, MemInsn
from vta.testing import simulator

from .conftest import upload_module, vadd_data

pytestmark = pytest.mark.native

STAT_EXPECTED = {
    "inp_load_nbytes": 0, "wgt_load_nbytes": 0, "acc_load_nbytes": 8192, "uop_load_nbytes": 4,
    "out_store_nbytes": 1024, "gemm_counter": 0, "alu_counter": 64,
}


def expected_stream(a_phys: int, b_phys: int, c_phys: int, uop_base: int) -> list:
    """The 8 instructions of tvm-vta-software.md 3.1, written out field by field."""
    L, S, ACC, UOP, OUT = isa.OPCODE_LOAD, isa.OPCODE_STORE, isa.MEM_ACC, isa.MEM_UOP, isa.MEM_OUT
    return [
        MemInsn(opcode=L, memory_type=ACC, sram_base=0, dram_base=a_phys // 64, y_size=1,
                x_size=64, x_stride=64),
        MemInsn(opcode=L, memory_type=ACC, sram_base=64, dram_base=b_phys // 64, y_size=1,
                x_size=64, x_stride=64),
        MemInsn(opcode=L, memory_type=UOP, sram_base=0, dram_base=uop_base, y_size=1, x_size=1,
                x_stride=1),
        AluInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=64, dst_factor_in=1, src_factor_in=1,
                alu_opcode=isa.ALU_ADD, use_imm=0, push_next_dep=1),
        MemInsn(opcode=S, memory_type=OUT, sram_base=0, dram_base=c_phys // 16, y_size=1,
                x_size=64, x_stride=64, pop_prev_dep=1, push_prev_dep=1),
        MemInsn(opcode=L, memory_type=isa.MEM_INP, push_next_dep=1),
        MemInsn(opcode=L, memory_type=UOP, pop_prev_dep=1, pop_next_dep=1),
        FinishInsn(),
    ]


def run_vadd(remote, kernel_objects, seed=0):
    f = upload_module(remote, kernel_objects["vadd"])
    a_np, b_np, expected = vadd_data(seed)
    dev = remote.ext_dev(0)
    a = vta.nd.array(a_np, dev)
    b = vta.nd.array(b_np, dev)
    c = vta.nd.array(np.zeros((1, 64, 1, 16), dtype=np.int8), dev)
    f(a, b, c)
    return a, b, c, expected


def test_vadd_matches_numpy_with_upstream_counters(env, remote, kernel_objects, recorder):
    simulator.clear_stats()
    a, b, c, expected = run_vadd(remote, kernel_objects)
    np.testing.assert_array_equal(c.numpy(), expected)
    stats = simulator.stats()
    assert {k: stats[k] for k in STAT_EXPECTED} == STAT_EXPECTED


def test_vadd_instruction_stream_is_exact(env, remote, kernel_objects, recorder):
    a, b, c, _ = run_vadd(remote, kernel_objects)
    assert len(recorder.streams) == 1
    stream = recorder.streams[0]
    assert len(stream) == 8
    uop_base = stream[2].dram_base
    assert stream == expected_stream(a.phys_addr, b.phys_addr, c.phys_addr, uop_base)
    # The LOAD UOP reads the kernel's single micro-op: ACC[0] += ACC[64] (in the loop).
    assert recorder.uops[0] == {2: [isa.Uop(dst_idx=0, src_idx=64, wgt_idx=0)]}


def test_vadd_kernel_is_loaded_once_per_window(env, remote, kernel_objects, recorder):
    simulator.clear_stats()
    for seed in (1, 2):
        _, _, c, expected = run_vadd(remote, kernel_objects, seed)
        np.testing.assert_array_equal(c.numpy(), expected)
    # Each call is its own window: the uop residency is forgotten, so each reloads its kernel.
    assert simulator.stats()["uop_load_nbytes"] == 8
    assert [len(s) for s in recorder.streams] == [8, 8]


def test_dump_insn_prints_the_stream(env, remote, kernel_objects, recorder, rt, capsys):
    rt.VTASetDebugMode(rt.VTATLSCommandHandle(), 1 << 1)
    run_vadd(remote, kernel_objects)
    out = capsys.readouterr().out
    assert out.startswith("There are 8 instructions\n")
    titles = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("INSTRUCTION")]
    assert titles == ["LOAD ACC", "LOAD ACC", "LOAD UOP", "ALU - add", "STORE OUT",
                      "NOP-MEMORY-STAGE", "NOP-COMPUTE-STAGE", "FINISH"]
    # running token counts are printed after each instruction and end balanced
    assert out.rstrip().endswith("s2g_queue = 0, g2s_queue = 0")


def test_dump_uop_prints_new_kernels_only(env, remote, kernel_objects, recorder, rt, capsys):
    rt.VTASetDebugMode(rt.VTATLSCommandHandle(), 1 << 2)
    # A fresh session loads a fresh copy of the module, whose kernel handle is empty.
    f = upload_module(remote, kernel_objects["vadd"])
    dev = remote.ext_dev(0)
    a_np, b_np, expected = vadd_data(9)
    a, b = vta.nd.array(a_np, dev), vta.nd.array(b_np, dev)
    c = vta.nd.array(np.zeros((1, 64, 1, 16), dtype=np.int8), dev)
    f(a, b, c)
    first = capsys.readouterr().out
    assert "UOP KERNEL ALU" in first
    assert "uop 0: dst 0, src 64, wgt 0" in first
    assert "loop 0: extent 64, dst 1, src 1, wgt 0" in first
    f(a, b, c)  # the same module again: its kernel is already recorded
    assert "UOP KERNEL" not in capsys.readouterr().out
    np.testing.assert_array_equal(c.numpy(), expected)


def test_vadd_over_socket_server(env, kernel_objects, recorder, tmp_path):
    from vta import rpc
    from vta.rpc import server as server_mod

    with server_mod.Server("127.0.0.1", 0, workdir=tmp_path).start() as server:
        with rpc.connect("127.0.0.1", server.port, timeout=60) as remote:
            simulator.clear_stats()
            _, _, c, expected = run_vadd(remote, kernel_objects, seed=3)
            np.testing.assert_array_equal(c.numpy(), expected)
    assert simulator.stats()["alu_counter"] == 64
