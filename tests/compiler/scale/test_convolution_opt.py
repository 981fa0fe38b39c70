"""The "convolution_opt" tutorial (ResNet-18 layer 14x14x256 -> 256, 3x3, pad 1) on fsim:
``vta.topi.nn.pad``, packed weights, two virtual threads on output channels, tensorize, ALU shift
and clip. The output equals NumPy and the statistics equal upstream's printed values (section 3).
The tutorial's tiles are sized for the default configuration (they overflow BATCH=2's
accumulator; the packed schedules of ``vta.topi`` cover that configuration).
"""

from __future__ import annotations

import numpy as np

from vta import te, topi

from .runner import run

UPSTREAM_STATS = {"inp_load_nbytes": 114688, "wgt_load_nbytes": 1179648, "acc_load_nbytes": 0,
                  "uop_load_nbytes": 1144, "out_store_nbytes": 50176, "gemm_counter": 451584, "alu_counter": 9408}


def _tutorial(env):
    batch_size, height, width, in_channels, out_channels = 1, 14, 14, 256, 256
    kh = kw = 3
    ph = pw = 1
    sh = sw = 1
    data_shape = (batch_size // env.BATCH, in_channels // env.BLOCK_IN, height, width, env.BATCH, env.BLOCK_IN)
    kernel_shape = (out_channels // env.BLOCK_OUT, in_channels // env.BLOCK_IN, kh, kw, env.BLOCK_OUT, env.BLOCK_IN)
    oh, ow = (height + 2 * ph - kh) // sh + 1, (width + 2 * pw - kw) // sw + 1
    output_shape = (data_shape[0], out_channels // env.BLOCK_OUT, oh, ow, env.BATCH, env.BLOCK_OUT)
    dy = te.reduce_axis((0, kh), name="dy")
    dx = te.reduce_axis((0, kw), name="dx")
    ic = te.reduce_axis((0, in_channels // env.BLOCK_IN), name="ic")
    ic_tns = te.reduce_axis((0, env.BLOCK_IN), name="ic_tns")
    data = te.placeholder(data_shape, name="data", dtype=env.inp_dtype)
    kernel = te.placeholder(kernel_shape, name="kernel", dtype=env.wgt_dtype)
    data_buf = topi.nn.pad(data, [0, 0, ph, pw, 0, 0], name="data_buf")
    kernel_buf = te.compute(kernel_shape, lambda *i: kernel(*i), "kernel_buf")
    res_conv = te.compute(output_shape, lambda bo, co, i, j, bi, ci: te.sum(
        data_buf[bo, ic, i * sh + dy, j * sw + dx, bi, ic_tns].astype(env.acc_dtype)
        * kernel_buf[co, ic, dy, dx, ci, ic_tns].astype(env.acc_dtype), axis=[ic, dy, dx, ic_tns]), name="res_conv")
    res_shr = te.compute(output_shape, lambda *i: res_conv(*i) >> 8, name="res_shr")
    inp_max = (1 << (env.INP_WIDTH - 1)) - 1
    res_max = te.compute(output_shape, lambda *i: te.max(res_shr(*i), 0), "res_max")
    res_min = te.compute(output_shape, lambda *i: te.min(res_max(*i), inp_max), "res_min")
    res = te.compute(output_shape, lambda *i: res_min(*i).astype(env.inp_dtype), name="res")

    s = te.create_schedule(res.op)
    b, oc, y, x, b_tns, oc_tns = s[res].op.axis
    b_out, b_inn = s[res].split(b, factor=1)
    oc_out, oc_inn = s[res].split(oc, factor=128 // env.BLOCK_OUT)
    y_out, y_inn = s[res].split(y, factor=7)
    x_out, x_inn = s[res].split(x, factor=14)
    s[res].reorder(b_out, oc_out, y_out, x_out, b_inn, oc_inn, y_inn, x_inn, b_tns, oc_tns)
    for t in (res_conv, res_shr, res_max, res_min):
        s[t].compute_at(s[res], x_out)
    b_inn, oc_inn, y_inn, x_inn, b_tns, oc_tns = s[res_conv].op.axis
    ic_out, ic_inn = s[res_conv].split(ic, factor=16 // env.BLOCK_IN)
    s[res_conv].reorder(ic_out, b_inn, oc_inn, y_inn, ic_inn, dy, dx, x_inn, b_tns, oc_tns, ic_tns)
    _, tx = s[res].split(oc_out, factor=2)
    s[res].reorder(tx, b_out)
    s[res].bind(tx, te.thread_axis("cthread"))
    s[data_buf].set_scope(env.inp_scope)
    s[kernel_buf].set_scope(env.wgt_scope)
    for t in (res_conv, res_shr, res_min, res_max):
        s[t].set_scope(env.acc_scope)
    s[data_buf].compute_at(s[res_conv], ic_out)
    s[kernel_buf].compute_at(s[res_conv], ic_out)
    s[data_buf].pragma(s[data_buf].op.axis[0], env.dma_copy)
    s[kernel_buf].pragma(s[kernel_buf].op.axis[0], env.dma_copy)
    s[res].pragma(s[res].op.axis[4], env.dma_copy)
    s[res_conv].tensorize(b_tns, env.gemm)
    for t in (res_shr, res_min, res_max):
        s[t].pragma(s[t].op.axis[0], env.alu)
    return s, [data, kernel, res], (batch_size, in_channels, out_channels, height, width, kh, kw)


def test_convolution_opt_tutorial_matches_numpy_and_upstream_statistics(env, tmp_path):
    s, args, (n, ci, co, h, w, kh, kw) = _tutorial(env)
    rng = np.random.default_rng(0)
    data_np = rng.integers(-128, 128, size=(n, ci, h, w)).astype(np.int8)
    kernel_np = rng.integers(-128, 128, size=(co, ci, kh, kw)).astype(np.int8)
    inputs = {"data": topi.pack_nchw(data_np, env.BATCH, env.BLOCK_IN),
              "kernel": topi.pack_oihw(kernel_np, env.BLOCK_OUT, env.BLOCK_IN)}
    outs, stats = run(s, args, inputs, tmp_path, name="my_conv")
    ref = np.clip(topi.conv2d_nchw_python(data_np, kernel_np, (1, 1), (1, 1)) >> env.INP_WIDTH, 0, 127)
    np.testing.assert_equal(topi.unpack_nchw(outs["res"]), ref.astype(np.int8))
    assert stats == UPSTREAM_STATS
