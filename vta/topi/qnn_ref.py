"""NumPy references of the fused quantized operators (:mod:`vta.topi.qnn`): the host semantics the
graph layer's CPU kernels reuse, bit-identical to the accelerator."""

from __future__ import annotations

import numpy as np

from .qnn_requant import Requant, add_np, requantize_np, round_sum_np, scaled_np, sum_fraction_bits
from .qnn_spec import (
    IntermediateSpec,
    MaxPoolSpec,
    QAddSpec,
    QConv2DSpec,
    QDenseSpec,
    ResidualSpec,
)

__all__ = ["maxpool_np", "qadd_np", "qconv2d_np", "qdense_np"]


def _residual_np(r: np.ndarray, res: ResidualSpec) -> np.ndarray:
    d = np.asarray(r).astype(np.int64) - res.zero_point
    return requantize_np(d, res.requant, 1, 0, -(1 << 31), (1 << 31) - 1).astype(np.int64)


def _finish(acc: np.ndarray, rq: Requant, z_out: int, clip: tuple, residual: ResidualSpec | None,
            r: np.ndarray | None, intermediate: IntermediateSpec | None = None) -> np.ndarray:
    y = requantize_np(acc, rq, 1, 0, -(1 << 31), (1 << 31) - 1).astype(np.int64)
    if residual is not None:
        if r is None:
            raise ValueError("the spec has a residual but no residual tensor was given")
        if np.shape(r) != y.shape:
            raise ValueError(f"residual shape {np.shape(r)!r} differs from the output shape {y.shape!r}")
    if intermediate is not None:
        zi, (lo, hi) = intermediate.zero_point, intermediate.clip
        y = np.clip(y + zi, lo, hi) - zi
        if intermediate.fit is not None and residual is not None:
            return intermediate.fit.apply(y + zi, r, clip[0], clip[1]).astype(np.int8)
        frac = sum_fraction_bits(intermediate.requant, residual.requant) if residual is not None else None
        if frac is not None:
            # both operands rescaled with frac fraction bits, one rounding of the sum (QLinearAdd)
            d = np.asarray(r).astype(np.int64) - residual.zero_point
            y = round_sum_np([scaled_np(y, intermediate.requant, frac), scaled_np(d, residual.requant, frac)], frac)
            return np.clip(y + z_out, clip[0], clip[1]).astype(np.int8)
        y = requantize_np(y, intermediate.requant, 1, 0, -(1 << 31), (1 << 31) - 1).astype(np.int64)
    if residual is not None:
        y = y + _residual_np(r, residual)
    return np.clip(y + z_out, clip[0], clip[1]).astype(np.int8)


def qconv2d_np(spec: QConv2DSpec, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
               residual: np.ndarray | None = None) -> np.ndarray:
    """NumPy reference of the fused convolution, NCHW int8 -> NCHW int8.

    Raises
    ------
    ValueError
        If the shapes disagree with ``spec`` or a residual is missing.
    """
    x, w = np.asarray(x), np.asarray(w)
    s = spec
    if x.shape != (s.batch, s.in_channels, s.height, s.width):
        raise ValueError(f"qconv2d_np: data shape {x.shape!r} is not {(s.batch, s.in_channels, s.height, s.width)!r}")
    if w.shape != (s.out_channels, s.in_channels, s.kernel_h, s.kernel_w):
        raise ValueError(f"qconv2d_np: weight shape {w.shape!r} is not "
                         f"{(s.out_channels, s.in_channels, s.kernel_h, s.kernel_w)!r}")
    pt, pl, pb, pr = s.padding
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=s.input_zero_point)
    oh, ow = s.out_height, s.out_width
    sh, sw = s.strides
    acc = np.zeros((s.batch, s.out_channels, oh, ow), dtype=np.int64)
    wk = w.astype(np.int64)
    for dy in range(s.kernel_h):
        for dx in range(s.kernel_w):
            win = xp[:, :, dy:dy + sh * (oh - 1) + 1:sh, dx:dx + sw * (ow - 1) + 1:sw]
            acc += np.einsum("nchw,oc->nohw", win, wk[:, :, dy, dx])
    if bias is not None:
        acc += np.asarray(bias, dtype=np.int64).reshape(1, -1, 1, 1)
    return _finish(acc, s.requant, s.output_zero_point, s.clip, s.residual, residual, s.intermediate)


def qdense_np(spec: QDenseSpec, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
              residual: np.ndarray | None = None) -> np.ndarray:
    """NumPy reference of the fused dense layer, ``(N, I)`` int8 -> ``(N, O)`` int8.

    Raises
    ------
    ValueError
        If the shapes disagree with ``spec`` or a residual is missing.
    """
    x, w = np.asarray(x), np.asarray(w)
    if x.shape != (spec.batch, spec.in_features) or w.shape != (spec.out_features, spec.in_features):
        raise ValueError(f"qdense_np: data {x.shape!r} / weight {w.shape!r} disagree with {spec!r}")
    acc = x.astype(np.int64) @ w.astype(np.int64).T
    if bias is not None:
        acc = acc + np.asarray(bias, dtype=np.int64).reshape(1, -1)
    return _finish(acc, spec.requant, spec.output_zero_point, spec.clip, spec.residual, residual,
                   spec.intermediate)


def qadd_np(spec: QAddSpec, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy reference of the quantized add, NCHW int8 -> NCHW int8.

    Raises
    ------
    ValueError
        If a shape differs from ``spec.out_shape``.
    """
    for name, t in (("a", a), ("b", b)):
        if np.shape(t) != spec.out_shape:
            raise ValueError(f"qadd_np: {name} has shape {np.shape(t)!r}, expected {spec.out_shape!r}")
    if spec.fit is not None:
        return spec.fit.apply(a, b, spec.clip[0], spec.clip[1]).astype(np.int8)
    y = add_np([(a, spec.lhs.zero_point, spec.lhs.requant), (b, spec.rhs.zero_point, spec.rhs.requant)],
               spec.output_zero_point, spec.clip[0], spec.clip[1])
    return y.astype(np.int8)


def maxpool_np(spec: MaxPoolSpec, x: np.ndarray) -> np.ndarray:
    """NumPy reference of max pooling (padded pixels never win), NCHW int8 -> NCHW int8.

    Raises
    ------
    ValueError
        If the shape of ``x`` is not the spec's input shape.
    """
    x = np.asarray(x)
    if x.shape != (spec.batch, spec.channels, spec.height, spec.width):
        raise ValueError(f"maxpool_np: input shape {x.shape!r} disagrees with {spec!r}")
    pt, pl, pb, pr = spec.padding
    xp = np.pad(x.astype(np.int32), ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=np.iinfo(np.int32).min)
    oh, ow = spec.out_height, spec.out_width
    sh, sw = spec.strides
    out = np.full((spec.batch, spec.channels, oh, ow), np.iinfo(np.int32).min, dtype=np.int32)
    for dy in range(spec.pool_size[0]):
        for dx in range(spec.pool_size[1]):
            out = np.maximum(out, xp[:, :, dy:dy + sh * (oh - 1) + 1:sh, dx:dx + sw * (ow - 1) + 1:sw])
    return out.astype(np.int8)
