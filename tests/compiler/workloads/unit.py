"""The schedules of upstream's ``test_vta_insn.py`` (reference section 7.2) and further unit
cases: ALU variants, padded and strided loads, GEMM by pragma, transposed convolution."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from vta import te
from vta.tir import nodes as tn

from .base import (
    Workload,
    alu_pipeline,
    clip_max,
    copy_stage,
    default_rng,
    gemm_reference,
    gemm_stage,
    random_like,
    requantize_stages,
    schedule_matmul,
    wrap_int32,
    wrap_to,
    zero_pad,
)


def _load_alu_store(env, x_buf, fn):
    """``x_buf`` DMA-loaded into the accumulator, one ALU stage ``y_buf = fn(x_buf)``, a DMA
    store of ``y = cast(y_buf)``. Returns ``(schedule, y)``."""
    shape = x_buf.shape
    y_buf = te.compute(shape, lambda *i: fn(x_buf(*i)), "y_buf")
    y = te.compute(shape, lambda *i: y_buf(*i).astype(env.inp_dtype), "y")
    s = te.create_schedule(y.op)
    s[x_buf].pragma(s[x_buf].op.axis[0], env.dma_copy)
    alu_pipeline(env, s, [x_buf, y_buf], [y_buf], y)
    return s, y


def save_load_out(env, rng=None) -> Workload:
    """test_save_load_out: load 36 acc tiles, copy through the ALU (SHR 0), store as int8."""
    rng = default_rng(rng)
    shape = (6, 6, env.BATCH, env.BLOCK_OUT)
    x = te.placeholder(shape, name="x", dtype=env.acc_dtype)
    x_buf = copy_stage(x, "x_buf")
    s, y = _load_alu_store(env, x_buf, lambda v: v >> 0)
    inputs = {"x": rng.integers(1, 10, size=shape).astype(np.int32)}
    return Workload("save_load_out", s, [x, y], inputs, lambda d: wrap_to(d["x"], y.dtype))


#: test_padded_load: (pad before, pad after) per case.
PAD_CASES = {
    "Y0": ([2, 0, 0, 0], [0, 0, 0, 0]),
    "Y1": ([0, 2, 0, 0], [0, 0, 0, 0]),
    "X0": ([0, 0, 0, 0], [2, 0, 0, 0]),
    "X1": ([0, 0, 0, 0], [0, 2, 0, 0]),
    "all": ([1, 1, 0, 0], [1, 1, 0, 0]),
}


def padded_load(env, rng=None, before=(0, 0, 0, 0), after=(0, 0, 0, 0)) -> Workload:
    """test_padded_load: x (3, 5, BATCH, BLOCK_OUT) zero-padded while loaded into acc, copied, stored."""
    rng = default_rng(rng)
    in_shape = (3, 5, env.BATCH, env.BLOCK_OUT)
    x = te.placeholder(in_shape, name="x", dtype=env.acc_dtype)
    x_buf = zero_pad(x, before, after, "x_buf")
    out_shape = tuple(int(s) for s in x_buf.shape)
    s, y = _load_alu_store(env, x_buf, lambda v: v >> 0)
    inputs = {"x": rng.integers(0, 10, size=in_shape).astype(np.int32)}

    def reference(d):
        out = np.zeros(out_shape, dtype=np.int32)
        out[tuple(slice(b, b + k) for b, k in zip(before, in_shape, strict=True))] = d["x"]
        return wrap_to(out, y.dtype)

    return Workload("padded_load", s, [x, y], inputs, reference)


def gemm(env, rng=None, smt: bool = False, o: int = 4, n_: int = 1, m: int = 4) -> Workload:
    """test_gemm: ``y = clip((x . w^T) >> 8, 0, clip_max)``; default, or two virtual threads (smt).

    ``o`` batch tiles, ``n_`` input-channel tiles, ``m`` output-channel tiles (upstream: 4, 1, 4).
    """
    rng = default_rng(rng)
    x = te.placeholder((o, n_, env.BATCH, env.BLOCK_IN), name="x", dtype=env.inp_dtype)
    w = te.placeholder((m, n_, env.BLOCK_OUT, env.BLOCK_IN), name="w", dtype=env.wgt_dtype)
    x_buf, w_buf = copy_stage(x, "x_buf"), copy_stage(w, "w_buf")
    y_gem = gemm_stage(env, x_buf, w_buf, n_, (o, m, env.BATCH, env.BLOCK_OUT), "y_gem")
    y_shf, y_max, y_min, y = requantize_stages(env, y_gem, 8, ("y_shf", "y_max", "y_min", "y"))
    s = te.create_schedule(y.op)
    store_axis = None
    if smt:
        abo, _, _, _ = s[y].op.axis
        abo1, store_axis = s[y].split(abo, nparts=2)
        s[y].bind(abo1, te.thread_axis("cthread"))
        for t in (y_gem, y_shf, y_max, y_min):
            s[t].compute_at(s[y], abo1)
    bi = schedule_matmul(env, s, x_buf, w_buf, y_gem, y, store_axis)
    alu_pipeline(env, s, [y_shf, y_max, y_min], [y_shf, y_max, y_min], None)
    s[y_gem].tensorize(bi, env.gemm)
    inputs = {"x": random_like(rng, x), "w": random_like(rng, w)}
    return Workload("gemm_smt" if smt else "gemm", s, [x, w, y], inputs,
                    lambda d: wrap_to(gemm_reference(d["x"], d["w"], 8, clip_max(env)), y.dtype))


class AluOp(NamedTuple):
    """One case of test_alu."""

    uses_b: bool                        #: second operand is a loaded tile (else an immediate)
    expr: Callable                      #: ``expr(a, b, imm)`` -> tensor expression
    numpy: Callable                     #: ``numpy(a, b, imm)`` -> reference values
    upstream: bool = True               #: part of upstream's test_alu


#: test_alu's operations, plus subtraction (not upstream: of a constant it is an ADD of the
#: negation; of a tile MUL -1, ADD, MUL -1).
ALU_OPS = {
    "shl_imm": AluOp(False, lambda a, b, k: a << k, lambda a, b, k: np.left_shift(a, k)),
    "max_imm": AluOp(False, lambda a, b, k: te.max(a, k), lambda a, b, k: np.maximum(a, k)),
    "max": AluOp(True, lambda a, b, k: te.max(a, b), lambda a, b, k: np.maximum(a, b)),
    "add_imm": AluOp(False, lambda a, b, k: a + k, lambda a, b, k: a + k),
    "add": AluOp(True, lambda a, b, k: a + b, lambda a, b, k: a + b),
    "shr_imm": AluOp(False, lambda a, b, k: a >> k, lambda a, b, k: np.right_shift(a, k)),
    "sub_imm": AluOp(False, lambda a, b, k: a - k, lambda a, b, k: a - k, upstream=False),
    "sub": AluOp(True, lambda a, b, k: a - b, lambda a, b, k: a - b, upstream=False),
}


def alu(env, rng=None, op: str = "add", imm: int | None = None) -> Workload:
    """test_alu: one ALU stage on (8, 8, BATCH, BLOCK_OUT) with an immediate or a second tile.

    ``imm`` defaults to a random value in [1, 5).

    Raises
    ------
    KeyError
        If ``op`` is not a key of :data:`ALU_OPS`.
    """
    if op not in ALU_OPS:
        raise KeyError(f"alu: unknown operation {op!r}; known: {sorted(ALU_OPS)!r}")
    rng = default_rng(rng)
    case = ALU_OPS[op]
    shape = (8, 8, env.BATCH, env.BLOCK_OUT)
    if imm is None:
        imm = int(rng.integers(1, 5))
    a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
    a_buf = copy_stage(a, "a_buf")
    args, inputs = [a], {"a": rng.integers(-16, 16, size=shape).astype(np.int32)}
    if case.uses_b:
        b = te.placeholder(shape, name="b", dtype=env.acc_dtype)
        b_buf = copy_stage(b, "b_buf")
        res_buf = te.compute(shape, lambda *i: case.expr(a_buf(*i), b_buf(*i), imm), "res_buf")
        args.append(b)
        inputs["b"] = rng.integers(-16, 16, size=shape).astype(np.int32)
        loads = [a_buf, b_buf]
    else:
        res_buf = te.compute(shape, lambda *i: case.expr(a_buf(*i), None, imm), "res_buf")
        loads = [a_buf]
    res = te.compute(shape, lambda *i: res_buf(*i).astype(env.inp_dtype), "res")
    s = te.create_schedule(res.op)
    for t in loads:
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    alu_pipeline(env, s, loads + [res_buf], [res_buf], res)
    return Workload("alu_" + op, s, args + [res], inputs,
                    lambda d: wrap_to(case.numpy(d["a"], d.get("b"), imm), res.dtype))


def relu(env, rng=None) -> Workload:
    """test_relu: ``clip(a, 0, clip_max)`` as two ALU stages (MAX 0, MIN) on (8, 10, BATCH, BLOCK_OUT)."""
    rng = default_rng(rng)
    shape = (8, 10, env.BATCH, env.BLOCK_OUT)
    a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
    a_buf = copy_stage(a, "a_buf")
    max_buf = te.compute(shape, lambda *i: te.max(a_buf(*i), 0), "max_buf")
    min_buf = te.compute(shape, lambda *i: te.min(max_buf(*i), clip_max(env)), "min_buf")
    res = te.compute(shape, lambda *i: min_buf(*i).astype(env.inp_dtype), "res")
    s = te.create_schedule(res.op)
    s[a_buf].pragma(s[a_buf].op.axis[0], env.dma_copy)
    alu_pipeline(env, s, [a_buf, max_buf, min_buf], [max_buf, min_buf], res)
    inputs = {"a": rng.integers(-256, 256, size=shape).astype(np.int32)}
    return Workload("relu", s, [a, res], inputs, lambda d: wrap_to(np.clip(d["a"], 0, clip_max(env)), res.dtype))


def shift_and_scale(env, rng=None, imm_shift: int | None = None, imm_scale: int | None = None) -> Workload:
    """test_shift_and_scale: ``(a + imm_shift) >> imm_scale`` on (2, 8, BATCH, BLOCK_OUT).

    Immediates left out are random: ``imm_shift`` in [1, 8) (0 would fold the add away),
    ``imm_scale`` in [1, 5).
    """
    rng = default_rng(rng)
    shape = (2, 8, env.BATCH, env.BLOCK_OUT)
    if imm_shift is None:
        imm_shift = int(rng.integers(1, 8))
    if imm_scale is None:
        imm_scale = int(rng.integers(1, 5))
    a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
    a_buf = copy_stage(a, "a_buf")
    res_shift = te.compute(shape, lambda *i: a_buf(*i) + imm_shift, "res_shift")
    res_scale = te.compute(shape, lambda *i: res_shift(*i) >> imm_scale, "res_scale")
    res = te.compute(shape, lambda *i: res_scale(*i).astype(env.inp_dtype), "res")
    s = te.create_schedule(res.op)
    s[a_buf].pragma(s[a_buf].op.axis[0], env.dma_copy)
    alu_pipeline(env, s, [a_buf, res_shift, res_scale], [res_shift, res_scale], res)
    inputs = {"a": rng.integers(-10, 10, size=shape).astype(np.int32)}
    return Workload("shift_and_scale", s, [a, res], inputs,
                    lambda d: wrap_to((d["a"] + imm_shift) >> imm_scale, res.dtype))


#: Elementwise operations of random ALU pipelines: (name, tensor expression, NumPy reference).
_RANDOM_OPS = [
    ("add", lambda x, k: x + k, lambda a, k: a + k),
    ("mul", lambda x, k: x * k, lambda a, k: a * k),
    ("shr", lambda x, k: x >> k, lambda a, k: a >> k),
    ("shl", lambda x, k: x << k, lambda a, k: a << k),
    ("max", lambda x, k: te.max(x, k), lambda a, k: np.maximum(a, k)),
    ("min", lambda x, k: te.min(x, k), lambda a, k: np.minimum(a, k)),
    ("sub", lambda x, k: x - k, lambda a, k: a - k),
]


def random_alu_pipeline(env, rng) -> Workload:
    """1-3 ALU stages with random immediates or a second loaded tensor, on a random tile grid."""
    m, n_ = int(rng.integers(1, 6)), int(rng.integers(1, 9))
    shape = (m, n_, env.BATCH, env.BLOCK_OUT)
    a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
    b = te.placeholder(shape, name="b", dtype=env.acc_dtype)
    a_buf, b_buf = copy_stage(a, "a_buf"), copy_stage(b, "b_buf")
    stages, refs, cur, use_b = [], [], a_buf, False
    for k in range(int(rng.integers(1, 4))):
        prev = cur
        if rng.random() < 0.3:
            cur = te.compute(shape, lambda *i, p=prev: p(*i) + b_buf(*i), f"s{k}")
            refs.append((None, None))
            use_b = True
        else:
            name, tf, nf = _RANDOM_OPS[int(rng.integers(len(_RANDOM_OPS)))]
            if name in ("shr", "shl"):
                imm = int(rng.integers(0, 4))
            else:
                imm = int(rng.integers(1, 20)) * int(rng.choice([-1, 1]))
            cur = te.compute(shape, lambda *i, p=prev, tf=tf, imm=imm: tf(p(*i), imm), f"s{k}")
            refs.append((nf, imm))
        stages.append(cur)
    last = cur
    res = te.compute(shape, lambda *i: last(*i).astype(env.inp_dtype), "res")
    s = te.create_schedule(res.op)
    loaded = [a_buf] + ([b_buf] if use_b else [])
    for t in loaded:
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    alu_pipeline(env, s, loaded + stages, stages, res)
    inputs = {"a": rng.integers(-100, 100, size=shape).astype(np.int32)}
    if use_b:
        inputs["b"] = rng.integers(-100, 100, size=shape).astype(np.int32)

    def reference(d):
        x = d["a"].astype(np.int64)
        for fn, imm in refs:
            x = wrap_int32(x + d["b"] if fn is None else fn(x, imm))
        return wrap_to(x, res.dtype)

    return Workload("random_alu_pipeline", s, [a] + ([b] if use_b else []) + [res], inputs, reference)


def gemm_by_pragma(env, rng=None, skip_odd: bool = False) -> Workload:
    """The matrix multiply with ``pragma(conv2d_transpose_gemm)`` on the tensor axis instead of
    tensorize; with ``skip_odd`` the input is read as ``if_then_else(ko % 2 == 0, x, 0)`` so the
    odd reduction steps (zeros, like dilation) are skipped."""
    rng = default_rng(rng)
    m, n_, o = 3, 4, 1
    A = te.placeholder((o, n_, env.BATCH, env.BLOCK_IN), name="A", dtype=env.inp_dtype)
    B = te.placeholder((m, n_, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype=env.wgt_dtype)
    A_buf, B_buf = copy_stage(A, "A_buf"), copy_stage(B, "B_buf")

    def inp(bo, bi, ko, ki):
        x = A_buf[bo, ko, bi, ki].astype(env.acc_dtype)
        if skip_odd:
            return te.if_then_else((ko.var % 2).equal(0), x, tn.const(0, env.acc_dtype))
        return x

    oshape = (o, m, env.BATCH, env.BLOCK_OUT)
    C_buf = gemm_stage(env, A_buf, B_buf, n_, oshape, "C_buf", inp=inp)
    C = te.compute(oshape, lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")
    s = te.create_schedule(C.op)
    s[C_buf].pragma(schedule_matmul(env, s, A_buf, B_buf, C_buf, C), "conv2d_transpose_gemm")
    inputs = {"A": random_like(rng, A), "B": random_like(rng, B)}
    keep = np.array([0 if (skip_odd and k % 2) else 1 for k in range(n_)])
    return Workload("gemm_by_pragma", s, [A, B, C], inputs, lambda d: wrap_to(
        gemm_reference(d["A"].astype(np.int64) * keep[None, :, None, None], d["B"]), C.dtype))


def acc_8bit_load(env, rng=None) -> Workload:
    """An int8 input loaded straight into the accumulator (ACC_8BIT, sign-extended), plus 3."""
    rng = default_rng(rng)
    shape = (2, 4, env.BATCH, env.BLOCK_OUT)
    x = te.placeholder(shape, name="x", dtype=env.inp_dtype)
    x_buf = te.compute(shape, lambda *i: x(*i).astype(env.acc_dtype), "x_buf")
    s, y = _load_alu_store(env, x_buf, lambda v: v + 3)
    inputs = {"x": random_like(rng, x)}
    return Workload("acc_8bit_load", s, [x, y], inputs, lambda d: wrap_to(d["x"].astype(np.int64) + 3, y.dtype))


def conv2d_transpose(env, rng=None) -> Workload:
    """A stride-2 transposed convolution (3x3 input, 3x3 kernel, padding 1 -> 5x5) written as a
    convolution over the zero-dilated, padded input, the dilation expressed as a guard on the
    input read, with ``pragma(conv2d_transpose_gemm)`` instead of tensorize: GEMM uops reading
    inserted zeros are skipped (reference 2.4, InjectConv2DTransposeSkip)."""
    rng = default_rng(rng)
    h = w = 3
    stride, kh, pad = 2, 3, 1
    bpad = kh - 1 - pad
    dil = (h - 1) * stride + 1          # dilated extent
    out_h = dil + 2 * bpad - kh + 1     # 5
    dshape = (1, 1, h, w, env.BATCH, env.BLOCK_IN)
    kshape = (1, 1, kh, kh, env.BLOCK_OUT, env.BLOCK_IN)
    oshape = (1, 1, out_h, out_h, env.BATCH, env.BLOCK_OUT)
    data = te.placeholder(dshape, name="data", dtype=env.inp_dtype)
    kernel = te.placeholder(kshape, name="kernel", dtype=env.wgt_dtype)
    data_buf, kernel_buf = copy_stage(data, "data_buf"), copy_stage(kernel, "kernel_buf")
    ic = te.reduce_axis((0, 1), name="ic")
    dy = te.reduce_axis((0, kh), name="dy")
    dx = te.reduce_axis((0, kh), name="dx")
    ict = te.reduce_axis((0, env.BLOCK_IN), name="ict")

    def body(bo, co, i, j, bi, ci):
        y, x = i + dy.var - bpad, j + dx.var - bpad   # position in the dilated input
        cond = tn.And(tn.And((y % stride).equal(0), (x % stride).equal(0)),
                      tn.And(tn.And(y >= 0, y < dil), tn.And(x >= 0, x < dil)))
        inp = te.if_then_else(cond, data_buf[bo, ic, y // stride, x // stride, bi, ict].astype(env.acc_dtype),
                              tn.const(0, env.acc_dtype))
        return te.sum(inp * kernel_buf[co, ic, dy, dx, ci, ict].astype(env.acc_dtype), axis=[ic, dy, dx, ict])

    res_conv = te.compute(oshape, body, name="res_conv")
    res_shr = te.compute(oshape, lambda *i: res_conv(*i) >> 6, name="res_shr")
    res = te.compute(oshape, lambda *i: res_shr(*i).astype(env.inp_dtype), name="res")
    s = te.create_schedule(res.op)
    s[data_buf].set_scope(env.inp_scope)
    s[kernel_buf].set_scope(env.wgt_scope)
    s[res_conv].set_scope(env.acc_scope)
    s[res_shr].set_scope(env.acc_scope)
    bo, co, i, j, bi, ci = s[res_conv].op.axis
    ic_, dy_, dx_, ict_ = s[res_conv].op.reduce_axis
    s[res_conv].reorder(ic_, dy_, dx_, bo, co, i, j, bi, ci, ict_)
    s[data_buf].pragma(s[data_buf].op.axis[0], env.dma_copy)
    s[kernel_buf].pragma(s[kernel_buf].op.axis[0], env.dma_copy)
    s[res_conv].pragma(bi, "conv2d_transpose_gemm")
    s[res_shr].pragma(s[res_shr].op.axis[0], env.alu)
    s[res].pragma(s[res].op.axis[0], env.dma_copy)
    inputs = {"data": random_like(rng, data), "kernel": random_like(rng, kernel)}

    def reference(v):
        x = v["data"][0, 0].astype(np.int64)            # (h, w, BATCH, BLOCK_IN)
        dilated = np.zeros((dil, dil) + x.shape[2:], dtype=np.int64)
        dilated[::stride, ::stride] = x
        padded = np.pad(dilated, ((bpad, bpad), (bpad, bpad), (0, 0), (0, 0)))
        wk = v["kernel"][0, 0].astype(np.int64)          # (kh, kw, BLOCK_OUT, BLOCK_IN)
        out = np.zeros((out_h, out_h, env.BATCH, env.BLOCK_OUT), dtype=np.int64)
        for a in range(kh):
            for b in range(kh):
                out += np.einsum("yxbk,ok->yxbo", padded[a:a + out_h, b:b + out_h], wk[a, b])
        return wrap_to(wrap_int32(out) >> 6, res.dtype)[None, None]

    return Workload("conv2d_transpose", s, [data, kernel, res], inputs, reference)


def conv2d_transpose_macs(stride: int = 2, h: int = 3, kh: int = 3, pad: int = 1) -> int:
    """How many (output position, kernel tap) pairs read a real (non-inserted) input element."""
    bpad = kh - 1 - pad
    dil = (h - 1) * stride + 1
    out_h = dil + 2 * bpad - kh + 1
    count = 0
    for i in range(out_h):
        for j in range(out_h):
            for a in range(kh):
                for b in range(kh):
                    y, x = i + a - bpad, j + b - bpad
                    if 0 <= y < dil and 0 <= x < dil and y % stride == 0 and x % stride == 0:
                        count += 1
    return count


def residual(env, rng=None) -> Workload:
    """``y = max(x, 0) + x``: the first ALU stage cannot overwrite x (still needed), so the
    compiler copies it first; the second adds the two tiles."""
    rng = default_rng(rng)
    shape = (2, 4, env.BATCH, env.BLOCK_OUT)
    x = te.placeholder(shape, name="x", dtype=env.acc_dtype)
    x_buf = copy_stage(x, "x_buf")
    r_buf = te.compute(shape, lambda *i: te.max(x_buf(*i), 0), "r_buf")
    y_buf = te.compute(shape, lambda *i: r_buf(*i) + x_buf(*i), "y_buf")
    y = te.compute(shape, lambda *i: y_buf(*i).astype(env.inp_dtype), "y")
    s = te.create_schedule(y.op)
    s[x_buf].pragma(s[x_buf].op.axis[0], env.dma_copy)
    alu_pipeline(env, s, [x_buf, r_buf, y_buf], [r_buf, y_buf], y)
    inputs = {"x": rng.integers(-60, 60, size=shape).astype(np.int32)}
    return Workload("residual", s, [x, y], inputs, lambda d: wrap_to(np.maximum(d["x"], 0) + d["x"], y.dtype))


def strided_window_load(env, rng=None) -> Workload:
    """Copy a (3, 2, 3)-tile window out of a (3, 4, 6)-tile tensor: rows of 3 tiles, 2 rows per
    plane, planes apart by more than 2 rows -- three tile dimensions, so the load is issued as
    one 2-D transfer per plane (a host loop)."""
    rng = default_rng(rng)
    full = (3, 4, 6, env.BATCH, env.BLOCK_OUT)
    win = (3, 2, 3, env.BATCH, env.BLOCK_OUT)
    x = te.placeholder(full, name="x", dtype=env.acc_dtype)
    x_buf = te.compute(win, lambda a, b, c, d, e: x[a, b, c, d, e], "x_buf")
    s, y = _load_alu_store(env, x_buf, lambda v: v + 1)
    inputs = {"x": rng.integers(-100, 100, size=full).astype(np.int32)}
    return Workload("strided_window_load", s, [x, y], inputs, lambda d: wrap_to(d["x"][:, :2, :3] + 1, y.dtype))
