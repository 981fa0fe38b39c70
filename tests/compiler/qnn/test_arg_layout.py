"""ArgLayout without running anything: roles, packed shapes, padding and cropping, the bias map."""

from __future__ import annotations

import numpy as np
import pytest

from vta.topi import qnn


def _spec(**kw):
    base = {"batch": 1, "in_channels": 20, "out_channels": 24, "height": 5, "width": 6, "kernel_h": 3,
            "kernel_w": 3, "strides": (1, 1), "padding": (1, 1, 1, 1), "input_zero_point": 0,
            "requant": qnn.Requant.from_scale(0.01)}
    base.update(kw)
    return qnn.QConv2DSpec(**base)


def test_conv_roles_and_packed_shapes(qenv):
    _, layout = qnn.build_qconv2d(_spec(), "c")
    b, bi, bo = qenv.BATCH, qenv.BLOCK_IN, qenv.BLOCK_OUT
    assert layout.roles == ["data", "weight", "bias", "out"]
    assert layout.arg("data").shape == (1, 2, 5, 6, b, bi) and layout.arg("data").dtype == "int8"
    assert layout.arg("weight").shape == (2, 2, 3, 3, bo, bi)
    assert layout.arg("bias").shape == (1, 2, 1, 1, b, bo) and layout.arg("bias").dtype == "int32"
    assert layout.arg("out").shape == (1, 2, 5, 6, b, bo)
    assert [a.role for a in layout.params] == ["weight", "bias"] and [a.role for a in layout.inputs] == ["data"]
    with pytest.raises(KeyError, match="residual"):
        layout.arg("residual")


def test_packing_pads_with_zeros_and_unpack_crops(qenv):
    _, layout = qnn.build_qconv2d(_spec(), "c")
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, size=(1, 20, 5, 6)).astype(np.int8)
    px = layout.pack("data", x)
    # channel 17 of the plain array is lane 1 of block 1; channels 20..31 are zero
    assert px[0, 1, 2, 3, 0, 1] == x[0, 17, 2, 3] and not px[0, 1, :, :, :, 4:].any()
    w = rng.integers(-128, 128, size=(24, 20, 3, 3)).astype(np.int8)
    pw = layout.pack("weight", w)
    assert pw[1, 1, 2, 0, 3, 2] == w[19, 18, 2, 0] and not pw[1, :, :, :, 8:].any() and not pw[:, 1, ..., 4:].any()
    y = np.arange(np.prod(layout.arg("out").shape)).reshape(layout.arg("out").shape).astype(np.int8)
    plain = layout.unpack(y)
    assert plain.shape == (1, 24, 5, 6) and plain[0, 18, 4, 5] == y[0, 1, 4, 5, 0, 2]
    with pytest.raises(ValueError, match="weight shape"):
        layout.pack("weight", w[:, :16])


def test_bias_map_of_a_nonzero_input_zero_point(env):
    spec = _spec(in_channels=16, out_channels=16, input_zero_point=-7, padding=(1, 0, 2, 1))
    _, layout = qnn.build_qconv2d(spec, "c")
    assert layout.needs_border_map and layout.arg("bias").shape == (1, 1, 6, 5, 1, 16)
    rng = np.random.default_rng(1)
    w = rng.integers(-128, 128, size=(16, 16, 3, 3)).astype(np.int8)
    bias = np.arange(16, dtype=np.int32)
    pb = layout.pack("bias", bias, weight=w)
    # Output (0, 0): kernel row 0 falls into the top padding, no column is padded on the left.
    want00 = bias + (-7) * w[:, :, 0, :].astype(np.int64).sum(axis=(1, 2))
    np.testing.assert_array_equal(pb[0, 0, 0, 0, 0], want00)
    # An interior pixel has no correction.
    np.testing.assert_array_equal(pb[0, 0, 2, 2, 0], bias)
    with pytest.raises(ValueError, match="needs the weights"):
        layout.pack("bias", bias)
    assert set(layout.pack_params(w, bias)) == {"weight", "bias"}


def test_per_channel_vectors_are_packed_from_the_spec(env):
    rq = qnn.Requant.from_scale(np.linspace(0.001, 0.02, 24))
    _, layout = qnn.build_qconv2d(_spec(requant=rq), "c")
    m = layout.pack("multiplier")
    assert m.shape == (1, 2, 1, 1, 1, 16) and m[0, 1, 0, 0, 0, 3] == rq.multiplier[19] and m[0, 1, 0, 0, 0, 9] == 0
    # clipped right after: the clamped form (per-channel bounds, then one multiply per channel)
    assert layout.has("clamp_lo") and layout.has("clamp_hi") and not layout.has("multiplier_lo")
    s1, s2 = rq.split_shifts(bounded=True)
    assert layout.pack("shift")[0, 0, 0, 0, 0, 5] == s1[5] and s2 >= 1
    lo, hi = layout.pack("clamp_lo")[0, 0, 0, 0, 0], layout.pack("clamp_hi")[0, 0, 0, 0, 0]
    m, s = rq.multiplier[:16].astype(np.int64), rq.shift[:16].astype(np.int64)
    half = np.left_shift(1, s - 1)
    # the bounds requantise to the clip bounds, and one step inside does not saturate
    np.testing.assert_array_equal((hi * m + half) >> s, 127)
    np.testing.assert_array_equal(((hi - 1) * m + half) >> s, 126)
    np.testing.assert_array_equal((lo * m + half) >> s, -128)
    assert (hi * m < 2 ** 31).all() and (lo * m >= -2 ** 31).all()


def test_builders_refuse_a_configuration_that_is_not_int8():
    from tests.conftest import make_env
    from vta.errors import ScheduleError

    with make_env("narrow.json") as narrow:
        with pytest.raises(ScheduleError, match="8-bit inputs and weights"):
            qnn.build_qconv2d(_spec(), "c", env=narrow)
        with pytest.raises(ScheduleError, match="INP_WIDTH=4"):
            qnn.build_maxpool(qnn.MaxPoolSpec(1, 16, 4, 4), "m")
