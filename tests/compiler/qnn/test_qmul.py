"""The quantized product of two int8 tensors on the ALU, against the tests' integer oracle and
against onnxruntime's QLinearMul (a QDQ Mul written with ``onnx.helper``)."""

from __future__ import annotations

import numpy as np
import pytest

from vta.topi.qnn_mul import QMulSpec, build_qmul, mul_np, mul_requant

from . import oracle
from .conftest import run_op


def _want(a, za, b, zb, rq, zo, clip):
    """The contract: exact centred product, fixed-point rounding, zero point, clip; a multiplier
    of 1/2 or more (shift <= 15) clamps the product to +-(2**15 - 1) first."""
    p = (a.astype(np.int64) - za) * (b.astype(np.int64) - zb)
    m, s = int(rq.multiplier[0]), int(rq.shift[0])
    if s <= 15:
        p = np.clip(p, -32767, 32767)
    return np.clip(oracle.round_shift(p, m, s) + zo, *clip)


@pytest.mark.parametrize("scale,za,zb,zo,clip", [
    (0.21 * 0.0039 / 0.11, 5, -128, -3, (-128, 127)),     # x * hardsigmoid(x): a small multiplier
    (0.7, -9, 4, 2, (-20, 100)),                           # a multiplier above 1/2: the clamp, a narrow clip
])
def test_qmul_equals_the_integer_oracle(qenv, tmp_path, scale, za, zb, zo, clip):
    rng = np.random.default_rng(int(scale * 1e6) % 1000)
    rq = mul_requant(scale)
    spec = QMulSpec(qenv.BATCH, 24, 5, 7, za, zb, rq, zo, clip)
    a = rng.integers(-128, 128, spec.out_shape).astype(np.int8)
    b = rng.integers(-128, 128, spec.out_shape).astype(np.int8)
    mod, layout = build_qmul(spec, "qmul")
    out, stats = run_op(mod, layout, layout.pack_args(lhs=a, rhs=b), tmp_path)
    want = _want(a, za, b, zb, rq, zo, clip)
    np.testing.assert_array_equal(layout.unpack(out), want)
    np.testing.assert_array_equal(mul_np(a, za, b, zb, rq, zo, *clip), want)
    assert stats["gemm_counter"] == 0 and stats["alu_counter"] > 0


def test_qmul_within_one_of_onnxruntime():
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    shape = [1, 16, 6, 6]
    sa, za, sb, zb, sy, zy = 0.21, 133, 1 / 255, 0, 0.11, 120
    inits = [numpy_helper.from_array(np.array(v, dt), n) for v, dt, n in (
        (sa, np.float32, "sa"), (za, np.uint8, "za"), (sb, np.float32, "sb"), (zb, np.uint8, "zb"),
        (sy, np.float32, "sy"), (zy, np.uint8, "zy"))]
    nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["ad"]),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bd"]),
             helper.make_node("Mul", ["ad", "bd"], ["y"]),
             helper.make_node("QuantizeLinear", ["y", "sy", "zy"], ["yq"])]
    graph = helper.make_graph(nodes, "qdq_mul", [helper.make_tensor_value_info("a", TensorProto.UINT8, shape),
                                                 helper.make_tensor_value_info("b", TensorProto.UINT8, shape)],
                              [helper.make_tensor_value_info("yq", TensorProto.UINT8, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, shape).astype(np.uint8)
    b = rng.integers(0, 256, shape).astype(np.uint8)
    ref = sess.run(None, {"a": a, "b": b})[0].astype(np.int64)
    got = mul_np(a, za, b, zb, mul_requant(np.float32(sa) * np.float32(sb) / np.float32(sy)), zy, 0, 255)
    d = np.abs(got.astype(np.int64) - ref)
    assert d.max() <= 1 and (d == 0).mean() > 0.99


def test_qmul_broadcasts_a_per_channel_gate(env, tmp_path):
    rng = np.random.default_rng(12)
    rq = mul_requant(0.2 * (1 / 255) / 0.15)
    spec = QMulSpec(env.BATCH, 40, 6, 5, -3, -128, rq, 7, (-128, 127), rhs_broadcast=True)
    a = rng.integers(-128, 128, spec.out_shape).astype(np.int8)
    b = rng.integers(-128, 128, spec.rhs_shape).astype(np.int8)
    mod, layout = build_qmul(spec, "qmul_bcast")
    out, _ = run_op(mod, layout, layout.pack_args(lhs=a, rhs=b), tmp_path)
    want = _want(a, -3, np.broadcast_to(b, a.shape), -128, rq, 7, (-128, 127))
    np.testing.assert_array_equal(layout.unpack(out), want)
    np.testing.assert_array_equal(mul_np(a, -3, b, -128, rq, 7), want)
