"""ResNet-18 layers (reference section 7.3) built with vta.topi and their NumPy references."""

from __future__ import annotations

import numpy as np

from vta import te, topi

#: conv2d layers after the first: (H=W, Cin, Cout, kernel, pad, stride).
RESNET18_CONV = {
    "C2": (56, 64, 64, 3, 1, 1), "C3": (56, 64, 128, 3, 1, 2), "C4": (56, 64, 128, 1, 0, 2),
    "C5": (28, 128, 128, 3, 1, 1), "C6": (28, 128, 256, 3, 1, 2), "C7": (28, 128, 256, 1, 0, 2),
    "C8": (14, 256, 256, 3, 1, 1), "C9": (14, 256, 512, 3, 1, 2), "C10": (14, 256, 512, 1, 0, 2),
    "C11": (7, 512, 512, 3, 1, 1),
}


def conv_layer(env, name: str, batch: int, rng):
    """``(schedule, args, inputs, expected int8 NCHW output)`` of one layer with a bias epilogue."""
    h, ci, co, k, p, s = RESNET18_CONV[name]
    data = te.placeholder((batch // env.BATCH, ci // env.BLOCK_IN, h, h, env.BATCH, env.BLOCK_IN), name="data",
                          dtype=env.inp_dtype)
    kernel = te.placeholder((co // env.BLOCK_OUT, ci // env.BLOCK_IN, k, k, env.BLOCK_OUT, env.BLOCK_IN),
                            name="kernel", dtype=env.wgt_dtype)
    bias = te.placeholder((batch // env.BATCH, co // env.BLOCK_OUT, 1, 1, env.BATCH, env.BLOCK_OUT), name="bias",
                          dtype=env.acc_dtype)
    res = topi.requantize(topi.conv2d_packed(data, kernel, s, p, env.acc_dtype), bias)
    sched = topi.schedule_conv2d_packed(res)
    a = rng.integers(-128, 128, size=(batch, ci, h, h)).astype(np.int8)
    w = rng.integers(-128, 128, size=(co, ci, k, k)).astype(np.int8)
    b = rng.integers(-(1 << 14), 1 << 14, size=(co,)).astype(np.int32)
    packed_bias = np.concatenate([topi.pack_bias(b, env.BATCH, env.BLOCK_OUT)] * (batch // env.BATCH))
    inputs = {
        "data": topi.pack_nchw(a, env.BATCH, env.BLOCK_IN),
        "kernel": topi.pack_oihw(w, env.BLOCK_OUT, env.BLOCK_IN),
        "bias": packed_bias,
    }
    acc = topi.conv2d_nchw_python(a, w, s, p)
    expect = np.clip((acc.astype(np.int32) >> 8) + b.reshape(1, -1, 1, 1), 0, 127).astype(np.int8)
    return sched, [data, kernel, bias, res], inputs, expect


def dense_layer(env, batch: int, in_features: int, out_features: int, rng):
    """``(schedule, args, inputs, expected int8 (batch, out_features))``; the output count is padded
    to a multiple of BLOCK_OUT with zero weight rows and the extra columns are dropped by the caller."""
    padded = -(-out_features // env.BLOCK_OUT) * env.BLOCK_OUT
    data = te.placeholder((batch // env.BATCH, in_features // env.BLOCK_IN, env.BATCH, env.BLOCK_IN), name="data",
                          dtype=env.inp_dtype)
    weight = te.placeholder((padded // env.BLOCK_OUT, in_features // env.BLOCK_IN, env.BLOCK_OUT, env.BLOCK_IN),
                            name="weight", dtype=env.wgt_dtype)
    res = topi.requantize(topi.dense_packed(data, weight, env.acc_dtype))
    sched = topi.schedule_dense_packed(res)
    a = rng.integers(-128, 128, size=(batch, in_features)).astype(np.int8)
    w = rng.integers(-128, 128, size=(out_features, in_features)).astype(np.int8)
    inputs = {"data": topi.pack_nc(a, env.BATCH, env.BLOCK_IN),
              "weight": topi.pack_nc(topi.pad_to_multiple(w, 0, env.BLOCK_OUT), env.BLOCK_OUT, env.BLOCK_IN)}
    expect = np.clip(topi.dense_python(a, w).astype(np.int32) >> 8, 0, 127).astype(np.int8)
    return sched, [data, weight, res], inputs, expect
