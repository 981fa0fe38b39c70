"""TVM's expression operators compiled and run on fsim: in host C code and in padded VTA loads.

Oracles: NumPy computes the host kernel's formula with its own operators; the padded
convolution's reference is the tutorial workload's NumPy convolution.
"""

from __future__ import annotations

import numpy as np

from vta import te
from vta.tir import op

from ..workloads import tutorials as W
from .conftest import check, run_case
from ..fsim_run import build_and_run


def test_host_kernel_with_every_operator(env, tmp_path):
    n = 12
    A = te.placeholder((n,), name="A", dtype="int32")
    U = te.placeholder((n,), name="U", dtype="uint8")

    def body(i):
        inside = op.all(i >= 2, i < n - 2)
        edge = (i < 1) | ~(i < n - 1)
        x = A[op.indexmod(i + 3, n)]
        return (op.if_then_else(inside, A[i - 2], 0)
                + op.if_then_else(edge, 1000, 0)
                + (x & 0x7F) - (x | 3) + (x ^ -5)
                + (~U[i]).astype("int32")          # uint8 complement: 255 - u, not -u-1
                + op.truncdiv(x, 3) * 100 + op.truncmod(x, 7)
                + op.indexdiv(x, 5) + op.abs(x)
                + op.if_then_else(op.any(x < -50, (i & 1) == 1), 7, 0)
                + (x >> 2) + (i << 3))

    B = te.compute((n,), body, name="B")
    s = te.create_schedule(B.op)
    rng = np.random.default_rng(0)
    a = rng.integers(-100, 100, n, dtype=np.int32)
    u = rng.integers(0, 256, n, dtype=np.uint8)
    outs, _, _ = build_and_run(s, [A, U, B], {"A": a, "U": u}, tmp_path, name="ops")

    i = np.arange(n, dtype=np.int64)
    a64 = a.astype(np.int64)
    x = a64[(i + 3) % n]
    inside = (i >= 2) & (i < n - 2)
    shifted = np.where(inside, a64[np.clip(i - 2, 0, n - 1)], 0)
    trunc_q = np.trunc(x / 3).astype(np.int64)
    trunc_r = x - np.trunc(x / 7).astype(np.int64) * 7
    expected = (shifted + np.where((i < 1) | (i >= n - 1), 1000, 0)
                + (x & 0x7F) - (x | 3) + (x ^ -5)
                + (255 - u.astype(np.int64))
                + trunc_q * 100 + trunc_r
                + np.floor_divide(x, 5) + np.abs(x)
                + np.where((x < -50) | (i % 2 == 1), 7, 0)
                + (x >> 2) + (i << 3))
    np.testing.assert_array_equal(outs["B"], expected.astype(np.int32))


def _pad_with_operators(x, before, after, name):
    """Zero padding whose condition is spelled with tir.all, ``&`` and ``~`` of a ``|``."""
    shape = tuple(int(s) + b + a for s, b, a in zip(x.shape, before, after, strict=True))

    def body(*idx):
        _, _, y, xx, _, _ = idx
        h, w = int(x.shape[2]), int(x.shape[3])
        rows = op.all(y >= before[2], y < h + before[2])
        cols = ~((xx < before[3]) | (xx >= w + before[3]))
        src = [v - b for v, b in zip(idx, before, strict=True)]
        return te.if_then_else(rows & cols, x(*src), 0)

    return te.compute(shape, body, name=name)


def test_padding_condition_written_with_operators_becomes_dma_padding(env, tmp_path):
    """The DMA pass turns the operator-built condition into padded loads (no CPU copy)."""
    case = W.conv2d(env, np.random.default_rng(5), height=4, width=4, in_channels=2 * env.BLOCK_IN,
                    out_channels=2 * env.BLOCK_OUT, oc_block=env.BLOCK_OUT, h_block=2, w_block=4, v_threads=2,
                    pad=_pad_with_operators)
    out, stats, mod = run_case(case, tmp_path, name="conv_ops")
    check(case, out)
    assert stats["gemm_counter"] > 0 and "VTABufferCPUPtr" not in mod.get_source()
