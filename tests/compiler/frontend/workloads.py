"""The schedules of the VTA tutorials and unit tests (reference sections 3 and 7.2).

Each builder returns a :class:`Workload`: the schedule, its argument tensors, a function making
random inputs and the NumPy reference of the outputs. Shared by the frontend tests (and usable
by end-to-end tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from vta import te
from vta.tir import nodes as n

from .interp import storage_dtype


def _wrap_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """Two's complement truncation of int64 ``values`` to an integer IR dtype, stored as NumPy."""
    bits = n.dtype_bits(dtype)
    v = values.astype(np.int64) & ((1 << bits) - 1)
    if dtype.startswith("int"):
        v = np.where(v >= 1 << (bits - 1), v - (1 << bits), v)
    return v.astype(storage_dtype(dtype))


@dataclass
class Workload:
    name: str
    schedule: te.Schedule
    args: list
    make_inputs: Callable[[np.random.Generator], list]
    reference: Callable[..., np.ndarray]


def _out_like(t):
    return np.zeros(tuple(int(s) for s in t.shape), dtype=storage_dtype(t.dtype))


def _random(rng, t):
    """Random values over the whole range of ``t``'s (possibly sub-byte) integer dtype."""
    bits = n.dtype_bits(t.dtype)
    lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if t.dtype.startswith("int") else (0, 1 << bits)
    return rng.integers(lo, hi, tuple(int(x) for x in t.shape)).astype(storage_dtype(t.dtype))


def _clip_max(env) -> int:
    return (1 << (env.INP_WIDTH - 1)) - 1


def vadd(env, m=64) -> Workload:
    """Section 3.1: C = int8(A + B) on (1, m, BATCH, BLOCK_OUT) int32 tensors."""
    shape = (1, m, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    B = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    A_buf = te.compute(shape, lambda *i: A(*i), "A_buf")
    B_buf = te.compute(shape, lambda *i: B(*i), "B_buf")
    C_buf = te.compute(shape, lambda *i: A_buf(*i).astype(env.acc_dtype) + B_buf(*i).astype(env.acc_dtype), name="C_buf")
    C = te.compute(shape, lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")
    s = te.create_schedule(C.op)
    for t in (A_buf, B_buf, C_buf):
        s[t].set_scope(env.acc_scope)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C_buf].pragma(s[C_buf].op.axis[0], env.alu)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)

    def inputs(rng):
        return [rng.integers(-128, 128, shape).astype("int32") for _ in range(2)] + [_out_like(C)]

    return Workload("vadd", s, [A, B, C], inputs, lambda a, b: _wrap_to(a + b, C.dtype))


def _gemm_decl(env, o, m, n_, shift=None, clip=False):
    A = te.placeholder((o, n_, env.BATCH, env.BLOCK_IN), name="A", dtype=env.inp_dtype)
    B = te.placeholder((m, n_, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype=env.wgt_dtype)
    A_buf = te.compute(A.shape, lambda *i: A(*i), "A_buf")
    B_buf = te.compute(B.shape, lambda *i: B(*i), "B_buf")
    ko = te.reduce_axis((0, n_), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    out_shape = (o, m, env.BATCH, env.BLOCK_OUT)
    C_buf = te.compute(
        out_shape,
        lambda bo, co, bi, ci: te.sum(
            A_buf[bo, ko, bi, ki].astype(env.acc_dtype) * B_buf[co, ko, ci, ki].astype(env.acc_dtype), axis=[ko, ki]
        ),
        name="C_buf",
    )
    return A, B, A_buf, B_buf, C_buf, ko, ki, out_shape


def _gemm_reference(a, b, shift=None, clip=None):
    # a: (o, n, BATCH, BLOCK_IN), b: (m, n, BLOCK_OUT, BLOCK_IN) -> (o, m, BATCH, BLOCK_OUT)
    acc = np.einsum("onbi,mnci->ombc", a.astype(np.int64), b.astype(np.int64))
    acc = ((acc + (1 << 31)) % (1 << 32) - (1 << 31))
    if shift is not None:
        acc = acc >> shift
    if clip is not None:
        acc = np.clip(acc, 0, clip)
    return acc


def matrix_multiply(env, m=16, n_=16) -> Workload:
    """Section 3.2: C = int8(A . B^T), loads at ko, tensorize at bi with reset/update."""
    A, B, A_buf, B_buf, C_buf, ko, ki, out_shape = _gemm_decl(env, 1, m, n_)
    C = te.compute(out_shape, lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")
    s = te.create_schedule(C.op)
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    s[C_buf].set_scope(env.acc_scope)
    s[B_buf].compute_at(s[C_buf], ko)
    s[A_buf].compute_at(s[C_buf], ko)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    bo, co, bi, ci = s[C_buf].op.axis
    s[C_buf].reorder(ko, bo, co, bi, ci, ki)
    s[C_buf].tensorize(bi, env.gemm)

    def inputs(rng):
        return [_random(rng, t) for t in (A, B)] + [_out_like(C)]

    return Workload("matrix_multiply", s, [A, B, C], inputs, lambda a, b: _wrap_to(_gemm_reference(a, b), C.dtype))


def blocked_gemm(env, batch=1, in_channels=1024, out_channels=1024, block=256) -> Workload:
    """Section 3.3: clip((A . B^T) >> 8, 0, 127) with blocks of ``block`` channels."""
    n_ = in_channels // env.BLOCK_IN
    m = out_channels // env.BLOCK_OUT
    o = batch // env.BATCH
    A, B, A_buf, B_buf, C_buf, ko, ki, out_shape = _gemm_decl(env, o, m, n_)
    res_shf = te.compute(out_shape, lambda *i: C_buf(*i) >> env.INP_WIDTH, name="res_shf")
    res_max = te.compute(out_shape, lambda *i: te.max(res_shf(*i), 0), "res_max")
    res_min = te.compute(out_shape, lambda *i: te.min(res_max(*i), (1 << (env.INP_WIDTH - 1)) - 1), "res_min")
    res = te.compute(out_shape, lambda *i: res_min(*i).astype(env.inp_dtype), name="res")
    s = te.create_schedule(res.op)
    b_block = batch // env.BATCH
    oc_block = block // env.BLOCK_OUT
    ic_block = block // env.BLOCK_IN
    b, oc, b_tns, oc_tns = s[res].op.axis
    b_out, b_inn = s[res].split(b, b_block)
    oc_out, oc_inn = s[res].split(oc, oc_block)
    s[res].reorder(b_out, oc_out, b_inn, oc_inn)
    for t in (C_buf, res_shf, res_max, res_min):
        s[t].compute_at(s[res], oc_out)
        s[t].set_scope(env.acc_scope)
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    b_inn, oc_inn, b_tns, oc_tns = s[C_buf].op.axis
    (ko, ki) = s[C_buf].op.reduce_axis
    ic_out, ic_inn = s[C_buf].split(ko, ic_block)
    s[C_buf].reorder(ic_out, b_inn, oc_inn, ic_inn, b_tns, oc_tns, ki)
    s[A_buf].compute_at(s[C_buf], ic_out)
    s[B_buf].compute_at(s[C_buf], ic_out)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C_buf].tensorize(b_tns, env.gemm)
    for t in (res_shf, res_min, res_max):
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[res].pragma(s[res].op.axis[2], env.dma_copy)

    def inputs(rng):
        return [_random(rng, t) for t in (A, B)] + [_out_like(res)]

    return Workload("blocked_gemm", s, [A, B, res], inputs, lambda a, b: _wrap_to(_gemm_reference(a, b, env.INP_WIDTH, _clip_max(env)), res.dtype))


# ---------------------------------------------------------------------------- test_vta_insn.py
def save_load_out(env) -> Workload:
    """x (6, 6, 1, 16) int32 -> x_buf (dma) -> y_buf = x_buf >> 0 (alu) -> int8 (dma)."""
    shape = (6, 6, env.BATCH, env.BLOCK_OUT)
    x = te.placeholder(shape, name="x", dtype=env.acc_dtype)
    x_buf = te.compute(shape, lambda *i: x(*i), "x_buf")
    y_buf = te.compute(shape, lambda *i: x_buf(*i) >> 0, "y_buf")
    y = te.compute(shape, lambda *i: y_buf(*i).astype(env.inp_dtype), "y")
    s = te.create_schedule(y.op)
    s[x_buf].set_scope(env.acc_scope)
    s[x_buf].pragma(x_buf.op.axis[0], env.dma_copy)
    s[y_buf].set_scope(env.acc_scope)
    s[y_buf].pragma(y_buf.op.axis[0], env.alu)
    s[y].pragma(y.op.axis[0], env.dma_copy)

    def inputs(rng):
        return [rng.integers(1, 10, shape).astype("int32"), _out_like(y)]

    return Workload("save_load_out", s, [x, y], inputs, lambda a: _wrap_to(a, y.dtype))


def pad4(x, before, after, name):
    """Zero padding of the first dimensions through ``if_then_else`` (like topi.nn.pad)."""
    shape = tuple(int(s) + b + a for s, b, a in zip(x.shape, before, after))

    def f(*i):
        conds = []
        src = []
        for d, idx in enumerate(i):
            if before[d] or after[d]:
                conds += [idx >= before[d], idx < int(x.shape[d]) + before[d]]
            src.append(idx - before[d] if before[d] else idx)
        cond = conds[0]
        for c in conds[1:]:
            cond = n.And(cond, c)
        return te.if_then_else(cond, x(*src), 0)

    return te.compute(shape, f, name=name)


def padded_load(env, before, after) -> Workload:
    """x (3, 5, 1, 16) int32 padded by ``before``/``after`` while loading into acc."""
    ishape = (3, 5, env.BATCH, env.BLOCK_OUT)
    x = te.placeholder(ishape, name="x", dtype=env.acc_dtype)
    x_buf = pad4(x, before, after, "x_buf")
    oshape = tuple(int(s) for s in x_buf.shape)
    y_buf = te.compute(oshape, lambda *i: x_buf(*i) >> 0, "y_buf")
    y = te.compute(oshape, lambda *i: y_buf(*i).astype(env.inp_dtype), "y")
    s = te.create_schedule(y.op)
    s[x_buf].set_scope(env.acc_scope)
    s[x_buf].pragma(x_buf.op.axis[0], env.dma_copy)
    s[y_buf].set_scope(env.acc_scope)
    s[y_buf].pragma(y_buf.op.axis[0], env.alu)
    s[y].pragma(y.op.axis[0], env.dma_copy)

    def inputs(rng):
        return [rng.integers(0, 10, ishape).astype("int32"), _out_like(y)]

    def ref(a):
        out = np.zeros(oshape, "int32")
        out[before[0]:before[0] + 3, before[1]:before[1] + 5] = a
        return _wrap_to(out, y.dtype)

    return Workload("padded_load", s, [x, y], inputs, ref)


def _gemm_test_decl(env):
    o, n_, m = 4, 1, 4
    x = te.placeholder((o, n_, env.BATCH, env.BLOCK_IN), name="x", dtype=env.inp_dtype)
    w = te.placeholder((m, n_, env.BLOCK_OUT, env.BLOCK_IN), name="w", dtype=env.wgt_dtype)
    x_buf = te.compute(x.shape, lambda *i: x(*i), "x_buf")
    w_buf = te.compute(w.shape, lambda *i: w(*i), "w_buf")
    ko = te.reduce_axis((0, n_), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    out_shape = (o, m, env.BATCH, env.BLOCK_OUT)
    y_gem = te.compute(
        out_shape,
        lambda bo, co, bi, ci: te.sum(
            x_buf[bo, ko, bi, ki].astype(env.acc_dtype) * w_buf[co, ko, ci, ki].astype(env.acc_dtype), axis=[ko, ki]
        ),
        name="y_gem",
    )
    y_shf = te.compute(out_shape, lambda *i: y_gem(*i) >> 8, name="y_shf")
    y_max = te.compute(out_shape, lambda *i: te.max(y_shf(*i), 0), "y_max")
    y_min = te.compute(out_shape, lambda *i: te.min(y_max(*i), (1 << (env.INP_WIDTH - 1)) - 1), "y_min")
    y = te.compute(out_shape, lambda *i: y_min(*i).astype(env.inp_dtype), name="y")
    return x, w, x_buf, w_buf, y_gem, y_shf, y_max, y_min, y, ko, ki


def gemm_unit(env, smt=False) -> Workload:
    """test_gemm: default schedule, or the cthread variant (split nparts=2 + bind cthread)."""
    x, w, x_buf, w_buf, y_gem, y_shf, y_max, y_min, y, ko, ki = _gemm_test_decl(env)
    s = te.create_schedule(y.op)
    s[x_buf].set_scope(env.inp_scope)
    s[w_buf].set_scope(env.wgt_scope)
    for t in (y_gem, y_shf, y_max, y_min):
        s[t].set_scope(env.acc_scope)
    if smt:
        abo, aco, abi, aci = s[y].op.axis
        abo1, abo2 = s[y].split(abo, nparts=2)
        s[y].bind(abo1, te.thread_axis("cthread"))
        for t in (y_gem, y_shf, y_max, y_min):
            s[t].compute_at(s[y], abo1)
    bo, co, bi, ci = s[y_gem].op.axis
    s[y_gem].reorder(ko, bo, co, bi, ci, ki)
    s[y_gem].tensorize(bi, env.gemm)
    for t in (y_shf, y_max, y_min):
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[x_buf].compute_at(s[y_gem], ko)
    s[x_buf].pragma(s[x_buf].op.axis[0], env.dma_copy)
    s[w_buf].compute_at(s[y_gem], ko)
    s[w_buf].pragma(s[w_buf].op.axis[0], env.dma_copy)
    if smt:
        s[y].pragma(abo2, env.dma_copy)
    else:
        s[y].pragma(s[y].op.axis[0], env.dma_copy)

    def inputs(rng):
        return [_random(rng, t) for t in (x, w)] + [_out_like(y)]

    return Workload("gemm_smt" if smt else "gemm", s, [x, w, y], inputs, lambda a, b: _wrap_to(_gemm_reference(a, b, 8, _clip_max(env)), y.dtype))


ALU_CASES = {
    # name: (uses b, immediate?, expression builder, numpy reference)
    "shl_imm": (False, lambda a, b, imm: a << imm, lambda a, b, imm: np.left_shift(a, imm)),
    "max_imm": (False, lambda a, b, imm: te.max(a, imm), lambda a, b, imm: np.maximum(a, imm)),
    "max": (True, lambda a, b, imm: te.max(a, b), lambda a, b, imm: np.maximum(a, b)),
    "add_imm": (False, lambda a, b, imm: a + imm, lambda a, b, imm: a + imm),
    "add": (True, lambda a, b, imm: a + b, lambda a, b, imm: a + b),
    "shr_imm": (False, lambda a, b, imm: a >> imm, lambda a, b, imm: np.right_shift(a, imm)),
}


def alu(env, case: str, imm: int = 3) -> Workload:
    """test_alu: one ALU stage on (8, 8, 1, 16) int32 with an immediate or a second tensor."""
    use_b, fexpr, fref = ALU_CASES[case]
    shape = (8, 8, env.BATCH, env.BLOCK_OUT)
    a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
    b = te.placeholder(shape, name="b", dtype=env.acc_dtype)
    a_buf = te.compute(shape, lambda *i: a(*i), "a_buf")
    b_buf = te.compute(shape, lambda *i: b(*i), "b_buf")
    if use_b:
        res_buf = te.compute(shape, lambda *i: fexpr(a_buf(*i), b_buf(*i), imm), "res_buf")
    else:
        res_buf = te.compute(shape, lambda *i: fexpr(a_buf(*i), None, n.const(imm, env.acc_dtype)), "res_buf")
    res = te.compute(shape, lambda *i: res_buf(*i).astype(env.inp_dtype), "res")
    s = te.create_schedule(res.op)
    s[a_buf].set_scope(env.acc_scope)
    s[a_buf].pragma(a_buf.op.axis[0], env.dma_copy)
    if use_b:
        s[b_buf].set_scope(env.acc_scope)
        s[b_buf].pragma(b_buf.op.axis[0], env.dma_copy)
    s[res_buf].set_scope(env.acc_scope)
    s[res_buf].pragma(res_buf.op.axis[0], env.alu)
    s[res].pragma(res.op.axis[0], env.dma_copy)
    args = [a, b, res] if use_b else [a, res]

    def inputs(rng):
        arrs = [rng.integers(-16, 16, shape).astype("int32")]
        if use_b:
            arrs.append(rng.integers(-16, 16, shape).astype("int32"))
        return arrs + [np.zeros(shape, "int8")]

    def ref(*arrs):
        av = arrs[0]
        bv = arrs[1] if use_b else None
        return _wrap_to(fref(av, bv, imm), res.dtype)

    return Workload("alu_" + case, s, args, inputs, ref)


def relu(env) -> Workload:
    """test_relu: clip(a, 0, 127) as two ALU stages on (8, 10, 1, 16)."""
    shape = (8, 10, env.BATCH, env.BLOCK_OUT)
    a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
    a_buf = te.compute(shape, lambda *i: a(*i), "a_buf")
    max_buf = te.compute(shape, lambda *i: te.max(a_buf(*i), 0), "res_buf")
    min_buf = te.compute(shape, lambda *i: te.min(max_buf(*i), (1 << (env.INP_WIDTH - 1)) - 1), "max_buf")
    res = te.compute(shape, lambda *i: min_buf(*i).astype(env.inp_dtype), "min_buf")
    s = te.create_schedule(res.op)
    s[a_buf].set_scope(env.acc_scope)
    s[a_buf].pragma(a_buf.op.axis[0], env.dma_copy)
    for t in (max_buf, min_buf):
        s[t].set_scope(env.acc_scope)
        s[t].pragma(t.op.axis[0], env.alu)
    s[res].pragma(res.op.axis[0], env.dma_copy)

    def inputs(rng):
        return [rng.integers(-256, 256, shape).astype("int32"), np.zeros(shape, "int8")]

    return Workload("relu", s, [a, res], inputs, lambda av: _wrap_to(np.clip(av, 0, _clip_max(env)), res.dtype))


def shift_and_scale(env, imm_shift=3, imm_scale=2) -> Workload:
    """test_shift_and_scale: ((a + s) >> k) on (2, 8, 1, 16)."""
    shape = (2, 8, env.BATCH, env.BLOCK_OUT)
    a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
    a_buf = te.compute(shape, lambda *i: a(*i), "a_buf")
    res_shift = te.compute(shape, lambda *i: a_buf(*i) + n.const(imm_shift, env.acc_dtype), "res_shift")
    res_scale = te.compute(shape, lambda *i: res_shift(*i) >> imm_scale, "res_scale")
    res = te.compute(shape, lambda *i: res_scale(*i).astype(env.inp_dtype), "res")
    s = te.create_schedule(res.op)
    s[a_buf].set_scope(env.acc_scope)
    s[res_shift].set_scope(env.acc_scope)
    s[res_scale].set_scope(env.acc_scope)
    s[a_buf].pragma(a_buf.op.axis[0], env.dma_copy)
    s[res_shift].pragma(res_shift.op.axis[0], env.alu)
    s[res_scale].pragma(res_scale.op.axis[0], env.alu)
    s[res].pragma(res.op.axis[0], env.dma_copy)

    def inputs(rng):
        return [rng.integers(-10, 10, shape).astype("int32"), np.zeros(shape, "int8")]

    return Workload("shift_and_scale", s, [a, res], inputs,
                    lambda av: _wrap_to((av + imm_shift) >> imm_scale, res.dtype))


def conv2d(env, height=14, width=14, in_channels=256, out_channels=256, oc_block=128, h_block=7, w_block=14,
           v_threads=2) -> Workload:
    """The convolution tutorial (3x3, pad 1, stride 1): padded input load, cthreads on channels."""
    kh = kw = 3
    pad = 1
    data_shape = (1, in_channels // env.BLOCK_IN, height, width, env.BATCH, env.BLOCK_IN)
    kernel_shape = (out_channels // env.BLOCK_OUT, in_channels // env.BLOCK_IN, kh, kw, env.BLOCK_OUT, env.BLOCK_IN)
    out_shape = (1, out_channels // env.BLOCK_OUT, height, width, env.BATCH, env.BLOCK_OUT)
    dy = te.reduce_axis((0, kh), name="dy")
    dx = te.reduce_axis((0, kw), name="dx")
    ic = te.reduce_axis((0, in_channels // env.BLOCK_IN), name="ic")
    ic_tns = te.reduce_axis((0, env.BLOCK_IN), name="ic_tns")
    data = te.placeholder(data_shape, name="data", dtype=env.inp_dtype)
    kernel = te.placeholder(kernel_shape, name="kernel", dtype=env.wgt_dtype)
    data_buf = pad4(data, [0, 0, pad, pad, 0, 0], [0, 0, pad, pad, 0, 0], "data_buf")
    kernel_buf = te.compute(kernel_shape, lambda *i: kernel(*i), "kernel_buf")
    res_conv = te.compute(
        out_shape,
        lambda bo, co, i, j, bi, ci: te.sum(
            data_buf[bo, ic, i + dy.var, j + dx.var, bi, ic_tns].astype(env.acc_dtype)
            * kernel_buf[co, ic, dy, dx, ci, ic_tns].astype(env.acc_dtype),
            axis=[ic, dy, dx, ic_tns],
        ),
        name="res_conv",
    )
    res_shr = te.compute(out_shape, lambda *i: res_conv(*i) >> env.INP_WIDTH, name="res_shr")
    res_max = te.compute(out_shape, lambda *i: te.max(res_shr(*i), 0), "res_max")
    res_min = te.compute(out_shape, lambda *i: te.min(res_max(*i), (1 << (env.INP_WIDTH - 1)) - 1), "res_min")
    res = te.compute(out_shape, lambda *i: res_min(*i).astype(env.inp_dtype), name="res")
    s = te.create_schedule(res.op)
    b, oc, y, x, b_tns, oc_tns = s[res].op.axis
    b_out, b_inn = s[res].split(b, factor=1)
    oc_out, oc_inn = s[res].split(oc, factor=oc_block // env.BLOCK_OUT)
    y_out, y_inn = s[res].split(y, factor=h_block)
    x_out, x_inn = s[res].split(x, factor=w_block)
    s[res].reorder(b_out, oc_out, y_out, x_out, b_inn, oc_inn, y_inn, x_inn, b_tns, oc_tns)
    for t in (res_conv, res_shr, res_max, res_min):
        s[t].compute_at(s[res], x_out)
        s[t].set_scope(env.acc_scope)
    s[data_buf].set_scope(env.inp_scope)
    s[kernel_buf].set_scope(env.wgt_scope)
    b_inn, oc_inn, y_inn, x_inn, b_tns, oc_tns = s[res_conv].op.axis
    ic_out, ic_inn = s[res_conv].split(ic, factor=1)
    s[res_conv].reorder(ic_out, b_inn, oc_inn, y_inn, ic_inn, dy, dx, x_inn, b_tns, oc_tns, ic_tns)
    if v_threads > 1:
        _, tx = s[res].split(oc_out, factor=v_threads)
        s[res].reorder(tx, b_out)
        s[res].bind(tx, te.thread_axis("cthread"))
    s[data_buf].compute_at(s[res_conv], ic_out)
    s[kernel_buf].compute_at(s[res_conv], ic_out)
    s[data_buf].pragma(s[data_buf].op.axis[0], env.dma_copy)
    s[kernel_buf].pragma(s[kernel_buf].op.axis[0], env.dma_copy)
    s[res_conv].tensorize(b_tns, env.gemm)
    for t in (res_shr, res_max, res_min):
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[res].pragma(s[res].op.axis[4], env.dma_copy)  # b_tns (extent 1): one store per (y, x) row

    def inputs(rng):
        return [_random(rng, data), _random(rng, kernel), _out_like(res)]

    def ref(d, k):
        padded = np.pad(d.astype(np.int64), [(0, 0), (0, 0), (pad, pad), (pad, pad), (0, 0), (0, 0)])
        acc = np.zeros(out_shape, np.int64)
        for yy in range(kh):
            for xx in range(kw):
                win = padded[:, :, yy:yy + height, xx:xx + width]  # (1, IC, H, W, B, BI)
                acc += np.einsum("nchwbi,kcpi->nkhwbp", win, k[:, :, yy, xx].astype(np.int64))
        acc = (acc + (1 << 31)) % (1 << 32) - (1 << 31)
        return _wrap_to(np.clip(acc >> env.INP_WIDTH, 0, _clip_max(env)), res.dtype)

    return Workload("conv2d", s, [data, kernel, res], inputs, ref)
