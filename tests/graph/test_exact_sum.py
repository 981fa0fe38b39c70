"""Sums of two quantized tensors equal to onnxruntime's on every input pair (issue 23: element-wise
operations go on the ALU where the result is exact).

The oracle is a NumPy float32 model of onnxruntime's QLinearAdd written in ``oracle.py``; every
check runs over all 65,536 pairs of 8-bit inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from vta.graph import GraphBuilder, optimize, ort_tables  # noqa: E402
from vta.topi import qnn  # noqa: E402
from vta.topi.qnn_fit import fit_affine_sum  # noqa: E402

from .oracle import qlinear_add_f32  # noqa: E402

# (lhs, rhs, out) as (dtype, scale, zero point): the detector's (layout_cdla) two-tensor add, a
# residual add of the text-direction classifier, one of int8 tensors, one whose ratios are 1/2
# and 3/4 (the real sum ends in one half on a quarter of the pairs), and one of the text
# detector's (ch_ppocr_det) that no integer form gives
CASES = {
    "no_fit": (("uint8", 0.8412936925888062, 104), ("uint8", 0.7017592787742615, 124),
               ("uint8", 1.403518557548523, 124)),
    "detector": (("uint8", 0.0024072881788015366, 120), ("uint8", 0.0036365061532706022, 80),
                 ("uint8", 0.004367600195109844, 96)),
    "classifier": (("uint8", 0.028616048395633698, 133), ("uint8", 0.030784539878368378, 135),
                   ("uint8", 0.04565967991948128, 145)),
    "int8": (("int8", 0.05, 3), ("int8", 0.07, -1), ("int8", 0.0937, 0)),
    "ties": (("uint8", 0.02, 100), ("uint8", 0.03, 90), ("uint8", 0.04, 120)),
}


def _grid(lhs, rhs):
    """Every pair of values of the two dtypes: two (256, 256) arrays."""
    a = np.arange(np.iinfo(lhs[0]).min, np.iinfo(lhs[0]).max + 1)
    b = np.arange(np.iinfo(rhs[0]).min, np.iinfo(rhs[0]).max + 1)
    return np.broadcast_arrays(a[:, None], b[None, :])


def _oracle(case):
    lhs, rhs, out = case
    a, b = _grid(lhs, rhs)
    info = np.iinfo(out[0])
    return qlinear_add_f32(a, lhs[1:], b, rhs[1:], out[1:], info.min, info.max)


def _offset(dtype):
    return -128 if dtype == "uint8" else 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_onnxruntimes_table_is_the_float32_model_on_every_pair(name):
    lhs, rhs, out = CASES[name]
    np.testing.assert_array_equal(ort_tables.pair_add_table(lhs, rhs, out), _oracle(CASES[name]))


@pytest.mark.parametrize("name", ["detector", "classifier", "int8", "ties"])
def test_the_fitted_integer_sum_is_onnxruntimes_where_the_fixed_point_one_is_not(name):
    lhs, rhs, out = CASES[name]
    want = _oracle(CASES[name])
    a, b = _grid(lhs, rhs)
    info = np.iinfo(out[0])
    fixed = qnn.add_np([(a, lhs[2], qnn.Requant.from_scale(lhs[1] / out[1])),
                        (b, rhs[2], qnn.Requant.from_scale(rhs[1] / out[1]))], out[2], int(info.min), int(info.max))
    assert np.count_nonzero(fixed != want) > 0        # the 15-bit fixed-point sum misses some pairs
    fit = ort_tables.pair_add_fit(lhs, rhs, out)
    assert fit is not None
    got = fit.apply(a + _offset(lhs[0]), b + _offset(rhs[0]), -128, 127) - _offset(out[0])
    np.testing.assert_array_equal(got, want)
    assert np.abs(a + _offset(lhs[0])).max() * abs(fit.lhs_multiplier) + abs(fit.offset) \
        + np.abs(b + _offset(rhs[0])).max() * abs(fit.rhs_multiplier) < 1 << 31


@pytest.mark.slow  # (two searches over 65,536 pairs and two onnxruntime tables: about 19 s)
def test_ties_to_even_need_the_even_rounding():
    """``rne(x / 2)`` of odd ``x`` alternates down and up: no ``floor((x m + c) / 2**s)`` gives
    it, the same division rounded half to even does; some sums have neither."""
    x = np.arange(-128, 128)
    y = np.clip(np.rint((x[:, None] + x[None, :]) / 2).astype(np.int64), -128, 127)
    assert fit_affine_sum(x, x, y, -128, 127) is None
    fit = fit_affine_sum(x, x, y, -128, 127, even=True)
    assert fit is not None and fit.even
    np.testing.assert_array_equal(fit.apply(x[:, None], x[None, :], -128, 127), y)
    assert ort_tables.pair_add_fit(*CASES["ties"]).even
    assert ort_tables.pair_add_fit(*CASES["no_fit"]) is None


def _add_graph(case):
    lhs, rhs, out = case
    b = GraphBuilder()
    x = b.input("x", (1, 256, 16, 16), lhs[0], scale=lhs[1], zero_point=lhs[2])
    y = b.input("y", (1, 256, 16, 16), rhs[0], scale=rhs[1], zero_point=rhs[2])
    s = b.qnn.add(x, y, output_scale=out[1], output_zero_point=out[2], out_dtype=out[0], name="add")
    return b.finish(s)


@pytest.mark.native
@pytest.mark.parametrize("name", ["detector", "int8", "ties",
                                  pytest.param("no_fit", marks=pytest.mark.slow)])  # (the CPU path: 16 s)
def test_a_graphs_add_equals_onnxruntime_on_every_pair(env, name):
    """The add runs on the accelerator with the fitted sum (or, with no integer form, on the CPU
    with its reason) and the graph's output is the float32 model's on all 65,536 pairs (fsim)."""
    from .test_e2e_fsim import run_graph

    case = CASES[name]
    lhs, rhs, _ = case
    g = _add_graph(case)
    a, b = _grid(lhs, rhs)
    feeds = {"x": a.astype(lhs[0]).reshape(1, 256, 16, 16), "y": b.astype(rhs[0]).reshape(1, 256, 16, 16)}
    m = run_graph(g, feeds, env)
    np.testing.assert_array_equal(m.get_output(0).astype(np.int64), _oracle(case).reshape(1, 256, 16, 16))
    rec = {r.name: r for r in m.node_records()}["add"]
    if name == "no_fit":
        assert rec.device == "cpu" and "differs from onnxruntime's on" in rec.reason
    else:
        assert rec.device == "vta" and "fitted to onnxruntime's outputs" in rec.reason


def _residual_graph(lhs, rhs, out, layer_first=True):
    b = GraphBuilder()
    x = b.input("x", (1, 16, 6, 6), "int8", scale=0.1, zero_point=0)
    r = b.input("r", (1, 16, 6, 6), rhs[0], scale=rhs[1], zero_point=rhs[2])
    w = np.random.default_rng(0).integers(-20, 21, (16, 16, 3, 3)).astype(np.int8)
    c = b.qnn.conv2d(x, b.const("w", w, scale=0.01), padding=(1, 1, 1, 1), name="conv")
    y = b.qnn.requantize(c, input_scale=0.1 * 0.01, output_scale=lhs[1], output_zero_point=lhs[2],
                         out_dtype=lhs[0], name="rq")
    pair = (y, r) if layer_first else (r, y)
    return b.finish(b.qnn.add(*pair, output_scale=out[1], output_zero_point=out[2], out_dtype=out[0], name="add")), w


@pytest.mark.native
@pytest.mark.parametrize("layer_first", [True, False])
def test_a_convolutions_residual_sum_is_fitted_in_its_epilogue(env, layer_first):
    """A convolution's absorbed residual add whose fixed-point sum misses onnxruntime's keeps the
    fusion with the fitted sum after the layer's own int8 result (fsim): the output is the
    layer's integer requantisation (the tests' fixed-point oracle) summed by the float32 model of
    QLinearAdd, on every residual value."""
    from .oracle import conv_int, requant, worst_bits
    from .test_e2e_fsim import run_graph

    lhs, rhs, out = CASES["int8"]
    g, w = _residual_graph(lhs, rhs, out, layer_first)
    conv = {n.name: n for n in optimize(g, env).nodes}["conv"]
    assert conv.op == "vta.conv2d" and conv.attrs["spec"].intermediate.fit is not None
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (1, 16, 6, 6)).astype(np.int8)
    feeds = {"x": x, "r": rng.integers(-128, 128, (1, 16, 6, 6)).astype(np.int8)}
    feeds["r"].reshape(-1)[:256] = np.arange(-128, 128)
    y = requant(conv_int(x, w, 0, 1, (1, 1, 1, 1)), 0.1 * 0.01 / lhs[1], lhs[2], -128, 127,
                acc_bits=worst_bits(w, np.zeros(16)))
    pair = (y, lhs[1:], feeds["r"], rhs[1:]) if layer_first else (feeds["r"], rhs[1:], y, lhs[1:])
    want = qlinear_add_f32(*pair, out[1:], -128, 127)
    m = run_graph(g, feeds, env)
    np.testing.assert_array_equal(m.get_output(0).astype(np.int64), want)
    rec = {r.name: r for r in m.node_records()}["conv"]
    assert rec.device == "vta" and "residual sum fitted" in rec.reason
