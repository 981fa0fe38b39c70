"""Quantized average pooling on VTA's ALU (:func:`build_avgpool`, for :class:`AvgPoolSpec`).

``out = clip(requantize(sum(x) - count * z_in) + z_out, lo, hi)`` over each window of
``count = kh * kw`` pixels, with one per-tensor requantisation of ``s_in / (s_out * count)``:
the arithmetic of the host's ``qnn.avg_pool2d`` / ``qnn.global_avg_pool2d`` kernels
(:mod:`vta.graph.host`), so a pool on either device gives the same bits. The window sums are
exact int32 additions on the ALU: the input is loaded into the accumulator (``ACC_8BIT``), each
window is summed along its width and then along its height, one ADD stage per tap; a window that
spans a whole axis (a global pool) is summed as a tree instead, one level per prime factor of the
axis (``x[i] + x[i + L/f] + ...``), so a 96-pixel row takes 7 ADDs, not 95. The row sums are
centred (``- kw * z_in``, an immediate ADD; the pixels when that passes 16 bits), then the
requantisation and the clip run as in
:func:`~vta.topi.qnn_mul.build_qmul`.

Padding is not supported here (a padded window's pixel count depends on its position unless the
padding is counted; such pools stay on the CPU, :func:`avgpool_unsupported_reason` says why).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..env import Environment, get_env
from ..errors import ScheduleError
from ..te import compute, placeholder
from ..te.tensor import Tensor
from ..tir import nodes as n
from ._traverse import LOAD_TAG
from .epilogue import ELEMWISE_TAG
from .qnn_build import _arg_specs, _build, _Chain, _ceil_div, _check_env, _ewise_schedule, _finish, _ints, \
    _stages_below
from .qnn_layout import ArgLayout
from .qnn_requant import INT8_RANGE, Requant
from .qnn_spec import _check_clip, _check_zp

__all__ = ["AvgPoolSpec", "avgpool_requant", "avgpool_unsupported_reason", "build_avgpool"]


def avgpool_requant(input_scale: float, output_scale: float, count: int, mode: str = "fixed") -> Requant:
    """The requantisation of a window sum of ``count`` pixels: ``s_in / (s_out * count)``.

    Raises
    ------
    ValueError
        If the multiplier cannot be represented (:meth:`Requant.from_scale`).
    """
    scale = float(input_scale) / (float(output_scale) * int(count))
    return Requant.from_scale(np.asarray([scale], dtype=np.float64), mode=mode,
                              acc_bits=max(1, (255 * int(count)).bit_length()))


@dataclass(frozen=True)
class AvgPoolSpec:
    """Average pooling of an int8 NCHW tensor, no padding (module docstring).

    Raises
    ------
    ValueError
        If a size is not positive, the window does not fit the input, a zero point or the clip
        is outside int8, or the requant is per channel.
    """

    batch: int
    channels: int
    height: int
    width: int
    pool_size: tuple
    strides: tuple
    input_zero_point: int
    requant: Requant
    output_zero_point: int = 0
    clip: tuple = INT8_RANGE

    def __post_init__(self):
        for name in ("batch", "channels", "height", "width"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"AvgPoolSpec: {name} must be positive, got {getattr(self, name)!r}")
        object.__setattr__(self, "pool_size", tuple(int(v) for v in self.pool_size))
        object.__setattr__(self, "strides", tuple(int(v) for v in self.strides))
        if len(self.pool_size) != 2 or len(self.strides) != 2 or min(self.pool_size + self.strides) <= 0:
            raise ValueError(f"AvgPoolSpec: pool_size and strides must be two positive ints, got "
                             f"{self.pool_size!r}, {self.strides!r}")
        if self.pool_size[0] > self.height or self.pool_size[1] > self.width:
            raise ValueError(f"AvgPoolSpec: window {self.pool_size!r} larger than the input "
                             f"{(self.height, self.width)!r}")
        for name in ("input_zero_point", "output_zero_point"):
            _check_zp(getattr(self, name), "AvgPoolSpec")
        object.__setattr__(self, "clip", _check_clip(self.clip, "AvgPoolSpec"))
        if self.requant.per_channel:
            raise ValueError("AvgPoolSpec: the requant must be per tensor")

    @property
    def count(self) -> int:
        """Pixels per window."""
        return self.pool_size[0] * self.pool_size[1]

    @property
    def out_height(self) -> int:
        return (self.height - self.pool_size[0]) // self.strides[0] + 1

    @property
    def out_width(self) -> int:
        return (self.width - self.pool_size[1]) // self.strides[1] + 1

    @property
    def out_shape(self) -> tuple:
        return (self.batch, self.channels, self.out_height, self.out_width)


def _factors(n: int) -> list[int]:
    """Prime factors of ``n``, largest first (the first tree level shrinks the most)."""
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return sorted(out, reverse=True)


def _axis_plan(size: int, window: int, stride: int, out: int) -> list[tuple[str, int]]:
    """How one axis is summed: ``[("tree", f), ...]`` for a whole-axis window, else taps."""
    if window == size and out == 1 and window > 1:
        return [("tree", f) for f in _factors(size)]
    return [("taps", window)] if window > 1 else []


def _centre_late(spec: AvgPoolSpec) -> bool:
    """Centre the row sums (``- kw * z_in`` fits a 16-bit immediate), not every pixel."""
    return abs(spec.pool_size[1] * int(spec.input_zero_point)) < 2 ** 15


def _centre(x: Tensor, z: int, name: str, env: Environment) -> Tensor:
    return compute(x.shape, lambda *i: x(*i) - n.const(z, env.acc_dtype), name=name, tag=ELEMWISE_TAG)


def _entries(spec: AvgPoolSpec, rows_out: int) -> int:
    """Accumulator entries of one row tile of ``rows_out`` output rows (every stage's buffer)."""
    kh, kw = spec.pool_size
    sh, sw = spec.strides
    rows_in = (rows_out - 1) * sh + kh
    total, w = rows_in * spec.width, spec.width
    for how, f in _axis_plan(spec.width, kw, sw, spec.out_width):
        w = w // f if how == "tree" else spec.out_width
        total += rows_in * w * (f if how == "taps" else f - 1)
    if spec.input_zero_point:   # the centring stage, on the row sums or on the pixels
        total += rows_in * (w if _centre_late(spec) else spec.width)
    h = rows_in
    for how, f in _axis_plan(spec.height, kh, sh, spec.out_height):
        h = h // f if how == "tree" else rows_out
        total += h * w * (f if how == "taps" else f - 1)
    return total + 8 * rows_out * spec.out_width   # the requantisation stages


def _row_tile(spec: AvgPoolSpec, env: Environment) -> int:
    oh = spec.out_height
    for t in range(oh, 0, -1):
        if oh % t == 0 and _entries(spec, t) <= env.ACC_BUFF_DEPTH:
            return t
    raise ScheduleError(f"avg_pool2d: one output row needs {_entries(spec, 1)} accumulator entries, more than the "
                        f"{env.ACC_BUFF_DEPTH} of this configuration")


def avgpool_unsupported_reason(spec: AvgPoolSpec, env: Environment | None = None) -> str | None:
    """Why :func:`build_avgpool` cannot run ``spec`` on the ALU (None if it can)."""
    env = env or get_env()
    kh, kw = spec.pool_size
    plans = (_axis_plan(spec.height, kh, spec.strides[0], spec.out_height),
             _axis_plan(spec.width, kw, spec.strides[1], spec.out_width))
    if max((f for plan in plans for _, f in plan), default=1) > 64:
        return f"a window of {kh}x{kw} pixels needs more than 64 ALU stages along one axis"
    try:
        _row_tile(spec, env)
    except ScheduleError as exc:
        return str(exc)
    return None


def _sum_axis(x: Tensor, axis: int, plan: list, stride: int, out_len: int, name: str) -> Tensor:
    """``x`` summed along ``axis`` (2: rows, 3: columns) by ``plan`` (:func:`_axis_plan`)."""
    count = [0]

    def at(t: Tensor, idx: tuple, pos) -> object:
        i = list(idx)
        i[axis] = pos
        return t(*i)

    def stage(shape, body) -> Tensor:
        count[0] += 1
        return compute(shape, body, name=f"{name}{count[0]}", tag=ELEMWISE_TAG)

    for how, f in plan:
        shape = list(_ints(x.shape))
        if how == "tree":
            part = shape[axis] // f
            shape[axis] = part
            src = x
            cur = stage(tuple(shape), lambda *i, src=src, part=part: at(src, i, i[axis]) + at(src, i, i[axis] + part))
            for j in range(2, f):
                cur = stage(tuple(shape), lambda *i, src=src, prev=cur, off=j * part:
                            prev(*i) + at(src, i, i[axis] + off))
        else:
            shape[axis] = out_len
            src = x
            cur = stage(tuple(shape), lambda *i, src=src: at(src, i, i[axis] * stride))
            for j in range(1, f):
                cur = stage(tuple(shape), lambda *i, src=src, prev=cur, j=j:
                            prev(*i) + at(src, i, i[axis] * stride + j))
        x = cur
    return x


def build_avgpool(spec: AvgPoolSpec, name: str, env: Environment | None = None):
    """Compile average pooling (:class:`AvgPoolSpec`) on the ALU, or return None.

    Returns
    -------
    (Module, ArgLayout) or None
        None when the ALU cannot run it; :func:`avgpool_unsupported_reason` says why.
    """
    env = env or get_env()
    _check_env(env, "build_avgpool")
    if avgpool_unsupported_reason(spec, env) is not None:
        return None
    kh, kw = spec.pool_size
    sh, sw = spec.strides
    with env:
        nb = _ceil_div(spec.batch, env.BATCH)
        cb = _ceil_div(spec.channels, env.BLOCK_OUT)
        data = placeholder((nb, cb, spec.height, spec.width, env.BATCH, env.BLOCK_OUT), name="data",
                           dtype=env.inp_dtype)
        x = compute(data.shape, lambda *i: data(*i).astype(env.acc_dtype), name="pool_load", tag=LOAD_TAG)
        late = _centre_late(spec)
        if spec.input_zero_point and not late:
            x = _centre(x, int(spec.input_zero_point), "pool_centre", env)
        x = _sum_axis(x, 3, _axis_plan(spec.width, kw, sw, spec.out_width), sw, spec.out_width, "pool_w")
        if spec.input_zero_point and late:
            x = _centre(x, kw * int(spec.input_zero_point), "pool_centre", env)
        x = _sum_axis(x, 2, _axis_plan(spec.height, kh, sh, spec.out_height), sh, spec.out_height, "pool_h")
        ch = _Chain(x, "avg")
        z_left = ch.requant(spec.requant, None, None, post_add=spec.output_zero_point,
                            bounded=255 * spec.count < 2 ** 16, saturate=spec.clip)
        out = _finish(ch, z_left, spec.clip, env)
        stages = _stages_below(out)
        loads = [t for t in stages if t.op.tag == LOAD_TAG]
        alus = [t for t in stages if t.op.tag != LOAD_TAG]
        s = _ewise_schedule(out, loads, alus, 2, _row_tile(spec, env), env)
        pairs = [("data", data), ("out", out)]
        mod = _build(s, pairs, name, env)
    return mod, ArgLayout.for_env("avg_pool2d", spec, _arg_specs(pairs), env)
