"""The tensor-expression API and generic schedule primitives, run through the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from vta import te
from vta.te.lower import schedule_to_primfunc
from vta.tir import nodes as n
from vta.tir.functor import post_order_visit
from vta.tir.printer import astext

from .interp import run_primfunc


def run(s, args, inputs):
    func = schedule_to_primfunc(s, args, "f")
    arrays = [np.ascontiguousarray(a) for a in inputs]
    arrays.append(np.zeros(tuple(int(d) for d in args[-1].shape), dtype=args[-1].dtype))
    run_primfunc(func, arrays)
    return func, arrays[-1]


def loops(func):
    out = {}
    post_order_visit(func.body, lambda x: out.__setitem__(x.loop_var.name, int(x.extent)) if isinstance(x, n.For) else None)
    return out


RNG = np.random.default_rng(5)


def test_compute_axis_names_and_arity():
    A = te.placeholder((3, 4), name="A", dtype="int32")
    B = te.compute((3, 4), lambda i, j: A[i, j] + 1, name="B")
    assert [iv.var.name for iv in B.op.axis] == ["i", "j"]
    C = te.compute((3, 4), lambda *i: A(*i), name="C")
    assert [iv.var.name for iv in C.op.axis] == ["i0", "i1"]
    with pytest.raises(ValueError, match=r"fcompute takes 1 arguments \['i'\] but the shape has 2"):
        te.compute((3, 4), lambda i: A[i, 0])
    with pytest.raises(ValueError, match="indexed with 1"):
        A[0]
    with pytest.raises(ValueError, match="must be reduce_axis"):
        te.sum(A[0, 0], axis=[B.op.axis[0]])
    assert B.op.input_tensors == [A]


@pytest.mark.parametrize("combiner, fn", [("sum", np.sum), ("max", np.max), ("min", np.min)])
def test_reductions_with_split_reduce_axis(combiner, fn):
    A = te.placeholder((4, 12), name="A", dtype="int32")
    k = te.reduce_axis((0, 12), name="k")
    red = getattr(te, combiner)
    B = te.compute((4,), lambda i: red(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=4)
    s[B].reorder(ko, s[B].op.axis[0], ki)
    a = RNG.integers(-50, 50, (4, 12)).astype("int32")
    func, out = run(s, [A, B], [a])
    np.testing.assert_array_equal(out, fn(a, axis=1))
    assert loops(func) == {"i": 4, "k.outer": 3, "k.inner": 4}


def test_elementwise_max_min_and_if_then_else():
    A = te.placeholder((2, 8), name="A", dtype="int32")
    B = te.compute((2, 8), lambda i, j: te.if_then_else(j < 4, te.max(A[i, j], 0), te.min(A[i, j], 3)), name="B")
    s = te.create_schedule(B.op)
    a = RNG.integers(-9, 9, (2, 8)).astype("int32")
    _, out = run(s, [A, B], [a])
    ref = np.where(np.arange(8) < 4, np.maximum(a, 0), np.minimum(a, 3))
    np.testing.assert_array_equal(out, ref)


def test_non_divisible_split_is_guarded():
    A = te.placeholder((10,), name="A", dtype="int32")
    B = te.compute((10,), lambda i: A[i] * 3, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    a = RNG.integers(-9, 9, (10,)).astype("int32")
    func, out = run(s, [A, B], [a])
    np.testing.assert_array_equal(out, a * 3)
    assert loops(func) == {"i.outer": 3, "i.inner": 4}
    assert "likely(" in astext(func)


def test_split_nparts_fuse_tile():
    A = te.placeholder((8, 6), name="A", dtype="int32")
    B = te.compute((8, 6), lambda i, j: A[i, j] + i * 10 + j, name="B")
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    io, ii = s[B].split(i, nparts=2)
    s[B].fuse(ii, j)
    a = RNG.integers(-9, 9, (8, 6)).astype("int32")
    func, out = run(s, [A, B], [a])
    np.testing.assert_array_equal(out, a + np.arange(8)[:, None] * 10 + np.arange(6))
    assert loops(func) == {"i.outer": 2, "i.inner.j.fused": 24}

    s2 = te.create_schedule(B.op)
    xo, yo, xi, yi = s2[B].tile(B.op.axis[0], B.op.axis[1], 4, 3)
    func, out = run(s2, [A, B], [a])
    np.testing.assert_array_equal(out, a + np.arange(8)[:, None] * 10 + np.arange(6))
    assert loops(func) == {"i.outer": 2, "j.outer": 2, "i.inner": 4, "j.inner": 3}


def test_compute_at_bounds_and_inline():
    A = te.placeholder((16,), name="A", dtype="int32")
    B = te.compute((16,), lambda i: A[i] + 1, name="B")
    C = te.compute((16,), lambda i: B[i] * 2, name="C")
    D = te.compute((16,), lambda i: C[i] - 3, name="D")
    s = te.create_schedule(D.op)
    o, i = s[D].split(D.op.axis[0], factor=4)
    s[C].compute_at(s[D], o)
    s[B].compute_inline()
    s[C].set_scope("local.acc_buffer")
    a = RNG.integers(-9, 9, (16,)).astype("int32")
    func, out = run(s, [A, D], [a])
    np.testing.assert_array_equal(out, (a + 1) * 2 - 3)
    allocs = []
    post_order_visit(func.body, lambda x: allocs.append(x) if isinstance(x, n.Allocate) else None)
    assert [(x.buffer_var.name, int(x.extents[0]), x.scope) for x in allocs] == [("C", 4, "local.acc_buffer")]


def test_cache_read_and_cache_write():
    A = te.placeholder((4, 16), name="A", dtype="int32")
    B = te.compute((4, 16), lambda i, j: A[i, j] + 5, name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "local.acc_buffer", [B])
    BB = s.cache_write(B, "local.acc_buffer")
    s[AA].pragma(s[AA].op.axis[0], "dma_copy")
    s[BB].pragma(s[BB].op.axis[0], "alu")
    s[B].pragma(s[B].op.axis[0], "dma_copy")
    a = RNG.integers(-9, 9, (4, 16)).astype("int32")
    func, out = run(s, [A, B], [a])
    np.testing.assert_array_equal(out, a + 5)
    text = astext(func)
    assert "storage_scope = local.acc_buffer" in text and text.count('"pragma_dma_copy"') == 2


def test_virtual_thread_binding():
    A = te.placeholder((4, 8), name="A", dtype="int32")
    B = te.compute((4, 8), lambda i, j: A[i, j] * 2, name="B")
    s = te.create_schedule(B.op)
    o, i = s[B].split(B.op.axis[0], nparts=2)
    s[B].bind(o, te.thread_axis("cthread"))
    a = RNG.integers(-9, 9, (4, 8)).astype("int32")
    func, out = run(s, [A, B], [a])
    np.testing.assert_array_equal(out, a * 2)
    assert isinstance(func.body, n.AttrStmt) and func.body.attr_key == "virtual_thread" and int(func.body.value) == 2


def test_printer_precedence_and_names():
    i, j = n.Var("i"), n.Var("i")
    expr = (i + j) * 3 - n.FloorDiv(i, 2)
    assert astext(expr) == "(i + i_1)*3 - floordiv(i, 2)"
    buf = n.Var("A", "handle")
    loop = n.For(i, n.IntImm(0), n.IntImm(4), n.ForKind.SERIAL, n.Store(buf, n.Cast("int8", i), i))
    assert astext(loop) == "for (i, 0, 4) {\n  A[i] = int8(i)\n}\n"
    with pytest.raises(TypeError, match="astext expects"):
        astext(42)


def test_producer_region_overhanging_the_tensor_is_guarded():
    # C is split unevenly (10 = 3 x 4 - 2); B, computed per outer iteration, must not read A[10], A[11].
    A = te.placeholder((10,), name="A", dtype="int32")
    B = te.compute((10,), lambda i: A[i] + 1, name="B")
    C = te.compute((10,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    o, i = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], o)
    a = RNG.integers(-9, 9, (10,)).astype("int32")
    func, out = run(s, [A, C], [a])  # the interpreter raises on an out-of-bounds load
    np.testing.assert_array_equal(out, (a + 1) * 2)
    assert astext(func).count("likely(") == 2


def test_compute_at_a_fused_and_split_axis():
    A = te.placeholder((4, 8), name="A", dtype="int32")
    B = te.compute((4, 8), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((4, 8), lambda i, j: B[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    f = s[C].fuse(*C.op.axis)
    fo, fi = s[C].split(f, factor=4)  # half a row per outer iteration
    s[B].compute_at(s[C], fo)
    a = RNG.integers(-9, 9, (4, 8)).astype("int32")
    func, out = run(s, [A, C], [a])
    np.testing.assert_array_equal(out, (a + 1) * 2)
    allocs = []
    post_order_visit(func.body, lambda x: allocs.append(x) if isinstance(x, n.Allocate) else None)
    assert int(allocs[0].extents[0]) == 8  # the row holding the segment, not the whole tensor


#: Seeds of test_random_schedules_compute_the_same whose schedule is refused, and why: the bound
#: inference cannot merge B's region read by C (the whole row, 0..w) with the point D reads at a
#: split axis (j.outer * 4 + j.inner) when B sits inside D's innermost loop. Every other seed is
#: checked numerically; a new refusal, or one of these starting to run, fails the test.
REFUSED_SEEDS = {6: "cannot be merged", 7: "cannot be merged"}


@pytest.mark.parametrize("seed", range(12))
def test_random_schedules_compute_the_same(seed):
    """Random splits, reorders and attach points of a three-stage chain, checked numerically."""
    import random

    from vta.errors import ScheduleError

    rnd = random.Random(seed)
    h, w = rnd.choice([(6, 8), (5, 7), (4, 12)])
    A = te.placeholder((h, w), name="A", dtype="int32")
    B = te.compute((h, w), lambda i, j: A[i, j] * 3 + 1, name="B")
    k = te.reduce_axis((0, w), name="k")
    C = te.compute((h,), lambda i: te.sum(B[i, k], axis=k), name="C")
    D = te.compute((h, w), lambda i, j: C[i] - B[i, j], name="D")
    s = te.create_schedule(D.op)
    i, j = D.op.axis
    axes = [i, j]
    if rnd.random() < 0.7:
        io, ii = s[D].split(i, factor=rnd.choice([1, 2, 3, 4]))
        axes = [io, ii, j]
    if rnd.random() < 0.5:
        jo, ji = s[D].split(j, nparts=rnd.choice([2, 3]))
        axes = axes[:-1] + [jo, ji]
    order = list(axes)
    rnd.shuffle(order)
    if rnd.random() < 0.5:
        s[D].reorder(*order)
    leaves = list(s[D].leaf_iter_vars)
    if rnd.random() < 0.6:
        at = rnd.choice(leaves)
        s[C].compute_at(s[D], at)
        if rnd.random() < 0.5:
            # B feeds both C and D: it can live at the loop that holds C (not inside C, which D runs
            # outside of: test_compute_at_inside_one_of_two_consumers_is_refused)
            s[B].compute_at(s[D], at)
    else:
        ko, ki = s[C].split(k, factor=rnd.choice([2, 3, 4]))
        s[C].reorder(ko, C.op.axis[0], ki)
    a = RNG.integers(-50, 50, (h, w)).astype("int32")
    if seed in REFUSED_SEEDS:
        with pytest.raises(ScheduleError, match=REFUSED_SEEDS[seed]):
            run(s, [A, D], [a])
        return
    func, out = run(s, [A, D], [a])
    b = a * 3 + 1
    np.testing.assert_array_equal(out, b.sum(axis=1, keepdims=True) - b)


def test_compute_at_inside_one_of_two_consumers_is_refused():
    A = te.placeholder((6, 8), name="A", dtype="int32")
    B = te.compute((6, 8), lambda i, j: A[i, j] * 3 + 1, name="B")
    k = te.reduce_axis((0, 8), name="k")
    C = te.compute((6,), lambda i: te.sum(B[i, k], axis=k), name="C")
    D = te.compute((6, 8), lambda i, j: C[i] - B[i, j], name="D")
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    s[B].compute_at(s[C], s[C].op.reduce_axis[0])
    from vta.errors import ScheduleError

    with pytest.raises(ScheduleError, match="computed at axis 'k' of stage 'C', but its consumer 'D' runs outside"):
        run(s, [A, D], [np.zeros((6, 8), "int32")])


def test_printer_scopes_are_unambiguous():
    v = n.Var("A", "handle")
    one = n.Store(v, n.IntImm(1), n.IntImm(0))
    two = n.seq(one, n.Store(v, n.IntImm(2), n.IntImm(1)))
    text = astext(n.AttrStmt(n.Var("x"), "k", n.IntImm(3), n.seq(n.AttrStmt(n.Var("y"), "j", n.IntImm(4), one), one)))
    assert text == 'attr [x] "k" = 3 {\n  attr [y] "j" = 4;\n  A[0] = 1\n  A[0] = 1\n}\n'
    text = astext(n.Allocate(v, "int32", (n.IntImm(2),), n.IntImm(1, "bool"), two, "local.acc_buffer"))
    assert text.splitlines()[0] == "allocate(A, int32, [2]), storage_scope = local.acc_buffer {"
