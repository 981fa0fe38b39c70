"""The schedules of the VTA tutorials (reference section 3): vadd, matrix multiply, blocked GEMM,
the optimised convolution, and vadd with CPU stages around the accelerator."""

from __future__ import annotations

import numpy as np

from vta import te
from vta.tir import nodes as tn

from .base import (
    Workload,
    clip_max,
    copy_stage,
    default_rng,
    gemm_reference,
    gemm_stage,
    random_like,
    requantize_stages,
    schedule_matmul,
    schedule_vadd,
    wrap_int32,
    wrap_to,
    zero_pad,
)


def vadd(env, rng=None, m: int = 64) -> Workload:
    """Section 3.1: ``C = int8(A + B)`` on (1, m, BATCH, BLOCK_OUT) int32 tensors."""
    rng = default_rng(rng)
    shape = (1, m, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    B = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    A_buf, B_buf = copy_stage(A, "A_buf"), copy_stage(B, "B_buf")
    C_buf = te.compute(
        shape, lambda *i: A_buf(*i).astype(env.acc_dtype) + B_buf(*i).astype(env.acc_dtype), name="C_buf"
    )
    C = te.compute(shape, lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")
    s = te.create_schedule(C.op)
    schedule_vadd(env, s, A_buf, B_buf, C_buf, C)
    inputs = {"A": rng.integers(-128, 128, size=shape).astype(np.int32),
              "B": rng.integers(-128, 128, size=shape).astype(np.int32)}
    return Workload("vadd", s, [A, B, C], inputs, lambda d: wrap_to(d["A"] + d["B"], C.dtype))


def matrix_multiply(env, rng=None, m: int = 16, n_: int = 16) -> Workload:
    """Section 3.2: ``C = int8(A . B^T)``; loads at ``ko``, tensorize at ``bi`` (reset + update)."""
    rng = default_rng(rng)
    o = 1
    A = te.placeholder((o, n_, env.BATCH, env.BLOCK_IN), name="A", dtype=env.inp_dtype)
    B = te.placeholder((m, n_, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype=env.wgt_dtype)
    A_buf, B_buf = copy_stage(A, "A_buf"), copy_stage(B, "B_buf")
    oshape = (o, m, env.BATCH, env.BLOCK_OUT)
    C_buf = gemm_stage(env, A_buf, B_buf, n_, oshape, "C_buf")
    C = te.compute(oshape, lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")
    s = te.create_schedule(C.op)
    s[C_buf].tensorize(schedule_matmul(env, s, A_buf, B_buf, C_buf, C), env.gemm)
    inputs = {"A": random_like(rng, A), "B": random_like(rng, B)}
    return Workload("matrix_multiply", s, [A, B, C], inputs,
                    lambda d: wrap_to(gemm_reference(d["A"], d["B"]), C.dtype))


def blocked_gemm(env, rng=None, batch: int = 1, in_channels: int = 1024, out_channels: int = 1024,
                 block: int = 256, store_at: str = "tile") -> Workload:
    """Section 3.3: ``clip((A . B^T) >> INP_WIDTH, 0, clip_max)`` in blocks of ``block`` channels.

    ``store_at="tile"`` puts the store pragma on the tensor axis (one tile per store, upstream's
    placement); ``store_at="row"`` puts it on the inner output-channel loop (one store per block).

    Raises
    ------
    ValueError
        If ``store_at`` is neither ``"tile"`` nor ``"row"``.
    """
    if store_at not in ("tile", "row"):
        raise ValueError(f"blocked_gemm: store_at must be 'tile' or 'row', got {store_at!r}")
    rng = default_rng(rng)
    o, n_, m = batch // env.BATCH, in_channels // env.BLOCK_IN, out_channels // env.BLOCK_OUT
    A = te.placeholder((o, n_, env.BATCH, env.BLOCK_IN), name="A", dtype=env.inp_dtype)
    B = te.placeholder((m, n_, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype=env.wgt_dtype)
    A_buf, B_buf = copy_stage(A, "A_buf"), copy_stage(B, "B_buf")
    C_buf = gemm_stage(env, A_buf, B_buf, n_, (o, m, env.BATCH, env.BLOCK_OUT), "C_buf")
    res_shf, res_max, res_min, res = requantize_stages(env, C_buf, env.INP_WIDTH,
                                                       ("res_shf", "res_max", "res_min", "res"))
    s = te.create_schedule(res.op)
    b, oc, _, _ = s[res].op.axis
    b_out, b_inn = s[res].split(b, batch // env.BATCH)
    oc_out, oc_inn = s[res].split(oc, block // env.BLOCK_OUT)
    s[res].reorder(b_out, oc_out, b_inn, oc_inn)
    for t in (C_buf, res_shf, res_max, res_min):
        s[t].compute_at(s[res], oc_out)
        s[t].set_scope(env.acc_scope)
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    g_b, g_oc, g_b_tns, g_oc_tns = s[C_buf].op.axis
    ko, ki = s[C_buf].op.reduce_axis
    ic_out, ic_inn = s[C_buf].split(ko, block // env.BLOCK_IN)
    s[C_buf].reorder(ic_out, g_b, g_oc, ic_inn, g_b_tns, g_oc_tns, ki)
    s[A_buf].compute_at(s[C_buf], ic_out)
    s[B_buf].compute_at(s[C_buf], ic_out)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C_buf].tensorize(g_b_tns, env.gemm)
    for t in (res_shf, res_max, res_min):
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[res].pragma(s[res].op.axis[2] if store_at == "tile" else oc_inn, env.dma_copy)
    inputs = {"A": random_like(rng, A), "B": random_like(rng, B)}
    return Workload("blocked_gemm", s, [A, B, res], inputs, lambda d: wrap_to(
        gemm_reference(d["A"], d["B"], env.INP_WIDTH, clip_max(env)), res.dtype))


def conv2d(env, rng=None, height: int = 14, width: int = 14, in_channels: int = 256, out_channels: int = 256,
           oc_block: int = 128, h_block: int = 7, w_block: int = 14, v_threads: int = 2, pad=zero_pad) -> Workload:
    """The optimised convolution tutorial (3x3, pad 1, stride 1; ResNet-18's 14x14x256 -> 256 by
    default): padded input load, virtual threads on output channels, tensorize, ALU shift and clip.

    ``pad(data, before, after, name=...)`` builds the padded input stage (:func:`zero_pad`, or
    ``vta.topi.nn.pad`` to exercise TOPI).
    """
    rng = default_rng(rng)
    kh = kw = 3
    p = 1
    data_shape = (1, in_channels // env.BLOCK_IN, height, width, env.BATCH, env.BLOCK_IN)
    kernel_shape = (out_channels // env.BLOCK_OUT, in_channels // env.BLOCK_IN, kh, kw, env.BLOCK_OUT, env.BLOCK_IN)
    out_shape = (1, out_channels // env.BLOCK_OUT, height, width, env.BATCH, env.BLOCK_OUT)
    dy = te.reduce_axis((0, kh), name="dy")
    dx = te.reduce_axis((0, kw), name="dx")
    ic = te.reduce_axis((0, in_channels // env.BLOCK_IN), name="ic")
    ic_tns = te.reduce_axis((0, env.BLOCK_IN), name="ic_tns")
    data = te.placeholder(data_shape, name="data", dtype=env.inp_dtype)
    kernel = te.placeholder(kernel_shape, name="kernel", dtype=env.wgt_dtype)
    data_buf = pad(data, [0, 0, p, p, 0, 0], [0, 0, p, p, 0, 0], name="data_buf")
    kernel_buf = copy_stage(kernel, "kernel_buf")
    res_conv = te.compute(
        out_shape,
        lambda bo, co, i, j, bi, ci: te.sum(
            data_buf[bo, ic, i + dy.var, j + dx.var, bi, ic_tns].astype(env.acc_dtype)
            * kernel_buf[co, ic, dy, dx, ci, ic_tns].astype(env.acc_dtype),
            axis=[ic, dy, dx, ic_tns],
        ),
        name="res_conv",
    )
    res_shr, res_max, res_min, res = requantize_stages(env, res_conv, env.INP_WIDTH)
    s = te.create_schedule(res.op)
    b, oc, y, x, b_tns, oc_tns = s[res].op.axis
    b_out, b_inn = s[res].split(b, factor=1)
    oc_out, oc_inn = s[res].split(oc, factor=oc_block // env.BLOCK_OUT)
    y_out, y_inn = s[res].split(y, factor=h_block)
    x_out, x_inn = s[res].split(x, factor=w_block)
    s[res].reorder(b_out, oc_out, y_out, x_out, b_inn, oc_inn, y_inn, x_inn, b_tns, oc_tns)
    for t in (res_conv, res_shr, res_max, res_min):
        s[t].compute_at(s[res], x_out)
        s[t].set_scope(env.acc_scope)
    s[data_buf].set_scope(env.inp_scope)
    s[kernel_buf].set_scope(env.wgt_scope)
    b_inn, oc_inn, y_inn, x_inn, b_tns, oc_tns = s[res_conv].op.axis
    ic_out, ic_inn = s[res_conv].split(ic, factor=1)
    s[res_conv].reorder(ic_out, b_inn, oc_inn, y_inn, ic_inn, dy, dx, x_inn, b_tns, oc_tns, ic_tns)
    if v_threads > 1:
        _, tx = s[res].split(oc_out, factor=v_threads)
        s[res].reorder(tx, b_out)
        s[res].bind(tx, te.thread_axis("cthread"))
    s[data_buf].compute_at(s[res_conv], ic_out)
    s[kernel_buf].compute_at(s[res_conv], ic_out)
    s[data_buf].pragma(s[data_buf].op.axis[0], env.dma_copy)
    s[kernel_buf].pragma(s[kernel_buf].op.axis[0], env.dma_copy)
    s[res_conv].tensorize(b_tns, env.gemm)
    for t in (res_shr, res_max, res_min):
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[res].pragma(s[res].op.axis[4], env.dma_copy)  # b_tns (extent 1): one store per (y, x) row
    inputs = {"data": random_like(rng, data), "kernel": random_like(rng, kernel)}

    def reference(d):
        padded = np.pad(d["data"].astype(np.int64), [(0, 0), (0, 0), (p, p), (p, p), (0, 0), (0, 0)])
        acc = np.zeros(out_shape, np.int64)
        for yy in range(kh):
            for xx in range(kw):
                win = padded[:, :, yy:yy + height, xx:xx + width]  # (1, IC, H, W, B, BI)
                acc += np.einsum("nchwbi,kcpi->nkhwbp", win, d["kernel"][:, :, yy, xx].astype(np.int64))
        return wrap_to(np.clip(wrap_int32(acc) >> env.INP_WIDTH, 0, clip_max(env)), res.dtype)

    return Workload("conv2d", s, [data, kernel, res], inputs, reference)


def vadd_with_cpu_stages(env, rng=None) -> Workload:
    """vadd with CPU stages around the accelerator: ``A2 = A * 2`` before the DMA, ``D = C + 1``
    after the store (the compiler inserts a synchronisation before the CPU reads C)."""
    rng = default_rng(rng)
    shape = (1, 8, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    B = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    A2 = te.compute(shape, lambda *i: A(*i) * 2, "A2")
    A_buf, B_buf = copy_stage(A2, "A_buf"), copy_stage(B, "B_buf")
    C_buf = te.compute(shape, lambda *i: A_buf(*i) + B_buf(*i), name="C_buf")
    C = te.compute(shape, lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")
    D = te.compute(shape, lambda *i: C(*i) + tn.const(1, env.inp_dtype), name="D")
    s = te.create_schedule(D.op)
    schedule_vadd(env, s, A_buf, B_buf, C_buf, C)
    inputs = {"A": rng.integers(-60, 60, size=shape).astype(np.int32),
              "B": rng.integers(-60, 60, size=shape).astype(np.int32)}
    return Workload("vadd_with_cpu_stages", s, [A, B, D], inputs,
                    lambda d: wrap_to(wrap_to(d["A"] * 2 + d["B"], C.dtype).astype(np.int64) + 1, D.dtype))
