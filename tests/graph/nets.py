"""Small quantized graphs built with GraphBuilder, shared by the pass and end-to-end tests."""

from __future__ import annotations

import numpy as np

from vta.graph import GraphBuilder


def _w(rng, shape):
    return rng.integers(-127, 128, shape).astype(np.int8)


def _b(rng, n):
    return rng.integers(-2000, 2000, n).astype(np.int32)


def conv_relu_conv(rng, batch=1):
    """uint8 input (zp 120) -> conv 3x3 (3 -> 16, pad 1) + bias + requantize uint8 -> conv 1x1 (16 -> 10)
    + requantize int8 + relu."""
    b = GraphBuilder()
    x = b.input("x", (batch, 3, 8, 8), "uint8", scale=0.05, zero_point=120)
    a = b.qnn.conv2d(x, b.const("w1", _w(rng, (16, 3, 3, 3)), scale=0.01), padding=(1, 1, 1, 1), name="conv1")
    a = b.nn.bias_add(a, b.const("b1", _b(rng, 16)), name="bias1")
    y = b.qnn.requantize(a, output_scale=0.6, output_zero_point=0, out_dtype="uint8", name="rq1")
    a2 = b.qnn.conv2d(y, b.const("w2", _w(rng, (10, 16, 1, 1)), scale=0.02), name="conv2")
    y2 = b.qnn.requantize(a2, output_scale=1.5, output_zero_point=3, out_dtype="int8", name="rq2")
    return b.finish(b.nn.relu(y2, name="relu2"))


def basic_block(rng, c_in=16, c_out=32, hw=8, batch=1):
    """A ResNet basic block with a downsample: conv3x3/2 + relu -> conv3x3 (+ residual: conv1x1/2) -> relu.

    Activations int8 with zero point -3 at the input, per-channel weight scales."""
    b = GraphBuilder()
    x = b.input("x", (batch, c_in, hw, hw), "int8", scale=0.04, zero_point=-3)
    s1 = rng.uniform(0.005, 0.02, c_out)
    a = b.qnn.conv2d(x, b.const("w1", _w(rng, (c_out, c_in, 3, 3)), scale=s1, axis=0), strides=2,
                     padding=(1, 1, 1, 1), name="conv1")
    a = b.nn.bias_add(a, b.const("b1", _b(rng, c_out)), name="bias1")
    y1 = b.nn.relu(b.qnn.requantize(a, output_scale=0.9, output_zero_point=-5, name="rq1"), name="relu1")
    a2 = b.qnn.conv2d(y1, b.const("w2", _w(rng, (c_out, c_out, 3, 3)), scale=0.01), padding=(1, 1, 1, 1),
                      name="conv2")
    a2 = b.nn.bias_add(a2, b.const("b2", _b(rng, c_out)), name="bias2")
    y2 = b.qnn.requantize(a2, output_scale=1.1, output_zero_point=2, name="rq2")
    d = b.qnn.conv2d(x, b.const("wd", _w(rng, (c_out, c_in, 1, 1)), scale=0.015), strides=2, name="down")
    d = b.nn.bias_add(d, b.const("bd", _b(rng, c_out)), name="biasd")
    yd = b.qnn.requantize(d, output_scale=0.7, output_zero_point=1, name="rqd")
    s = b.qnn.add(y2, yd, output_scale=1.3, output_zero_point=-4, name="add")
    return b.finish(b.nn.relu(s, name="relu_out"))


def dense_head(rng, batch=1):
    """uint8 feature map -> global average pool -> flatten -> dense (64 -> 10) -> requantize ->
    dequantize -> softmax."""
    b = GraphBuilder()
    x = b.input("x", (batch, 64, 4, 4), "uint8", scale=0.1, zero_point=7)
    p = b.qnn.global_avg_pool2d(x, output_scale=0.05, output_zero_point=5, name="gap")
    f = b.nn.batch_flatten(p, name="flatten")
    a = b.qnn.dense(f, b.const("wf", _w(rng, (10, 64)), scale=0.01), name="fc")
    a = b.nn.bias_add(a, b.const("bf", _b(rng, 10)), name="biasf")
    q = b.qnn.requantize(a, output_scale=0.4, output_zero_point=-1, name="rqf")
    return b.finish(b.nn.softmax(b.qnn.dequantize(q, name="deq"), name="softmax"))
