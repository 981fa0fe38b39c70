"""Strided one-tap convolutions (1x1 with stride 2 or 3, the projections of ResNet-18): the
input load moves only the rows the kernel reads (``vta.topi.conv2d`` module docstring).

Each case runs on fsim against a NumPy oracle written here (explicit loops over the output
pixels and the input channels in int64, then ``clip((acc >> shift) + bias, 0, 127)``), with
explicit tilings whose spatial tiles are ragged or not, virtual threads, odd input sizes and
non-square strides; the fused quantized convolution (:func:`vta.topi.qnn.build_qconv2d`) with
its chosen tiling too. The instruction stream of a stride-2 1x1 convolution is then checked:
its input LOADs read rows two input rows apart and move half the rows of the full window.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import make_env
from vta import isa, te, topi
from vta.build import build
from vta.testing.device_run import Input, Output, run_built
from vta.topi import Conv2DTiling
from vta.topi.tiling import Conv2DWorkload, conv2d_footprint

from .fsim_run import build_and_run

#: name -> (input-channel blocks, output-channel blocks, height, width, strides, padding
#: (top, left, bottom, right), tiling)
CASES = {
    # ResNet's projection in small: 8 x 8 -> 4 x 4, one tile
    "s2_8x8_whole": (2, 2, 8, 8, (2, 2), (0, 0, 0, 0), Conv2DTiling(4, 4, 2, 1)),
    # odd input (9 x 9 -> 5 x 5): ragged row and column tiles (2 and 3 of 5)
    "s2_9x9_ragged": (2, 3, 9, 9, (2, 2), (0, 0, 0, 0), Conv2DTiling(2, 3, 1, 2)),
    # stride 3 (10 x 10 -> 4 x 4): the last row of the input is read, 3 tiles of rows (one ragged)
    "s3_10x10_ragged": (3, 2, 10, 10, (3, 3), (0, 0, 0, 0), Conv2DTiling(3, 4, 2, 1)),
    # stride 3 (11 x 7 -> 4 x 3), non-square, a ragged reduction chunk (3 blocks by 2)
    "s3_11x7": (3, 1, 11, 7, (3, 3), (0, 0, 0, 0), Conv2DTiling(4, 3, 1, 2)),
    # rows strided, columns not (stride (2, 1)); two virtual threads over the rows
    "s2x1_12x5_threads": (1, 2, 12, 5, (2, 1), (0, 0, 0, 0), Conv2DTiling(3, 5, 2, 1, 1, 2)),
    # columns strided only (stride (1, 2)): the rows are all read, nothing subsampled
    "s1x2_6x9": (2, 2, 6, 9, (1, 2), (0, 0, 0, 0), Conv2DTiling(6, 5, 1, 1)),
    # padded columns under subsampled rows (the padding is inlined into the subsampled load)
    "s2_padded_columns": (1, 2, 9, 6, (2, 2), (0, 1, 0, 1), Conv2DTiling(2, 4, 1, 1, 2, 1)),
    # padded rows: the window keeps every row (a subsampled padded load is not supported)
    "s2_padded_rows": (2, 1, 7, 7, (2, 2), (1, 0, 1, 0), Conv2DTiling(3, 4, 1, 1)),
}


def _oracle(a, w, bias, strides, pads, shift):
    """``clip((conv(a, w) >> shift) + bias, 0, 127)`` of a 1x1 kernel, NCHW / OI11, int64."""
    n, ci, h, wd = a.shape
    co = w.shape[0]
    pt, pl, pb, pr = pads
    sh, sw = strides
    ap = np.zeros((n, ci, h + pt + pb, wd + pl + pr), np.int64)
    ap[:, :, pt:pt + h, pl:pl + wd] = a
    oh, ow = (h + pt + pb - 1) // sh + 1, (wd + pl + pr - 1) // sw + 1
    acc = np.zeros((n, co, oh, ow), np.int64)
    wk = w[:, :, 0, 0].astype(np.int64)
    for y in range(oh):
        for x in range(ow):
            for c in range(ci):
                acc[:, :, y, x] += ap[:, c, y * sh, x * sw][:, None] * wk[None, :, c]
    return np.clip((acc >> shift) + bias.reshape(1, -1, 1, 1), 0, 127).astype(np.int8)


def _pack_data(a, env):
    n, c, h, w = a.shape
    b, bi = env.BATCH, env.BLOCK_IN
    return np.ascontiguousarray(a.reshape(n // b, b, c // bi, bi, h, w).transpose(0, 2, 4, 5, 1, 3))


def _unpack(p):
    n0, c0, h, w, b, c = p.shape
    return p.transpose(0, 4, 1, 5, 2, 3).reshape(n0 * b, c0 * c, h, w)


def _case(env, name, seed=0):
    ci_b, co_b, h, w, strides, pads, tiling = CASES[name]
    rng = np.random.default_rng(seed)
    bi, bo, b = env.BLOCK_IN, env.BLOCK_OUT, env.BATCH
    ci, co = ci_b * bi, co_b * bo
    data = te.placeholder((1, ci_b, h, w, b, bi), name="data", dtype=env.inp_dtype)
    kernel = te.placeholder((co_b, ci_b, 1, 1, bo, bi), name="kernel", dtype=env.wgt_dtype)
    bias = te.placeholder((1, co_b, 1, 1, b, bo), name="bias", dtype=env.acc_dtype)
    conv = topi.conv2d_packed(data, kernel, strides, pads, env.acc_dtype)
    res = topi.requantize(conv, bias, shift=env.WGT_WIDTH)
    s = topi.schedule_conv2d_packed(res, tiling)
    a = rng.integers(-128, 128, size=(b, ci, h, w)).astype(np.int8)
    wt = rng.integers(-128, 128, size=(co, ci, 1, 1)).astype(np.int8)
    bv = rng.integers(-32, 32, size=co).astype(np.int32)
    want = _oracle(a, wt, bv, strides, pads, env.WGT_WIDTH)
    inputs = {
        "data": _pack_data(a, env),
        "kernel": np.ascontiguousarray(wt.reshape(co_b, bo, ci_b, bi, 1, 1).transpose(0, 2, 4, 5, 1, 3)),
        "bias": np.ascontiguousarray(np.broadcast_to(bv.reshape(1, co_b, 1, 1, 1, bo), (1, co_b, 1, 1, b, bo))),
    }
    return s, [data, kernel, bias, res], inputs, res.name, want


@pytest.mark.parametrize("config", ("vta_config.json", "batch2.json"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_strided_1x1_conv_bit_exact(config, name, tmp_path):
    with make_env(config) as env:
        s, args, inputs, out_name, want = _case(env, name)
        outs, _, _ = build_and_run(s, args, inputs, tmp_path)
    assert len(np.unique(want)) >= 3, "weak oracle"
    np.testing.assert_array_equal(_unpack(outs[out_name]), want)


def _input_loads(env, name, tmp_path):
    """The input LOADs (memory type INP, moving data) a call of case ``name`` runs, and fsim's
    statistics."""
    s, args, inputs, _, want = _case(env, name)
    mod = build(s, args, "ext_dev", name="strided")
    spec = [Input(inputs[t.name]) if t.name in inputs else Output(tuple(int(x) for x in t.shape), t.dtype)
            for t in args]
    run = run_built(mod, spec, tmp_path, capture=True)
    np.testing.assert_array_equal(_unpack(run.outputs[-1]), want)
    loads = [i for i in run.instructions if isinstance(i, isa.MemInsn) and i.opcode == isa.OPCODE_LOAD
             and i.memory_type == isa.MEM_INP and i.x_size > 0]   # not the no-ops of the dependency tokens
    return loads, run.stats[0]


def test_stride2_input_loads_move_half_the_rows(tmp_path):
    """8 x 8 input, 4 x 4 output in one tile, 2 input blocks: each block's LOAD reads 4 rows of
    7 pixels (the columns from the first to the last one read) 16 pixels apart in DRAM, where
    the full window is 7 rows of 7."""
    with make_env() as env:
        loads, stats = _input_loads(env, "s2_8x8_whole", tmp_path)
        elem = env.INP_ELEM_BYTES
    assert len(loads) == 2
    for ld in loads:
        assert (ld.y_size, ld.x_size, ld.x_stride) == (4, 7, 16)
        assert (ld.y_pad_0, ld.y_pad_1, ld.x_pad_0, ld.x_pad_1) == (0, 0, 0, 0)
    rows = sum(ld.y_size for ld in loads)
    assert rows == 2 * 4                                   # was 2 x 7: (4 - 1) x 2 + 1 rows
    moved = sum(ld.y_size * ld.x_size for ld in loads) * elem
    assert moved == stats["inp_load_nbytes"] == 2 * 4 * 7 * elem


@pytest.mark.parametrize("name, row_stride, tiles", (("s2_9x9_ragged", 18, 2 * 3 * 2), ("s3_10x10_ragged", 30, 3)))
def test_ragged_rows_are_zero_filled_not_loaded(name, row_stride, tiles, tmp_path):
    """The last row tile overhangs the output (5 rows in tiles of 2, 4 in tiles of 3): the rows
    past the input are pad rows of the load (y_pad_1), not DRAM rows, and every output row's
    input row is read once per (column tile, channel tile, input block): ``tiles`` of them."""
    with make_env() as env:
        loads, stats = _input_loads(env, name, tmp_path)
        elem = env.INP_ELEM_BYTES
    out_rows = -(-CASES[name][2] // CASES[name][4][0])
    assert {ld.x_stride for ld in loads} == {row_stride}   # stride x width: rows s apart
    assert sum(ld.y_pad_1 for ld in loads) > 0
    assert sum(ld.y_size for ld in loads) == out_rows * tiles
    assert sum(ld.y_size * ld.x_size for ld in loads) * elem == stats["inp_load_nbytes"]


def test_footprint_counts_the_subsampled_window():
    """The tiler budgets ``tile_h`` input rows for a subsampled window, the full span otherwise."""
    t = Conv2DTiling(7, 14, 8, 1)
    base = Conv2DWorkload(1, 4, 8, 56, 56, 1, 1, (2, 2), (0, 0))
    sub = Conv2DWorkload(1, 4, 8, 56, 56, 1, 1, (2, 2), (0, 0), subsampled_rows=True)
    assert base.window(7, 14) == (13, 27) and sub.window(7, 14) == (7, 27)
    assert conv2d_footprint(base, t)["inp"] == 13 * 27
    assert conv2d_footprint(sub, t)["inp"] == 7 * 27


def test_workload_of_a_strided_1x1_conv_is_subsampled():
    from vta.topi._traverse import classify
    from vta.topi.conv2d import CONV2D_TAG, conv2d_workload

    with make_env() as env:
        for name, rows in (("s2_8x8_whole", True), ("s1x2_6x9", False), ("s2_padded_rows", False),
                           ("s2_padded_columns", True)):
            ci_b, co_b, h, w, strides, pads, _ = CASES[name]
            data = te.placeholder((1, ci_b, h, w, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
            kernel = te.placeholder((co_b, ci_b, 1, 1, env.BLOCK_OUT, env.BLOCK_IN), name="kernel",
                                    dtype=env.wgt_dtype)
            conv = topi.conv2d_packed(data, kernel, strides, pads, env.acc_dtype)
            wl = conv2d_workload(classify(topi.requantize(conv), topi.CONV2D_TAG, "t").core)
            assert wl.subsampled_rows == rows, name
            assert (wl.height, wl.width, wl.stride) == (h, w, strides), name
            assert tuple(conv.op.attrs["strides"]) == strides
        assert CONV2D_TAG == topi.CONV2D_TAG


@pytest.mark.parametrize("stride", (2, 3))
def test_fused_qconv2d_strided_1x1_bit_exact(stride, tmp_path):
    """The fused quantized convolution (bias, fixed requant, int8 clip) with its chosen tiling,
    against a NumPy oracle of the requantisation (the ``fixed`` mode's definition)."""
    from vta.topi import qnn

    rng = np.random.default_rng(stride)
    ci, co, h = 48, 32, 3 * 5 + 2
    with make_env() as env:
        x = rng.integers(-32, 32, size=(env.BATCH, ci, h, h)).astype(np.int8)
        w = rng.integers(-16, 16, size=(co, ci, 1, 1)).astype(np.int8)
        bias = rng.integers(-512, 512, size=co).astype(np.int32)
        rq = qnn.Requant.from_scale(1.0 / 300.0, mode="fixed")
        spec = qnn.QConv2DSpec(env.BATCH, ci, co, h, h, 1, 1, (stride, stride), (0, 0, 0, 0), 0, rq, 0, (-128, 127))
        mod, layout = qnn.build_qconv2d(spec, "qconv_strided")
        packed = layout.pack_args(data=x, weight=w, bias=bias)
        run = run_built(mod, [*packed, Output.like(layout.empty_output())], tmp_path)
        got = layout.unpack(run.outputs[0])
    oh = (h - 1) // stride + 1
    acc = np.zeros((env.BATCH, co, oh, oh), np.int64)
    for y in range(oh):
        for xx in range(oh):
            acc[:, :, y, xx] = x[:, :, y * stride, xx * stride].astype(np.int64) @ w[:, :, 0, 0].T.astype(np.int64)
    acc += bias[None, :, None, None]
    m, s = int(rq.multiplier[0]), int(rq.shift[0])
    if s <= 15:
        acc = np.clip(acc, -(1 << 15) + 1, (1 << 15) - 1)
    want = np.clip((acc * m + (1 << (s - 1))) >> s, -128, 127)
    assert len(np.unique(want)) >= 5, "weak oracle"
    np.testing.assert_array_equal(got, want)


def test_four_virtual_threads_are_refused():
    """oc_nthread = h_nthread = 2 passed explicitly used to compute wrong outputs (or deadlock):
    the schedule pairs two virtual threads at most."""
    from vta.errors import ScheduleError

    with make_env() as env:
        data = te.placeholder((1, 2, 8, 8, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
        kernel = te.placeholder((4, 2, 1, 1, env.BLOCK_OUT, env.BLOCK_IN), name="kernel", dtype=env.wgt_dtype)
        res = topi.requantize(topi.conv2d_packed(data, kernel, 2, 0, env.acc_dtype))
        with pytest.raises(ScheduleError, match="4 virtual threads; at most 2"):
            topi.schedule_conv2d_packed(res, Conv2DTiling(2, 4, 2, 1, 2, 2))
