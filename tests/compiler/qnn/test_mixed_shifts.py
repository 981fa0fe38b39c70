"""Per-channel multipliers on both sides of 1/2 with a wide accumulator: one ALU program
(clamp and left shift per channel, then one split product), against the tests' integer oracle."""

from __future__ import annotations

import numpy as np

from vta.topi import qnn
from vta.topi.qnn_requant import mixed_shift_form

from . import oracle
from .conftest import run_op


def _want(acc, rq, zo, clip):
    """The contract per channel: a shift <= 15 clamps the accumulator to +-(2**15 - 1) first."""
    out = np.empty(acc.shape, np.int64)
    for c in range(acc.shape[1]):
        m, s = int(rq.multiplier[c]), int(rq.shift[c])
        a = acc[:, c] if s > 15 else np.clip(acc[:, c], -32767, 32767)
        out[:, c] = oracle.round_shift(a, m, s)
    return np.clip(out + zo, *clip)


def test_conv_with_multipliers_on_both_sides_of_a_half(qenv, tmp_path):
    rng = np.random.default_rng(21)
    ci, co, hw = 16, 32, 5
    scale = np.where(np.arange(co) % 3 == 0, rng.uniform(0.5, 3.0, co), rng.uniform(1e-4, 5e-3, co))
    rq = qnn.Requant.from_scale(scale)
    assert mixed_shift_form(rq) is not None and qnn_clamp_form_absent(rq)
    clip = (0, 127)   # a ReLU
    spec = qnn.QConv2DSpec(qenv.BATCH, ci, co, hw, hw, 3, 3, (1, 1), 1, 0, rq, -3, clip)
    x = rng.integers(-128, 128, (qenv.BATCH, ci, hw, hw)).astype(np.int8)
    w = rng.integers(-127, 128, (co, ci, 3, 3)).astype(np.int8)
    bias = rng.integers(-30000, 30000, co).astype(np.int32)
    mod, layout = qnn.build_qconv2d(spec, "mixed")
    out, _ = run_op(mod, layout, layout.pack_args(data=x, weight=w, bias=bias), tmp_path)
    acc = oracle.conv_acc(x, w, bias, (1, 1), (1, 1, 1, 1), 0)
    np.testing.assert_array_equal(layout.unpack(out), _want(acc, rq, -3, clip))


def qnn_clamp_form_absent(rq):
    """The per-channel clamp form (one multiply) does not apply: the mixed form is needed."""
    from vta.topi.qnn_requant import channel_clamp

    return channel_clamp(rq, -128, 127) is None
