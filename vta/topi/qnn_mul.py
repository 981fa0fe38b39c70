"""The quantized product of two int8 tensors on VTA's ALU (:func:`build_qmul`).

``out = clip(requantize((a - z_a) * (b - z_b)) + z_out, lo, hi)`` with one per-tensor
requantisation of the real multiplier ``s_a * s_b / s_out`` (:class:`~vta.topi.qnn.Requant`,
``acc_bits = 17``: the product of two centred 8-bit values is below ``2**16`` in magnitude). The
integer product is exact on the ALU: both operands are loaded into the accumulator (``ACC_8BIT``
loads), centred with an immediate ADD, multiplied (a tensor MUL) and requantised by the same ALU
program as a convolution's epilogue; :func:`mul_np` is the same arithmetic for the host, so that
a product on the CPU equals ``vta.multiply``. Against onnxruntime's QLinearMul (float32
requantisation, round half to even) every output is within 1, as for the convolutions
(:mod:`vta.topi.qnn`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..env import Environment, get_env
from ..te import compute, placeholder
from ._traverse import LOAD_TAG
from .epilogue import BROADCAST_TAG, ELEMWISE_TAG
from .qnn_build import _Chain, _ceil_div, _finish, _stages_below, build_alu_op
from .qnn_requant import INT8_RANGE, Requant, requantize_np
from .qnn_spec import _check_clip, _check_zp

__all__ = ["PRODUCT_BITS", "QMulSpec", "build_qmul", "declare_qmul", "mul_np", "mul_requant"]

#: Bits of the largest centred product ``|(a - z_a) * (b - z_b)| <= 255 * 255``.
PRODUCT_BITS = 17


def mul_requant(scale: float, mode: str = "fixed") -> Requant:
    """The requantisation of a product with real multiplier ``scale`` (``s_a * s_b / s_out``)."""
    return Requant.from_scale(np.asarray([scale], dtype=np.float64), mode=mode, acc_bits=PRODUCT_BITS)


@dataclass(frozen=True)
class QMulSpec:
    """``clip(requant((a - lhs_zero_point) * (b - rhs_zero_point)) + output_zero_point)`` of two
    int8 NCHW tensors of one shape, or (``rhs_broadcast``) of ``a`` and a ``(N, C, 1, 1)`` tensor
    ``b`` broadcast over the pixels (a squeeze-and-excitation gate).

    Raises
    ------
    ValueError
        If a size is not positive, a zero point or the clip is outside int8, or the requant is
        per channel.
    """

    batch: int
    channels: int
    height: int
    width: int
    lhs_zero_point: int
    rhs_zero_point: int
    requant: Requant
    output_zero_point: int = 0
    clip: tuple = INT8_RANGE
    rhs_broadcast: bool = False

    def __post_init__(self):
        for name in ("batch", "channels", "height", "width"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"QMulSpec: {name} must be positive, got {getattr(self, name)!r}")
        for name in ("lhs_zero_point", "rhs_zero_point", "output_zero_point"):
            _check_zp(getattr(self, name), "QMulSpec")
        object.__setattr__(self, "clip", _check_clip(self.clip, "QMulSpec"))
        if self.requant.per_channel:
            raise ValueError("QMulSpec: the requant must be per tensor")

    @property
    def out_shape(self) -> tuple:
        return (self.batch, self.channels, self.height, self.width)

    @property
    def rhs_shape(self) -> tuple:
        return (self.batch, self.channels, 1, 1) if self.rhs_broadcast else self.out_shape


def mul_np(a, lhs_zero_point: int, b, rhs_zero_point: int, rq: Requant, out_zero_point: int = 0,
           lo: int = -128, hi: int = 127) -> np.ndarray:
    """The quantized product of two int8/uint8 arrays (broadcasting), as int32 clipped to
    ``[lo, hi]`` (the host form of :func:`build_qmul`)."""
    p = (np.asarray(a).astype(np.int64) - int(lhs_zero_point)) * (np.asarray(b).astype(np.int64) - int(rhs_zero_point))
    return requantize_np(p, rq, 0, out_zero_point, lo, hi).astype(np.int32)


def declare_qmul(spec: QMulSpec, env: Environment):
    """The tensor expressions of a quantized product: ``(output, [(role, tensor), ...], loads,
    ALU stages)``."""
    nb = _ceil_div(spec.batch, env.BATCH)
    cb = _ceil_div(spec.channels, env.BLOCK_OUT)
    shape = (nb, cb, spec.height, spec.width, env.BATCH, env.BLOCK_OUT)
    a = placeholder(shape, name="lhs", dtype=env.inp_dtype)
    bshape = (nb, cb, 1, 1, env.BATCH, env.BLOCK_OUT) if spec.rhs_broadcast else shape
    b = placeholder(bshape, name="rhs", dtype=env.inp_dtype)
    terms = []
    for t, z, prefix in ((a, spec.lhs_zero_point, "lhs"), (b, spec.rhs_zero_point, "rhs")):
        loaded = compute(t.shape, lambda *i, t=t: t(*i).astype(env.acc_dtype), name=f"{prefix}_load",
                         tag=LOAD_TAG)
        ch = _Chain(loaded, prefix)
        if z:
            ch.imm("add", -int(z))
        terms.append(ch.x)
    ta, tb = terms
    if spec.rhs_broadcast:
        prod = compute(shape, lambda n0, c0, i, j, n1, c1: ta(n0, c0, i, j, n1, c1) * tb(n0, c0, 0, 0, n1, c1),
                       name="qmul_prod", tag=BROADCAST_TAG)
    else:
        prod = compute(shape, lambda *i: ta(*i) * tb(*i), name="qmul_prod", tag=ELEMWISE_TAG)
    ch = _Chain(prod, "qmul")
    z_left = ch.requant(spec.requant, None, None, post_add=spec.output_zero_point, bounded=True,
                        saturate=spec.clip)
    out = _finish(ch, z_left, spec.clip, env)
    stages = _stages_below(out)
    loads = [t for t in stages if t.op.tag == LOAD_TAG]
    alus = [t for t in stages if t.op.tag != LOAD_TAG]
    return out, [("lhs", a), ("rhs", b), ("out", out)], loads, alus


def build_qmul(spec: QMulSpec, name: str, env: Environment | None = None, tiling=None):
    """Compile a quantized product (:class:`QMulSpec`) on the ALU.

    ``tiling`` (an :class:`~vta.topi.alu_tiling.AluTiling`, optional) overrides the default.

    Returns
    -------
    (Module, ArgLayout)

    Raises
    ------
    ScheduleError
        If one row of the operands does not fit the accumulator, or ``tiling`` does not fit.
    """
    return build_alu_op("multiply", spec, declare_qmul, name, env or get_env(), tiling)
