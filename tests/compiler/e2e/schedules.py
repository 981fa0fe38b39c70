"""The schedules of the tutorials (reference section 3), plus CPU stages around the accelerator.

Each builder takes an environment and a NumPy generator and returns a :class:`Case`: the
schedule, its arguments, the input arrays by argument name, the output's shape and dtype, and
``expect`` computing the output with NumPy, independently of the compiler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from vta import te
from vta.tir import nodes as tn


@dataclass
class Case:
    sched: object
    args: list
    inputs: dict            # name -> packed numpy array
    out_name: str
    out_shape: tuple
    out_dtype: str
    expect: Callable[[dict], np.ndarray]


def _copy(t, name):
    return te.compute(t.shape, lambda *i: t(*i), name)


def vadd(env, rng) -> Case:
    m, o = 64, 1
    shape = (o, m, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    B = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    A_buf, B_buf = _copy(A, "A_buf"), _copy(B, "B_buf")
    C_buf = te.compute(shape, lambda *i: A_buf(*i).astype(env.acc_dtype) + B_buf(*i).astype(env.acc_dtype), name="C_buf")
    C = te.compute(shape, lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")
    s = te.create_schedule(C.op)
    for t in (A_buf, B_buf, C_buf):
        s[t].set_scope(env.acc_scope)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C_buf].pragma(s[C_buf].op.axis[0], env.alu)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    a = rng.integers(-128, 128, size=shape).astype(np.int32)
    b = rng.integers(-128, 128, size=shape).astype(np.int32)
    return Case(s, [A, B, C], {"A": a, "B": b}, "C", shape, "int8",
                lambda d: (d["A"] + d["B"]).astype(np.int8))


def matmul(env, rng) -> Case:
    m = n = 16
    o = 1
    A = te.placeholder((o, n, env.BATCH, env.BLOCK_IN), name="A", dtype=env.inp_dtype)
    B = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype=env.wgt_dtype)
    A_buf, B_buf = _copy(A, "A_buf"), _copy(B, "B_buf")
    ko = te.reduce_axis((0, n), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    C_buf = te.compute(
        (o, m, env.BATCH, env.BLOCK_OUT),
        lambda bo, co, bi, ci: te.sum(A_buf[bo, ko, bi, ki].astype(env.acc_dtype) * B_buf[co, ko, ci, ki].astype(env.acc_dtype),
                                      axis=[ko, ki]),
        name="C_buf")
    C = te.compute((o, m, env.BATCH, env.BLOCK_OUT), lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")
    s = te.create_schedule(C.op)
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    s[C_buf].set_scope(env.acc_scope)
    ko, ki = s[C_buf].op.reduce_axis
    ax = s[C_buf].op.axis
    s[C_buf].reorder(ko, ax[0], ax[1], ax[2], ax[3], ki)
    s[A_buf].compute_at(s[C_buf], ko)
    s[B_buf].compute_at(s[C_buf], ko)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    s[C_buf].tensorize(ax[2], env.gemm)
    a = rng.integers(-128, 128, size=(o, n, env.BATCH, env.BLOCK_IN)).astype(np.int8)
    b = rng.integers(-128, 128, size=(m, n, env.BLOCK_OUT, env.BLOCK_IN)).astype(np.int8)

    def expect(d):
        # Unpack to plain matrices, multiply, pack again.
        a2 = d["A"].transpose(0, 2, 1, 3).reshape(o * env.BATCH, n * env.BLOCK_IN).astype(np.int64)
        b2 = d["B"].transpose(0, 2, 1, 3).reshape(m * env.BLOCK_OUT, n * env.BLOCK_IN).astype(np.int64)
        c2 = a2 @ b2.T
        return c2.reshape(o, env.BATCH, m, env.BLOCK_OUT).transpose(0, 2, 1, 3).astype(np.int8)

    return Case(s, [A, B, C], {"A": a, "B": b}, "C", (o, m, env.BATCH, env.BLOCK_OUT), "int8", expect)



def blocked_gemm(env, rng) -> Case:
    """The blocked GEMM tutorial (section 3.3): 1x1024x1024, clip((A . W^T) >> 8, 0, 127)."""
    in_ch = out_ch = 1024
    dshape = (1, in_ch // env.BLOCK_IN, env.BATCH, env.BLOCK_IN)
    wshape = (out_ch // env.BLOCK_OUT, in_ch // env.BLOCK_IN, env.BLOCK_OUT, env.BLOCK_IN)
    oshape = (1, out_ch // env.BLOCK_OUT, env.BATCH, env.BLOCK_OUT)
    ic = te.reduce_axis((0, in_ch // env.BLOCK_IN), name="ic")
    ic_tns = te.reduce_axis((0, env.BLOCK_IN), name="ic_tns")
    data = te.placeholder(dshape, name="data", dtype=env.inp_dtype)
    weight = te.placeholder(wshape, name="weight", dtype=env.wgt_dtype)
    # Explicit copy stages stand in for upstream's cache_read (same loads, same code).
    data_buf, weight_buf = _copy(data, "data_buf"), _copy(weight, "weight_buf")
    res_gem = te.compute(oshape, lambda bo, co, bi, ci: te.sum(
        data_buf[bo, ic, bi, ic_tns].astype(env.acc_dtype) * weight_buf[co, ic, ci, ic_tns].astype(env.acc_dtype),
        axis=[ic, ic_tns]), name="res_gem")
    res_shr = te.compute(oshape, lambda *i: res_gem(*i) >> env.INP_WIDTH, name="res_shr")
    res_max = te.compute(oshape, lambda *i: te.max(res_shr(*i), 0), "res_max")
    res_min = te.compute(oshape, lambda *i: te.min(res_max(*i), (1 << (env.INP_WIDTH - 1)) - 1), "res_min")
    res = te.compute(oshape, lambda *i: res_min(*i).astype(env.inp_dtype), name="res")
    s = te.create_schedule(res.op)
    s[data_buf].set_scope(env.inp_scope)
    s[weight_buf].set_scope(env.wgt_scope)
    b, oc, b_tns, oc_tns = s[res].op.axis
    b_out, b_inn = s[res].split(b, 1)
    oc_out, oc_inn = s[res].split(oc, 16)
    s[res].reorder(b_out, oc_out, b_inn, oc_inn)
    for t in (res_gem, res_shr, res_max, res_min):
        s[t].set_scope(env.acc_scope)
        s[t].compute_at(s[res], oc_out)
    b_inn, oc_inn2, b_tns, oc_tns = s[res_gem].op.axis
    ic_out, ic_inn = s[res_gem].split(ic, 16)
    s[res_gem].reorder(ic_out, b_inn, oc_inn2, ic_inn, b_tns, oc_tns, ic_tns)
    s[data_buf].compute_at(s[res_gem], ic_out)
    s[weight_buf].compute_at(s[res_gem], ic_out)
    s[data_buf].pragma(s[data_buf].op.axis[0], env.dma_copy)
    s[weight_buf].pragma(s[weight_buf].op.axis[0], env.dma_copy)
    s[res_gem].tensorize(b_tns, env.gemm)
    for t in (res_shr, res_max, res_min):
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[res].pragma(oc_inn, env.dma_copy)
    d = rng.integers(-128, 128, size=dshape).astype(np.int8)
    w = rng.integers(-128, 128, size=wshape).astype(np.int8)

    def expect(v):
        a2 = v["data"].transpose(0, 2, 1, 3).reshape(env.BATCH, in_ch).astype(np.int64)
        b2 = v["weight"].transpose(0, 2, 1, 3).reshape(out_ch, in_ch).astype(np.int64)
        r = np.clip((a2 @ b2.T) >> env.INP_WIDTH, 0, (1 << (env.INP_WIDTH - 1)) - 1)
        return r.reshape(1, env.BATCH, out_ch // env.BLOCK_OUT, env.BLOCK_OUT).transpose(0, 2, 1, 3).astype(np.int8)

    return Case(s, [data, weight, res], {"data": d, "weight": w}, "res", oshape, "int8", expect)


def conv2d(env, rng) -> Case:
    """The convolution tutorial (section 3.3): 14x14x256 -> 256, 3x3, pad 1, two virtual threads."""
    height = width = 14
    in_ch = out_ch = 256
    kh = kw = 3
    dshape = (1, in_ch // env.BLOCK_IN, height, width, env.BATCH, env.BLOCK_IN)
    kshape = (out_ch // env.BLOCK_OUT, in_ch // env.BLOCK_IN, kh, kw, env.BLOCK_OUT, env.BLOCK_IN)
    oshape = (1, out_ch // env.BLOCK_OUT, height, width, env.BATCH, env.BLOCK_OUT)
    pshape = (1, in_ch // env.BLOCK_IN, height + 2, width + 2, env.BATCH, env.BLOCK_IN)
    dy = te.reduce_axis((0, kh), name="dy")
    dx = te.reduce_axis((0, kw), name="dx")
    ic = te.reduce_axis((0, in_ch // env.BLOCK_IN), name="ic")
    ic_tns = te.reduce_axis((0, env.BLOCK_IN), name="ic_tns")
    data = te.placeholder(dshape, name="data", dtype=env.inp_dtype)
    kernel = te.placeholder(kshape, name="kernel", dtype=env.wgt_dtype)

    def pad(b, c, y, x, bi, ci):
        cond = tn.And(tn.And(y >= 1, y < height + 1), tn.And(x >= 1, x < width + 1))
        return te.if_then_else(cond, data(b, c, y - 1, x - 1, bi, ci), tn.const(0, env.inp_dtype))

    data_buf = te.compute(pshape, pad, "data_buf")
    kernel_buf = _copy(kernel, "kernel_buf")
    res_conv = te.compute(oshape, lambda bo, co, i, j, bi, ci: te.sum(
        data_buf[bo, ic, i + dy.var, j + dx.var, bi, ic_tns].astype(env.acc_dtype)
        * kernel_buf[co, ic, dy, dx, ci, ic_tns].astype(env.acc_dtype), axis=[ic, dy, dx, ic_tns]), name="res_conv")
    res_shr = te.compute(oshape, lambda *i: res_conv(*i) >> 8, name="res_shr")
    res_max = te.compute(oshape, lambda *i: te.max(res_shr(*i), 0), "res_max")
    res_min = te.compute(oshape, lambda *i: te.min(res_max(*i), (1 << (env.INP_WIDTH - 1)) - 1), "res_min")
    res = te.compute(oshape, lambda *i: res_min(*i).astype(env.inp_dtype), name="res")
    s = te.create_schedule(res.op)
    b, oc, y, x, b_tns, oc_tns = s[res].op.axis
    b_out, b_inn = s[res].split(b, factor=1)
    oc_out, oc_inn = s[res].split(oc, factor=128 // env.BLOCK_OUT)
    y_out, y_inn = s[res].split(y, factor=7)
    x_out, x_inn = s[res].split(x, factor=14)
    s[res].reorder(b_out, oc_out, y_out, x_out, b_inn, oc_inn, y_inn, x_inn, b_tns, oc_tns)
    for t in (res_conv, res_shr, res_max, res_min):
        s[t].compute_at(s[res], x_out)
        s[t].set_scope(env.acc_scope)
    s[data_buf].set_scope(env.inp_scope)
    s[kernel_buf].set_scope(env.wgt_scope)
    _, tx = s[res].split(oc_out, factor=2)
    s[res].reorder(tx, b_out)
    s[res].bind(tx, te.thread_axis("cthread"))
    cb, coc, cy, cx, cb_tns, coc_tns = s[res_conv].op.axis
    ic_out, ic_inn = s[res_conv].split(ic, factor=16 // env.BLOCK_IN)
    s[res_conv].reorder(ic_out, cb, coc, cy, ic_inn, dy, dx, cx, cb_tns, coc_tns, ic_tns)
    s[res_conv].tensorize(cb_tns, env.gemm)
    s[data_buf].compute_at(s[res_conv], ic_out)
    s[kernel_buf].compute_at(s[res_conv], ic_out)
    s[data_buf].pragma(s[data_buf].op.axis[0], env.dma_copy)
    s[kernel_buf].pragma(s[kernel_buf].op.axis[0], env.dma_copy)
    for t in (res_shr, res_max, res_min):
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[res].pragma(x_inn, env.dma_copy)
    d = rng.integers(-128, 128, size=dshape).astype(np.int8)
    k = rng.integers(-128, 128, size=kshape).astype(np.int8)

    def expect(v):
        # Direct convolution on the packed layout with NumPy (independent of the compiler).
        dat = v["data"].transpose(0, 4, 1, 5, 2, 3).reshape(env.BATCH, in_ch, height, width).astype(np.int64)
        ker = v["kernel"].transpose(0, 4, 1, 5, 2, 3).reshape(out_ch, in_ch, kh, kw).astype(np.int64)
        padded = np.pad(dat, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((env.BATCH, out_ch, height, width), dtype=np.int64)
        for i in range(kh):
            for j in range(kw):
                win = padded[:, :, i:i + height, j:j + width]
                out += np.einsum("bchw,oc->bohw", win, ker[:, :, i, j])
        r = np.clip(out >> 8, 0, (1 << (env.INP_WIDTH - 1)) - 1)
        return r.reshape(1, env.BATCH, out_ch // env.BLOCK_OUT, env.BLOCK_OUT, height, width) \
                .transpose(0, 2, 4, 5, 1, 3).astype(np.int8)

    return Case(s, [data, kernel, res], {"data": d, "kernel": k}, "res", oshape, "int8", expect)


def vadd_with_cpu_stages(env, rng) -> Case:
    """vadd with CPU stages around the accelerator: A2 = A * 2 before the DMA, D = C + 1 after the
    store (the compiler inserts a synchronisation before the CPU reads C)."""
    shape = (1, 8, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    B = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    A2 = te.compute(shape, lambda *i: A(*i) * 2, "A2")
    A_buf, B_buf = _copy(A2, "A_buf"), _copy(B, "B_buf")
    C_buf = te.compute(shape, lambda *i: A_buf(*i) + B_buf(*i), name="C_buf")
    C = te.compute(shape, lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")
    D = te.compute(shape, lambda *i: C(*i) + tn.const(1, env.inp_dtype), name="D")
    s = te.create_schedule(D.op)
    for t in (A_buf, B_buf, C_buf):
        s[t].set_scope(env.acc_scope)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C_buf].pragma(s[C_buf].op.axis[0], env.alu)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    a = rng.integers(-60, 60, size=shape).astype(np.int32)
    b = rng.integers(-60, 60, size=shape).astype(np.int32)
    return Case(s, [A, B, D], {"A": a, "B": b}, "D", shape, "int8",
                lambda d: ((d["A"] * 2 + d["B"]).astype(np.int8) + np.int8(1)).astype(np.int8))
