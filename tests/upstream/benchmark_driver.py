"""Upstream-style drivers of the topi benchmarks: one operator built for VTA (packed, through
``vta.top``) or for the board's CPU (plain NCHW through ``topi.arm_cpu``/``topi.x86``), saved,
uploaded, loaded and timed as ``test_benchmark_topi_*.py`` do, returning the unpacked result,
its NumPy oracle (:mod:`.oracles`) and the simulator statistics of one call.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

import vta
from vta import tvm
from vta.testing import simulator
from vta.tvm import relay, te, topi
from vta.tvm.contrib import utils

from . import oracles

Conv2DWorkload = namedtuple("Conv2DWorkload", ["batch", "height", "width", "in_filter", "out_filter", "hkernel",
                                               "wkernel", "hpad", "wpad", "hstride", "wstride", "groups", "o_pad",
                                               "dilation"],
                            defaults=(1, 0, 1))


@tvm.te.tag_scope(tag=topi.tag.ELEMWISE)
def two_stage_clip(x, lo, hi):
    """Clip as two element-wise stages (min, then max), as the upstream benchmarks write it."""
    hi_c = tvm.tir.const(hi, x.dtype)
    lo_c = tvm.tir.const(lo, x.dtype)
    x = te.compute(x.shape, lambda *i: tvm.te.min(x(*i), hi_c), name="clip_hi")
    return te.compute(x.shape, lambda *i: tvm.te.max(x(*i), lo_c), name="clip_lo")


def _pack_nchw(a, env):
    n, c, h, w = a.shape
    return a.reshape(n // env.BATCH, env.BATCH, c // env.BLOCK_IN, env.BLOCK_IN, h, w).transpose((0, 2, 4, 5, 1, 3))


def _pack_oihw(w, env):
    o, i, kh, kw = w.shape
    return w.reshape(o // env.BLOCK_OUT, env.BLOCK_OUT, i // env.BLOCK_IN, env.BLOCK_IN, kh, kw).transpose(
        (0, 2, 4, 5, 1, 3))


def _unpack_nchw(r, n, c, h, w):
    return r.transpose((0, 4, 1, 5, 2, 3)).reshape(n, c, h, w)


def _run(env, remote, s, args, arrays, target, name, samples=2):
    """Build (VTA or host), save/upload/load, time, then run once with clean statistics."""
    if "vta" in target.keys:
        with vta.build_config(disabled_pass={"tir.CommonSubexprElimTIR"}):
            mod = vta.build(s, args, target=tvm.target.Target(target, host=env.target_host), name=name)
    else:
        mod = tvm.build(s, args, target=tvm.target.Target(target, host=env.target_host), name=name)
    temp = utils.tempdir()
    mod.save(temp.relpath(f"{name}.o"))
    remote.upload(temp.relpath(f"{name}.o"))
    f = remote.load_module(f"{name}.o")
    dev = remote.device(str(target))
    nds = [tvm.nd.array(a, dev) for a in arrays]
    cost = f.time_evaluator(name, dev, number=samples)(*nds)
    assert cost.mean > 0
    simulator.clear_stats()
    f(*nds)
    stats = simulator.stats() if "vta" in target.keys else {}
    temp.remove()
    return nds[-1].numpy(), stats


def run_conv2d(env, remote, wl, target, kind="conv2d", seed=0):
    """``kind``: ``"conv2d"`` (bias, shift 8), ``"group"`` (grouped, bias) or ``"transpose"``
    (no bias, shift WGT_WIDTH). Returns ``(result NCHW int8, oracle, stats)``."""
    rng = np.random.default_rng(seed)
    pack = "vta" in target.keys
    transpose = kind == "transpose"
    groups = wl.groups if kind == "group" else 1
    a_shape = (wl.batch, wl.in_filter, wl.height, wl.width)
    w_shape = ((wl.in_filter, wl.out_filter, wl.hkernel, wl.wkernel) if transpose
               else (wl.out_filter, wl.in_filter // groups, wl.hkernel, wl.wkernel))
    b_shape = (wl.batch, wl.out_filter, 1, 1)
    a_np = rng.integers(-(1 << (env.INP_WIDTH - 1)), 1 << (env.INP_WIDTH - 1), size=a_shape).astype(env.inp_dtype)
    w_np = rng.integers(-(1 << (env.WGT_WIDTH - 1)), 1 << (env.WGT_WIDTH - 1), size=w_shape).astype(env.wgt_dtype)
    b_np = None if transpose else rng.integers(-(1 << 10), 1 << 10, size=b_shape).astype(env.acc_dtype)
    padding = relay.nn.get_pad_tuple2d((wl.hpad, wl.wpad))
    stride = (wl.hstride, wl.wstride)
    shift = env.WGT_WIDTH if transpose else 8
    if transpose:
        acc = oracles.conv2d_transpose(a_np, w_np, stride, (wl.hpad, wl.wpad), (wl.o_pad, wl.o_pad))
    else:
        acc = oracles.conv2d(a_np, w_np, stride, padding, groups, wl.dilation)
    want = oracles.epilogue(acc, shift, b_np, env.OUT_WIDTH)
    oh, ow = want.shape[2:]

    if pack:
        data_np = _pack_nchw(a_np, env)
        if transpose:
            # (CI, CO, KH, KW) -> (CO/BO, CI/BI, KH, KW, BO, BI), spatially flipped
            kernel_np = w_np.reshape(wl.in_filter // env.BLOCK_IN, env.BLOCK_IN, wl.out_filter // env.BLOCK_OUT,
                                     env.BLOCK_OUT, wl.hkernel, wl.wkernel).transpose((2, 0, 4, 5, 3, 1))
            kernel_np = np.flip(np.flip(kernel_np, 2), 3).copy()
        else:
            kernel_np = _pack_oihw(w_np, env)
        bias_np = None if b_np is None else _pack_nchw_bias(b_np, env)
    else:
        data_np, kernel_np, bias_np = a_np, w_np, b_np
    data = te.placeholder(data_np.shape, name="data", dtype=env.inp_dtype)
    kernel = te.placeholder(kernel_np.shape, name="kernel", dtype=env.wgt_dtype)
    bias = None if bias_np is None else te.placeholder(bias_np.shape, name="bias", dtype=env.acc_dtype)
    layout = "NCHW%dn%dc" % (env.BATCH, env.BLOCK_IN)
    dilation = (wl.dilation, wl.dilation)
    with target:
        if kind == "conv2d" and pack:
            res = vta.top.conv2d_packed(data, kernel, stride, padding, dilation, layout, env.acc_dtype)
            fschedule = vta.top.schedule_conv2d_packed
        elif kind == "conv2d":
            res = topi.arm_cpu.conv2d_nchw_spatial_pack(data, kernel, stride, padding, dilation, env.acc_dtype)
            fschedule = topi.arm_cpu.schedule_conv2d_nchw_spatial_pack
        elif kind == "group" and pack:
            res = vta.top.group_conv2d_packed(data, kernel, stride, padding, dilation, groups, env.acc_dtype)
            fschedule = vta.top.schedule_group_conv2d_packed
        elif kind == "group":
            res = topi.nn.group_conv2d_nchw(data, kernel, stride, padding, dilation, groups, env.acc_dtype)
            fschedule = topi.generic.schedule_group_conv2d_nchw
        elif pack:
            res = vta.top.conv2d_transpose_packed(data, kernel, stride, padding, env.acc_dtype, (wl.o_pad, wl.o_pad))
            fschedule = vta.top.schedule_conv2d_transpose_packed
        else:
            res = topi.arm_cpu.conv2d_transpose_nchw(data, kernel, stride, padding, env.acc_dtype,
                                                     (wl.o_pad, wl.o_pad))
            fschedule = topi.arm_cpu.schedule_conv2d_transpose_nchw
        res = topi.right_shift(res, shift)
        if bias is not None:
            res = topi.add(res, bias)
        res = two_stage_clip(res, 0, (1 << env.OUT_WIDTH - 1) - 1)
        res = topi.cast(res, env.out_dtype)
        s = fschedule([res])
    args = [data, kernel] + ([bias] if bias is not None else []) + [res]
    arrays = [data_np, kernel_np] + ([bias_np] if bias_np is not None else [])
    arrays.append(np.zeros(topi.utils.get_const_tuple(res.shape), dtype=res.dtype))
    out, stats = _run(env, remote, s, args, arrays, target, kind if kind != "group" else "group_conv2d")
    if pack:
        out = _unpack_nchw(out, wl.batch, wl.out_filter, oh, ow)
    return out, want, stats


def _pack_nchw_bias(b, env):
    n, c = b.shape[:2]
    return b.reshape(n // env.BATCH, env.BATCH, c // env.BLOCK_OUT, env.BLOCK_OUT, 1, 1).transpose((0, 2, 4, 5, 1, 3))


def run_dense(env, remote, target, batch, in_feat, out_feat, seed=0):
    """Dense then shift 8 and clip, as ``test_benchmark_topi_dense.py``; returns ``(result, oracle, stats)``."""
    rng = np.random.default_rng(seed)
    a_np = rng.integers(-(1 << (env.INP_WIDTH - 1)), 1 << (env.INP_WIDTH - 1), size=(batch, in_feat)).astype(
        env.inp_dtype
    )
    w_np = rng.integers(-(1 << (env.WGT_WIDTH - 1)), 1 << (env.WGT_WIDTH - 1), size=(out_feat, in_feat)).astype(
        env.wgt_dtype
    )
    acc = a_np.astype(np.int64) @ w_np.astype(np.int64).T
    want = oracles.epilogue(acc, 8, None, env.OUT_WIDTH)
    if "vta" in target.keys:
        data_np = a_np.reshape(batch // env.BATCH, env.BATCH, in_feat // env.BLOCK_IN, env.BLOCK_IN).transpose(
            (0, 2, 1, 3)
        )
        kernel_np = w_np.reshape(out_feat // env.BLOCK_OUT, env.BLOCK_OUT, in_feat // env.BLOCK_IN,
                                 env.BLOCK_IN).transpose((0, 2, 1, 3))
        fcompute, fschedule = vta.top.dense_packed, vta.top.schedule_dense_packed
    else:
        data_np, kernel_np = a_np, w_np
        fcompute, fschedule = topi.x86.dense_nopack, topi.x86.schedule_dense_nopack
    data = te.placeholder(data_np.shape, name="data", dtype=env.inp_dtype)
    kernel = te.placeholder(kernel_np.shape, name="kernel", dtype=env.wgt_dtype)
    with target:
        res = fcompute(data, kernel, None, env.acc_dtype)
        res = topi.right_shift(res, 8)
        res = two_stage_clip(res, 0, (1 << env.OUT_WIDTH - 1) - 1)
        res = topi.cast(res, env.out_dtype)
        s = fschedule([res])
    out_np = np.zeros(topi.utils.get_const_tuple(res.shape), dtype=res.dtype)
    out, stats = _run(env, remote, s, [data, kernel, res], [data_np, kernel_np, out_np], target, "dense")
    if "vta" in target.keys:
        out = out.transpose((0, 2, 1, 3)).reshape(batch, out_feat)
    return out, want, stats
