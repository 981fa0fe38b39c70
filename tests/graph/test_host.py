"""Host kernels against NumPy oracles written here (tests/graph/oracle.py)."""

from __future__ import annotations

import numpy as np
import pytest

from vta.errors import GraphError, UnsupportedOperatorError
from vta.graph.host import KERNELS, run_kernel

from .oracle import conv_int, fixed_point, requant

rng = np.random.default_rng(7)


def test_qnn_conv2d_with_zero_points_and_padding():
    x = rng.integers(0, 256, (1, 5, 6, 7)).astype(np.uint8)
    w = rng.integers(-128, 128, (4, 5, 3, 3)).astype(np.int8)
    attrs = dict(input_zero_point=131, kernel_zero_point=0, strides=(2, 2), padding=(1, 1, 1, 1),
                 dilation=(1, 1), groups=1)
    out = run_kernel("qnn.conv2d", attrs, [x, w])
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, conv_int(x.astype(np.int64), w, 131, 2, (1, 1, 1, 1)))


def test_requantize_rounding_and_saturation_per_channel():
    acc = rng.integers(-2 ** 20, 2 ** 20, (2, 3, 4, 4)).astype(np.int32)
    acc[0, 0, 0, 0] = 2 ** 30  # saturates
    in_scale = np.array([1e-3, 2e-3, 7e-4])
    attrs = dict(input_scale=in_scale.tolist(), input_zero_point=0, output_scale=0.05, output_zero_point=5,
                 out_dtype="int8", axis=1)
    out = run_kernel("qnn.requantize", attrs, [acc])
    assert out.dtype == np.int8 and out[0, 0, 0, 0] == 127
    np.testing.assert_array_equal(out, requant(acc, in_scale / 0.05, 5, -128, 127))


_ADD_ATTRS = dict(lhs_scale=0.02, lhs_zero_point=100, rhs_scale=0.03, rhs_zero_point=90, output_scale=0.04,
                 output_zero_point=120, out_dtype=None)


def test_qnn_add_without_onnxruntime_rescales_both_operands(monkeypatch):
    from vta.graph import ort_tables

    monkeypatch.setattr(ort_tables, "available", lambda: False)
    a = rng.integers(0, 256, (1, 4, 3, 3)).astype(np.uint8)
    b = rng.integers(0, 256, (1, 4, 3, 3)).astype(np.uint8)
    out = run_kernel("qnn.add", _ADD_ATTRS, [a, b])
    from .oracle import rounded_sum
    exp = rounded_sum([(a.astype(np.int64) - 100, 0.5), (b.astype(np.int64) - 90, 0.75)], 120, 0, 255)
    np.testing.assert_array_equal(out, exp)
    assert out.dtype == np.uint8


def test_qnn_add_of_two_tensors_is_onnxruntimes_qlinear_add_on_every_pair():
    """With onnxruntime installed the kernel gives its QLinearAdd's outputs (ties to even where
    the real sum ends in one half: here on a quarter of the pairs), checked on every pair."""
    pytest.importorskip("onnxruntime")
    from .oracle import qlinear_add_f32

    g = np.arange(256)
    a = np.repeat(g, 256).astype(np.uint8).reshape(1, 256, 16, 16)
    b = np.tile(g, 256).astype(np.uint8).reshape(1, 256, 16, 16)
    out = run_kernel("qnn.add", _ADD_ATTRS, [a, b])
    exp = qlinear_add_f32(a, (0.02, 100), b, (0.03, 90), (0.04, 120), 0, 255)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, exp)


def test_quantize_rounds_half_to_even_and_dequantize_inverts():
    x = np.array([0.25, 0.75, -0.25, 100.0, -100.0], np.float32)
    q = run_kernel("qnn.quantize", dict(scale=0.5, zero_point=1, out_dtype="int8"), [x])
    np.testing.assert_array_equal(q, [1, 3, 1, 127, -128])
    d = run_kernel("qnn.dequantize", dict(scale=0.5, zero_point=1), [q])
    np.testing.assert_allclose(d, [0.0, 1.0, 0.0, 63.0, -64.5])


def test_layout_transform_pads_and_crops_channels():
    x = rng.integers(-128, 128, (2, 5, 3, 4)).astype(np.int8)
    packed = run_kernel("layout_transform", dict(src_layout="NCHW", dst_layout="NCHW2n16c"), [x])
    assert packed.shape == (1, 1, 3, 4, 2, 16)
    assert packed[0, 0, 1, 2, 1, 3] == x[1, 3, 1, 2] and not packed[..., 5:].any()
    back = run_kernel("layout_transform", dict(src_layout="NCHW2n16c", dst_layout="NCHW", channels=5), [packed])
    np.testing.assert_array_equal(back, x)
    d = rng.integers(-128, 128, (1, 20)).astype(np.int8)
    pd = run_kernel("layout_transform", dict(src_layout="NC", dst_layout="NC1n16c"), [d])
    assert pd.shape == (1, 2, 1, 16) and pd[0, 1, 0, 3] == d[0, 19]


def test_pools():
    x = rng.integers(-128, 128, (1, 2, 5, 5)).astype(np.int8)
    mp = run_kernel("nn.max_pool2d", dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1)), [x])
    xp = np.pad(x.astype(int), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-1000)
    exp = np.array([[[[xp[0, c, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max() for j in range(3)] for i in range(3)]
                     for c in range(2)]])
    np.testing.assert_array_equal(mp, exp)
    u = rng.integers(0, 256, (1, 3, 7, 7)).astype(np.uint8)
    g = run_kernel("qnn.global_avg_pool2d", dict(input_scale=0.1, input_zero_point=10, output_scale=0.08,
                                                  output_zero_point=12, out_dtype=None), [u])
    sums = u.astype(np.int64).sum(axis=(2, 3), keepdims=True) - 49 * 10
    np.testing.assert_array_equal(g, requant(sums, 0.1 / (0.08 * 49), 12, 0, 255))


def test_offset_conversion_and_float_ops():
    u = np.array([0, 127, 128, 255], np.uint8)
    i = run_kernel("vta.to_int8", {}, [u])
    np.testing.assert_array_equal(i, [-128, -1, 0, 127])
    np.testing.assert_array_equal(run_kernel("vta.to_uint8", {}, [i]), u)
    f = rng.standard_normal((2, 5)).astype(np.float32)
    s = run_kernel("nn.softmax", dict(axis=-1), [f])
    np.testing.assert_allclose(s, np.exp(f) / np.exp(f).sum(-1, keepdims=True), rtol=1e-6)
    assert run_kernel("nn.batch_flatten", {}, [np.zeros((2, 3, 4))]).shape == (2, 12)


def test_every_operator_has_a_host_kernel_and_errors_are_specific():
    from vta.graph.infer import OPS

    missing = {op for op in OPS if op not in KERNELS and not op.startswith("vta.")} - {"vta.to_int8"}
    assert not missing
    with pytest.raises(UnsupportedOperatorError, match="nn.lstm"):
        run_kernel("nn.lstm", {}, [])
    with pytest.raises(GraphError, match="missing attribute 'a_min'"):
        run_kernel("clip", {}, [np.zeros(2)])


def test_fold_width_puts_the_kernel_columns_into_the_channels():
    x = rng.integers(-128, 128, (1, 2, 5, 6)).astype(np.int8)
    out = run_kernel("vta.fold_width", dict(kernel_w=3, stride_w=2, padding=(1, 1, 1, 1), zero_point=-7), [x])
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-7)
    assert out.shape == (1, 6, 7, 3)
    for c in range(2):
        for dx in range(3):
            for j in range(3):
                np.testing.assert_array_equal(out[0, c * 3 + dx, :, j], xp[0, c, :, 2 * j + dx])


def test_requantize_and_mul_follow_the_graphs_wide_mode():
    # requant_mode="wide" (annotated by the pipeline): the multiplier keeps the float32 bits the
    # bound leaves; the 15-bit form differs on some outputs of the same accumulators
    acc = rng.integers(-2 ** 17, 2 ** 17, (1, 3, 100, 100)).astype(np.int32)
    in_scale = np.array([5.137e-5, 4.211e-5, 3.73e-5])
    attrs = dict(input_scale=in_scale.tolist(), input_zero_point=0, output_scale=0.05, output_zero_point=5,
                 out_dtype="int8", axis=1, acc_bits=18)
    wide = run_kernel("qnn.requantize", dict(attrs, requant_mode="wide"), [acc])
    fixed = run_kernel("qnn.requantize", attrs, [acc])
    np.testing.assert_array_equal(wide, requant(acc, in_scale / 0.05, 5, -128, 127, acc_bits=18, mode="wide"))
    np.testing.assert_array_equal(fixed, requant(acc, in_scale / 0.05, 5, -128, 127, acc_bits=18, mode="fixed"))
    assert np.any(wide != fixed)
    a = rng.integers(0, 256, (1, 4, 30, 30)).astype(np.uint8)
    b = rng.integers(0, 256, (1, 4, 30, 30)).astype(np.uint8)
    mattrs = dict(lhs_scale=0.021, lhs_zero_point=100, rhs_scale=0.0039, rhs_zero_point=0, output_scale=0.011,
                  output_zero_point=7, out_dtype="uint8", requant_mode="wide")
    p = (a.astype(np.int64) - 100) * b.astype(np.int64)
    want = np.clip(fixed_point(p, 0.021 * 0.0039 / 0.011, acc_bits=17, mode="wide") + 7, 0, 255)
    np.testing.assert_array_equal(run_kernel("qnn.mul", mattrs, [a, b]), want)
