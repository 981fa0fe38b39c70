"""A small quantized network built with GraphBuilder, and its NumPy oracle.

conv3x3 -> bias -> requantize -> relu -> conv3x3 -> bias -> requantize -> relu, int8, 16
channels, 8x8. Scales are powers of two so the requantisation is an exact shift with
round-half-up, ``(acc + 2^(k-1)) >> k``, whatever fixed-point form the compiler picks; the
oracle below computes that directly with an integer convolution.
"""

from __future__ import annotations

import numpy as np

from vta.graph import GraphBuilder

C, HW = 16, 8
IN_SCALE, W_SCALE = 2.0 ** -4, 2.0 ** -3
OUT_SCALE = (1.0, 2.0 ** 2)   # conv0: acc scale 2^-7 -> 1.0 (shift 7); conv1: acc 2^-3 -> 4 (shift 5)


def weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(2):
        out[f"w{i}"] = rng.integers(-8, 8, size=(C, C, 3, 3)).astype(np.int8)
        out[f"b{i}"] = rng.integers(-300, 300, size=(C,)).astype(np.int32)
    return out


def make_graph(seed: int = 0):
    ws = weights(seed)
    b = GraphBuilder()
    h = b.input("data", (1, C, HW, HW), "int8", scale=IN_SCALE, zero_point=0)
    for i in range(2):
        w = b.const(f"w{i}", ws[f"w{i}"], scale=W_SCALE)
        bias = b.const(f"b{i}", ws[f"b{i}"])
        acc = b.qnn.conv2d(h, w, padding=(1, 1, 1, 1), name=f"conv{i}")
        acc = b.nn.bias_add(acc, bias)
        q = b.qnn.requantize(acc, output_scale=OUT_SCALE[i], output_zero_point=0, out_dtype="int8")
        h = b.nn.relu(q)
    return b.finish([h])


def make_input(seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).integers(-16, 16, size=(1, C, HW, HW)).astype(np.int8)


def _conv3x3(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # n c h w kh kw
    return np.einsum("nchwij,ocij->nohw", win, w.astype(np.int64))


def reference(x: np.ndarray, seed: int = 0) -> np.ndarray:
    ws = weights(seed)
    h = x
    scale = IN_SCALE
    for i in range(2):
        acc = _conv3x3(h, ws[f"w{i}"]) + ws[f"b{i}"].astype(np.int64)[None, :, None, None]
        k = int(round(np.log2(OUT_SCALE[i] / (scale * W_SCALE))))
        y = (acc + (1 << (k - 1))) >> k
        h = np.maximum(np.clip(y, -128, 127), 0).astype(np.int8)
        scale = OUT_SCALE[i]
    return h
