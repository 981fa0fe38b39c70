"""Generic TIR passes on small hand-built inputs: LiftAttrScope, RemoveNoOp, UnrollLoop, CoProcSync,
LowerDeviceStorageAccessInfo."""

from __future__ import annotations

import pytest

from vta.errors import ScheduleError
from vta.tir import nodes as n
from vta.tir.transform.coproc_sync import coproc_sync
from vta.tir.transform.lift_attr_scope import lift_attr_scope
from vta.tir.transform.lower_device_storage_access_info import MemoryInfo, lower_device_storage_access_info
from vta.tir.transform.remove_no_op import remove_no_op
from vta.tir.transform.unroll_loop import unroll_loop
from vta.transform._util import VTA_AXIS, call_extern, coproc_scope, uop_push

from .helpers import alloc, calls, func, ints, loop, sequence


def _ev(name, *args):
    return n.Evaluate(call_extern("int32", name, *args))


def test_lift_uop_scope_above_loop():
    co = n.Var("co")
    push = n.StringImm("VTAPushGEMMOp")
    body = loop(
        co,
        16,
        coproc_scope(VTA_AXIS, 2, n.AttrStmt(VTA_AXIS, "coproc_uop_scope", push, uop_push(0, 0, co, 0, 0, 0, 0, 0))),
    )
    out = lift_attr_scope(func(body), "coproc_uop_scope").body
    assert isinstance(out, n.AttrStmt) and out.attr_key == "coproc_uop_scope" and out.value is push
    assert sequence(out)[:4] == ["coproc_uop_scope=VTAPushGEMMOp", "for co", "coproc_scope=2", "uop_push"]


def test_lift_groups_equal_neighbours_by_value_for_ints_identity_for_strings():
    s1, s2, s3 = (coproc_scope(VTA_AXIS, q, _ev(f"f{i}")) for i, q in enumerate((2, 2, 3)))
    out = lift_attr_scope(func(n.seq(s1, s2, s3)), "coproc_scope").body
    assert sequence(out) == ["coproc_scope=2", "f0", "f1", "/coproc_scope", "coproc_scope=3", "f2", "/coproc_scope"]
    a = n.AttrStmt(VTA_AXIS, "coproc_uop_scope", n.StringImm("VTAPushALUOp"), _ev("g0"))
    b = n.AttrStmt(VTA_AXIS, "coproc_uop_scope", n.StringImm("VTAPushALUOp"), _ev("g1"))
    out = lift_attr_scope(func(n.seq(a, b)), "coproc_uop_scope").body
    assert sequence(out).count("coproc_uop_scope=VTAPushALUOp") == 2  # fresh strings never merge


def test_lift_stops_at_allocate():
    buf = n.Var("buf", "handle")
    body = alloc(buf, "int32", 16, "local.acc_buffer", coproc_scope(VTA_AXIS, 2, _ev("f")))
    out = lift_attr_scope(func(body), "coproc_scope").body
    assert isinstance(out, n.Allocate) and isinstance(out.body, n.AttrStmt)


def test_remove_no_op():
    i = n.Var("i")
    body = n.seq(n.Evaluate(n.IntImm(0)), loop(i, 4, n.Evaluate(n.IntImm(0))),
                 coproc_scope(VTA_AXIS, 2, n.Evaluate(n.IntImm(0))), _ev("keep"))
    assert sequence(remove_no_op(func(body)).body) == ["keep"]


def test_unroll_only_marked_loops():
    i, j = n.Var("i"), n.Var("j")
    body = n.seq(n.For(i, n.IntImm(0), n.IntImm(3), n.ForKind.UNROLLED, _ev("f", i)), loop(j, 2, _ev("g", j)))
    out = unroll_loop(func(body)).body
    assert [ints(c)[0] for c in calls(out, "f")] == [0, 1, 2]
    assert sequence(out)[-3:] == ["for j", "g", "/for"]


def test_coproc_sync_straight_line():
    body = n.seq(coproc_scope(VTA_AXIS, 2, _ev("compute")), coproc_scope(VTA_AXIS, 3, _ev("store")))
    out = coproc_sync(func(body)).body
    assert sequence(out) == ["coproc_scope=2", "compute", "coproc_dep_push(2,3)", "/coproc_scope",
                             "coproc_scope=3", "coproc_dep_pop(2,3)", "store", "/coproc_scope", "coproc_sync"]


def test_coproc_sync_loop_carried_and_epilogue():
    ko = n.Var("ko")
    body = n.seq(coproc_scope(VTA_AXIS, 2, _ev("reset")),
                 loop(ko, 4, n.seq(coproc_scope(VTA_AXIS, 1, _ev("load")), coproc_scope(VTA_AXIS, 2, _ev("gemm")))),
                 coproc_scope(VTA_AXIS, 3, _ev("store")))
    got = sequence(coproc_sync(func(body)).body)
    # Section 3.2 structure: reset pushes to load; each iteration pops/pushes both ways; the
    # loop-carried compute->load token is drained after the loop.
    assert got == [
        "coproc_scope=2", "reset", "coproc_dep_push(2,1)", "/coproc_scope",
        "for ko",
        "coproc_scope=1", "coproc_dep_pop(2,1)", "load", "coproc_dep_push(1,2)", "/coproc_scope",
        "coproc_scope=2", "coproc_dep_pop(1,2)", "gemm", "coproc_dep_push(2,1)", "/coproc_scope",
        "/for",
        "coproc_dep_push(2,3)", "coproc_dep_pop(2,1)",
        "coproc_scope=3", "coproc_dep_pop(2,3)", "store", "/coproc_scope",
        "coproc_sync",
    ]
    # Token balance: every push has a matching pop (per direction), counting loop iterations.
    pushes, pops = {}, {}
    for c in calls(coproc_sync(func(body)).body):
        key = tuple(a.value for a in c.args) if c.op.startswith("tir.vta.coproc_dep") else None
        if key:
            (pushes if c.op.endswith("push") else pops).setdefault(key, 0)
            (pushes if c.op.endswith("push") else pops)[key] += 1
    assert pushes == pops


def test_coproc_sync_rejects_interleaved_cpu_and_vta_access_in_a_loop():
    buf = n.Var("buf", "handle")
    i = n.Var("i")
    ptr = n.Call(
        "handle",
        "tir.tvm_access_ptr",
        (n.Call("int32", "tir.type_annotation"), buf, n.IntImm(0), n.IntImm(16), n.IntImm(2)),
    )
    body = alloc(buf, "int32", 16, "local.acc_buffer", loop(i, 4, n.seq(
        coproc_scope(VTA_AXIS, 2, n.Evaluate(call_extern("int32", "write", ptr))),
        n.Store(n.Var("out", "handle"), n.Load("int32", buf, i), i))))
    with pytest.raises(ScheduleError, match=r"\['buf'\] are written on one side .* inside one loop nest"):
        coproc_sync(func(body))


def test_coproc_sync_without_scopes_is_identity():
    f = func(_ev("cpu_only"))
    assert coproc_sync(f) is f


def test_lower_device_storage_access_info():
    buf, inp = n.Var("acc", "handle"), n.Var("inp", "handle")
    ko = n.Var("ko")

    def ptr(v, off):
        return n.Call(
            "handle", "tir.tvm_access_ptr", (n.Call("int32", "tir.type_annotation"), v, off, n.IntImm(16), n.IntImm(3))
        )

    body = alloc(buf, "int32", 64, "local.acc_buffer", alloc(inp, "int8", 64, "local.inp_buffer",
                 n.Evaluate(call_extern("int32", "use", ptr(buf, n.IntImm(32)), ptr(inp, ko * 16 + 32)))))
    info = {"local.acc_buffer": MemoryInfo(512, 512, 1 << 20), "local.inp_buffer": MemoryInfo(128, 128, 1 << 18)}
    out = lower_device_storage_access_info(func(body), info).body
    assert isinstance(out, n.Evaluate)  # both allocations removed
    a, b = out.value.args[1:]
    assert a.value == 2  # 32 int32 / 16 per tile
    assert isinstance(b, n.Add) and b.a is ko and b.b.value == 2  # (ko*16 + 32) / 16
    bad = alloc(buf, "int32", 64, "local.acc_buffer", n.Evaluate(call_extern("int32", "use", ptr(buf, n.IntImm(8)))))
    with pytest.raises(ScheduleError, match="not provably a multiple of the 16-element tile"):
        lower_device_storage_access_info(func(bad), info)


def test_coproc_sync_before_cpu_code_that_reads_vta_results():
    a, c, d = n.Var("A", "handle"), n.Var("C", "handle"), n.Var("D", "handle")
    i = n.Var("i")
    load = coproc_scope(
        VTA_AXIS, 2, n.Evaluate(call_extern("int32", "VTALoadBuffer2D", n.IntImm(0), a, 0, 1, 1, 1, 0, 0, 0, 0, 0, 3))
    )
    store = coproc_scope(
        VTA_AXIS, 3, n.Evaluate(call_extern("int32", "VTAStoreBuffer2D", n.IntImm(0), 0, 4, c, 0, 1, 1, 1))
    )
    # CPU code writing an input before the DMA that reads it needs nothing (VTA runs at the sync) ...
    prepare = loop(i, 4, n.Store(a, n.IntImm(1), i))
    got = sequence(coproc_sync(func(n.seq(prepare, load, store))).body)
    assert got.count("coproc_sync") == 1 and got[-1] == "coproc_sync"
    # ... but reading the output the accelerator writes needs a sync first (and none at the end).
    post = loop(i, 4, n.Store(d, n.Load("int8", c, i), i))
    got = sequence(coproc_sync(func(n.seq(load, store, post))).body)
    assert got[-4:] == ["coproc_sync", "for i", "Store", "/for"] and got.count("coproc_sync") == 1


def test_coproc_sync_after_epilogue_of_a_top_level_loop():
    ko = n.Var("ko")
    body = loop(ko, 4, n.seq(coproc_scope(VTA_AXIS, 1, _ev("load")), coproc_scope(VTA_AXIS, 2, _ev("gemm"))))
    got = sequence(coproc_sync(func(body)).body)
    # Prologue push for the loop-carried 2->1 token, epilogue pop after the loop, then the sync.
    assert got[0] == "coproc_dep_push(2,1)"
    assert got[-2:] == ["coproc_dep_pop(2,1)", "coproc_sync"]


def test_pragma_coproc_sync_appends_a_sync():
    body = n.AttrStmt(n.Var("ax"), "pragma_coproc_sync", n.IntImm(1), coproc_scope(VTA_AXIS, 2, _ev("g")))
    from vta.transform.sync import inject_coproc_sync

    got = sequence(inject_coproc_sync()(func(body)).body)
    assert got == ["coproc_scope=2", "g", "/coproc_scope", "coproc_sync", "coproc_sync"]
