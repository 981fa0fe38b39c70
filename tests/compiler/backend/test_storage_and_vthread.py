"""StorageRewrite (SRAM allocation) and InjectVirtualThread on hand-built TIR."""

from __future__ import annotations

import pytest

from vta.errors import ScheduleError
from vta.tir import nodes as n
from vta.tir.functor import post_order_visit
from vta.tir.simplify import simplify
from vta.tir.transform.inject_virtual_thread import inject_virtual_thread
from vta.tir.transform.lower_device_storage_access_info import MemoryInfo
from vta.tir.transform.storage_rewrite import storage_rewrite
from vta.transform._util import VTA_AXIS, call_extern, coproc_scope

from .helpers import alloc, calls, func, loop, sequence

ACC = "local.acc_buffer"
INFO = {ACC: MemoryInfo(512, 512, 2048 * 512)}


def _ptr(var, off=0, mask=2):
    return n.Call(
        "handle",
        "tir.tvm_access_ptr",
        (n.Call("int32", "tir.type_annotation"), var, n.IntImm(off), n.IntImm(1024), n.IntImm(mask)),
    )


def _vadd_flat():
    """Three acc buffers: two DMA-loaded, C = A + B, C stored (the vadd of section 3.1)."""
    a, b, c = (n.Var(x, "handle") for x in ("A_buf", "B_buf", "C_buf"))
    i = n.Var("i")
    compute = loop(i, 1024, n.Store(c, n.Load("int32", a, i) + n.Load("int32", b, i), i))
    body = n.seq(
        n.Evaluate(call_extern("int32", "load", _ptr(a))),
        n.Evaluate(call_extern("int32", "load", _ptr(b))),
        compute,
        n.Evaluate(call_extern("int32", "store", _ptr(c, mask=1))),
    )
    return alloc(a, "int32", 1024, ACC, alloc(b, "int32", 1024, ACC, alloc(c, "int32", 1024, ACC, body))), (a, b, c)


def _allocs(stmt):
    out = []
    post_order_visit(stmt, lambda x: out.append(x) if isinstance(x, n.Allocate) else None)
    return out


def test_in_place_and_merge():
    body, (a, b, c) = _vadd_flat()
    out = storage_rewrite(func(body), INFO).body
    allocs = _allocs(out)
    assert len(allocs) == 1 and allocs[0].buffer_var is a and allocs[0].extents[0].value == 2048
    # C takes A's storage (in place), B lands one 1024-element block further.
    store = []
    post_order_visit(out, lambda x: store.append(x) if isinstance(x, n.Store) else None)
    assert store[0].buffer_var is a
    ptrs = calls(out, "tir.tvm_access_ptr")
    assert [p.args[1] for p in ptrs] == [a, a, a]
    assert [simplify(p.args[2]).value for p in ptrs] == [0, 1024, 0]  # A, B, C (= A)


def test_reuse_after_death():
    a, b = n.Var("a", "handle"), n.Var("b", "handle")
    body = alloc(a, "int32", 256, ACC, alloc(b, "int32", 256, ACC, n.seq(
        n.Evaluate(call_extern("int32", "use", _ptr(a))),
        n.Evaluate(call_extern("int32", "use", _ptr(b))))))
    out = storage_rewrite(func(body), INFO).body
    allocs = _allocs(out)
    # a is dead when b is born: one 256-element block serves both.
    assert len(allocs) == 1 and allocs[0].extents[0].value == 256


def test_capacity_checked():
    a, b = n.Var("a", "handle"), n.Var("b", "handle")
    big = {ACC: MemoryInfo(512, 512, 1024 * 32)}
    body = alloc(
        a, "int32", 1024, ACC, alloc(b, "int32", 16, ACC, n.Evaluate(call_extern("int32", "use", _ptr(a), _ptr(b))))
    )
    with pytest.raises(ScheduleError, match=r"need 4160 bytes of 'local.acc_buffer' but it holds 4096 bytes"):
        storage_rewrite(func(body), big)


def test_virtual_thread_replicates_buffers_and_scopes():
    t = n.Var("cthread")
    buf = n.Var("acc", "handle")
    body = n.AttrStmt(t, "virtual_thread", n.IntImm(2), alloc(buf, "int32", 64, ACC, n.seq(
        coproc_scope(VTA_AXIS, 1, n.Evaluate(call_extern("int32", "load", _ptr(buf), t))),
        coproc_scope(VTA_AXIS, 2, n.Evaluate(call_extern("int32", "gemm", _ptr(buf)))))))
    out = inject_virtual_thread(func(body)).body
    (a,) = _allocs(out)
    assert [e.value for e in a.extents] == [2, 64]
    assert sequence(out) == ["coproc_scope=1", "load", "/coproc_scope", "coproc_scope=1", "load", "/coproc_scope",
                             "coproc_scope=2", "gemm", "/coproc_scope", "coproc_scope=2", "gemm", "/coproc_scope"]
    loads = calls(out, "load")
    assert [c.args[2].value for c in loads] == [0, 1]  # the thread index, unrolled
    # Thread k sees its copy at k * 64 elements.
    offs = []
    for c in loads:
        offs.append(simplify(c.args[1].args[2]).value)
    assert offs == [0, 64]


def test_virtual_thread_with_loop_becomes_thread_loop():
    t, i = n.Var("cthread"), n.Var("i")
    body = n.AttrStmt(t, "virtual_thread", n.IntImm(2),
                      coproc_scope(VTA_AXIS, 2, loop(i, 3, n.Evaluate(call_extern("int32", "f", t, i)))))
    out = inject_virtual_thread(func(body)).body
    assert isinstance(out, n.For) and out.loop_var.name == "cthread.s" and out.extent.value == 2
