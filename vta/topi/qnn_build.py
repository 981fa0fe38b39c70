"""Compiling the quantized operators of :mod:`vta.topi.qnn` for VTA.

Each builder declares the packed operator with tensor expressions — the GEMM core
(:func:`~vta.topi.conv2d_packed`, :func:`~vta.topi.dense_packed`) followed by element-wise
stages that the schedules run on the ALU in the accumulator — schedules it with the
``vta.topi`` schedules (or, for the add and the pooling that have no GEMM, a small schedule of
their own here), and compiles it with :func:`vta.build`. The ALU program of a fused convolution:

=================================  ==========================================================
stage                              ALU
=================================  ==========================================================
``+ bias``                         ADD of the loaded bias vector (or bias + border map)
``>> pre_shift`` (if any)          SHR imm
``* m``                            MUL imm (per tensor; SHR -k for m = 2**k, nothing for 1),
                                   MUL of a loaded vector (per channel)
``>> s1``                          SHR imm, or SHR of a loaded shift vector (per channel)
``+ 2**(s2-1)``, ``>> s2``         ADD imm, SHR imm (round half up)
residual ``r``                     ACC_8BIT load, ADD -z_r, MUL m_r, rounding as above, ADD
``+ z_out``, clip                  ADD imm, MIN imm, MAX imm; the store narrows to int8
=================================  ==========================================================

A convolution whose input zero point is not 0 and which is padded cannot use the hardware's
zero padding as is: its bias argument is then a full map (``vta.topi.qnn_layout``), the bias
plus the border correction, loaded like a residual (int32).
"""

from __future__ import annotations

from ..env import Environment, get_env
from ..errors import ScheduleError
from ..te import compute, create_schedule, if_then_else, placeholder
from ..te import max as te_max
from ..te import min as te_min
from ..te.tensor import Tensor
from ..tir import nodes as n
from ._traverse import LOAD_TAG
from .conv2d import conv2d_packed, schedule_conv2d_packed
from .dense import dense_packed, schedule_dense_packed
from .epilogue import BROADCAST_TAG, ELEMWISE_TAG
from .qnn_layout import ArgLayout, ArgSpec

__all__ = ["build_maxpool", "build_qadd", "build_qconv2d", "build_qdense", "declare_qconv2d", "declare_qdense"]


def _ceil_div(x: int, b: int) -> int:
    return -(-x // b)


def _ints(shape) -> tuple:
    return tuple(int(s) for s in shape)


class _Chain:
    """Element-wise int32 stages appended one after another (each a separate ALU stage)."""

    def __init__(self, x: Tensor, prefix: str):
        self.x = x
        self.shape = x.shape
        self.prefix = prefix
        self.count = 0

    def _name(self, what: str) -> str:
        self.count += 1
        return f"{self.prefix}_{what}{self.count}"

    def imm(self, op: str, value: int) -> None:
        prev, v = self.x, int(value)
        dt = prev.dtype
        fns = {
            "add": lambda *i: prev(*i) + n.const(v, dt),
            "mul": lambda *i: prev(*i) * n.const(v, dt),
            "shr": lambda *i: prev(*i) >> v,
            "shl": lambda *i: prev(*i) << v,
            "min": lambda *i: te_min(prev(*i), n.const(v, dt)),
            "max": lambda *i: te_max(prev(*i), n.const(v, dt)),
        }
        self.x = compute(self.shape, fns[op], name=self._name(op), tag=ELEMWISE_TAG)

    def tensor(self, op: str, t: Tensor) -> None:
        prev = self.x
        bcast = [int(ts) == 1 and int(rs) != 1 for ts, rs in zip(t.shape, self.shape)]

        def idx(i):
            return [n.IntImm(0) if bc else v for bc, v in zip(bcast, i)]

        fns = {
            "add": lambda *i: prev(*i) + t(*idx(i)),
            "mul": lambda *i: prev(*i) * t(*idx(i)),
            "shr": lambda *i: prev(*i) >> t(*idx(i)),
        }
        self.x = compute(self.shape, fns[op], name=self._name(op + "_t"), tag=BROADCAST_TAG if any(bcast) else ELEMWISE_TAG)

    def scale_imm(self, m: int) -> None:
        """``* m`` as MUL, a left shift (m a power of two) or nothing (m = 1)."""
        if m == 1:
            return
        if m > 1 and m & (m - 1) == 0:
            self.imm("shl", m.bit_length() - 1)
        else:
            self.imm("mul", m)

    def requant(self, rq, mult_t: Tensor | None, shift_t: Tensor | None) -> None:
        """The requantisation without zero point and clip (``vta.topi.qnn`` module docstring)."""
        if rq.pre_shift:
            self.imm("shr", rq.pre_shift)
        if mult_t is not None:
            self.tensor("mul", mult_t)
        else:
            self.scale_imm(int(rq.multiplier[0]))
        s1, s2 = rq.split_shifts()
        if shift_t is not None:
            self.tensor("shr", shift_t)
        elif int(s1[0]):
            self.imm("shr", int(s1[0]))
        if s2:
            self.imm("add", 1 << (s2 - 1))
            self.imm("shr", s2)


def _vector_kinds(rq) -> tuple[bool, bool]:
    """(multiplier needs a loaded vector, shift needs a loaded vector)."""
    s1, _ = rq.split_shifts()
    return len(set(rq.multiplier.tolist())) > 1, len(set(s1.tolist())) > 1


def _epilogue(acc: Tensor, spec, bias: Tensor | None, vec_shape: tuple, residual_shape: tuple, env: Environment,
              placeholders: list) -> Tensor:
    """Bias, requantisation, residual, zero point, clip and cast after the GEMM stage ``acc``.

    Appends the placeholders it creates (with their roles) to ``placeholders``."""
    ch = _Chain(acc, "rq")
    if bias is not None:
        ch.tensor("add", bias)
    use_m, use_s = _vector_kinds(spec.requant)
    mult_t = shift_t = None
    if use_m:
        mult_t = placeholder(vec_shape, name="multiplier", dtype=env.acc_dtype)
        placeholders.append(("multiplier", mult_t))
    if use_s:
        shift_t = placeholder(vec_shape, name="shift", dtype=env.acc_dtype)
        placeholders.append(("shift", shift_t))
    ch.requant(spec.requant, mult_t, shift_t)
    inter = getattr(spec, "intermediate", None)
    if inter is not None:
        # clip(y + z, lo, hi) - z == clip(y, lo - z, hi - z): the int8 output of the operator itself.
        ch.imm("min", inter.clip[1] - inter.zero_point)
        ch.imm("max", inter.clip[0] - inter.zero_point)
        ch.requant(inter.requant, None, None)
    if spec.residual is not None:
        r = placeholder(residual_shape, name="residual", dtype=env.inp_dtype)
        placeholders.append(("residual", r))
        ch.x = _add_scaled(ch.x, r, spec.residual, env, "res")
    return _finish(ch, spec.output_zero_point, spec.clip, env)


def _scaled_operand(r: Tensor, res, env: Environment, prefix: str) -> Tensor:
    """``requant(r - z)`` of an int8 tensor ``r``: an ACC_8BIT load and ALU stages."""
    loaded = compute(r.shape, lambda *i: r(*i).astype(env.acc_dtype), name=f"{prefix}_load", tag=LOAD_TAG)
    rc = _Chain(loaded, prefix)
    if res.zero_point:
        rc.imm("add", -res.zero_point)
    rc.requant(res.requant, None, None)
    return rc.x


def _add_scaled(x: Tensor, r: Tensor, res, env: Environment, prefix: str) -> Tensor:
    y = _scaled_operand(r, res, env, prefix)
    return compute(x.shape, lambda *i: x(*i) + y(*i), name=f"{prefix}_add", tag=ELEMWISE_TAG)


def _finish(ch: _Chain, z_out: int, clip: tuple, env: Environment) -> Tensor:
    if z_out:
        ch.imm("add", z_out)
    ch.imm("min", clip[1])
    ch.imm("max", clip[0])
    last = ch.x
    return compute(last.shape, lambda *i: last(*i).astype(env.out_dtype), name="out", tag=ELEMWISE_TAG)


def _arg_specs(pairs: list) -> list:
    return [ArgSpec(t.name, role, _ints(t.shape), t.dtype) for role, t in pairs]


def declare_qconv2d(spec, env: Environment) -> tuple[Tensor, list]:
    """The tensor expressions of a fused convolution: ``(output, [(role, tensor), ...])`` in call
    order (the output last)."""
    nb = _ceil_div(spec.batch, env.BATCH)
    cib = _ceil_div(spec.in_channels, env.BLOCK_IN)
    cob = _ceil_div(spec.out_channels, env.BLOCK_OUT)
    oh, ow = spec.out_height, spec.out_width
    data = placeholder((nb, cib, spec.height, spec.width, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
    weight = placeholder((cob, cib, spec.kernel_h, spec.kernel_w, env.BLOCK_OUT, env.BLOCK_IN), name="weight",
                         dtype=env.wgt_dtype)
    border = spec.input_zero_point != 0 and any(spec.padding)
    bias_shape = (1, cob, oh, ow, env.BATCH, env.BLOCK_OUT) if border else (1, cob, 1, 1, env.BATCH, env.BLOCK_OUT)
    bias = placeholder(bias_shape, name="bias", dtype=env.acc_dtype)
    pairs = [("data", data), ("weight", weight), ("bias", bias)]
    conv = conv2d_packed(data, weight, spec.strides, spec.padding, env.acc_dtype)
    out = _epilogue(conv, spec, bias, (1, cob, 1, 1, env.BATCH, env.BLOCK_OUT), _ints(conv.shape), env, pairs)
    pairs.append(("out", out))
    return out, pairs


def declare_qdense(spec, env: Environment) -> tuple[Tensor, list]:
    """The tensor expressions of a fused dense layer (as :func:`declare_qconv2d`)."""
    nb = _ceil_div(spec.batch, env.BATCH)
    cib = _ceil_div(spec.in_features, env.BLOCK_IN)
    cob = _ceil_div(spec.out_features, env.BLOCK_OUT)
    data = placeholder((nb, cib, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
    weight = placeholder((cob, cib, env.BLOCK_OUT, env.BLOCK_IN), name="weight", dtype=env.wgt_dtype)
    bias = placeholder((1, cob, env.BATCH, env.BLOCK_OUT), name="bias", dtype=env.acc_dtype)
    pairs = [("data", data), ("weight", weight), ("bias", bias)]
    res = dense_packed(data, weight, env.acc_dtype)
    out = _epilogue(res, spec, bias, (1, cob, env.BATCH, env.BLOCK_OUT), _ints(res.shape), env, pairs)
    pairs.append(("out", out))
    return out, pairs


def _check_env(env: Environment, what: str) -> None:
    """The quantized operators compute on int8 tensors and int32 accumulators.

    Raises
    ------
    ScheduleError
        If the configuration's input, weight or accumulator width differs.
    """
    if (env.INP_WIDTH, env.WGT_WIDTH, env.ACC_WIDTH) != (8, 8, 32):
        raise ScheduleError(
            f"{what}: quantized operators need 8-bit inputs and weights and 32-bit accumulators; this configuration "
            f"has INP_WIDTH={env.INP_WIDTH}, WGT_WIDTH={env.WGT_WIDTH}, ACC_WIDTH={env.ACC_WIDTH}")


def _build(sched, pairs: list, name: str, env: Environment):
    from ..build import build

    return build(sched, [t for _, t in pairs], "ext_dev", name=name, env=env)


def build_qconv2d(spec, name: str, env: Environment | None = None):
    """Compile a fused quantized convolution (:class:`~vta.topi.qnn.QConv2DSpec`).

    Returns
    -------
    (Module, ArgLayout)
        The host module (function ``name``) and its arguments.

    Raises
    ------
    ScheduleError
        If no tiling of the layer fits the configuration's buffers, or the configuration is not
        8-bit (inputs, weights) with 32-bit accumulators.
    """
    env = env or get_env()
    _check_env(env, "build_qconv2d")
    with env:
        out, pairs = declare_qconv2d(spec, env)
        s = schedule_conv2d_packed(out)
        mod = _build(s, pairs, name, env)
    return mod, ArgLayout.for_env("conv2d", spec, _arg_specs(pairs), env)


def build_qdense(spec, name: str, env: Environment | None = None):
    """Compile a fused quantized dense layer (:class:`~vta.topi.qnn.QDenseSpec`).

    Returns
    -------
    (Module, ArgLayout)

    Raises
    ------
    ScheduleError
        If no tiling fits the configuration's buffers.
    """
    env = env or get_env()
    _check_env(env, "build_qdense")
    with env:
        out, pairs = declare_qdense(spec, env)
        s = schedule_dense_packed(out)
        mod = _build(s, pairs, name, env)
    return mod, ArgLayout.for_env("dense", spec, _arg_specs(pairs), env)


# -- element-wise operators without GEMM --------------------------------------------------------

def _ewise_schedule(out: Tensor, loads: list, alus: list, rows_axis: int, tile_rows: int, env: Environment):
    """Every stage in the accumulator, computed per tile of ``tile_rows`` along ``rows_axis`` of
    the output (the axes before it are outer loops), loads by DMA, the rest on the ALU."""
    s = create_schedule(out.op)
    for t in loads:
        s[t].set_scope(env.acc_scope)
    for t in alus:
        s[t].set_scope(env.acc_scope)
    axes = list(s[out].op.axis)
    outer, inner = s[out].split(axes[rows_axis], factor=tile_rows)
    s[out].reorder(*axes[:rows_axis], outer, inner, *axes[rows_axis + 1:])
    for t in loads + alus:
        s[t].compute_at(s[out], outer)
    for t in loads:
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    for t in alus:
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[out].pragma(inner, env.dma_copy)
    return s


def _stages_between(out: Tensor, stop: set) -> tuple[list, list]:
    """(loads, ALU stages) of the graph below ``out`` (excluding it), producers first."""
    order: list = []
    seen: set = set()

    def visit(t: Tensor) -> None:
        if id(t.op) in seen or not hasattr(t.op, "body"):
            return
        seen.add(id(t.op))
        for u in t.op.input_tensors:
            visit(u)
        order.append(t)

    for u in out.op.input_tensors:
        visit(u)
    loads = [t for t in order if t.op.tag == LOAD_TAG]
    alus = [t for t in order if t.op.tag != LOAD_TAG and id(t.op) not in stop]
    return loads, alus


def _row_tile(rows: int, entries_per_row: int, buffers: int, env: Environment) -> int:
    """The largest divisor of ``rows`` whose tiles (``buffers`` copies) fit the accumulator."""
    cap = env.ACC_BUFF_DEPTH
    for t in range(rows, 0, -1):
        if rows % t == 0 and t * entries_per_row * buffers <= cap:
            return t
    raise ScheduleError(f"one row of {entries_per_row} entries x {buffers} buffers overflows the accumulator "
                        f"({cap} entries)")


def build_qadd(spec, name: str, env: Environment | None = None):
    """Compile a quantized add (:class:`~vta.topi.qnn.QAddSpec`) on the ALU.

    Returns
    -------
    (Module, ArgLayout)

    Raises
    ------
    ScheduleError
        If one row of the operands does not fit the accumulator.
    """
    env = env or get_env()
    _check_env(env, "build_qadd")
    with env:
        nb = _ceil_div(spec.batch, env.BATCH)
        cb = _ceil_div(spec.channels, env.BLOCK_OUT)
        shape = (nb, cb, spec.height, spec.width, env.BATCH, env.BLOCK_OUT)
        a = placeholder(shape, name="lhs", dtype=env.inp_dtype)
        b = placeholder(shape, name="rhs", dtype=env.inp_dtype)
        ya = _scaled_operand(a, spec.lhs, env, "lhs")
        x = _add_scaled(ya, b, spec.rhs, env, "rhs")
        ch = _Chain(x, "qadd")
        out = _finish(ch, spec.output_zero_point, spec.clip, env)
        loads, alus = _stages_between(out, set())
        tile = _row_tile(spec.height, spec.width, 2, env)
        s = _ewise_schedule(out, [t for t in loads], alus, 2, tile, env)
        pairs = [("lhs", a), ("rhs", b), ("out", out)]
        mod = _build(s, pairs, name, env)
    return mod, ArgLayout.for_env("add", spec, _arg_specs(pairs), env)


def build_maxpool(spec, name: str, env: Environment | None = None):
    """Compile max pooling (:class:`~vta.topi.qnn.MaxPoolSpec`) on the ALU, or return None.

    The input is loaded into the accumulator (``ACC_8BIT``, zero padded by the hardware) together
    with a ``mask`` of ones loaded with the same padding; ``x + 256 * mask`` is then at least 128
    on every real pixel and 0 on every padded one, so padded pixels never win; the window maximum
    is a chain of MAX stages over the shifted windows, and ``- 256`` brings the result back.

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
        data = placeholder((nb, cb, spec.height, spec.width, env.BATCH, env.BLOCK_OUT), name="data", dtype=env.inp_dtype)
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
        need = rows_in * pw * (2 if masked else 1) + t * ow
        if need <= env.ACC_BUFF_DEPTH:
            return t
    raise ScheduleError(f"max_pool2d: one output row needs {(kh) * pw * 2 + ow} accumulator entries, more than the "
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
    def tap(dy: int, dx: int, prev: Tensor | None):
        def body(b, c, y, x, bi, ci):
            v = src(b, c, y * sh + dy, x * sw + dx, bi, ci)
            return v if prev is None else te_max(prev(b, c, y, x, bi, ci), v)
        return body

    cur = None
    for dy in range(kh):
        for dx in range(kw):
            cur = compute(oshape, tap(dy, dx, cur), name=f"pool_tap{dy}_{dx}", tag=ELEMWISE_TAG)
    if any(spec.padding):
        last = cur
        cur = compute(oshape, lambda *i: last(*i) - n.const(256, acc), name="pool_unbias", tag=ELEMWISE_TAG)
    last = cur
    return compute(oshape, lambda *i: last(*i).astype(env.out_dtype), name="out", tag=ELEMWISE_TAG)


def _schedule_maxpool(out: Tensor, tile_rows: int, env: Environment):
    s = create_schedule(out.op)
    order: list = []
    seen: set = set()

    def visit(t: Tensor) -> None:
        if id(t.op) in seen or not hasattr(t.op, "body"):
            return
        seen.add(id(t.op))
        for u in t.op.input_tensors:
            visit(u)
        order.append(t)

    for u in out.op.input_tensors:
        visit(u)
    axes = list(s[out].op.axis)
    outer, inner = s[out].split(axes[2], factor=tile_rows)
    s[out].reorder(axes[0], axes[1], outer, inner, *axes[3:])
    for t in order:
        s[t].set_scope(env.acc_scope)
        s[t].compute_at(s[out], outer)
        kind = env.dma_copy if t.op.tag == LOAD_TAG else env.alu
        s[t].pragma(s[t].op.axis[0], kind)
    s[out].pragma(inner, env.dma_copy)
    return s

