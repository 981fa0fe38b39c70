"""Nearest-neighbour upsampling by integer factors on VTA's ALU (:func:`build_upsampling`).

Every input pixel is repeated ``scale_h x scale_w`` times; the values are int8 and unchanged
(no requantisation). The output ``(N, C, H*fh, W*fw)`` is declared as the array
``(N, C, H, fh, W, fw)`` of the same memory, so that each output element reads input pixel
``(y, x)`` with an index linear in the loops: the input rows of a tile are loaded into the
accumulator (``ACC_8BIT``), one ALU copy stage writes the repeated tile and it is stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..env import Environment, get_env
from ..errors import ScheduleError
from ..te import compute, placeholder
from ._traverse import LOAD_TAG
from .epilogue import ELEMWISE_TAG
from .qnn_build import _arg_specs, _build, _ceil_div, _check_env, _ewise_schedule, _stages_below
from .qnn_layout import ArgLayout

__all__ = ["UpsamplingSpec", "build_upsampling", "upsampling_unsupported_reason"]


@dataclass(frozen=True)
class UpsamplingSpec:
    """Nearest-neighbour upsampling of an int8 NCHW tensor by ``(scale_h, scale_w)``.

    Raises
    ------
    ValueError
        If a size or a factor is not a positive integer.
    """

    batch: int
    channels: int
    height: int
    width: int
    scale_h: int
    scale_w: int

    def __post_init__(self):
        for name in ("batch", "channels", "height", "width", "scale_h", "scale_w"):
            v = getattr(self, name)
            if int(v) != v or int(v) <= 0:
                raise ValueError(f"UpsamplingSpec: {name} must be a positive integer, got {v!r}")

    @property
    def out_shape(self) -> tuple:
        return (self.batch, self.channels, self.height * self.scale_h, self.width * self.scale_w)


def _row_tile(spec: UpsamplingSpec, env: Environment) -> int:
    per_row = spec.width * (1 + spec.scale_h * spec.scale_w)
    for t in range(spec.height, 0, -1):
        if spec.height % t == 0 and t * per_row <= env.ACC_BUFF_DEPTH:
            return t
    raise ScheduleError(f"upsampling: one input row and its {spec.scale_h}x{spec.scale_w} copies need {per_row} "
                        f"accumulator entries, more than the {env.ACC_BUFF_DEPTH} of this configuration")


def upsampling_unsupported_reason(spec: UpsamplingSpec, env: Environment | None = None) -> str | None:
    """Why :func:`build_upsampling` cannot run ``spec`` (None if it can)."""
    try:
        _row_tile(spec, env or get_env())
    except ScheduleError as exc:
        return str(exc)
    return None


def build_upsampling(spec: UpsamplingSpec, name: str, env: Environment | None = None):
    """Compile nearest-neighbour upsampling (:class:`UpsamplingSpec`) on the ALU, or return None.

    Returns
    -------
    (Module, ArgLayout) or None
        None when the accumulator cannot hold one input row with its copies
        (:func:`upsampling_unsupported_reason`). The layout's ``out`` argument is the 8-D array
        ``(N/B, C/BO, H, fh, W, fw, B, BO)``, the memory of the packed output ``(N, C, H*fh, W*fw)``:
        the graph passes a view of its output in that shape (``func_out_shape``).
    """
    env = env or get_env()
    _check_env(env, "build_upsampling")
    if upsampling_unsupported_reason(spec, env) is not None:
        return None
    fh, fw = spec.scale_h, spec.scale_w
    with env:
        nb = _ceil_div(spec.batch, env.BATCH)
        cb = _ceil_div(spec.channels, env.BLOCK_OUT)
        data = placeholder((nb, cb, spec.height, spec.width, env.BATCH, env.BLOCK_OUT), name="data",
                           dtype=env.inp_dtype)
        x = compute(data.shape, lambda *i: data(*i).astype(env.acc_dtype), name="up_load", tag=LOAD_TAG)
        shape = (nb, cb, spec.height, fh, spec.width, fw, env.BATCH, env.BLOCK_OUT)
        up = compute(shape, lambda n0, c0, y, dy, xx, dx, b, c: x(n0, c0, y, xx, b, c), name="up_copy",
                     tag=ELEMWISE_TAG)
        out = compute(shape, lambda *i: up(*i).astype(env.out_dtype), name="out", tag=ELEMWISE_TAG)
        stages = _stages_below(out)
        loads = [t for t in stages if t.op.tag == LOAD_TAG]
        alus = [t for t in stages if t.op.tag != LOAD_TAG]
        s = _ewise_schedule(out, loads, alus, 2, _row_tile(spec, env), env)
        pairs = [("data", data), ("out", out)]
        mod = _build(s, pairs, name, env)
    return mod, ArgLayout.for_env("upsampling", spec, _arg_specs(pairs), env)
