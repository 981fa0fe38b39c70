"""The test interpreter itself, on hand-built functions (it is the oracle of test_lower)."""

from __future__ import annotations

import numpy as np
import pytest

from vta.tir import nodes as n

from .interp import run_primfunc


def _func(body, *bufs):
    params = tuple(n.Var(b.name, "handle") for b in bufs)
    return n.PrimFunc(params, body, dict(zip(params, bufs, strict=True)))


def test_loops_wrap_and_vector_path_agree():
    a = n.Buffer(n.Var("a", "handle"), "int8", (8,), "a")
    i = n.Var("i")
    # a[i] = int8(i * 40): wraps past 127; the loop runs as one NumPy operation.
    f = _func(n.For(i, n.IntImm(0), n.IntImm(8), "serial", n.Store(a.data, n.Cast("int8", i * 40), i)), a)
    out = np.zeros(8, "int8")
    run_primfunc(f, [out])
    np.testing.assert_array_equal(out, (np.arange(8) * 40).astype("int8"))
    # A loop storing to one element runs iteration by iteration (a running sum).
    s = n.Buffer(n.Var("s", "handle"), "int32", (1,), "s")
    g = _func(n.For(i, n.IntImm(0), n.IntImm(5), "serial",
                    n.Store(s.data, n.Load("int32", s.data, n.IntImm(0)) + i, n.IntImm(0))), s)
    acc = np.zeros(1, "int32")
    run_primfunc(g, [acc])
    assert acc[0] == 10


def test_gemm_uop_is_a_tile_multiply_accumulate():
    env_tile = (1, 16, 16)
    acc = n.Buffer(n.Var("acc", "handle"), "int32", (2, 16), "acc")
    inp = n.Buffer(n.Var("inp", "handle"), "int8", (16,), "inp")
    wgt = n.Buffer(n.Var("wgt", "handle"), "int8", (16, 16), "wgt")

    def push(reset):
        return n.Evaluate(n.Call("int32", "tir.vta.uop_push", (
            n.IntImm(0), n.IntImm(reset), acc.access_ptr("rw", "int32", offset=16, extent=16),
            inp.access_ptr("r", "int32"), wgt.access_ptr("r", "int32"), n.IntImm(0), n.IntImm(0), n.IntImm(0))))

    f = _func(n.seq(push(1), push(0), push(0)), acc, inp, wgt)
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, 16).astype("int8")
    w = rng.integers(-128, 128, (16, 16)).astype("int8")
    out = np.full((2, 16), 7, "int32")
    run_primfunc(f, [out, x, w], tile=env_tile)
    np.testing.assert_array_equal(out[0], 7)  # tile 0 untouched
    np.testing.assert_array_equal(out[1], 2 * (w.astype(np.int64) @ x.astype(np.int64)))


def test_out_of_bounds_store_is_reported():
    a = n.Buffer(n.Var("a", "handle"), "int32", (4,), "a")
    f = _func(n.Store(a.data, n.IntImm(1), n.IntImm(4)), a)
    with pytest.raises(IndexError, match=r"store a\[4\] outside \[0, 4\)"):
        run_primfunc(f, [np.zeros(4, "int32")])
