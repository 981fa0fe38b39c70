"""The rounding fold of the ``fixed`` requantisation: after a clamp that bounds the operand, the
steps MUL, SHR s1, ADD 2**(s2-1), SHR s2 become MUL, a tensor ADD of 2**(s-1) (plus the output zero
point times 2**s when it fits) and SHR s with s = s1 + s2, when the product plus that constant stays
inside int32 at both ends of the clamp. Checked with Python integers (the nested-floor identity the
fold rests on) and end to end on fsim against the tests' oracle, with accumulators on both sides of
the saturation bounds."""

from __future__ import annotations

import numpy as np
import pytest

from vta.topi import qnn
from vta.topi.qnn_build import declare_qconv2d

from . import oracle
from .conftest import run_op


@pytest.mark.parametrize("s1,s2", [(1, 15), (8, 15), (9, 15), (3, 13)])
def test_nested_floors_are_one_rounding(s1, s2):
    # floor((floor(y / 2**s1) + 2**(s2-1) + z 2**s2) / 2**s2) == floor((y + 2**(s-1) + z 2**s) / 2**s)
    rng = np.random.default_rng(s1 * 100 + s2)
    s = s1 + s2
    for z in (0, 3, -7):
        for y in [int(v) for v in rng.integers(-(1 << 31), 1 << 31, size=3000)] + [-(1 << 31), (1 << 31) - 1, 0, -1]:
            split = ((y >> s1) + (1 << (s2 - 1)) + (z << s2)) >> s2
            assert split == (y + (1 << (s - 1)) + (z << s)) >> s, (y, z)


def _entry_stages(spec, env) -> int:
    """ALU stages of the epilogue over the whole output tile (one uop per entry each), counted in
    the declared graph (constant vectors, built once per tile, excluded)."""
    out, _ = declare_qconv2d(spec, env)
    shape = tuple(int(d) for d in out.shape)
    seen, stack, count = set(), [out], 0
    while stack:
        t = stack.pop()
        if id(t.op) in seen:
            continue
        seen.add(id(t.op))
        if t.op.name.startswith("rq_") and tuple(int(d) for d in t.shape) == shape:
            count += 1
        stack.extend(getattr(t.op, "input_tensors", []))
    return count


@pytest.mark.parametrize("scale,z_out,clip,uops", [(0.006, 0, (-128, 127), 6), (0.006, 3, (-128, 127), 6),
                                                   (0.0026, 0, (-128, 127), 6), (0.0026, -7, (0, 127), 6),
                                                   (0.0013, 0, (-128, 127), 6), (0.3, 0, (-20, 20), 6),
                                                   (0.00092, 0, (-128, 127), 9)])
def test_conv_with_the_folded_rounding(qenv, tmp_path, scale, z_out, clip, uops):
    rng = np.random.default_rng(41)
    spec = qnn.QConv2DSpec(1, 32, 16, 6, 6, 3, 3, (1, 1), (1, 1, 1, 1), 0, qnn.Requant.from_scale(scale), z_out,
                           clip)
    x = rng.integers(-128, 128, size=(1, 32, 6, 6)).astype(np.int8)
    x[:, :, 2:5, 2:5] = 0  # accumulators of the centre pixel = bias: values inside the clip
    w = rng.integers(-128, 128, size=(16, 32, 3, 3)).astype(np.int8)
    top = int(min(abs(c) for c in clip if c) / scale)
    bias = rng.integers(-top, top, size=16).astype(np.int32)
    mod, layout = qnn.build_qconv2d(spec, "qconv_folded")
    out, stats = run_op(mod, layout, layout.pack_args(data=x, weight=w, bias=bias), tmp_path)
    want = oracle.finish(oracle.requant(oracle.conv_acc(x, w, bias, (1, 1), (1, 1, 1, 1), 0), spec.requant), z_out,
                         clip)
    got = layout.unpack(out)
    np.testing.assert_array_equal(got, want)
    assert (got == clip[0]).any() and (got == clip[1]).any() and ((got > clip[0]) & (got < clip[1])).any()
    # per entry: bias, the clamp (MIN, MAX), MUL, the rounding ADD, SHR = 6 (7 without the fold);
    # 0.00092: the clamped operand needs the multiplier split (low product, SHR 8, MUL, sum: 4
    # instead of the MUL), 9 (10 without the fold)
    assert _entry_stages(spec, qenv) == uops
    if uops == 6:  # plus the constant vectors, built per tile (a few uops each)
        entries = 36  # one BATCH block of 6 x 6 pixels, one channel block
        assert uops * entries <= stats["alu_counter"] < (uops + 1) * entries


@pytest.mark.parametrize("scale,acc_bits,z_out", [(2.0 ** -7, 18, 0), (2.0 ** -7, 24, 4), (2.0 ** -9, 20, -3)])
def test_rounding_add_folds_into_the_bias_vector(qenv, tmp_path, scale, acc_bits, z_out):
    # a power-of-two multiplier: bias ADD, then the rounding ADD of an immediate; that immediate is
    # added once per tile to the bias vector (x + b + c == x + (b + c) in wrapping int32), so each
    # entry takes the bias ADD, the SHR and the clip (MIN, MAX): 4 uops, 5 without the fold
    rng = np.random.default_rng(42)
    spec = qnn.QConv2DSpec(1, 16, 16, 5, 5, 1, 1, (1, 1), (0, 0, 0, 0), 0,
                           qnn.Requant.from_scale(scale, acc_bits=acc_bits), z_out)
    x = rng.integers(-128, 128, size=(1, 16, 5, 5)).astype(np.int8)
    w = rng.integers(-128, 128, size=(16, 16, 1, 1)).astype(np.int8)
    bias = rng.integers(-(1 << 14), 1 << 14, size=16).astype(np.int32)
    mod, layout = qnn.build_qconv2d(spec, "qconv_bias_round")
    out, stats = run_op(mod, layout, layout.pack_args(data=x, weight=w, bias=bias), tmp_path)
    want = oracle.finish(oracle.requant(oracle.conv_acc(x, w, bias, (1, 1), (0, 0, 0, 0), 0), spec.requant), z_out,
                         (-128, 127))
    got = layout.unpack(out)
    np.testing.assert_array_equal(got, want)
    assert ((got > -128) & (got < 127)).any()
    entries = 25
    assert 4 * entries <= stats["alu_counter"] < 5 * entries
