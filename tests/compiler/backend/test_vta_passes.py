"""The VTA passes on small hand-built inputs (reference section 2.4)."""

from __future__ import annotations

import pytest

from vta.errors import ScheduleError
from vta.tir import nodes as n
from vta.transform.alloc import lift_alloc_to_scope_begin
from vta.transform.alu import annotate_alu_coproc_scope, inject_alu_intrin
from vta.transform.conv2d_transpose import inject_conv2d_transpose_skip
from vta.transform.cpu_access import cpu_access_rewrite
from vta.transform.dma import inject_dma_intrin, inject_skip_copy, two_d_pattern
from vta.transform.sync import add_debug, inject_coproc_sync
from vta.transform.uop import fold_uop_loop, separate_reset_kernels
from vta.transform._util import VTA_AXIS, call_extern, coproc_scope, uop_push

from .helpers import alloc, calls, func, ints, loop, sequence
from .tir_examples import arg_buffer

ACC, INP, WGT = "local.acc_buffer", "local.inp_buffer", "local.wgt_buffer"


# ---------------------------------------------------------------------------- 2-D patterns
@pytest.mark.parametrize("dims, block, expect", [
    ([(64, 16), (16, 1)], 16, (64, 1, 64)),                 # contiguous row of 64 tiles
    ([(16, 4096), (16, 16), (16, 1)], 256, (1, 16, 16)),    # one 16x16 weight tile per row, 16 tiles apart
    ([(16, 1)], 16, (1, 1, 1)),                              # one tile
    ([(3, 160), (5, 16), (16, 1)], 16, (5, 3, 10)),          # 3 rows of 5 tiles, rows 10 tiles apart
    ([(3, 80), (5, 16), (16, 1)], 16, (15, 1, 15)),          # rows back to back fold into one row
    ([(2, 512), (4, 128), (4, 16), (16, 1)], 16, (4, 8, 8)),  # contiguous outer dims fold into the y dimension
])
def test_two_d_pattern(dims, block, expect):
    x, y, stride, off, host = two_d_pattern(dims, n.IntImm(2 * block), block, True, "test")
    assert (x, y, stride) == expect and off.value == 2 and host == []


@pytest.mark.parametrize("dims, message", [
    ([(8, 2)], "must be contiguous"),
    ([(3, 100), (2, 40), (16, 1)], "not a multiple of the 16-scalar tile"),
])
def test_two_d_pattern_errors(dims, message):
    with pytest.raises(ScheduleError, match=message):
        two_d_pattern(dims, n.IntImm(0), 16, True, "test copy")


def test_two_d_pattern_host_dimensions():
    # planes of rows of tiles, nothing contiguous across dimensions: one 2-D transfer per plane
    x, y, stride, off, host = two_d_pattern([(2, 992), (3, 96), (2, 32), (16, 1)], n.IntImm(0), 16, True, "t")
    assert (x, y, stride, host) == (1, 2, 2, [(2, 62, 6), (3, 6, 2)])
    # a strided innermost dimension: x 1, rows of one tile, the outer dimension on the host
    x, y, stride, off, host = two_d_pattern([(4, 320), (5, 32), (16, 1)], n.IntImm(0), 16, True, "t")
    assert (x, y, stride, host) == (1, 5, 2, [(4, 20, 5)])


def test_two_d_pattern_misaligned_offset():
    with pytest.raises(ScheduleError, match="not provably a multiple"):
        two_d_pattern([(16, 1)], n.IntImm(8), 16, True, "test copy")


# ---------------------------------------------------------------------------- DMA injection
def _copy_nest(dst, src, extents, dst_idx, src_idx, value=None):
    vs = [n.Var(f"i{k}") for k in range(len(extents))]
    load = n.Load("int32", src, src_idx(*vs))
    body = n.Store(dst, value(load) if value else load, dst_idx(*vs))
    for v, e in reversed(list(zip(vs, extents, strict=True))):
        body = loop(v, e, body)
    return n.AttrStmt(n.Var("ax"), "pragma_dma_copy", n.IntImm(1), body)


def test_inject_dma_load_and_store(env):
    (a, ab), (c, cb) = arg_buffer("A", (1, 64, 1, 16), "int32"), arg_buffer("C", (1, 64, 1, 16), "int8")
    buf = n.Var("A_buf", "handle")
    load = _copy_nest(buf, ab.data, (64, 16), lambda i, j: i * 16 + j, lambda i, j: i * 16 + j)
    store = _copy_nest(cb.data, buf, (64, 16), lambda i, j: i * 16 + j, lambda i, j: i * 16 + j,
                       value=lambda x: n.Cast("int8", x))
    out = inject_dma_intrin(env)(func(alloc(buf, "int32", 1024, ACC, n.seq(load, store)), (a, ab), (c, cb))).body
    (ld,) = calls(out, "VTALoadBuffer2D")
    assert ld.args[2] is ab.data and ints(ld, 2)[:8] == [0, 64, 1, 64, 0, 0, 0, 0] and ints(ld)[-1] == env.dev.MEM_ID_ACC
    (st,) = calls(out, "VTAStoreBuffer2D")
    assert ints(st)[2] == env.dev.MEM_ID_OUT and st.args[4] is cb.data and ints(st, 4) == [0, 64, 1, 64]
    assert sequence(out) == ["coproc_scope=2", "VTALoadBuffer2D", "/coproc_scope",
                             "coproc_scope=3", "VTAStoreBuffer2D", "/coproc_scope"]


def test_inject_dma_padded_load(env):
    (x, xb) = arg_buffer("x", (3, 5, 1, 16), "int32")
    buf = n.Var("x_buf", "handle")
    i0, i1, i3 = n.Var("i0"), n.Var("i1"), n.Var("i3")
    val = n.Call("int32", "tir.if_then_else", (i0 >= 2, n.Load("int32", xb.data, (i0 - 2) * 80 + i1 * 16 + i3), n.IntImm(0)))
    nest = loop(i0, 5, loop(i1, 5, loop(i3, 16, n.Store(buf, val, i0 * 80 + i1 * 16 + i3))))
    body = alloc(buf, "int32", 400, ACC, n.AttrStmt(i0, "pragma_dma_copy", n.IntImm(1), nest))
    (ld,) = calls(inject_dma_intrin(env)(func(body, (x, xb))).body, "VTALoadBuffer2D")
    # offset 0, x 5, y 3, stride 5, x pads (0, 0), y pads (2, 0)
    assert ints(ld, 2)[:8] == [0, 5, 3, 5, 0, 2, 0, 0]


def test_inject_dma_acc_8bit(env):
    (a, ab) = arg_buffer("A", (1, 4, 1, 16), "int8")
    buf = n.Var("A_buf", "handle")
    i, j = n.Var("i"), n.Var("j")
    nest = loop(i, 4, loop(j, 16, n.Store(buf, n.Cast("int32", n.Load("int8", ab.data, i * 16 + j)), i * 16 + j)))
    body = alloc(buf, "int32", 64, ACC, n.AttrStmt(i, "pragma_dma_copy", n.IntImm(1), nest))
    (ld,) = calls(inject_dma_intrin(env)(func(body, (a, ab))).body, "VTALoadBuffer2D")
    assert ints(ld)[-1] == env.dev.MEM_ID_ACC_8BIT


def test_inject_dma_errors(env):
    (a, ab) = arg_buffer("A", (64, 16), "int32")
    buf = n.Var("A_buf", "handle")
    strided = _copy_nest(buf, ab.data, (64, 16), lambda i, j: j * 64 + i, lambda i, j: i * 16 + j)
    with pytest.raises(ScheduleError, match=r"dma_copy of buffer 'A_buf' at axis 'ax': the on-chip destination must be compact"):
        inject_dma_intrin(env)(func(alloc(buf, "int32", 1024, ACC, strided), (a, ab)))
    local = _copy_nest(buf, ab.data, (64, 16), lambda i, j: i * 16 + j, lambda i, j: i * 16 + j)
    with pytest.raises(ScheduleError, match="destination scope 'local' is not a VTA buffer"):
        inject_dma_intrin(env)(func(alloc(buf, "int32", 1024, "local", local), (a, ab)))


def test_inject_skip_copy(env):
    body = n.AttrStmt(n.Var("ax"), "pragma_skip_dma_copy", n.IntImm(1), n.Evaluate(call_extern("int32", "x")))
    assert sequence(inject_skip_copy()(func(body)).body) == ["Evaluate"]


# ---------------------------------------------------------------------------- ALU
def _alu_stage(value_fn, dst_off=0, n_tiles=8):
    buf = n.Var("acc", "handle")
    i, j = n.Var("i"), n.Var("j")
    dst = i * 16 + j + dst_off
    body = n.AttrStmt(i, "pragma_alu", n.IntImm(1), loop(i, n_tiles, loop(j, 16, n.Store(buf, value_fn(buf, i, j), dst))))
    return buf, alloc(buf, "int32", 4096, ACC, body)


def test_annotate_alu(env):
    buf, body = _alu_stage(lambda b, i, j: n.Load("int32", b, i * 16 + j) + 1)
    out = annotate_alu_coproc_scope(env)(func(body)).body
    assert sequence(out)[:3] == ["coproc_scope=2", "coproc_uop_scope=VTAPushALUOp", "pragma_alu=1"]


@pytest.mark.parametrize("make, opcode, use_imm, imm, src", [
    (lambda b, i, j: n.Load("int32", b, i * 16 + j) + n.Load("int32", b, i * 16 + j + 128), 2, 0, 0, 8),
    (lambda b, i, j: n.Load("int32", b, i * 16 + j) >> 3, 3, 1, 3, 0),
    (lambda b, i, j: n.Load("int32", b, i * 16 + j) << 2, 3, 1, -2, 0),
    (lambda b, i, j: n.Max(n.Load("int32", b, i * 16 + j), n.IntImm(0)), 1, 1, 0, 0),
    (lambda b, i, j: n.Load("int32", b, i * 16 + j), 3, 1, 0, 0),
])
def test_inject_alu(env, make, opcode, use_imm, imm, src):
    _, body = _alu_stage(make)
    out = inject_alu_intrin(env)(func(body)).body
    (begin,) = calls(out, "VTAUopLoopBegin")
    assert ints(begin) == [8, 1, 1, 0]
    (push,) = calls(out, "tir.vta.uop_push")
    assert ints(push) == [1, 0, 0, src, 0, opcode, use_imm, imm]


def test_inject_alu_subtract_tiles(env):
    """a - b: negate b in place (MUL -1) and add a; with a in place, -(-a + b)."""
    _, sub = _alu_stage(lambda b, i, j: n.Load("int32", b, i * 16 + j + 128) - n.Load("int32", b, i * 16 + j))
    out = inject_alu_intrin(env)(annotate_alu_coproc_scope(env)(func(sub))).body
    mul, add = env.dev.ALU_OPCODE_MUL, env.dev.ALU_OPCODE_ADD
    assert [ints(c) for c in calls(out, "tir.vta.uop_push")] == [[1, 0, 0, 0, 0, mul, 1, -1], [1, 0, 0, 8, 0, add, 0, 0]]
    _, sub = _alu_stage(lambda b, i, j: n.Load("int32", b, i * 16 + j) - n.Load("int32", b, i * 16 + j + 128))
    out = inject_alu_intrin(env)(annotate_alu_coproc_scope(env)(func(sub))).body
    assert [ints(c)[5:] for c in calls(out, "tir.vta.uop_push")] == [[mul, 1, -1], [add, 0, 0], [mul, 1, -1]]


def test_inject_alu_constant_fill(env):
    _, const = _alu_stage(lambda b, i, j: n.IntImm(3))
    out = inject_alu_intrin(env)(annotate_alu_coproc_scope(env)(func(const))).body
    assert [ints(c)[5:] for c in calls(out, "tir.vta.uop_push")] == [[env.dev.ALU_OPCODE_MUL, 1, 0], [env.dev.ALU_OPCODE_ADD, 1, 3]]
    _, big = _alu_stage(lambda b, i, j: n.IntImm(1 << 20))
    with pytest.raises(ScheduleError, match="does not fit the signed 16-bit ALU immediate"):
        inject_alu_intrin(env)(annotate_alu_coproc_scope(env)(func(big)))


def test_inject_alu_copies_a_live_input_first(env):
    """acc[dst] = acc[src] >> 1 with src still live: MUL dst by 0, ADD src, then SHR in place."""
    _, moved = _alu_stage(lambda b, i, j: n.Load("int32", b, i * 16 + j + 128) >> 1)
    scoped = annotate_alu_coproc_scope(env)(func(moved))
    out = inject_alu_intrin(env)(scoped).body
    pushes = [ints(c) for c in calls(out, "tir.vta.uop_push")]
    assert pushes == [[1, 0, 0, 0, 0, env.dev.ALU_OPCODE_MUL, 1, 0], [1, 0, 0, 8, 0, env.dev.ALU_OPCODE_ADD, 0, 0],
                      [1, 0, 0, 0, 0, env.dev.ALU_OPCODE_SHR, 1, 1]]
    assert sequence(out).count("coproc_uop_scope=VTAPushALUOp") == 3
    with pytest.raises(ScheduleError, match="single in-place operation"):
        inject_alu_intrin(env)(func(moved))


# ---------------------------------------------------------------------------- uop folding
def _gemm_scope(body):
    return n.AttrStmt(VTA_AXIS, "coproc_uop_scope", n.StringImm("VTAPushGEMMOp"), body)


def test_fold_two_loops_like_blocked_gemm():
    i, j = n.Var("i"), n.Var("j")
    body = _gemm_scope(loop(i, 16, loop(j, 16, uop_push(0, 0, i * 16 + j, j, i * 16, 0, 0, 0))))
    out = fold_uop_loop()(func(body)).body
    assert [ints(c) for c in calls(out, "VTAUopLoopBegin")] == [[16, 16, 0, 16], [16, 1, 1, 0]]
    (push,) = calls(out, "tir.vta.uop_push")
    assert ints(push) == [0, 0, 0, 0, 0, 0, 0, 0]
    assert len(calls(out, "VTAUopLoopEnd")) == 2


def test_fold_hoists_a_kernel_wide_guard():
    i, ko = n.Var("i"), n.Var("ko")
    body = _gemm_scope(loop(i, 4, n.IfThenElse(ko < 2, uop_push(0, 0, i, 0, i, 0, 0, 0))))
    out = fold_uop_loop()(func(body)).body
    assert isinstance(out, n.IfThenElse) and out.condition.a is ko
    assert sequence(out.then_case) == ["coproc_uop_scope=VTAPushGEMMOp", "VTAUopLoopBegin", "uop_push", "VTAUopLoopEnd",
                                       "/coproc_uop_scope"]
    # A guard on the kernel's own host loop stays inside.
    inner = _gemm_scope(loop(i, 4, n.IfThenElse(i < 2, uop_push(0, 0, i * i, 0, 0, 0, 0, 0))))
    assert isinstance(fold_uop_loop()(func(inner)).body, n.AttrStmt)


def test_reset_kernels_never_merge_with_accumulating_ones():
    from vta.tir.transform.lift_attr_scope import lift_attr_scope

    shared = n.StringImm("VTAPushGEMMOp")  # the intrinsic's single value object
    reset = n.AttrStmt(VTA_AXIS, "coproc_uop_scope", shared, uop_push(0, 1, 0, 0, 0, 0, 0, 0))
    update = n.AttrStmt(VTA_AXIS, "coproc_uop_scope", shared, uop_push(0, 0, 0, 0, 0, 0, 0, 0))
    merged = lift_attr_scope(func(n.seq(reset, update)), "coproc_uop_scope").body
    assert sequence(merged).count("coproc_uop_scope=VTAPushGEMMOp") == 1  # the hazard
    kept = lift_attr_scope(separate_reset_kernels()(func(n.seq(reset, update))), "coproc_uop_scope").body
    assert sequence(kept).count("coproc_uop_scope=VTAPushGEMMOp") == 2


def test_fold_stops_on_inconsistent_pushes():
    i = n.Var("i")
    body = _gemm_scope(loop(i, 4, n.seq(uop_push(0, 0, i, 0, 0, 0, 0, 0), uop_push(0, 0, i * 2, 0, 0, 0, 0, 0))))
    out = fold_uop_loop()(func(body)).body
    assert calls(out, "VTAUopLoopBegin") == [] and isinstance(out.body, n.For)


def test_fold_rejects_foreign_calls():
    i = n.Var("i")
    body = _gemm_scope(loop(i, 4, n.seq(uop_push(0, 0, i, 0, 0, 0, 0, 0), n.Evaluate(call_extern("int32", "printf")))))
    with pytest.raises(ScheduleError, match="'printf'"):
        fold_uop_loop()(func(body))


# ---------------------------------------------------------------------------- the rest
def test_lift_alloc_to_scope_begin():
    ko, a, b = n.Var("ko"), n.Var("a", "handle"), n.Var("b", "handle")
    body = loop(ko, 4, n.seq(coproc_scope(VTA_AXIS, 1, n.Evaluate(call_extern("int32", "x"))),
                            alloc(a, "int8", 16, INP, n.Evaluate(call_extern("int32", "y")))))
    out = lift_alloc_to_scope_begin()(func(alloc(b, "int8", 16, WGT, body))).body
    assert isinstance(out, n.Allocate) and out.buffer_var is b
    loop_body = out.body.body
    assert isinstance(loop_body, n.Allocate) and loop_body.buffer_var is a
    assert sequence(loop_body.body) == ["coproc_scope=1", "x", "/coproc_scope", "y"]


def test_cpu_access_rewrite():
    (a, ab) = arg_buffer("A", (4,), "int32")
    i = n.Var("i")
    body = loop(i, 4, n.Store(ab.data, n.Load("int32", ab.data, i) + 1, i))
    out = cpu_access_rewrite()(func(body, (a, ab))).body
    assert isinstance(out, n.LetStmt) and out.var.name == "A_ptr"
    (ptr,) = calls(out, "VTABufferCPUPtr")
    assert ptr.args[2] is ab.data
    assert out.body.body.buffer_var is out.var


def test_inject_coproc_sync_pragmas():
    i = n.Var("i")
    body = n.AttrStmt(i, "pragma_trim_loop", n.IntImm(1), loop(i, 10, coproc_scope(VTA_AXIS, 2, n.Evaluate(call_extern("int32", "g")))))
    out = inject_coproc_sync()(func(body)).body
    assert out.seq[0].extent.value == 2 and sequence(out)[-1] == "coproc_sync"


def test_add_debug():
    out = add_debug(2)(func(n.Evaluate(call_extern("int32", "x")))).body
    assert sequence(out) == ["VTASetDebugMode", "x"] and ints(calls(out, "VTASetDebugMode")[0])[-1] == 2
    with pytest.raises(ValueError, match="debug_flag must be a non-negative int"):
        add_debug(-1)


def _gemm_region(env, guard=None, ci_stride=16):
    """acc[co*16 + ci] += inp[ki] * wgt[co*256 + ci*ci_stride + ki] under the pragma (one tile)."""
    out, inp, wgt = n.Var("C_buf", "handle"), n.Var("A_buf", "handle"), n.Var("B_buf", "handle")
    co, ci, ki = n.Var("co"), n.Var("ci"), n.Var("ki")
    x = n.Cast("int32", n.Load("int8", inp, ki))
    if guard is not None:
        x = n.Call("int32", "tir.if_then_else", (guard(co), x, n.IntImm(0)))
    prod = x * n.Cast("int32", n.Load("int8", wgt, co * 256 + ci * ci_stride + ki))
    upd = n.Store(out, n.Load("int32", out, co * 16 + ci) + prod, co * 16 + ci)
    init = n.Store(out, n.IntImm(0), co * 16 + ci)
    body = n.seq(
        loop(co, 2, n.AttrStmt(n.Var("bi"), "pragma_conv2d_transpose_gemm", n.IntImm(1), loop(ci, 16, init))),
        loop(co, 2, n.AttrStmt(n.Var("bi"), "pragma_conv2d_transpose_gemm", n.IntImm(1), loop(ci, 16, loop(ki, 16, upd)))),
    )
    return alloc(out, "int32", 32, ACC, alloc(inp, "int8", 16, INP, alloc(wgt, "int8", 512, WGT, body))), co


def test_conv2d_transpose_gemm_regions(env):
    body, _ = _gemm_region(env)
    out = inject_conv2d_transpose_skip(env)(func(body)).body
    reset, update = calls(out, "tir.vta.uop_push")
    assert ints(reset)[:2] == [0, 1] and ints(reset)[3:] == [0, 0, 0, 0, 0]
    assert ints(update)[:2] == [0, 0]
    # Tile bases: out co*16, inp 0, wgt co*256 (access pointers on the three buffers).
    assert [a.args[1].name for a in update.args[2:5]] == ["C_buf", "A_buf", "B_buf"]
    assert sequence(out).count("coproc_uop_scope=VTAPushGEMMOp") == 2


def test_conv2d_transpose_guard_skips_uops(env):
    body, co = _gemm_region(env, guard=lambda c: c < 1)
    out = inject_conv2d_transpose_skip(env)(func(body)).body
    assert "if" in sequence(out)
    body, _ = _gemm_region(env, guard=None, ci_stride=32)
    with pytest.raises(ScheduleError, match=r"loop 'ci' .* is not a loop of one GEMM tile"):
        inject_conv2d_transpose_skip(env)(func(body))


def test_inject_dma_padding_depending_on_outer_loop(env):
    """A 3-row window sliding over 2 positions of a 4-row input with one row of zero padding on top."""
    (x, xb) = arg_buffer("x", (4, 2, 1, 16), "int32")
    buf = n.Var("x_buf", "handle")
    yo, i0, i1, i3 = n.Var("yo"), n.Var("i0"), n.Var("i1"), n.Var("i3")
    row = yo * 2 + i0 - 1  # input row read by window row i0
    val = n.Call("int32", "tir.if_then_else", (row >= 0, n.Load("int32", xb.data, row * 32 + i1 * 16 + i3), n.IntImm(0)))
    nest = loop(i0, 3, loop(i1, 2, loop(i3, 16, n.Store(buf, val, i0 * 32 + i1 * 16 + i3))))
    body = loop(yo, 2, alloc(buf, "int32", 96, ACC, n.AttrStmt(i0, "pragma_dma_copy", n.IntImm(1), nest)))
    (ld,) = calls(inject_dma_intrin(env)(func(body, (x, xb))).body, "VTALoadBuffer2D")
    from vta.tir.functor import substitute
    from vta.tir.simplify import simplify

    args = ld.args[3:11]  # offset, x, y, stride, x pads, y pads
    for pos, (offset, y_size, y_pad_before) in enumerate([(0, 2, 1), (2, 3, 0)]):
        got = [simplify(substitute(a, {yo: pos})).value for a in args]
        assert got == [offset, 2, y_size, 2, 0, y_pad_before, 0, 0]


def test_inject_alu_subtract_constant(env):
    _, body = _alu_stage(lambda b, i, j: n.Sub(n.Load("int32", b, i * 16 + j), n.IntImm(5)))
    (push,) = calls(inject_alu_intrin(env)(func(body)).body, "tir.vta.uop_push")
    assert ints(push) == [1, 0, 0, 0, 0, env.dev.ALU_OPCODE_ADD, 1, -5]


def test_inject_alu_three_loops(env):
    """Three loops that cannot merge: two hardware loops, the outer one a host loop of uops."""
    buf = n.Var("acc", "handle")
    a, b, c, j = n.Var("a"), n.Var("b"), n.Var("c"), n.Var("j")
    idx = a * 1024 + b * 128 + c * 16 + j        # (2, 3, 4) tiles with gaps between rows and planes
    nest = loop(a, 2, loop(b, 3, loop(c, 4, loop(j, 16, n.Store(buf, n.Load("int32", buf, idx) >> 1, idx)))))
    body = alloc(buf, "int32", 4096, ACC, n.AttrStmt(a, "pragma_alu", n.IntImm(1), nest))
    out = inject_alu_intrin(env)(annotate_alu_coproc_scope(env)(func(body))).body
    assert [ints(c_) for c_ in calls(out, "VTAUopLoopBegin")] == [[3, 8, 8, 0], [4, 1, 1, 0]]
    host = [s for s in sequence(out) if s.startswith("for ")]
    assert host == ["for alu_h0"]
    (push,) = calls(out, "tir.vta.uop_push")
    assert ints(push)[5:] == [env.dev.ALU_OPCODE_SHR, 1, 1]
