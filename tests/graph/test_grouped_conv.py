"""Grouped and depthwise convolutions on the accelerator (groups of whole channel blocks with
block-diagonal weights), against a NumPy oracle of the grouped convolution written here."""

from __future__ import annotations

import numpy as np
import pytest

from vta.graph import GraphBuilder, mac_share, optimize
from vta.topi.qnn_group import accel_grouping, expand_group_weight

from ..conftest import make_env
from .oracle import conv_int, requant, worst_bits
from .test_e2e_fsim import run_graph

pytestmark = pytest.mark.native


def grouped_net(rng, c_in, c_out, groups, hw=6, stride=1, pad=1, zx=-3):
    """int8 input -> grouped conv 3x3 (per-channel weight scales) + bias + requantize + relu ->
    1x1 conv (so the grouped layer's padded output feeds another accelerator layer)."""
    b = GraphBuilder()
    x = b.input("x", (1, c_in, hw, hw), "int8", scale=0.04, zero_point=zx)
    sw = rng.uniform(0.005, 0.03, c_out)
    w = rng.integers(-60, 61, (c_out, c_in // groups, 3, 3)).astype(np.int8)
    a = b.qnn.conv2d(x, b.const("w", w, scale=sw, axis=0), strides=stride, padding=(pad,) * 4, groups=groups,
                     name="dw")
    a = b.nn.bias_add(a, b.const("b", rng.integers(-500, 500, c_out).astype(np.int32)), name="bias")
    y = b.nn.relu(b.qnn.requantize(a, output_scale=0.05, output_zero_point=-7, name="rq"), name="relu")
    w2 = rng.integers(-40, 41, (8, c_out, 1, 1)).astype(np.int8)
    a2 = b.qnn.conv2d(y, b.const("w2", w2, scale=0.01), name="pw")
    return b.finish(b.qnn.requantize(a2, output_scale=0.2, output_zero_point=4, name="rq2"))


def oracle(g, x, groups, stride, pad, zx):
    p = g.params
    w, bias, w2 = p["w"].astype(np.int64), p["b"].astype(np.int64), p["w2"]
    cout, ci = w.shape[0], w.shape[1]
    co = cout // groups
    acc = np.concatenate([conv_int(x[:, k * ci:(k + 1) * ci].astype(np.int64), w[k * co:(k + 1) * co], zx, stride,
                                   (pad,) * 4, bias[k * co:(k + 1) * co]) for k in range(groups)], axis=1)
    scale = 0.04 * np.asarray(g.value("w").type.scale) / 0.05
    y = requant(acc, scale, -7, 0, 127, acc_bits=worst_bits(w, bias))  # nn.relu: max(q, 0) in the integers
    acc2 = conv_int(y, w2, -7, 1, (0, 0, 0, 0))
    return requant(acc2, 0.05 * 0.01 / 0.2, 4, -128, 127, acc_bits=worst_bits(w2, np.zeros(8))).astype(np.int8)


@pytest.mark.parametrize("c_in,c_out,groups,stride", [
    (32, 32, 32, 1),    # depthwise, two blocks
    (24, 24, 24, 2),    # depthwise, 24 channels padded to 32 (zero groups), stride 2
    (32, 64, 2, 1),     # two groups of two input and two output blocks each
    (12, 12, 3, 1),     # groups of 4 channels: one block-diagonal dense convolution
])
def test_grouped_convolution_on_the_accelerator_equals_numpy(env, c_in, c_out, groups, stride):
    rng = np.random.default_rng(c_in * 7 + groups)
    g = grouped_net(rng, c_in, c_out, groups, stride=stride)
    x = np.random.default_rng(5).integers(-128, 128, (1, c_in, 6, 6)).astype(np.int8)
    m = run_graph(g, {"x": x}, env)
    np.testing.assert_array_equal(m.get_output(0), oracle(g, x, groups, stride, 1, -3))
    records = {r.name: r for r in m.node_records()}
    assert records["dw"].device == "vta" and records["pw"].device == "vta"
    assert f"{groups} groups run as" in records["dw"].reason and "block-diagonal" in records["dw"].reason
    opt = optimize(g, env)
    assert [n.op for n in opt.nodes].count("layout_transform") == 2   # no round trip between the two layers
    share = mac_share(opt)
    oh = (6 + 2 - 3) // stride + 1
    assert share["cpu_macs"] == 0 and share["vta_macs"] == oh * oh * (c_out * (c_in // groups) * 9 + 8 * c_out)


def test_grouped_convolution_on_batch2(tmp_path):
    with make_env("batch2.json") as env:
        rng = np.random.default_rng(9)
        g = grouped_net(rng, 16, 16, 16)
        x = np.random.default_rng(6).integers(-128, 128, (1, 16, 6, 6)).astype(np.int8)
        np.testing.assert_array_equal(run_graph(g, {"x": x}, env).get_output(0), oracle(g, x, 16, 1, 1, -3))


def test_accel_grouping_gathers_groups_into_whole_blocks():
    assert accel_grouping(32, 32, 32, 16, 16).groups == 2
    g = accel_grouping(72, 72, 72, 16, 16)
    assert (g.groups, g.per_group, g.in_channels, g.out_channels) == (5, 16, 80, 80)
    g = accel_grouping(64, 128, 2, 16, 16)
    assert (g.groups, g.per_group) == (2, 1)
    g = accel_grouping(12, 12, 3, 16, 16)
    assert (g.groups, g.per_group, g.in_channels) == (1, 4, 16)   # a zero group fills the block
    w = np.arange(1, 5).reshape(4, 1, 1, 1)
    e = expand_group_weight(w, 4, accel_grouping(4, 4, 4, 4, 4))
    np.testing.assert_array_equal(e[:, :, 0, 0], np.diag([1, 2, 3, 4]))
    with pytest.raises(ValueError, match="groups=3"):
        accel_grouping(16, 16, 3, 16, 16)
