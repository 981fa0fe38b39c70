"""The element-wise maximum or minimum of two quantized int8 tensors on VTA's ALU
(:func:`build_qminmax`).

``out = clip(op(rq_a(a - z_a) + z_out, rq_b(b - z_b) + z_out), lo, hi)`` with ``op`` MAX or MIN:
each operand is brought to the output scale by its own per-tensor requantisation ``s_x / s_out``
(:class:`~vta.topi.qnn.Requant`, ``acc_bits = 9``: a centred 8-bit value), skipped when that is the
identity (equal scales; then the operation is exact on the integers), and the ALU's MAX/MIN picks
one. Rounding is monotone, so this equals rounding the real maximum once: against onnxruntime's
float Max/Min between DequantizeLinear and QuantizeLinear every output is within 1 (the fixed-point
multiplier), and equal when the scales agree. :func:`minmax_np` is the same arithmetic for the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..env import Environment, get_env
from ..te import compute, placeholder
from ..te import max as te_max
from ..te import min as te_min
from ._traverse import LOAD_TAG
from .epilogue import ELEMWISE_TAG
from .qnn_build import _arg_specs, _build, _Chain, _ceil_div, _check_env, _ewise_schedule, _finish, _row_tile, \
    _stages_below
from .qnn_layout import ArgLayout
from .qnn_requant import INT8_RANGE, Requant, requantize_np
from .qnn_spec import _check_clip, _check_zp

__all__ = ["QMinMaxSpec", "build_qminmax", "is_identity", "minmax_np", "minmax_requant"]

OPS = ("max", "min")


def minmax_requant(scale: float, mode: str = "fixed") -> Requant:
    """The requantisation of one operand with real multiplier ``scale`` (``s_x / s_out``).

    Raises
    ------
    ValueError
        If the multiplier cannot be represented.
    """
    return Requant.from_scale(np.asarray([scale], dtype=np.float64), mode=mode, acc_bits=9)


def is_identity(rq: Requant) -> bool:
    """True when ``rq`` maps every integer to itself (a multiplier of exactly 1)."""
    m, s = int(rq.multiplier[0]), int(rq.shift[0])
    return int(rq.pre_shift) == 0 and m == 1 << s


@dataclass(frozen=True)
class QMinMaxSpec:
    """The element-wise ``op`` (``"max"`` or ``"min"``) of two int8 NCHW tensors of one shape.

    Raises
    ------
    ValueError
        If ``op`` is unknown, a size is not positive, a zero point or the clip is outside int8, or
        a requant is per channel.
    """

    batch: int
    channels: int
    height: int
    width: int
    op: str
    lhs_zero_point: int
    lhs_requant: Requant
    rhs_zero_point: int
    rhs_requant: Requant
    output_zero_point: int = 0
    clip: tuple = INT8_RANGE

    def __post_init__(self):
        if self.op not in OPS:
            raise ValueError(f"QMinMaxSpec: op must be one of {OPS!r}, got {self.op!r}")
        for name in ("batch", "channels", "height", "width"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"QMinMaxSpec: {name} must be positive, got {getattr(self, name)!r}")
        for name in ("lhs_zero_point", "rhs_zero_point", "output_zero_point"):
            _check_zp(getattr(self, name), "QMinMaxSpec")
        object.__setattr__(self, "clip", _check_clip(self.clip, "QMinMaxSpec"))
        if self.lhs_requant.per_channel or self.rhs_requant.per_channel:
            raise ValueError("QMinMaxSpec: the requants must be per tensor")

    @property
    def out_shape(self) -> tuple:
        return (self.batch, self.channels, self.height, self.width)


def minmax_np(op: str, a, lhs_zero_point: int, rq_a: Requant, b, rhs_zero_point: int, rq_b: Requant,
              out_zero_point: int = 0, lo: int = -128, hi: int = 127) -> np.ndarray:
    """The quantized maximum/minimum of two int8/uint8 arrays (broadcasting), int32 clipped to
    ``[lo, hi]`` (the host form of :func:`build_qminmax`)."""
    ya = requantize_np(np.asarray(a).astype(np.int64) - int(lhs_zero_point), rq_a, 0, out_zero_point, lo, hi)
    yb = requantize_np(np.asarray(b).astype(np.int64) - int(rhs_zero_point), rq_b, 0, out_zero_point, lo, hi)
    return (np.maximum if op == "max" else np.minimum)(ya, yb).astype(np.int32)


def build_qminmax(spec: QMinMaxSpec, name: str, env: Environment | None = None):
    """Compile a quantized maximum/minimum (:class:`QMinMaxSpec`) on the ALU.

    Returns
    -------
    (Module, ArgLayout)

    Raises
    ------
    ScheduleError
        If one row of the operands does not fit the accumulator.
    """
    env = env or get_env()
    _check_env(env, "build_qminmax")
    with env:
        nb = _ceil_div(spec.batch, env.BATCH)
        cb = _ceil_div(spec.channels, env.BLOCK_OUT)
        shape = (nb, cb, spec.height, spec.width, env.BATCH, env.BLOCK_OUT)
        a = placeholder(shape, name="lhs", dtype=env.inp_dtype)
        b = placeholder(shape, name="rhs", dtype=env.inp_dtype)
        terms = []
        for t, z, rq, prefix in ((a, spec.lhs_zero_point, spec.lhs_requant, "lhs"),
                                 (b, spec.rhs_zero_point, spec.rhs_requant, "rhs")):
            loaded = compute(t.shape, lambda *i, t=t: t(*i).astype(env.acc_dtype), name=f"{prefix}_load",
                             tag=LOAD_TAG)
            ch = _Chain(loaded, prefix)
            if is_identity(rq):
                if spec.output_zero_point - z:
                    ch.imm("add", spec.output_zero_point - int(z))
            else:
                if z:
                    ch.imm("add", -int(z))
                left = ch.requant(rq, None, None, post_add=spec.output_zero_point, bounded=True)
                if left:
                    ch.imm("add", left)
            terms.append(ch.x)
        ta, tb = terms
        pick = te_max if spec.op == "max" else te_min
        both = compute(shape, lambda *i: pick(ta(*i), tb(*i)), name=f"q{spec.op}", tag=ELEMWISE_TAG)
        out = _finish(_Chain(both, "qminmax"), 0, spec.clip, env)
        stages = _stages_below(out)
        loads = [t for t in stages if t.op.tag == LOAD_TAG]
        alus = [t for t in stages if t.op.tag != LOAD_TAG]
        tile = _row_tile(spec.height, spec.width, 2, env)
        s = _ewise_schedule(out, loads, alus, 2, tile, env)
        pairs = [("lhs", a), ("rhs", b), ("out", out)]
        mod = _build(s, pairs, name, env)
    return mod, ArgLayout.for_env("minmax", spec, _arg_specs(pairs), env)
