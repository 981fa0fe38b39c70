"""vta.topi building blocks: pad, packing, NumPy references, the tiling chooser's limits."""

from __future__ import annotations

import numpy as np
import pytest

from vta import te, topi
from vta.errors import ScheduleError
from vta.te.lower import schedule_to_primfunc
from vta.topi.tiling import (
    Conv2DTiling,
    Conv2DWorkload,
    DenseTiling,
    DenseWorkload,
    choose_conv2d_tiling,
    choose_dense_tiling,
    conv2d_footprint,
    dense_footprint,
)

from ..frontend.interp import run_primfunc
from ..workloads import RESNET18_CONV


def test_pad_matches_numpy_pad():
    data = te.placeholder((2, 3, 4), name="data", dtype="int32")
    out = topi.nn.pad(data, [0, 1, 2], [1, 0, 3], pad_value=-7, name="padded")
    assert out.op.tag == topi.PAD_TAG and "pad" in out.op.tag
    func = schedule_to_primfunc(te.create_schedule(out.op), [data, out])
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    got = np.zeros((3, 4, 9), dtype=np.int32)
    run_primfunc(func, [a, got])
    np.testing.assert_equal(got, np.pad(a, ((0, 1), (1, 0), (2, 3)), constant_values=-7))


def test_pad_after_defaults_to_before_and_rejects_bad_widths():
    data = te.placeholder((4, 4), name="data", dtype="int8")
    assert tuple(int(s) for s in topi.pad(data, [1, 2]).shape) == (6, 8)
    with pytest.raises(ValueError, match="has 1 entries"):
        topi.pad(data, [1])
    with pytest.raises(ValueError, match="non-negative"):
        topi.pad(data, [1, -1])


def test_packing_round_trips_and_places_elements():
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, size=(4, 32, 3, 5)).astype(np.int8)
    p = topi.pack_nchw(a, 2, 16)
    assert p.shape == (2, 2, 3, 5, 2, 16)
    # element (n, c, h, w) sits at (n // 2, c // 16, h, w, n % 2, c % 16)
    assert p[1, 1, 2, 4, 1, 3] == a[3, 19, 2, 4]
    np.testing.assert_equal(topi.unpack_nchw(p), a)
    w = rng.integers(-128, 128, size=(32, 48, 3, 3)).astype(np.int8)
    pw = topi.pack_oihw(w, 16, 16)
    assert pw.shape == (2, 3, 3, 3, 16, 16) and pw[1, 2, 0, 1, 5, 7] == w[21, 39, 0, 1]
    np.testing.assert_equal(topi.unpack_oihw(pw), w)
    m = rng.integers(-128, 128, size=(6, 32)).astype(np.int8)
    pm = topi.pack_nc(m, 2, 16)
    assert pm.shape == (3, 2, 2, 16) and pm[2, 1, 0, 4] == m[4, 20]
    np.testing.assert_equal(topi.unpack_nc(pm), m)
    with pytest.raises(ValueError, match="not a multiple"):
        topi.pack_nchw(a, 3, 16)


def test_pad_to_multiple_and_bias_packing():
    w = np.ones((1000, 16), dtype=np.int8)
    p = topi.pad_to_multiple(w, 0, 16)
    assert p.shape == (1008, 16) and not p[1000:].any()
    b = np.arange(32, dtype=np.int32)
    pb = topi.pack_bias(b, 2, 16)
    assert pb.shape == (1, 2, 1, 1, 2, 16) and pb[0, 1, 0, 0, 1, 3] == 19


def test_conv2d_reference_matches_scalar_loops():
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, size=(2, 3, 7, 6)).astype(np.int8)
    w = rng.integers(-128, 128, size=(4, 3, 3, 3)).astype(np.int8)
    got = topi.conv2d_nchw_python(a, w, (2, 1), (1, 2))
    x = np.pad(a.astype(np.int64), ((0, 0), (0, 0), (1, 1), (2, 2)))
    oh, ow = (7 + 2 - 3) // 2 + 1, (6 + 4 - 3) // 1 + 1
    want = np.zeros((2, 4, oh, ow), dtype=np.int64)
    for b in range(2):
        for o in range(4):
            for i in range(oh):
                for j in range(ow):
                    want[b, o, i, j] = int((x[b, :, 2 * i:2 * i + 3, j:j + 3] * w[o]).sum())
    np.testing.assert_equal(got, want)


def test_dense_reference_matches_scalar_loops():
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, size=(3, 5)).astype(np.int8)
    w = rng.integers(-128, 128, size=(4, 5)).astype(np.int8)
    want = [[sum(int(a[i, k]) * int(w[j, k]) for k in range(5)) for j in range(4)] for i in range(3)]
    np.testing.assert_equal(topi.dense_python(a, w), np.array(want))


def _capacity(env):
    # Entries of each buffer from the configuration's byte sizes (independent of env's derived depths).
    return {
        "inp": (1 << env.LOG_INP_BUFF_SIZE) // (env.BATCH * env.BLOCK_IN * env.INP_WIDTH // 8),
        "wgt": (1 << env.LOG_WGT_BUFF_SIZE) // (env.BLOCK_OUT * env.BLOCK_IN * env.WGT_WIDTH // 8),
        "acc": (1 << env.LOG_ACC_BUFF_SIZE) // (env.BATCH * env.BLOCK_OUT * env.ACC_WIDTH // 8),
        "uop": (1 << env.LOG_UOP_BUFF_SIZE) // 4,
    }


def _workload(env, name, bias=True):
    h, ci, co, k, p, s = RESNET18_CONV[name]
    return Conv2DWorkload(1, ci // env.BLOCK_IN, co // env.BLOCK_OUT, h, h, k, k, (s, s), (p, p), bias)


@pytest.mark.parametrize("config", ["env", "batch2_env"])
@pytest.mark.parametrize("name", sorted(RESNET18_CONV))
def test_chosen_conv2d_tiling_fits_the_active_buffers(request, config, name):
    env = request.getfixturevalue(config)
    wl = _workload(env, name)
    t = choose_conv2d_tiling(env, wl)
    oh = (wl.height + 2 * wl.padding[0] - wl.kh) // wl.stride[0] + 1
    assert oh % t.tile_h == 0 and oh % t.tile_w == 0
    assert wl.co_blocks % t.tile_co == 0 and wl.ci_blocks % t.tile_ci == 0
    cap = _capacity(env)
    # The footprint recomputed here from the tile sizes (module docstring of vta.topi.tiling).
    in_h = (t.tile_h - 1) * wl.stride[0] + wl.kh
    in_w = (t.tile_w - 1) * wl.stride[1] + wl.kw
    assert t.threads * t.tile_ci * in_h * in_w <= cap["inp"]
    assert t.threads * t.tile_ci * t.tile_co * wl.kh * wl.kw <= cap["wgt"]
    assert t.threads * (t.tile_co * t.tile_h * t.tile_w + t.tile_co) <= cap["acc"]
    assert conv2d_footprint(wl, t)["uop"] <= cap["uop"]


@pytest.mark.parametrize("config", ["env", "batch2_env"])
def test_chosen_dense_tiling_fits(request, config):
    env = request.getfixturevalue(config)
    wl = DenseWorkload(1, 512 // env.BLOCK_IN, 1008 // env.BLOCK_OUT, True)
    t = choose_dense_tiling(env, wl)
    cap = _capacity(env)
    assert t.threads * t.tile_ci * t.tile_b <= cap["inp"]
    assert t.threads * t.tile_ci * t.tile_co <= cap["wgt"]
    assert t.threads * (t.tile_b * t.tile_co + t.tile_co) <= cap["acc"]
    assert dense_footprint(wl, t)["uop"] <= cap["uop"]


def test_a_kernel_too_large_for_the_weight_buffer_is_reported(env):
    # 33 x 33 kernel: even one channel block needs 1089 weight entries; the buffer holds 1024.
    wl = Conv2DWorkload(1, 1, 1, 40, 40, 33, 33, (1, 1), (0, 0))
    with pytest.raises(ScheduleError, match=r"the wgt buffer overflows by 65 entries \(needs 1089, .* holds 1024\)"):
        choose_conv2d_tiling(env, wl)


def test_the_same_kernel_overflows_the_inp_buffer_first_on_batch2(batch2_env):
    wl = Conv2DWorkload(1, 1, 1, 40, 40, 33, 33, (1, 1), (0, 0))
    with pytest.raises(ScheduleError, match=r"the inp buffer overflows by 65 entries"):
        choose_conv2d_tiling(batch2_env, wl)


def test_an_explicit_tiling_that_overflows_the_accumulator_is_reported(env):
    h, ci, co, k, p, s = RESNET18_CONV["C2"]
    data = te.placeholder((1, ci // 16, h, h, 1, 16), name="data", dtype=env.inp_dtype)
    kernel = te.placeholder((co // 16, ci // 16, k, k, 16, 16), name="kernel", dtype=env.wgt_dtype)
    res = topi.requantize(topi.conv2d_packed(data, kernel, s, p, env.acc_dtype))
    # 4 x 56 x 56 accumulator tiles against 2048 entries.
    with pytest.raises(ScheduleError, match=r"acc buffer overflows by 10496 entries"):
        topi.schedule_conv2d_packed(res, Conv2DTiling(56, 56, 4, 1))
    # tiles may be ragged (tests/compiler/breadth) but not exceed their extent
    with pytest.raises(ScheduleError, match=r"tile_co=5 must lie in \[1, 4\]"):
        topi.schedule_conv2d_packed(res, Conv2DTiling(5, 56, 5, 1))


def test_schedules_reject_a_missing_epilogue_and_bad_operands(env):
    data = te.placeholder((1, 4, 8, 8, 1, 16), name="data", dtype=env.inp_dtype)
    kernel = te.placeholder((4, 4, 3, 3, 16, 16), name="kernel", dtype=env.wgt_dtype)
    conv = topi.conv2d_packed(data, kernel, 1, 1, env.acc_dtype)
    with pytest.raises(ScheduleError, match="add an epilogue"):
        topi.schedule_conv2d_packed(conv)
    with pytest.raises(ValueError, match="disagree on the input channels"):
        topi.conv2d_packed(data, te.placeholder((4, 2, 3, 3, 16, 16), name="k2", dtype=env.wgt_dtype), 1, 1)
    dense_data = te.placeholder((1, 4, 1, 16), name="d", dtype=env.inp_dtype)
    with pytest.raises(ValueError, match="disagree on the input features"):
        topi.dense_packed(dense_data, te.placeholder((2, 3, 16, 16), name="w", dtype=env.wgt_dtype))
    with pytest.raises(ScheduleError, match="tile_co=3 does not divide"):
        res = topi.requantize(
            topi.dense_packed(dense_data, te.placeholder((4, 4, 16, 16), name="w", dtype=env.wgt_dtype))
        )
        topi.schedule_dense_packed(res, DenseTiling(1, 3, 1))


def test_packing_defaults_to_the_active_configuration(batch2_env):
    a = np.arange(4 * 32 * 2 * 2, dtype=np.int8).reshape(4, 32, 2, 2)
    assert topi.pack_nchw(a).shape == (2, 2, 2, 2, 2, 16)
    w = np.zeros((32, 16, 3, 3), dtype=np.int8)
    assert topi.pack_oihw(w).shape == (2, 1, 3, 3, 16, 16)
    assert topi.pack_bias(np.zeros(32, dtype=np.int32)).shape == (1, 2, 1, 1, 2, 16)
