"""The simple matrix multiply through the native runtime (tvm-vta-software.md 3.2)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import vta.nd
from vta import isa
from vta.isa import FinishInsn, GemmInsn, MemInsn
from vta.testing import simulator

from .conftest import upload_module

pytestmark = pytest.mark.native


def gemm_data(seed: int = 0):
    """Packed int8 operands A (1, 16, 1, 16), B (16, 16, 16, 16) and the expected C."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, size=(1, 256), dtype=np.int8)
    b = rng.integers(-128, 128, size=(256, 256), dtype=np.int8)
    c = (a.astype(np.int32) @ b.astype(np.int32).T).astype(np.int8)
    pack_row = lambda x: x.reshape(1, 1, 16, 16).transpose(0, 2, 1, 3).copy()  # noqa: E731
    b_packed = b.reshape(16, 16, 16, 16).transpose(0, 2, 1, 3).copy()
    return pack_row(a), b_packed, pack_row(c)


def run_gemm(remote, kernel_objects, entry=None, seed=0):
    mod = upload_module(remote, kernel_objects["gemm"])
    f = mod[entry] if entry else mod
    a_np, b_np, expected = gemm_data(seed)
    dev = remote.ext_dev(0)
    a = vta.nd.array(a_np, dev)
    b = vta.nd.array(b_np, dev)
    c = vta.nd.array(np.zeros((1, 16, 1, 16), dtype=np.int8), dev)
    f(a, b, c)
    return a, b, c, expected


def expected_stream(a_phys: int, b_phys: int, c_phys: int, uop_bases: tuple[int, int]) -> list:
    """The 56 instructions of tvm-vta-software.md 3.2, written out field by field."""
    L, S = isa.OPCODE_LOAD, isa.OPCODE_STORE
    out = [
        MemInsn(opcode=L, memory_type=isa.MEM_UOP, sram_base=0, dram_base=uop_bases[0],
                y_size=1, x_size=1, x_stride=1),
        GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=16, dst_factor_out=1, iter_in=1,
                 push_prev_dep=1),
    ]
    for ko in range(16):
        out.append(MemInsn(opcode=L, memory_type=isa.MEM_INP, sram_base=0,
                           dram_base=a_phys // 16 + ko, y_size=1, x_size=1, x_stride=1,
                           pop_next_dep=1))
        out.append(MemInsn(opcode=L, memory_type=isa.MEM_WGT, sram_base=0,
                           dram_base=b_phys // 256 + ko, y_size=16, x_size=1, x_stride=16,
                           push_next_dep=1))
        if ko == 0:
            out.append(MemInsn(opcode=L, memory_type=isa.MEM_UOP, sram_base=1,
                               dram_base=uop_bases[1], y_size=1, x_size=1, x_stride=1,
                               pop_prev_dep=1))
        out.append(GemmInsn(uop_bgn=1, uop_end=2, iter_out=16, dst_factor_out=1,
                            src_factor_out=0, wgt_factor_out=1, iter_in=1,
                            pop_prev_dep=int(ko > 0), push_prev_dep=1,
                            push_next_dep=int(ko == 15)))
    out += [
        MemInsn(opcode=S, memory_type=isa.MEM_OUT, sram_base=0, dram_base=c_phys // 16,
                y_size=1, x_size=16, x_stride=16, pop_prev_dep=1, push_prev_dep=1),
        MemInsn(opcode=L, memory_type=isa.MEM_INP, pop_next_dep=1),
        MemInsn(opcode=L, memory_type=isa.MEM_INP, push_next_dep=1),
        MemInsn(opcode=L, memory_type=isa.MEM_UOP, pop_prev_dep=1, pop_next_dep=1),
        FinishInsn(),
    ]
    return out


def test_gemm_matches_numpy_with_upstream_counters(env, remote, kernel_objects, recorder):
    simulator.clear_stats()
    _, _, c, expected = run_gemm(remote, kernel_objects)
    np.testing.assert_array_equal(c.numpy(), expected)
    stats = simulator.stats()
    assert {k: stats[k] for k in ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes",
                                  "uop_load_nbytes", "out_store_nbytes", "gemm_counter",
                                  "alu_counter")} == {
        "inp_load_nbytes": 256, "wgt_load_nbytes": 65536, "acc_load_nbytes": 0,
        "uop_load_nbytes": 8, "out_store_nbytes": 256, "gemm_counter": 256, "alu_counter": 0,
    }


def test_gemm_instruction_stream_is_exact(env, remote, kernel_objects, recorder):
    a, b, c, _ = run_gemm(remote, kernel_objects)
    (stream,) = recorder.streams
    assert len(stream) == 56
    bases = (stream[0].dram_base, stream[4].dram_base)
    assert stream == expected_stream(a.phys_addr, b.phys_addr, c.phys_addr, bases)
    # the reset kernel and the GEMM kernel, one uop each, in separate staging slots
    assert recorder.uops[0] == {0: [isa.Uop(0, 0, 0)], 4: [isa.Uop(0, 0, 0)]}
    assert bases[1] == bases[0] + 1


def test_gemm_twice_in_one_window_hits_the_kernel_cache(env, remote, kernel_objects, recorder):
    simulator.clear_stats()
    _, _, c, expected = run_gemm(remote, kernel_objects, entry="my_gemm_twice")
    np.testing.assert_array_equal(c.numpy(), expected)
    (stream,) = recorder.streams
    uop_loads = [i for i in stream if isinstance(i, MemInsn) and i.opcode == isa.OPCODE_LOAD
                 and i.memory_type == isa.MEM_UOP and i.x_size > 0]
    gemms = [i for i in stream if isinstance(i, GemmInsn)]
    assert len(uop_loads) == 2  # the second pass loads no uops
    assert len(gemms) == 34
    assert token_replay(stream) == [0, 0, 0, 0]
    stats = simulator.stats()
    assert stats["uop_load_nbytes"] == 8
    assert stats["gemm_counter"] == 512


def token_replay(stream) -> list[int]:
    """Run a stream in program order, one instruction at a time, counting tokens per channel.

    Returns the channel counts at the end; raises AssertionError if an instruction pops a token
    that no earlier instruction pushed (the stream could not run serially).
    """
    l2g = g2l = s2g = g2s = 0
    for n, insn in enumerate(stream):
        if isinstance(insn, MemInsn) and insn.opcode == isa.OPCODE_STORE:
            stage = 3
        elif isinstance(insn, MemInsn) and insn.memory_type in (isa.MEM_INP, isa.MEM_WGT):
            stage = 1
        else:
            stage = 2
        if stage == 1:
            assert g2l >= insn.pop_next_dep, f"instruction {n} pops g2l without a token"
            g2l -= insn.pop_next_dep
            l2g += insn.push_next_dep
            assert not insn.pop_prev_dep and not insn.push_prev_dep
        elif stage == 2:
            assert l2g >= insn.pop_prev_dep, f"instruction {n} pops l2g without a token"
            assert s2g >= insn.pop_next_dep, f"instruction {n} pops s2g without a token"
            l2g -= insn.pop_prev_dep
            s2g -= insn.pop_next_dep
            g2l += insn.push_prev_dep
            g2s += insn.push_next_dep
        else:
            assert g2s >= insn.pop_prev_dep, f"instruction {n} pops g2s without a token"
            g2s -= insn.pop_prev_dep
            s2g += insn.push_prev_dep
            assert not insn.pop_next_dep and not insn.push_next_dep
    return [l2g, g2l, s2g, g2s]


def test_normal_stream_is_token_balanced(env, remote, kernel_objects, recorder):
    run_gemm(remote, kernel_objects)
    assert token_replay(recorder.streams[0]) == [0, 0, 0, 0]


def test_force_serial_hands_off_between_every_stage(env, remote, kernel_objects, recorder, rt):
    rt.VTASetDebugMode(rt.VTATLSCommandHandle(), 1 << 5)
    _, _, c, expected = run_gemm(remote, kernel_objects, seed=4)
    np.testing.assert_array_equal(c.numpy(), expected)
    (stream,) = recorder.streams
    assert token_replay(stream) == [0, 0, 0, 0]
    stages = []
    for insn in stream:
        if isinstance(insn, MemInsn) and insn.opcode == isa.OPCODE_STORE:
            stages.append(3)
        elif isinstance(insn, MemInsn) and insn.memory_type in (isa.MEM_INP, isa.MEM_WGT):
            stages.append(1)
        else:
            stages.append(2)
    # every change of stage carries a push on the earlier and a pop on the later instruction
    for n in range(1, len(stream)):
        if stages[n] != stages[n - 1]:
            prev, cur = stream[n - 1], stream[n]
            assert abs(stages[n] - stages[n - 1]) == 1
            assert (prev.push_next_dep if stages[n] > stages[n - 1] else prev.push_prev_dep)
            assert (cur.pop_prev_dep if stages[n] > stages[n - 1] else cur.pop_next_dep)
    assert isinstance(stream[-1], FinishInsn)


def test_full_staging_buffer_synchronises_by_itself(env, remote, kernel_objects, recorder):
    from vta.runtime import vta_bridge

    assert vta_bridge.set_xfer_limit(256, env) == 256  # 16 instructions per window
    _, _, c, expected = run_gemm(remote, kernel_objects, seed=5)
    np.testing.assert_array_equal(c.numpy(), expected)
    assert len(recorder.streams) > 3
    assert all(len(s) <= 16 for s in recorder.streams)
    # the windows together hand every token back: the runs balance as one program
    total = [0, 0, 0, 0]
    for s in recorder.streams:
        total = [t + x for t, x in zip(total, token_replay_counts(s), strict=True)]
    assert total == [0, 0, 0, 0]


def token_replay_counts(stream) -> list[int]:
    """Net tokens per channel (pushes minus pops) of one stream, in any order."""
    net = [0, 0, 0, 0]
    for insn in stream:
        if isinstance(insn, MemInsn) and insn.opcode == isa.OPCODE_STORE:
            net[3] -= insn.pop_prev_dep
            net[2] += insn.push_prev_dep
        elif isinstance(insn, MemInsn) and insn.memory_type in (isa.MEM_INP, isa.MEM_WGT):
            net[1] -= insn.pop_next_dep
            net[0] += insn.push_next_dep
        else:
            net[0] -= insn.pop_prev_dep
            net[2] -= insn.pop_next_dep
            net[1] += insn.push_prev_dep
            net[3] += insn.push_next_dep
    return net


def test_uop_sram_wraps_and_evicts(env, remote, kernel_objects, recorder):
    mod = upload_module(remote, kernel_objects["cache"])
    rng = np.random.default_rng(6)
    x_np = rng.integers(-1000, 1000, size=(1, 4, 1, 16), dtype=np.int32)
    dev = remote.ext_dev(0)
    x = vta.nd.array(x_np, dev)
    y = vta.nd.array(np.zeros((1, 4, 1, 16), dtype=np.int8), dev)
    simulator.clear_stats()
    mod["evict"](x, y)
    np.testing.assert_array_equal(y.numpy(), (x_np + 1250 * 4).astype(np.int8))
    (stream,) = recorder.streams
    loads = [i for i in stream if isinstance(i, MemInsn) and i.memory_type == isa.MEM_UOP
             and i.x_size > 0]
    # 5000 + 5000 > 8192: every kernel wraps to entry 0 and evicts the other one
    assert [(i.sram_base, i.x_size) for i in loads] == [(0, 5000)] * 3
    alus = [i for i in stream if isinstance(i, isa.AluInsn)]
    assert [(i.uop_bgn, i.uop_end, i.imm) for i in alus] == [(0, 5000, 1), (0, 5000, 2), (0, 5000, 1)]
    assert simulator.stats()["uop_load_nbytes"] == 3 * 5000 * 4


def blocked_data(seed: int = 0):
    """Packed operands of the blocked GEMM (tvm-vta-software.md 3.3) and the expected result."""
    rng = np.random.default_rng(seed)
    data = rng.integers(-128, 128, size=(1, 1024), dtype=np.int8)
    weight = rng.integers(-128, 128, size=(1024, 1024), dtype=np.int8)
    acc = data.astype(np.int32) @ weight.astype(np.int32).T
    res = np.clip(acc >> 8, 0, 127).astype(np.int8)
    pack = lambda x: x.reshape(1, 1, 64, 16).transpose(0, 2, 1, 3).copy()  # noqa: E731
    w_packed = weight.reshape(64, 16, 64, 16).transpose(0, 2, 1, 3).copy()
    return pack(data), w_packed, pack(res)


def census(stream) -> dict:
    """Instruction counts by kind, in the notation of tvm-vta-software.md 3."""
    out: dict[str, int] = {}
    for insn in stream:
        if isinstance(insn, MemInsn):
            if insn.x_size == 0:
                kind = ("NOP-ST" if insn.opcode == isa.OPCODE_STORE else
                        "NOP-LD" if insn.memory_type == isa.MEM_INP else "NOP-CMP")
            elif insn.opcode == isa.OPCODE_STORE:
                kind = "STORE"
            else:
                kind = "LOAD-" + isa.MEM_NAMES[insn.memory_type]
        else:
            kind = type(insn).__name__.replace("Insn", "").upper()
        out[kind] = out.get(kind, 0) + 1
    return out


def test_blocked_gemm_stream_counters_and_trailing_pop(env, remote, kernel_objects, recorder, rt):
    mod = upload_module(remote, kernel_objects["blocked_gemm"])
    d_np, w_np, expected = blocked_data()
    dev = remote.ext_dev(0)
    data, weight = vta.nd.array(d_np, dev), vta.nd.array(w_np, dev)
    res = vta.nd.array(np.zeros((1, 64, 1, 16), dtype=np.int8), dev)
    simulator.clear_stats()
    mod["blocked_gemm"](data, weight, res)
    np.testing.assert_array_equal(res.numpy(), expected)
    stats = simulator.stats()
    assert {k: stats[k] for k in ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes",
                                  "uop_load_nbytes", "out_store_nbytes", "gemm_counter",
                                  "alu_counter")} == {
        "inp_load_nbytes": 4096, "wgt_load_nbytes": 1048576, "acc_load_nbytes": 0,
        "uop_load_nbytes": 20, "out_store_nbytes": 1024, "gemm_counter": 4096, "alu_counter": 192,
    }
    first = recorder.streams[0]
    assert len(first) == 142
    assert census(first) == {
        "LOAD-INP": 16, "LOAD-WGT": 16, "LOAD-UOP": 5, "GEMM": 20, "ALU": 12, "STORE": 64,
        "NOP-LD": 5, "NOP-ST": 2, "NOP-CMP": 1, "FINISH": 1,
    }
    # the pending pop left by the first call costs the second call one extra compute no-op
    mod["blocked_gemm"](data, weight, res)
    np.testing.assert_array_equal(res.numpy(), expected)
    second = recorder.streams[1]
    assert len(second) == 143
    assert census(second)["NOP-CMP"] == 2
    # an empty window takes the last pending pop: the device's channels end empty
    rt.VTASynchronize.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    assert rt.VTASynchronize(rt.VTATLSCommandHandle(), 1 << 31) == 0
    assert census(recorder.streams[2]) == {"NOP-CMP": 2, "NOP-ST": 1, "NOP-LD": 1, "FINISH": 1}
    stats = simulator.stats()
    assert [stats[f"tokens_{c}"] for c in ("l2g", "g2l", "s2g", "g2s")] == [0, 0, 0, 0]
