"""Average pooling on the ALU, against an integer oracle written here."""

from __future__ import annotations

import numpy as np
import pytest

from vta.topi.qnn_avgpool import AvgPoolSpec, avgpool_requant, avgpool_unsupported_reason, build_avgpool

from . import oracle
from .conftest import run_op


def _want(x, spec):
    """Window sums of the centred pixels (Python integers), then ``round(sum * m / 2**s)``, the
    output zero point and the clip; a multiplier of 1/2 or more clamps the sum to +-(2**15 - 1)."""
    kh, kw = spec.pool_size
    sh, sw = spec.strides
    c = x.astype(np.int64) - spec.input_zero_point
    sums = np.zeros(spec.out_shape, dtype=np.int64)
    for i in range(spec.out_height):
        for j in range(spec.out_width):
            sums[:, :, i, j] = c[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw].sum(axis=(2, 3))
    m, s = int(spec.requant.multiplier[0]), int(spec.requant.shift[0])
    if s <= 15:
        sums = np.clip(sums, -32767, 32767)
    return np.clip(oracle.round_shift(sums, m, s) + spec.output_zero_point, *spec.clip).astype(np.int64)


@pytest.mark.parametrize("hw,pool,strides,zi,zo,scales,clip", [
    ((4, 96), (4, 96), (1, 1), -128, -128, (0.039, 0.0071), (-128, 127)),     # global, a 3*2^5 row: a tree
    ((7, 7), (7, 7), (1, 1), -112, -98, (0.024, 0.0119), (-128, 127)),         # global, prime sides
    ((3, 40), (3, 2), (3, 2), -124, -124, (0.37, 0.37), (-128, 127)),          # windowed, taps
    ((6, 6), (2, 2), (1, 1), 5, -3, (0.1, 0.02), (-50, 60)),                   # overlapping windows, a clip
])
def test_avgpool_equals_the_integer_oracle(qenv, tmp_path, hw, pool, strides, zi, zo, scales, clip):
    rng = np.random.default_rng(hw[0] * 100 + hw[1])
    count = pool[0] * pool[1]
    spec = AvgPoolSpec(qenv.BATCH, 24, hw[0], hw[1], pool, strides, zi,
                       avgpool_requant(scales[0], scales[1], count), zo, clip)
    assert avgpool_unsupported_reason(spec) is None
    x = rng.integers(-128, 128, (spec.batch, spec.channels, *hw)).astype(np.int8)
    mod, layout = build_avgpool(spec, "avgpool")
    out, stats = run_op(mod, layout, layout.pack_args(data=x), tmp_path)
    np.testing.assert_array_equal(layout.unpack(out), _want(x, spec))
    assert stats["gemm_counter"] == 0 and stats["alu_counter"] > 0


def test_avgpool_too_large_for_the_accumulator_is_declined():
    spec = AvgPoolSpec(1, 16, 64, 64, (64, 64), (1, 1), 0, avgpool_requant(0.1, 0.1, 64 * 64))
    assert "accumulator" in avgpool_unsupported_reason(spec)
    assert build_avgpool(spec, "big") is None
    with pytest.raises(ValueError, match="window"):
        AvgPoolSpec(1, 16, 4, 4, (5, 5), (1, 1), 0, avgpool_requant(0.1, 0.1, 25))
