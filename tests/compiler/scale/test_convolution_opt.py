"""The "convolution_opt" tutorial (ResNet-18 layer 14x14x256 -> 256, 3x3, pad 1) on fsim:
``vta.topi.nn.pad``, packed weights, two virtual threads on output channels, tensorize, ALU shift
and clip. The output equals NumPy and the statistics equal upstream's printed values (section 3).
The tutorial's tiles are sized for the default configuration (they overflow BATCH=2's
accumulator; the packed schedules of ``vta.topi`` cover that configuration).
"""

from __future__ import annotations

import numpy as np

from vta import topi

from .. import workloads as W
from .runner import run

UPSTREAM_STATS = {"inp_load_nbytes": 114688, "wgt_load_nbytes": 1179648, "acc_load_nbytes": 0,
                  "uop_load_nbytes": 1144, "out_store_nbytes": 50176, "gemm_counter": 451584, "alu_counter": 9408}


def test_convolution_opt_tutorial_matches_numpy_and_upstream_statistics(env, tmp_path):
    # The tutorial's layer: 1 x 256 x 14 x 14 input, 256 3x3 kernels, padding 1, stride 1.
    n, ci, co, h, w, kh, kw = 1, 256, 256, 14, 14, 3, 3
    wl = W.conv2d(env, height=h, width=w, in_channels=ci, out_channels=co, pad=topi.nn.pad)
    rng = np.random.default_rng(0)
    data_np = rng.integers(-128, 128, size=(n, ci, h, w)).astype(np.int8)
    kernel_np = rng.integers(-128, 128, size=(co, ci, kh, kw)).astype(np.int8)
    inputs = {"data": topi.pack_nchw(data_np, env.BATCH, env.BLOCK_IN),
              "kernel": topi.pack_oihw(kernel_np, env.BLOCK_OUT, env.BLOCK_IN)}
    outs, stats = run(wl.schedule, wl.args, inputs, tmp_path, name="my_conv")
    ref = np.clip(topi.conv2d_nchw_python(data_np, kernel_np, (1, 1), (1, 1)) >> env.INP_WIDTH, 0, 127)
    np.testing.assert_equal(topi.unpack_nchw(outs["res"]), ref.astype(np.int8))
    assert stats == UPSTREAM_STATS
