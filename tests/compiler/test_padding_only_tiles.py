"""Spatial tiles whose input window lies wholly in the padding (``Conv2DWorkload.padding_only_tile``).

Such a tile's input load would move zero rows or columns, which no LOAD instruction expresses:
an explicit tiling that makes one is refused when the schedule is built, and the choosers never
pick one. The rule (only the first and last tile per axis are checked) is compared with a
scalar oracle written here, which walks every tile, spans the input pixels its output pixels'
kernel taps read, and asks whether any pixel of the span is a real input pixel.
"""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

from tests.conftest import make_env
from vta import te, topi
from vta.errors import ScheduleError
from vta.topi import Conv2DTiling
from vta.topi.conv2d import choose_ragged_conv2d_tiling
from vta.topi.tiling import Conv2DWorkload, choose_conv2d_tiling, conv2d_candidates

from .fsim_run import build_and_run
from .test_strided_conv import _oracle, _pack_data, _unpack


def _axis_has_empty_tile(tile, out, size, stride, k, pad_before):
    """Whether some tile of ``tile`` output pixels (the last one possibly ragged) loads no input
    pixel along one axis. A tile's load moves the span from the first input pixel any of its
    taps reads to the last one (padding included), so it is empty when no pixel of that span
    lies in ``[0, size)``."""
    for start in range(0, out, tile):
        reads = [o * stride - pad_before + d for o in range(start, min(start + tile, out)) for d in range(k)]
        if not any(0 <= r < size for r in range(min(reads), max(reads) + 1)):
            return True
    return False


def _geometries():
    """Small convolution geometries with padding up to and past the kernel's reach."""
    for size, k, stride, pad_before, pad_after in product((1, 2, 5, 7), (1, 2, 3), (1, 2, 3), (0, 1, 2, 4),
                                                           (0, 1, 3)):
        if size + pad_before + pad_after >= k:
            yield size, k, stride, pad_before, pad_after


def test_rule_matches_the_scalar_oracle():
    checked = flagged = 0
    for (h, kh, sh, pt, pb), (w, kw, sw, pl, pr) in zip(_geometries(), reversed(list(_geometries())), strict=True):
        wl = Conv2DWorkload(1, 1, 1, h, w, kh, kw, (sh, sw), (pt, pl, pb, pr))
        for th in range(1, wl.out_height + 1):
            for tw in (1, wl.out_width):
                want = (_axis_has_empty_tile(th, wl.out_height, h, sh, kh, pt)
                        or _axis_has_empty_tile(tw, wl.out_width, w, sw, kw, pl))
                got = wl.padding_only_tile(th, tw)
                assert (got is not None) == want, (wl, th, tw, got)
                checked += 1
                flagged += want
    assert checked > 1000 and 0 < flagged < checked


def test_message_names_the_tile():
    # 7 rows, padding 1, a 1x1 kernel with stride 2: 5 output rows; tiles of 2 leave row 4 alone,
    # which reads input row 7 (the bottom padding)
    wl = Conv2DWorkload(1, 2, 1, 7, 7, 1, 1, (2, 2), (1, 0, 1, 0))
    msg = wl.padding_only_tile(2, 4)
    assert "output rows 4..4" in msg and "input row 7 of 7" in msg
    assert wl.padding_only_tile(3, 4) is None       # rows 3..4 read input rows 5 and 7


def _schedule(env, ci_b, co_b, h, w, strides, pads, tiling):
    data = te.placeholder((1, ci_b, h, w, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
    kernel = te.placeholder((co_b, ci_b, 1, 1, env.BLOCK_OUT, env.BLOCK_IN), name="kernel", dtype=env.wgt_dtype)
    bias = te.placeholder((1, co_b, 1, 1, env.BATCH, env.BLOCK_OUT), name="bias", dtype=env.acc_dtype)
    res = topi.requantize(topi.conv2d_packed(data, kernel, strides, pads, env.acc_dtype), bias, shift=env.WGT_WIDTH)
    return topi.schedule_conv2d_packed(res, tiling), [data, kernel, bias, res]


def test_explicit_tiling_is_refused_when_built():
    with make_env() as env:
        with pytest.raises(ScheduleError, match=r"output rows 4\.\.4 reads only padding"):
            _schedule(env, 2, 1, 7, 7, (2, 2), (1, 0, 1, 0), Conv2DTiling(2, 4, 1, 1))
        with pytest.raises(ScheduleError, match=r"output columns 0\.\.0 reads only padding"):
            _schedule(env, 1, 1, 5, 5, (1, 1), (0, 2, 0, 0), Conv2DTiling(5, 1, 1, 1))


def test_choosers_skip_padding_only_tiles():
    with make_env() as env:
        # a 1x1 kernel with padding 1 on every side: the outermost output rows and columns read
        # only padding, so tiles of one pixel there are out
        wl = Conv2DWorkload(1, 2, 2, 7, 7, 1, 1, (1, 1), (1, 1, 1, 1))
        cands = list(conv2d_candidates(env, wl))
        assert cands and all(wl.padding_only_tile(t.tile_h, t.tile_w) is None for t in cands)
        assert not any(t.tile_h == 1 for t in cands)
        for t in (choose_conv2d_tiling(env, wl), choose_ragged_conv2d_tiling(env, wl)):
            assert wl.padding_only_tile(t.tile_h, t.tile_w) is None


def test_all_padding_convolution_is_refused():
    """One input row, padding 5 above, stride 10: the only output row reads only padding."""
    with make_env() as env:
        wl = Conv2DWorkload(1, 1, 1, 1, 4, 1, 1, (10, 1), (5, 0, 0, 0))
        with pytest.raises(ScheduleError, match="even with the whole output in one tile"):
            choose_conv2d_tiling(env, wl)


@pytest.mark.parametrize("tiling", (Conv2DTiling(3, 5, 1, 1), Conv2DTiling(3, 3, 1, 1, 1, 2), None))
def test_padding_past_the_kernel_runs_bit_exact(tiling, tmp_path):
    """A 1x1 kernel with padding 1: a tiling whose tiles all read input, explicit or chosen, runs
    on fsim like the NumPy oracle (the border outputs are the bias alone)."""
    rng = np.random.default_rng(3)
    with make_env() as env:
        ci_b, co_b, h, w, strides, pads = 2, 1, 7, 7, (2, 2), (1, 1, 1, 1)
        s, args = _schedule(env, ci_b, co_b, h, w, strides, pads, tiling)
        ci, co, b = ci_b * env.BLOCK_IN, co_b * env.BLOCK_OUT, env.BATCH
        a = rng.integers(-128, 128, size=(b, ci, h, w)).astype(np.int8)
        wt = rng.integers(-128, 128, size=(co, ci, 1, 1)).astype(np.int8)
        bv = rng.integers(-32, 32, size=co).astype(np.int32)
        inputs = {
            "data": _pack_data(a, env),
            "kernel": np.ascontiguousarray(wt.reshape(co_b, env.BLOCK_OUT, ci_b, env.BLOCK_IN, 1, 1)
                                           .transpose(0, 2, 4, 5, 1, 3)),
            "bias": np.ascontiguousarray(np.broadcast_to(bv.reshape(1, co_b, 1, 1, 1, env.BLOCK_OUT),
                                                         (1, co_b, 1, 1, b, env.BLOCK_OUT))),
        }
        outs, _, _ = build_and_run(s, args, inputs, tmp_path)
    want = _oracle(a, wt, bv, strides, pads, env.WGT_WIDTH)
    assert len(np.unique(want)) >= 3, "weak oracle"
    np.testing.assert_array_equal(_unpack(outs[args[-1].name]), want)
