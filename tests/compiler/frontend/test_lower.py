"""schedule_to_primfunc on the tutorial and unit-test schedules: structure, text and execution.

Every lowered function is run by the test interpreter (``interp.py``) and compared with NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

from vta.te.lower import schedule_to_buffer_func, schedule_to_primfunc
from vta.tir import nodes as n
from vta.tir.functor import post_order_visit
from vta.tir.printer import astext

from .. import workloads as W
from .interp import Interpreter, run_primfunc


# ------------------------------------------------------------------------------ helpers
def collect(node, cls):
    out = []
    post_order_visit(node, lambda x: out.append(x) if isinstance(x, cls) else None)
    return out


def attrs(func, key):
    return [a for a in collect(func.body, n.AttrStmt) if a.attr_key == key]


def uop_pushes(func):
    return [c for c in collect(func.body, n.Call) if c.op == "tir.vta.uop_push"]


def allocs(func):
    return {a.buffer_var.name: a for a in collect(func.body, n.Allocate)}


def evaluate(expr, **values):
    """Value of an index expression with loop variables given by name."""
    env = {}
    post_order_visit(expr, lambda x: env.__setitem__(x, values[x.name]) if isinstance(x, n.Var) else None)
    return Interpreter({}).eval(expr, env)


def lower_and_check(wl, env):
    func = schedule_to_primfunc(wl.schedule, wl.args, wl.name)
    arrays = wl.arrays()
    run_primfunc(func, arrays, tile=(env.BATCH, env.BLOCK_IN, env.BLOCK_OUT))
    np.testing.assert_array_equal(arrays[-1], wl.expected())
    # Invariants of every lowered function: no extent-1 loop, no TE/Buffer nodes left.
    fors = collect(func.body, n.For)
    assert all(int(f.extent) > 1 for f in fors)
    assert len({id(f.loop_var) for f in fors}) == len(fors)  # every loop binds its own variable
    assert not collect(func.body, (n.BufferLoad, n.BufferStore, n.BufferRealize, n.ProducerLoad,
                                   n.ProducerStore, n.ProducerRealize))
    return func


# ------------------------------------------------------------------------------ section 3
def test_vadd(env):
    func = lower_and_check(W.vadd(env), env)
    assert [p.name for p in func.params] == ["A", "B", "C"]
    assert func.attrs["global_symbol"] == "vadd"
    al = allocs(func)
    assert sorted(al) == ["A_buf", "B_buf", "C_buf"]
    for a in al.values():
        assert a.scope == env.acc_scope and a.dtype == "int32" and int(a.extents[0]) == 64 * 16
    dma, alu = attrs(func, "pragma_dma_copy"), attrs(func, "pragma_alu")
    assert len(dma) == 3 and len(alu) == 1
    # The pragma'd axis 0 has extent 1 (no loop): the attribute sits directly on the i1 loop.
    for a in dma + alu:
        assert isinstance(a.body, n.For) and int(a.body.extent) == 64
    text = astext(func)
    assert 'attr [i0] "pragma_alu" = 1' in text.replace("i0_1", "i0").replace("i0_2", "i0")
    assert "allocate(A_buf, int32, [1024]), storage_scope = local.acc_buffer" in text


def test_matrix_multiply(env):
    func = lower_and_check(W.matrix_multiply(env), env)
    al = allocs(func)
    assert (al["A_buf"].scope, int(al["A_buf"].extents[0])) == (env.inp_scope, 16)
    assert (al["B_buf"].scope, int(al["B_buf"].extents[0])) == (env.wgt_scope, 16 * 256)
    assert (al["C_buf"].scope, int(al["C_buf"].extents[0])) == (env.acc_scope, 16 * 16)
    reset, update = uop_pushes(func)
    assert int(reset.args[1]) == 1 and int(update.args[1]) == 0
    # Reset outside the ko loop, update inside it.
    ko_loops = [f for f in collect(func.body, n.For) if f.loop_var.name == "ko"]
    assert len(ko_loops) == 1 and int(ko_loops[0].extent) == 16
    inside = uop_pushes(n.PrimFunc((), ko_loops[0]))
    assert inside == [update]
    # Access pointers: element offsets of tile co (acc), tile 0 (inp) and tile co (wgt).
    out, inp, wgt = update.args[2:5]
    assert [int(x) for x in (out.args[3], out.args[4], inp.args[3], inp.args[4], wgt.args[3], wgt.args[4])] == \
        [16, 3, 16, 1, 256, 1]
    assert evaluate(out.args[2], co=5) == 5 * 16
    assert evaluate(inp.args[2]) == 0
    assert evaluate(wgt.args[2], co=5) == 5 * 256
    assert out.args[1].name == "C_buf" and inp.args[1].name == "A_buf" and wgt.args[1].name == "B_buf"
    uop_scopes = attrs(func, "coproc_uop_scope")
    assert len(uop_scopes) == 2 and uop_scopes[0].value is uop_scopes[1].value
    assert all(int(a.value) == 2 for a in attrs(func, "coproc_scope"))


def test_blocked_gemm_structure(env):
    wl = W.blocked_gemm(env)
    func = schedule_to_primfunc(wl.schedule, wl.args, wl.name)
    loops = {f.loop_var.name: int(f.extent) for f in collect(func.body, n.For)}
    assert loops["i1.outer"] == 4 and loops["ko.outer"] == 4 and loops["ko.inner"] == 16 and loops["i1.inner"] == 16
    al = allocs(func)
    assert int(al["A_buf"].extents[0]) == 256 and int(al["B_buf"].extents[0]) == 256 * 256
    for name in ("C_buf", "res_shf", "res_max", "res_min"):
        assert al[name].scope == env.acc_scope and int(al[name].extents[0]) == 256
    assert len(attrs(func, "pragma_alu")) == 3
    store = [a for a in attrs(func, "pragma_dma_copy") if a.node.var.name == "i2"]
    assert len(store) == 1 and int(store[0].body.extent) == 16  # one tile per store, in the i1.inner loop
    reset, update = uop_pushes(func)
    wgt = update.args[4]
    assert evaluate(wgt.args[2], co=2, **{"ko.inner": 3}) == (2 * 16 + 3) * 256
    # The weight load reads block (oc_out, ic_out): element offset oc_out*1024*256 + ic_out*16*256.
    b_store = [s for s in collect(func.body, n.Store) if s.buffer_var.name == "B_buf"][0]
    src = b_store.value.index
    assert (
        evaluate(src, **{"i1.outer": 1, "ko.outer": 2, "i0": 0, "i1": 0, "i2": 0, "i3": 0}) == 1024 * 256 + 2 * 16 * 256
    )


def test_blocked_gemm_runs(env):
    lower_and_check(W.blocked_gemm(env, batch=1, in_channels=256, out_channels=256, block=64), env)


# ------------------------------------------------------------------------------ section 7.2
def test_save_load_out(env):
    func = lower_and_check(W.save_load_out(env), env)
    alu = attrs(func, "pragma_alu")[0]
    store = collect(alu, n.Store)[0]
    assert isinstance(store.value, n.Load) and store.value.buffer_var.name == "x_buf"  # >> 0 folded


@pytest.mark.parametrize("before, after", [
    ([2, 0, 0, 0], [0, 0, 0, 0]), ([0, 2, 0, 0], [0, 0, 0, 0]), ([0, 0, 0, 0], [2, 0, 0, 0]),
    ([0, 0, 0, 0], [0, 2, 0, 0]), ([1, 1, 0, 0], [1, 1, 0, 0]),
])
def test_padded_load(env, before, after):
    func = lower_and_check(W.padded_load(env, before=before, after=after), env)
    dma = attrs(func, "pragma_dma_copy")[0]
    store = collect(dma, n.Store)[0]
    assert store.buffer_var.name == "x_buf"
    assert isinstance(store.value, n.Call) and store.value.op == "tir.if_then_else"
    rows, cols = 3 + before[0] + after[0], 5 + before[1] + after[1]
    assert int(allocs(func)["x_buf"].extents[0]) == rows * cols * 16


def test_gemm_default(env):
    func = lower_and_check(W.gemm(env), env)
    reset, update = uop_pushes(func)
    # ko has extent 1: no loop; reset and update each sit in a 4 x 4 (bo, co) nest.
    assert "ko" not in {f.loop_var.name for f in collect(func.body, n.For)}
    for call in (reset, update):
        nest = [f for f in collect(func.body, n.For) if call in uop_pushes(n.PrimFunc((), f))]
        assert sorted(int(f.extent) for f in nest) == [4, 4]
    al = allocs(func)
    assert int(al["x_buf"].extents[0]) == 64 and int(al["w_buf"].extents[0]) == 1024
    assert len(attrs(func, "pragma_alu")) == 3


def test_gemm_cthread(env):
    func = lower_and_check(W.gemm(env, smt=True), env)
    vt = attrs(func, "virtual_thread")
    assert len(vt) == 1 and int(vt[0].value) == 2 and vt[0].node.thread_tag == "cthread"
    assert func.body is vt[0]  # the thread scope is outermost, around the allocations
    al = allocs(func)
    assert int(al["y_gem"].extents[0]) == 2 * 4 * 16  # two batch rows per thread
    assert int(al["x_buf"].extents[0]) == 2 * 16
    store = [a for a in attrs(func, "pragma_dma_copy") if a.node.var.name == "i0.inner"]
    assert len(store) == 1 and isinstance(store[0].body, n.For) and int(store[0].body.extent) == 2


@pytest.mark.parametrize("case", sorted(op for op, spec in W.ALU_OPS.items() if spec.upstream))
def test_alu(env, case):
    func = lower_and_check(W.alu(env, op=case, imm=3), env)
    store = collect(attrs(func, "pragma_alu")[0], n.Store)[0]
    v = store.value
    kind = {"shl_imm": "tir.shift_left", "shr_imm": "tir.shift_right"}
    if case in kind:
        assert isinstance(v, n.Call) and v.op == kind[case] and int(v.args[1]) == 3
    elif case.startswith("max"):
        assert isinstance(v, n.Max)
    else:
        assert isinstance(v, n.Add)
    if case.endswith("_imm") and case not in kind:
        assert isinstance(v.b, n.IntImm) and v.b.value == 3
    assert len(attrs(func, "pragma_dma_copy")) == (3 if case in ("add", "max") else 2)


def test_relu(env):
    func = lower_and_check(W.relu(env), env)
    assert len(attrs(func, "pragma_alu")) == 2


def test_shift_and_scale(env):
    func = lower_and_check(W.shift_and_scale(env, imm_shift=3, imm_scale=2), env)
    assert len(attrs(func, "pragma_alu")) == 2


def test_shift_and_scale_zero_shift_is_a_copy(env):
    func = lower_and_check(W.shift_and_scale(env, imm_shift=0, imm_scale=2), env)
    first = collect(attrs(func, "pragma_alu")[0], n.Store)[0]
    assert isinstance(first.value, n.Load)  # a + 0 folded: the stage is a copy


# ------------------------------------------------------------------------------ other configurations
def test_matrix_multiply_any_config(any_env):
    env = any_env
    func = lower_and_check(W.matrix_multiply(env, m=2, n_=2), env)
    reset, update = uop_pushes(func)
    out, inp, wgt = update.args[2:5]
    assert int(out.args[3]) == env.BATCH * env.BLOCK_OUT
    assert int(inp.args[3]) == env.BATCH * env.BLOCK_IN
    assert int(wgt.args[3]) == env.BLOCK_OUT * env.BLOCK_IN


# ------------------------------------------------------------------------------ text and forms
def test_text_is_stable(env):
    texts = []
    for _ in range(2):
        wl = W.matrix_multiply(env)
        texts.append(astext(schedule_to_primfunc(wl.schedule, wl.args, "f")))
    a, b = texts
    assert a == b
    assert a.startswith("primfn f(A: handle, B: handle, C: handle) {")
    assert 'attr [vta] "coproc_uop_scope" = "VTAPushGEMMOp"' in a
    assert "vta.uop_push(0, 1, tvm_access_ptr(type_annotation(int32), C_buf, co*16, 16, 3), 0, 0, 0, 0, 0)" in a


def test_buffer_form_before_flatten(env):
    wl = W.matrix_multiply(env)
    func = schedule_to_buffer_func(wl.schedule, wl.args, "f")
    realizes = {r.buffer.name: r for r in collect(func.body, n.BufferRealize)}
    assert realizes["A_buf"].buffer.scope == env.inp_scope
    assert [int(r.extent) for r in realizes["B_buf"].bounds] == [16, 1, 16, 16]
    assert len(attrs(func, "buffer_bind_scope")) == 1 + 3  # reset binds the output, update all three


def test_mock_gemm_lowers_to_nothing(env):
    wl = W.matrix_multiply(env)
    stage = wl.schedule[wl.args[2]].op.input_tensors[0]
    s = wl.schedule
    bo, co, bi, ci = s[stage].op.axis
    s[stage].iter_var_attrs[bi].tensor_intrin = env.mock.gemm
    func = schedule_to_primfunc(s, wl.args, "f")
    assert not uop_pushes(func)


# ------------------------------------------------------------------------------ convolution tutorial
def test_conv2d_structure(env):
    wl = W.conv2d(env)
    func = schedule_to_primfunc(wl.schedule, wl.args, wl.name)
    vt = attrs(func, "virtual_thread")
    assert len(vt) == 1 and int(vt[0].value) == 2
    al = allocs(func)
    assert (al["data_buf"].scope, int(al["data_buf"].extents[0])) == (env.inp_scope, 9 * 16 * 16)  # 9 rows x 16 cols
    assert (al["kernel_buf"].scope, int(al["kernel_buf"].extents[0])) == (env.wgt_scope, 8 * 9 * 256)
    assert int(al["res_conv"].extents[0]) == 8 * 7 * 14 * 16
    reset, update = uop_pushes(func)
    # The update nest: co(8) > i(7) > dy(3) > dx(3) > j(14); the DMA'd input is padded by if_then_else.
    nest = [f for f in collect(func.body, n.For) if update in uop_pushes(n.PrimFunc((), f))]
    assert sorted((f.loop_var.name, int(f.extent)) for f in nest) == sorted(
        [("i2.outer", 2), ("ic.outer", 16), ("co", 8), ("i", 7), ("dy", 3), ("dx", 3), ("j", 14)])
    out, inp, wgt = update.args[2:5]
    point = dict(co=1, i=2, dy=1, dx=2, j=3)
    assert evaluate(out.args[2], **point) // 16 == 1 * 98 + 2 * 14 + 3
    assert evaluate(inp.args[2], **point) // 16 == (2 + 1) * 16 + (3 + 2)
    assert evaluate(wgt.args[2], **point) // 256 == 1 * 9 + 1 * 3 + 2
    load = collect(attrs(func, "pragma_dma_copy")[0], n.Store)[0]
    assert load.buffer_var.name == "data_buf" and load.value.op == "tir.if_then_else"


def test_conv2d_runs(env):
    lower_and_check(W.conv2d(env, height=4, width=4, in_channels=32, out_channels=64, oc_block=32, h_block=2,
                             w_block=4), env)


@pytest.mark.parametrize("make", [
    lambda env: W.gemm(env, smt=True),
    lambda env: W.blocked_gemm(env, batch=2 * env.BATCH, in_channels=4 * env.BLOCK_IN, out_channels=4 * env.BLOCK_OUT,
                               block=2 * env.BLOCK_IN),
    lambda env: W.conv2d(env, height=4, width=4, in_channels=2 * env.BLOCK_IN, out_channels=4 * env.BLOCK_OUT,
                         oc_block=2 * env.BLOCK_OUT, h_block=2, w_block=4),
    lambda env: W.padded_load(env, before=[1, 1, 0, 0], after=[1, 1, 0, 0]),
    lambda env: W.alu(env, op="add"),
], ids=["gemm_smt", "blocked_gemm", "conv2d", "padded_load", "alu_add"])
def test_workloads_on_every_config(any_env, make):
    lower_and_check(make(any_env), any_env)
