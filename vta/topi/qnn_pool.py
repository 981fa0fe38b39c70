"""Max pooling on VTA's ALU (:func:`build_maxpool`, for :class:`vta.topi.qnn.MaxPoolSpec`).

The input is loaded into the accumulator with the hardware's zero padding, together with a
``mask`` of ones loaded with the same padding; ``x + 256 * mask`` is at least 128 on every real
pixel and 0 on every padded one, so padded pixels never win; the window maximum is a chain of
MAX stages over the strided windows (one ALU stage per tap; or, where that takes fewer ALU
operations, a chain along each row and then one down each column: a 13x13 window takes 26 stages
instead of 169), and ``- 256`` brings the result back. Row tiles are the outer loop: the mask is
loaded once per row tile, the data per row tile and channel block.
"""

from __future__ import annotations

from ..env import Environment, get_env
from ..errors import ScheduleError
from ..te import compute, create_schedule, if_then_else, placeholder
from ..te import max as te_max
from ..te.tensor import Tensor
from ..tir import nodes as n
from ._traverse import LOAD_TAG
from .epilogue import ELEMWISE_TAG
from .qnn_build import _arg_specs, _build, _ceil_div, _check_env, _ints, _stages_below
from .qnn_layout import ArgLayout

__all__ = ["build_maxpool", "maxpool_unsupported_reason"]


def build_maxpool(spec, name: str, env: Environment | None = None):
    """Compile max pooling (:class:`~vta.topi.qnn.MaxPoolSpec`) on the ALU, or return None.

    The input is loaded into the accumulator (``ACC_8BIT``, zero padded by the hardware) together
    with a ``mask`` of ones loaded with the same padding; ``x + 256 * mask`` is then at least 128
    on every real pixel and 0 on every padded one, so padded pixels never win; the window maximum
    is a chain of MAX stages over the shifted windows (or along rows, then down columns), and
    ``- 256`` brings the result back.

    Returns
    -------
    (Module, ArgLayout) or None
        None when the ALU cannot run it; :func:`maxpool_unsupported_reason` says why.
    """
    env = env or get_env()
    _check_env(env, "build_maxpool")
    if maxpool_unsupported_reason(spec, env) is not None:
        return None
    with env:
        nb = _ceil_div(spec.batch, env.BATCH)
        cb = _ceil_div(spec.channels, env.BLOCK_OUT)
        data = placeholder((nb, cb, spec.height, spec.width, env.BATCH, env.BLOCK_OUT), name="data",
                           dtype=env.inp_dtype)
        pairs: list = [("data", data)]
        th = _maxpool_row_tile(spec, env)
        out = _declare_maxpool(spec, data, pairs, env)
        s = _schedule_maxpool(out, th, env)
        pairs.append(("out", out))
        mod = _build(s, pairs, name, env)
    return mod, ArgLayout.for_env("max_pool2d", spec, _arg_specs(pairs), env)


def maxpool_unsupported_reason(spec, env: Environment | None = None) -> str | None:
    """Why :func:`build_maxpool` cannot run ``spec`` on the ALU (None if it can)."""
    env = env or get_env()
    if max(spec.padding) > 15:
        return f"padding {spec.padding!r} exceeds the 4-bit pad field of a load (15)"
    try:
        _maxpool_row_tile(spec, env)
    except ScheduleError as exc:
        return str(exc)
    return None


def _separable(spec) -> bool:
    """Whether the window maximum is taken in two passes, along rows and then down columns (``kw``
    taps over the input rows of a tile, then ``kh`` over its output rows), rather than one MAX
    stage per tap: where that takes fewer ALU element operations per output row. A large window
    (the 13x13 pools of a spatial pyramid) needs 26 stages instead of 169."""
    kh, kw = spec.pool_size
    sh, _ = spec.strides
    return kw * sh + kh < kh * kw


def _maxpool_row_tile(spec, env: Environment) -> int:
    kh, _ = spec.pool_size
    sh, _ = spec.strides
    pw = spec.width + spec.padding[1] + spec.padding[3]
    oh, ow = spec.out_height, spec.out_width
    masked = any(spec.padding)
    for t in range(oh, 0, -1):
        if oh % t:
            continue
        rows_in = (t - 1) * sh + kh
        need = rows_in * pw * (2 if masked else 1) + t * ow + (rows_in * ow if _separable(spec) else 0)
        if need <= env.ACC_BUFF_DEPTH:
            return t
    rows_in = kh
    need = rows_in * pw * (2 if masked else 1) + ow + (rows_in * ow if _separable(spec) else 0)
    raise ScheduleError(f"max_pool2d: one output row needs {need} accumulator entries, more than the "
                        f"{env.ACC_BUFF_DEPTH} of this configuration")


def _padded_load(t: Tensor, before: tuple, after: tuple, dtype: str, name: str) -> Tensor:
    """``t`` widened to ``dtype`` and zero padded on its two spatial axes (2, 3): one padded
    ``ACC_8BIT`` load."""
    shape = _ints(t.shape)
    h, w = shape[2], shape[3]
    oshape = (shape[0], shape[1], h + before[0] + after[0], w + before[1] + after[1], shape[4], shape[5])

    def body(b, c, y, x, bi, ci):
        cond = n.And(n.And(y >= before[0], y < h + before[0]), n.And(x >= before[1], x < w + before[1]))
        return if_then_else(cond, t(b, c, y - before[0], x - before[1], bi, ci).astype(dtype), n.const(0, dtype))

    return compute(oshape, body, name=name, tag=LOAD_TAG)


def _declare_maxpool(spec, data: Tensor, pairs: list, env: Environment) -> Tensor:
    kh, kw = spec.pool_size
    sh, sw = spec.strides
    pt, pl, pb, pr = spec.padding
    oh, ow = spec.out_height, spec.out_width
    nb, cb = _ints(data.shape)[:2]
    acc = env.acc_dtype
    src = data
    if any(spec.padding):
        mask = placeholder((1, 1, spec.height, spec.width, env.BATCH, env.BLOCK_OUT), name="mask", dtype=env.inp_dtype)
        pairs.append(("mask", mask))
        xl = _padded_load(data, (pt, pl), (pb, pr), acc, "pool_load")
        ml = _padded_load(mask, (pt, pl), (pb, pr), acc, "mask_load")
        ms = compute(ml.shape, lambda *i: ml(*i) << 8, name="mask_shl", tag=ELEMWISE_TAG)
        src = compute(xl.shape, lambda b, c, y, x, bi, ci: xl(b, c, y, x, bi, ci) + ms(0, 0, y, x, bi, ci),
                      name="pool_biased", tag=ELEMWISE_TAG)
    else:
        src = compute(data.shape, lambda *i: data(*i).astype(acc), name="pool_load", tag=LOAD_TAG)
    oshape = (nb, cb, oh, ow, env.BATCH, env.BLOCK_OUT)
    if _separable(spec):
        row_shape = (nb, cb, _ints(src.shape)[2], ow, env.BATCH, env.BLOCK_OUT)
        cur = _max_chain(row_shape, [(0, dx) for dx in range(kw)], lambda y, x: (y, x * sw), src, "pool_row")
        cur = _max_chain(oshape, [(dy, 0) for dy in range(kh)], lambda y, x: (y * sh, x), cur, "pool_col")
    else:
        cur = _max_chain(oshape, [(dy, dx) for dy in range(kh) for dx in range(kw)],
                         lambda y, x: (y * sh, x * sw), src, "pool_tap")
    if any(spec.padding):
        last = cur
        cur = compute(oshape, lambda *i: last(*i) - n.const(256, acc), name="pool_unbias", tag=ELEMWISE_TAG)
    last = cur
    return compute(oshape, lambda *i: last(*i).astype(env.out_dtype), name="out", tag=ELEMWISE_TAG)


def _max_chain(shape: tuple, taps: list, origin, src: Tensor, name: str) -> Tensor:
    """The running maximum over ``taps`` (``(dy, dx)`` offsets from ``origin(y, x)`` in ``src``),
    one ALU stage per tap, each of ``shape``."""
    def tap(dy: int, dx: int, prev: Tensor | None):
        def body(b, c, y, x, bi, ci):
            y0, x0 = origin(y, x)
            v = src(b, c, y0 + dy, x0 + dx, bi, ci)
            return v if prev is None else te_max(prev(b, c, y, x, bi, ci), v)
        return body

    cur = None
    for dy, dx in taps:
        cur = compute(shape, tap(dy, dx, cur), name=f"{name}{dy}_{dx}", tag=ELEMWISE_TAG)
    return cur


def _schedule_maxpool(out: Tensor, tile_rows: int, env: Environment):
    s = create_schedule(out.op)
    order = _stages_below(out)
    axes = list(s[out].op.axis)
    outer, inner = s[out].split(axes[2], factor=tile_rows)
    # Row tiles outside the channel blocks: the mask (the same for every channel block) is loaded
    # once per row tile, the data once per row tile and channel block.
    s[out].reorder(axes[0], outer, axes[1], inner, *axes[3:])
    for t in order:
        s[t].set_scope(env.acc_scope)
        s[t].compute_at(s[out], outer if t.op.name.startswith("mask_") else axes[1])
        kind = env.dma_copy if t.op.tag == LOAD_TAG else env.alu
        s[t].pragma(s[t].op.axis[0], kind)
    s[out].pragma(inner, env.dma_copy)
    return s

