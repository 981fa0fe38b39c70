"""ResNet-18 on fsim: every conv2d layer after the first (C2...C11, bias epilogue) and the final
dense layer (512 -> 1000, padded to a multiple of BLOCK_OUT) plus the 128x128x128 dense of the
upstream benchmark, built with ``vta.topi`` and compared with plain-NumPy references.

Default configuration (batch 1) and BATCH=2 configuration (batch 2): every layer (about a
second each on fsim with the numba engine, so none is marked slow).
"""

from __future__ import annotations

import numpy as np
import pytest

from vta import te, topi
from vta.topi import Conv2DTiling, DenseTiling

from ..workloads import RESNET18_CONV, conv_layer, dense_layer
from .runner import run


@pytest.mark.parametrize("name", list(RESNET18_CONV))
def test_resnet18_conv_layer(env, tmp_path, name):
    sched, args, inputs, expect = conv_layer(env, name, 1, np.random.default_rng(7))
    outs, stats = run(sched, args, inputs, tmp_path, name="conv2d")
    np.testing.assert_equal(topi.unpack_nchw(outs["res"]), expect)
    h, ci, co, k, p, s = RESNET18_CONV[name]
    oh = (h + 2 * p - k) // s + 1
    # Every output tile is computed once: one GEMM per (tile, input block, kernel tap).
    assert stats["gemm_counter"] == (co // 16) * oh * oh * (ci // 16) * k * k
    assert stats["out_store_nbytes"] == co * oh * oh


@pytest.mark.parametrize("name", list(RESNET18_CONV))
def test_resnet18_conv_layer_batch2(batch2_env, tmp_path, name):
    sched, args, inputs, expect = conv_layer(batch2_env, name, 2, np.random.default_rng(8))
    outs, _ = run(sched, args, inputs, tmp_path, name="conv2d")
    np.testing.assert_equal(topi.unpack_nchw(outs["res"]), expect)


@pytest.mark.parametrize("config", ["env", "batch2_env"])
@pytest.mark.parametrize("shape", [(512, 1000), (128, 128)], ids=["fc1000", "dense128"])
def test_resnet18_dense(request, tmp_path, config, shape):
    env = request.getfixturevalue(config)
    in_features, out_features = shape
    batch = env.BATCH if out_features == 1000 else 128
    sched, args, inputs, expect = dense_layer(env, batch, in_features, out_features, np.random.default_rng(9))
    outs, stats = run(sched, args, inputs, tmp_path, name="dense")
    np.testing.assert_equal(topi.unpack_nc(outs["res"])[:, :out_features], expect)
    padded = -(-out_features // env.BLOCK_OUT) * env.BLOCK_OUT
    assert stats["out_store_nbytes"] == batch * padded


THREADED = [  # (config fixture, layer, tiling): both kinds of virtual threads, padded and 1x1 layers
    ("env", "C8", Conv2DTiling(7, 14, 4, 2, oc_nthread=2)),
    ("env", "C5", Conv2DTiling(7, 28, 4, 2, h_nthread=2)),
    ("env", "C4", Conv2DTiling(7, 7, 4, 2, oc_nthread=2)),
    ("batch2_env", "C8", Conv2DTiling(7, 14, 4, 2, h_nthread=2)),
    ("batch2_env", "C11", Conv2DTiling(7, 7, 8, 4, oc_nthread=2)),
]


@pytest.mark.parametrize("config, name, tiling", THREADED, ids=[f"{c}-{n}-{t.oc_nthread}x{t.h_nthread}"
                                                                for c, n, t in THREADED])
def test_resnet18_conv_layer_with_virtual_threads(request, tmp_path, config, name, tiling):
    env = request.getfixturevalue(config)
    _, args, inputs, expect = conv_layer(env, name, env.BATCH, np.random.default_rng(10))
    sched = topi.schedule_conv2d_packed(args[-1], tiling)
    outs, _ = run(sched, args, inputs, tmp_path, name="conv2d")
    np.testing.assert_equal(topi.unpack_nchw(outs["res"]), expect)


@pytest.mark.parametrize("config", ["env", "batch2_env"])
def test_dense_with_virtual_threads(request, tmp_path, config):
    env = request.getfixturevalue(config)
    _, args, inputs, expect = dense_layer(env, 128, 128, 128, np.random.default_rng(11))
    sched = topi.schedule_dense_packed(args[-1], DenseTiling(64 // env.BATCH, 2, 4, oc_nthread=2))
    outs, _ = run(sched, args, inputs, tmp_path, name="dense")
    np.testing.assert_equal(topi.unpack_nc(outs["res"]), expect)


@pytest.mark.parametrize("config, batch", [("env", 2), ("batch2_env", 4)])
def test_conv_layer_with_several_batch_blocks(request, tmp_path, config, batch):
    env = request.getfixturevalue(config)
    sched, args, inputs, expect = conv_layer(env, "C11", batch, np.random.default_rng(12))
    outs, _ = run(sched, args, inputs, tmp_path, name="conv2d")
    np.testing.assert_equal(topi.unpack_nchw(outs["res"]), expect)


@pytest.mark.parametrize("name", ["C4", "C8", "C11"])
def test_conv_layer_on_32_wide_blocks(block32_env, tmp_path, name):
    sched, args, inputs, expect = conv_layer(block32_env, name, 1, np.random.default_rng(13))
    outs, _ = run(sched, args, inputs, tmp_path, name="conv2d")
    np.testing.assert_equal(topi.unpack_nchw(outs["res"]), expect)


def test_fc1000_on_32_wide_blocks(block32_env, tmp_path):
    sched, args, inputs, expect = dense_layer(block32_env, 1, 512, 1000, np.random.default_rng(14))
    outs, _ = run(sched, args, inputs, tmp_path, name="dense")
    np.testing.assert_equal(topi.unpack_nc(outs["res"])[:, :1000], expect)


@pytest.mark.parametrize("config", ["env", "batch2_env"])
def test_conv_layer_with_a_residual_input(request, tmp_path, config):
    """A ResNet basic block's tail: (conv >> 8) + residual, clipped; the residual is a whole
    accumulator tile per output tile, which the tiling accounts for."""
    env = request.getfixturevalue(config)
    h, ci, co, k, p, s = RESNET18_CONV["C8"]
    data = te.placeholder((1, ci // 16, h, h, env.BATCH, 16), name="data", dtype=env.inp_dtype)
    kernel = te.placeholder((co // 16, ci // 16, k, k, 16, 16), name="kernel", dtype=env.wgt_dtype)
    conv = topi.conv2d_packed(data, kernel, s, p, env.acc_dtype)
    skip = te.placeholder(tuple(int(d) for d in conv.shape), name="skip", dtype=env.acc_dtype)
    shr = te.compute(conv.shape, lambda *i: conv(*i) >> 8, name="shr", tag="elemwise")
    add = te.compute(conv.shape, lambda *i: shr(*i) + skip(*i), name="add", tag="elemwise")
    lo = te.compute(conv.shape, lambda *i: te.min(add(*i), 127), name="lo", tag="elemwise")
    hi = te.compute(conv.shape, lambda *i: te.max(lo(*i), 0), name="hi", tag="elemwise")
    res = te.compute(conv.shape, lambda *i: hi(*i).astype("int8"), name="res", tag="elemwise")
    sched = topi.schedule_conv2d_packed(res)
    rng = np.random.default_rng(15)
    a = rng.integers(-128, 128, size=(env.BATCH, ci, h, h)).astype(np.int8)
    w = rng.integers(-128, 128, size=(co, ci, k, k)).astype(np.int8)
    r = rng.integers(-200, 200, size=(env.BATCH, co, h, h)).astype(np.int32)
    inputs = {"data": topi.pack_nchw(a), "kernel": topi.pack_oihw(w), "skip": topi.pack_nchw(r, env.BATCH, 16)}
    outs, stats = run(sched, [data, kernel, skip, res], inputs, tmp_path, name="conv2d")
    acc = topi.conv2d_nchw_python(a, w, s, p)
    expect = np.clip((acc.astype(np.int32) >> 8) + r, 0, 127).astype(np.int8)
    np.testing.assert_equal(topi.unpack_nchw(outs["res"]), expect)
    assert stats["acc_load_nbytes"] == r.nbytes     # the residual is loaded once
