"""The breadth workloads: declare, schedule, random inputs and the NumPy expectation of one case.

Each case is a small dict of plain sizes (channels in elements, spatial in pixels). ``build_case``
returns what :func:`tests.compiler.fsim_run.build_and_run` needs plus the expected output (plain
NCHW int8) and the unpacking of the result.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from vta import te, topi
from vta.topi.conv2d_transpose import (
    conv2d_transpose_packed,
    schedule_conv2d_transpose_packed,
)
from vta.topi.group_conv2d import group_conv2d_packed, schedule_group_conv2d_packed

from . import oracle as O


class Case(NamedTuple):
    schedule: object
    args: list
    inputs: dict
    out_name: str
    want: np.ndarray


def _ints(rng, bits, shape):
    return rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), size=shape).astype(np.int8)


def _pads(p):
    return (p, p, p, p) if isinstance(p, int) else tuple(p)


def build_case(env, op: str, c: dict, seed: int = 0, tiling=None) -> Case:
    """Declare and schedule operator ``op`` ("conv2d", "group_conv2d", "conv2d_transpose") for
    the sizes ``c`` under the current configuration ``env``; random int8 inputs from ``seed``."""
    rng = np.random.default_rng(seed)
    n = env.BATCH * c.get("nb", 1)
    ci, co, h, w = c["ci"], c["co"], c["h"], c["w"]
    kh = kw = c["k"]
    stride = c.get("s", (1, 1))
    shift = c.get("shift", 8)
    data = te.placeholder((n // env.BATCH, ci // env.BLOCK_IN, h, w, env.BATCH, env.BLOCK_IN), name="data",
                          dtype=env.inp_dtype)
    a = _ints(rng, env.INP_WIDTH, (n, ci, h, w))
    if op == "conv2d_transpose":
        kshape = (co // env.BLOCK_OUT, ci // env.BLOCK_IN, kh, kw, env.BLOCK_OUT, env.BLOCK_IN)
        kernel = te.placeholder(kshape, name="kernel", dtype=env.wgt_dtype)
        opad = c.get("op", (0, 0))
        conv = conv2d_transpose_packed(data, kernel, stride, c.get("p", 0), env.acc_dtype, opad)
        res = topi.requantize(conv, shift=shift)
        s = schedule_conv2d_transpose_packed(res, tiling)
        wt = _ints(rng, env.WGT_WIDTH, (ci, co, kh, kw))
        packed_w = O.pack_transpose_kernel(wt, env.BLOCK_OUT, env.BLOCK_IN)
        acc = O.conv2d_transpose(a, wt, stride, _pads(c.get("p", 0)), opad)
    else:
        g = c.get("g", 1)
        dil = c.get("d", (1, 1))
        kshape = (co // env.BLOCK_OUT, ci // g // env.BLOCK_IN, kh, kw, env.BLOCK_OUT, env.BLOCK_IN)
        kernel = te.placeholder(kshape, name="kernel", dtype=env.wgt_dtype)
        if op == "group_conv2d":
            conv = group_conv2d_packed(data, kernel, stride, c.get("p", 0), dil, g, env.acc_dtype)
            res = topi.requantize(conv, shift=shift)
            s = schedule_group_conv2d_packed(res, tiling)
        else:
            conv = topi.conv2d_packed(data, kernel, stride, c.get("p", 0), env.acc_dtype, dilation=dil)
            res = topi.requantize(conv, shift=shift)
            s = topi.schedule_conv2d_packed(res, tiling)
        wt = _ints(rng, env.WGT_WIDTH, (co, ci // g, kh, kw))
        packed_w = O.pack_oihw(wt, env.BLOCK_OUT, env.BLOCK_IN)
        acc = O.conv2d(a, wt, stride, _pads(c.get("p", 0)), dil, g)
    want = O.requant(acc, shift)
    inputs = {"data": O.pack_nchw(a, env.BATCH, env.BLOCK_IN), "kernel": packed_w}
    return Case(s, [data, kernel, res], inputs, res.name, want)


def build_residual_case(env, tiling, seed: int = 1) -> Case:
    """A 7 x 7 conv2d whose epilogue adds a residual (an int32 tensor of the output's shape, loaded
    into the accumulator) and a per-channel bias, with the given (ragged) tiling."""
    rng = np.random.default_rng(seed)
    n, ci, co = env.BATCH, env.BLOCK_IN, 2 * env.BLOCK_OUT
    data = te.placeholder((1, 1, 7, 7, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
    kernel = te.placeholder((2, 1, 3, 3, env.BLOCK_OUT, env.BLOCK_IN), name="kernel", dtype=env.wgt_dtype)
    resid = te.placeholder((1, 2, 7, 7, env.BATCH, env.BLOCK_OUT), name="resid", dtype=env.acc_dtype)
    bias = te.placeholder((1, 2, 1, 1, env.BATCH, env.BLOCK_OUT), name="bias", dtype=env.acc_dtype)
    conv = topi.conv2d_packed(data, kernel, 1, 1, env.acc_dtype)
    add = te.compute(conv.shape, lambda *i: conv(*i) + resid(*i), name="add", tag="elemwise")
    res = topi.requantize(add, bias)
    s = topi.schedule_conv2d_packed(res, tiling)
    a = _ints(rng, env.INP_WIDTH, (n, ci, 7, 7))
    w = _ints(rng, env.WGT_WIDTH, (co, ci, 3, 3))
    r = rng.integers(-3000, 3000, (n, co, 7, 7)).astype(np.int32)
    b = rng.integers(-20, 20, co).astype(np.int32)
    acc = O.conv2d(a, w, (1, 1), (1, 1, 1, 1)) + r
    want = np.clip((acc.astype(np.int32).astype(np.int64) >> 8) + b.reshape(1, -1, 1, 1), 0, 127).astype(np.int8)
    packed_b = np.broadcast_to(b.reshape(1, 2, 1, 1, 1, env.BLOCK_OUT), (1, 2, 1, 1, env.BATCH, env.BLOCK_OUT)).copy()
    inputs = {"data": O.pack_nchw(a, env.BATCH, env.BLOCK_IN), "kernel": O.pack_oihw(w, env.BLOCK_OUT, env.BLOCK_IN),
              "resid": O.pack_nchw(r, env.BATCH, env.BLOCK_OUT), "bias": packed_b}
    return Case(s, [data, kernel, resid, bias, res], inputs, res.name, want)
