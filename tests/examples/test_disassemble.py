"""Seeing what was built: ``mod.disassemble / instructions / uop_kernels`` and the bridge capture.

Oracles are the instruction streams and kernels derived in reference tvm-vta-software.md
sections 3.1 and 3.3, written out here field by field, and NumPy for the results.
"""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa, nd, rpc, runtime
from vta.build import build
from vta.runtime.capture import capture
from vta.testing import simulator
from vta.tvm import te

from tests.compiler import workloads as W


def _vadd(env):
    shape = (1, 64, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    B = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    A_buf = te.compute(shape, lambda *i: A(*i), "A_buf")
    B_buf = te.compute(shape, lambda *i: B(*i), "B_buf")
    C_buf = te.compute(shape, lambda *i: A_buf(*i) + B_buf(*i), "C_buf")
    C = te.compute(shape, lambda *i: C_buf(*i).astype(env.inp_dtype), "C")
    s = te.create_schedule(C.op)
    for t in (A_buf, B_buf, C_buf):
        s[t].set_scope(env.acc_scope)
    for t in (A_buf, B_buf, C):
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    s[C_buf].pragma(s[C_buf].op.axis[0], env.alu)
    return build(s, [A, B, C], "ext_dev", name="my_vadd"), shape


@pytest.fixture
def vadd(env):
    mod, shape = _vadd(env)
    rng = np.random.default_rng(11)
    a = rng.integers(-128, 128, size=shape).astype(np.int32)
    b = rng.integers(-128, 128, size=shape).astype(np.int32)
    dev = runtime.ext_dev(0)
    arrays = [nd.array(a, dev), nd.array(b, dev), nd.empty(shape, "int8", dev)]
    yield mod, arrays, (a + b).astype(np.int8)
    for arr in arrays:
        arr.close()
    mod.close()


def _check_vadd_stream(env, insns, arrays):
    """The eight instructions of section 3.1, with their fields and dependency flags."""
    a, b, c = (arr.phys_addr for arr in arrays)
    acc, out = env.elem_bytes(isa.MEM_ACC), env.elem_bytes(isa.MEM_OUT)
    assert len(insns) == 8
    ld_a, ld_b, ld_uop, alu, st, nop_ld, nop_cmp, fin = insns
    for ld, base, sram in ((ld_a, a, 0), (ld_b, b, 64)):
        assert (ld.opcode, ld.memory_type, ld.sram_base, ld.dram_base) == (
            isa.OPCODE_LOAD,
            isa.MEM_ACC,
            sram,
            base // acc,
        )
        assert (ld.x_size, ld.y_size, ld.x_stride) == (64, 1, 64)
    assert (ld_uop.opcode, ld_uop.memory_type, ld_uop.x_size) == (isa.OPCODE_LOAD, isa.MEM_UOP, 1)
    assert isinstance(alu, isa.AluInsn) and alu.alu_opcode == isa.ALU_ADD and not alu.use_imm
    assert (alu.uop_end - alu.uop_bgn, alu.iter_out, alu.iter_in, alu.dst_factor_in, alu.src_factor_in) == (
        1,
        1,
        64,
        1,
        1,
    )
    assert (st.opcode, st.memory_type, st.sram_base, st.dram_base, st.x_size) == (
        isa.OPCODE_STORE,
        isa.MEM_OUT,
        0,
        c // out,
        64,
    )
    flags = [(i.pop_prev_dep, i.pop_next_dep, i.push_prev_dep, i.push_next_dep) for i in insns]
    assert flags == [(0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 1), (1, 0, 1, 0),
                     (0, 0, 0, 1), (1, 1, 0, 0), (0, 0, 0, 0)]
    assert (nop_ld.x_size, nop_cmp.memory_type, nop_cmp.x_size) == (0, isa.MEM_UOP, 0)
    assert isinstance(fin, isa.FinishInsn)


def test_instructions_without_executing(env, vadd):
    mod, arrays, _ = vadd
    simulator.clear_stats()
    insns = mod.instructions(*arrays)
    _check_vadd_stream(env, insns, arrays)
    assert not arrays[2].numpy().any(), "the device must not run when execute=False"
    assert simulator.stats()["alu_counter"] == 0


def test_capture_while_executing(env, vadd):
    mod, arrays, expect = vadd
    simulator.clear_stats()
    cap = mod.capture(*arrays, execute=True)
    assert len(cap.runs) == 1 and cap.runs[0].executed
    _check_vadd_stream(env, cap.instructions(), arrays)
    np.testing.assert_equal(arrays[2].numpy(), expect)
    assert simulator.stats()["alu_counter"] == 64


def test_disassemble_text_and_uop_kernel(env, vadd):
    mod, arrays, _ = vadd
    text = mod.disassemble(*arrays, uops=True)
    assert text.startswith("There are 8 instructions\n")
    titles = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("INSTRUCTION ")]
    assert titles == ["LOAD ACC", "LOAD ACC", "LOAD UOP", "ALU - add", "STORE OUT",
                      "NOP-MEMORY-STAGE", "NOP-COMPUTE-STAGE", "FINISH"]
    (kern,) = mod.uop_kernels(*arrays)
    assert kern.kind == "ALU" and kern.alu_ops == ("ADD",) and kern.insn_indices == (3,)
    assert [(u.dst_idx, u.src_idx) for u in kern.uops] == [(0, 64)]
    assert kern.loops == ((1, 0, 0, 0), (64, 1, 1, 0))
    assert "ALU kernel (ADD): 1 uop(s)" in text and "acc[0] <- acc[64]" in text


def test_loaded_module_disassembles_like_the_compiled_one(env, vadd, tmp_path):
    mod, arrays, _ = vadd
    mod.save(tmp_path / "vadd.o")
    with rpc.LocalSession(workdir_parent=tmp_path) as remote:
        remote.upload(str(tmp_path / "vadd.o"))
        loaded = remote.load_module("vadd.o")
        strip = [isa.replace(i) for i in loaded.instructions(*arrays)]
        assert strip == mod.instructions(*arrays)


def test_blocked_gemm_uop_kernels(env):
    """Section 3.3: one reset kernel, one GEMM kernel with two folded loops, three ALU kernels."""
    case = W.blocked_gemm(env, np.random.default_rng(0), store_at="row")
    mod = build(case.schedule, case.args, "ext_dev", name="blocked_gemm")
    dev = runtime.ext_dev(0)
    arrays = [nd.array(case.inputs[t.name], dev) if t.name in case.inputs else nd.empty(case.out_shape, "int8", dev)
              for t in case.args]
    try:
        kernels = mod.uop_kernels(*arrays)
        insns = mod.instructions(*arrays)
    finally:
        for arr in arrays:
            arr.close()
        mod.close()
    kinds = [k.kind for k in kernels]
    assert sorted(kinds) == ["ALU", "ALU", "ALU", "GEMM", "GEMM reset"]
    gemm = next(k for k in kernels if k.kind == "GEMM")
    assert len(gemm.uops) == 1 and (gemm.uops[0].dst_idx, gemm.uops[0].src_idx, gemm.uops[0].wgt_idx) == (0, 0, 0)
    assert gemm.loops == ((16, 1, 0, 16), (16, 0, 1, 1)) and len(gemm.insn_indices) == 16
    alu_ops = sorted(op for k in kernels if k.kind == "ALU" for op in k.alu_ops)
    assert alu_ops == ["MAX imm 0", "MIN imm 127", "SHR imm 8"]
    assert all(k.loops == ((1, 0, 0, 0), (16, 1, 1, 0)) for k in kernels if k.kind == "ALU")
    assert sum(isinstance(i, isa.GemmInsn) for i in insns) == 20


def test_capture_block_records_every_run(env, vadd):
    mod, arrays, _ = vadd
    with capture(execute=False) as cap:
        mod(*arrays)
        mod(*arrays)
    assert len(cap.runs) == 2
    assert cap.disassemble().startswith("RUN 0 of 2\nThere are 8 instructions")
    assert len(cap.uop_kernels()) == 2


def test_conv2d_uop_kernels(env):
    """Convolution tutorial (3.3): 286 uops = 2 x 14 reset + 2 x 126 GEMM + 2 x 3 ALU, one kernel per
    virtual thread; GEMM loops (8, 98, 0, 9) and (7, 14, 16, 0)."""
    case = W.conv2d(env, np.random.default_rng(0))
    mod = build(case.schedule, case.args, "ext_dev", name="conv2d")
    dev = runtime.ext_dev(0)
    arrays = [nd.array(case.inputs[t.name], dev) if t.name in case.inputs else nd.empty(case.out_shape, "int8", dev)
              for t in case.args]
    try:
        kernels = mod.uop_kernels(*arrays)
    finally:
        for arr in arrays:
            arr.close()
        mod.close()
    sizes = sorted((k.kind, len(k.uops)) for k in kernels)
    assert sizes == [("ALU", 1)] * 6 + [("GEMM", 126)] * 2 + [("GEMM reset", 14)] * 2
    assert sum(len(k.uops) for k in kernels) * env.elem_bytes(isa.MEM_UOP) == 1144  # uop_load_nbytes
    gemms = [k for k in kernels if k.kind == "GEMM"]
    assert all(k.loops == ((8, 98, 0, 9), (7, 14, 16, 0)) for k in gemms)
    assert gemms[0].uops != gemms[1].uops  # each virtual thread has its own accumulator tiles
    assert sorted(op for k in kernels for op in k.alu_ops) == sorted(["SHR imm 8", "MAX imm 0", "MIN imm 127"] * 2)
