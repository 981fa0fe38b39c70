"""What lowering and host code do with 4-bit tensors (configs/narrow.json): packed DRAM sizes,
and the DMA refusing tensors whose element width is not the buffer's."""

from __future__ import annotations

import pytest

from vta import te
from vta.build import build, lower
from vta.codegen import emit_c
from vta.errors import ScheduleError
from vta.tir import nodes as n

from .test_every_config import _retarget


def test_dram_intermediate_of_int4_is_packed():
    """A DRAM allocation of 33 int4 values takes 17 bytes, not 33."""
    from ..backend.tir_examples import arg_buffer

    (a, ab) = arg_buffer("A", (16,), "int4")
    tmp = n.Var("T", "handle")
    body = n.Allocate(tmp, "int4", (n.IntImm(33),), n.IntImm(1, "bool"),
                      n.Evaluate(n.Call("int32", "tir.vta.coproc_dep_push", (n.IntImm(2), n.IntImm(3)))), "global")
    src = emit_c(n.PrimFunc((a,), body, {a: ab}), "f")
    assert "void* T = VTABufferAlloc(17);" in src


def _copy_into(env, scope, src_dtype, buf_dtype):
    """``X -> X_buf`` (DMA into ``scope``) -> ALU no-op on acc -> ``Y`` (DMA out)."""
    shape = (1, 2, env.BATCH, env.BLOCK_OUT)
    X = te.placeholder(shape, name="X", dtype=src_dtype)
    X_buf = te.compute(shape, lambda *i: X(*i).astype(buf_dtype), name="X_buf")
    Y = te.compute(shape, lambda *i: X_buf(*i).astype(env.out_dtype), name="Y")
    s = te.create_schedule(Y.op)
    s[X_buf].set_scope(scope)
    s[X_buf].pragma(s[X_buf].op.axis[0], env.dma_copy)
    s[Y].pragma(s[Y].op.axis[0], env.dma_copy)
    return s, [X, Y]


def test_widening_load_of_int4_into_the_accumulator_is_refused():
    with _retarget("narrow.json", "sim") as env:
        s, args = _copy_into(env, env.acc_scope, "int4", env.acc_dtype)
        with pytest.raises(ScheduleError, match=r"'X' holds int4 values, but a widening load .* reads 8-bit lanes"):
            lower(s, args)


def test_int8_widening_load_into_the_accumulator_is_acc_8bit_on_narrow(tmp_path):
    """ACC_8BIT reads one int8 per lane whatever INP_WIDTH is: an int8 tensor widened into the
    accumulator uses it on narrow too, and the values arrive sign-extended (fsim; the RTL has
    no ACC_8BIT). The 4-bit store keeps the low nibble."""
    import numpy as np

    from ..fsim_run import build_and_run

    with _retarget("narrow.json", "sim") as env:
        s, args = _copy_into(env, env.acc_scope, "int8", env.acc_dtype)
        assert f", {env.dev.MEM_ID_ACC_8BIT});" in build(s, args, "ext_dev").get_source()
        x = np.arange(-64, 64, dtype=np.int8)[:2 * env.BATCH * env.BLOCK_OUT].reshape(args[0].shape)
        outs, _, _ = build_and_run(s, args, {"X": x}, tmp_path)
    np.testing.assert_array_equal(outs["Y"], ((x.astype(np.int64) + 8) % 16) - 8)


def test_int8_tensor_cannot_feed_int4_tiles():
    with _retarget("narrow.json", "sim") as env:
        A = te.placeholder((1, 1, env.BATCH, env.BLOCK_IN), name="A", dtype="int8")
        A_buf = te.compute(A.shape, lambda *i: A(*i), name="A_buf")
        s = te.create_schedule(A_buf.op)
        s[A_buf].set_scope(env.inp_scope)
        s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
        with pytest.raises(ScheduleError, match=r"'A' holds int8 values, but the buffer's tiles hold 4-bit elements "
                                                r"\(INP_WIDTH\); its DRAM tensor must be int4"):
            lower(s, [A])


def test_store_into_a_wider_tensor_is_refused_on_narrow():
    with _retarget("narrow.json", "sim") as env:
        shape = (1, 2, env.BATCH, env.BLOCK_OUT)
        X = te.placeholder(shape, name="X", dtype=env.acc_dtype)
        X_buf = te.compute(shape, lambda *i: X(*i), name="X_buf")
        Z = te.compute(shape, lambda *i: X_buf(*i).astype("int8"), name="Z")  # the store writes nibbles
        s = te.create_schedule(Z.op)
        s[X_buf].set_scope(env.acc_scope)
        s[X_buf].pragma(s[X_buf].op.axis[0], env.dma_copy)
        s[Z].pragma(s[Z].op.axis[0], env.dma_copy)
        with pytest.raises(ScheduleError, match=r"writes 4-bit elements \(OUT_WIDTH\) but 'Z' holds int8"):
            lower(s, [X, Z])
