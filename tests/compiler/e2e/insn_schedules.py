"""The schedules of upstream's test_vta_insn.py (reference section 7.2) and further unit cases.

Each builder returns a :class:`~tests.compiler.e2e.schedules.Case`: the schedule, its arguments,
the input arrays and a NumPy reference independent of the compiler.
"""

from __future__ import annotations

import numpy as np

from vta import te
from vta.tir import nodes as tn

from .schedules import Case, _copy


def _alu_pipeline(env, s, bufs_acc, alu_stages, out):
    for t in bufs_acc:
        s[t].set_scope(env.acc_scope)
    for t in alu_stages:
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[out].pragma(s[out].op.axis[0], env.dma_copy)


def save_load_out(env, rng) -> Case:
    """test_save_load_out: load 36 acc tiles, copy through the ALU (SHR 0), store."""
    n_, m = 6, 6
    shape = (n_, m, env.BATCH, env.BLOCK_OUT)
    x = te.placeholder(shape, name="x", dtype=env.acc_dtype)
    x_buf = _copy(x, "x_buf")
    y_buf = te.compute(shape, lambda *i: x_buf(*i) >> 0, "y_buf")
    y = te.compute(shape, lambda *i: y_buf(*i).astype(env.inp_dtype), "y")
    s = te.create_schedule(y.op)
    s[x_buf].pragma(s[x_buf].op.axis[0], env.dma_copy)
    _alu_pipeline(env, s, [x_buf, y_buf], [y_buf], y)
    data = rng.integers(1, 10, size=shape).astype(np.int32)
    return Case(s, [x, y], {"x": data}, "y", shape, "int8", lambda d: d["x"].astype(np.int8))


PAD_CASES = {
    "Y0": ([2, 0, 0, 0], [0, 0, 0, 0]),
    "Y1": ([0, 2, 0, 0], [0, 0, 0, 0]),
    "X0": ([0, 0, 0, 0], [2, 0, 0, 0]),
    "X1": ([0, 0, 0, 0], [0, 2, 0, 0]),
    "all": ([1, 1, 0, 0], [1, 1, 0, 0]),
}


def padded_load(env, rng, before, after) -> Case:
    """test_padded_load: a zero-padded acc load (x_buf = pad(x)), copy, store."""
    in_shape = (3, 5, env.BATCH, env.BLOCK_OUT)
    out_shape = tuple(d + b + a for d, b, a in zip(in_shape, before, after))
    x = te.placeholder(in_shape, name="x", dtype=env.acc_dtype)

    def padded(*i):
        conds = []
        for k, (b, a) in enumerate(zip(before, after)):
            if b:
                conds.append(i[k] >= b)
            if a:
                conds.append(i[k] < b + in_shape[k])
        src = x(*[idx - b if b else idx for idx, b in zip(i, before)])
        if not conds:
            return src
        cond = conds[0]
        for c in conds[1:]:
            cond = tn.And(cond, c)
        return te.if_then_else(cond, src, tn.const(0, env.acc_dtype))

    x_buf = te.compute(out_shape, padded, "x_buf")
    y_buf = te.compute(out_shape, lambda *i: x_buf(*i) >> 0, "y_buf")
    y = te.compute(out_shape, lambda *i: y_buf(*i).astype(env.inp_dtype), "y")
    s = te.create_schedule(y.op)
    s[x_buf].pragma(s[x_buf].op.axis[0], env.dma_copy)
    _alu_pipeline(env, s, [x_buf, y_buf], [y_buf], y)
    data = rng.integers(0, 10, size=in_shape).astype(np.int32)

    def expect(d):
        out = np.zeros(out_shape, dtype=np.int32)
        out[tuple(slice(b, b + n_) for b, n_ in zip(before, in_shape))] = d["x"]
        return out.astype(np.int8)

    return Case(s, [x, y], {"x": data}, "y", out_shape, "int8", expect)


def gemm(env, rng, smt: bool, o: int = 4, n_: int = 1, m: int = 4) -> Case:
    """test_gemm: y = clip((x . w^T) >> 8, 0, 127); default or two virtual threads (smt).

    ``o`` batch tiles, ``n_`` input-channel tiles, ``m`` output-channel tiles (upstream: 4, 1, 4).
    """
    x = te.placeholder((o, n_, env.BATCH, env.BLOCK_IN), name="x", dtype=env.inp_dtype)
    w = te.placeholder((m, n_, env.BLOCK_OUT, env.BLOCK_IN), name="w", dtype=env.wgt_dtype)
    x_buf, w_buf = _copy(x, "x_buf"), _copy(w, "w_buf")
    ko = te.reduce_axis((0, n_), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    oshape = (o, m, env.BATCH, env.BLOCK_OUT)
    y_gem = te.compute(oshape, lambda bo, co, bi, ci: te.sum(
        x_buf[bo, ko, bi, ki].astype(env.acc_dtype) * w_buf[co, ko, ci, ki].astype(env.acc_dtype), axis=[ko, ki]),
        name="y_gem")
    y_shf = te.compute(oshape, lambda *i: y_gem(*i) >> 8, name="y_shf")
    y_max = te.compute(oshape, lambda *i: te.max(y_shf(*i), 0), "y_max")
    y_min = te.compute(oshape, lambda *i: te.min(y_max(*i), (1 << (env.INP_WIDTH - 1)) - 1), "y_min")
    y = te.compute(oshape, lambda *i: y_min(*i).astype(env.inp_dtype), name="y")
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
        store_axis = abo2
    else:
        store_axis = s[y].op.axis[0]
    ko, ki = s[y_gem].op.reduce_axis
    ax = s[y_gem].op.axis
    s[y_gem].reorder(ko, ax[0], ax[1], ax[2], ax[3], ki)
    s[x_buf].compute_at(s[y_gem], ko)
    s[w_buf].compute_at(s[y_gem], ko)
    s[x_buf].pragma(s[x_buf].op.axis[0], env.dma_copy)
    s[w_buf].pragma(s[w_buf].op.axis[0], env.dma_copy)
    for t in (y_shf, y_max, y_min):
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[y].pragma(store_axis, env.dma_copy)
    s[y_gem].tensorize(ax[2], env.gemm)
    xd = rng.integers(-128, 128, size=(o, n_, env.BATCH, env.BLOCK_IN)).astype(np.int8)
    wd = rng.integers(-128, 128, size=(m, n_, env.BLOCK_OUT, env.BLOCK_IN)).astype(np.int8)

    def expect(d):
        a2 = d["x"].transpose(0, 2, 1, 3).reshape(o * env.BATCH, n_ * env.BLOCK_IN).astype(np.int64)
        b2 = d["w"].transpose(0, 2, 1, 3).reshape(m * env.BLOCK_OUT, n_ * env.BLOCK_IN).astype(np.int64)
        r = np.clip((a2 @ b2.T) >> 8, 0, (1 << (env.INP_WIDTH - 1)) - 1)
        return r.reshape(o, env.BATCH, m, env.BLOCK_OUT).transpose(0, 2, 1, 3).astype(np.int8)

    return Case(s, [x, w, y], {"x": xd, "w": wd}, "y", oshape, "int8", expect)


#: test_alu: (name, use_imm, numpy reference, tensor expression)
ALU_OPS = {
    "shl_imm": (True, lambda a, b, k: np.left_shift(a, k), lambda a, b, k: a << k),
    "max_imm": (True, lambda a, b, k: np.maximum(a, k), lambda a, b, k: te.max(a, k)),
    "max": (False, lambda a, b, k: np.maximum(a, b), lambda a, b, k: te.max(a, b)),
    "add_imm": (True, lambda a, b, k: a + k, lambda a, b, k: a + k),
    "add": (False, lambda a, b, k: a + b, lambda a, b, k: a + b),
    "shr_imm": (True, lambda a, b, k: np.right_shift(a, k), lambda a, b, k: a >> k),
    # Not upstream: subtraction (of a constant: ADD of its negation; of a tile: MUL -1, ADD).
    "sub_imm": (True, lambda a, b, k: a - k, lambda a, b, k: a - k),
    "sub": (False, lambda a, b, k: a - b, lambda a, b, k: a - b),
}


def alu(env, rng, op: str) -> Case:
    """test_alu: one ALU stage with an immediate or a second tensor operand."""
    use_imm, np_fn, te_fn = ALU_OPS[op]
    m = n_ = 8
    shape = (m, n_, env.BATCH, env.BLOCK_OUT)
    imm = int(rng.integers(1, 5))
    a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
    a_buf = _copy(a, "a_buf")
    args, inputs = [a], {"a": rng.integers(-16, 16, size=shape).astype(np.int32)}
    if use_imm:
        res_buf = te.compute(shape, lambda *i: te_fn(a_buf(*i), None, imm), "res_buf")
        bufs = [a_buf, res_buf]
    else:
        b = te.placeholder(shape, name="b", dtype=env.acc_dtype)
        b_buf = _copy(b, "b_buf")
        res_buf = te.compute(shape, lambda *i: te_fn(a_buf(*i), b_buf(*i), imm), "res_buf")
        args.append(b)
        inputs["b"] = rng.integers(-16, 16, size=shape).astype(np.int32)
        bufs = [a_buf, b_buf, res_buf]
    res = te.compute(shape, lambda *i: res_buf(*i).astype(env.inp_dtype), "res")
    s = te.create_schedule(res.op)
    for t in bufs[:-1]:
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    _alu_pipeline(env, s, bufs, [res_buf], res)
    return Case(s, args + [res], inputs, "res", shape, "int8",
                lambda d: np_fn(d["a"], d.get("b"), imm).astype(np.int8))


def relu(env, rng) -> Case:
    """test_relu: clip to [0, 127] with two ALU stages (MAX 0, MIN 127)."""
    m, n_ = 8, 10
    shape = (m, n_, env.BATCH, env.BLOCK_OUT)
    a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
    a_buf = _copy(a, "a_buf")
    max_buf = te.compute(shape, lambda *i: te.max(a_buf(*i), 0), "max_buf")
    min_buf = te.compute(shape, lambda *i: te.min(max_buf(*i), (1 << (env.INP_WIDTH - 1)) - 1), "min_buf")
    res = te.compute(shape, lambda *i: min_buf(*i).astype(env.inp_dtype), "res")
    s = te.create_schedule(res.op)
    s[a_buf].pragma(s[a_buf].op.axis[0], env.dma_copy)
    _alu_pipeline(env, s, [a_buf, max_buf, min_buf], [max_buf, min_buf], res)
    data = rng.integers(-256, 256, size=shape).astype(np.int32)
    return Case(s, [a, res], {"a": data}, "res", shape, "int8",
                lambda d: np.clip(d["a"], 0, (1 << (env.INP_WIDTH - 1)) - 1).astype(np.int8))


def shift_and_scale(env, rng) -> Case:
    """test_shift_and_scale: (a + s) >> k with immediates."""
    m, n_ = 2, 8
    shape = (m, n_, env.BATCH, env.BLOCK_OUT)
    imm_shift = int(rng.integers(1, 8))  # 0 would fold the add away (covered by save_load_out)
    imm_scale = int(rng.integers(1, 5))
    a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
    a_buf = _copy(a, "a_buf")
    res_shift = te.compute(shape, lambda *i: a_buf(*i) + imm_shift, "res_shift")
    res_scale = te.compute(shape, lambda *i: res_shift(*i) >> imm_scale, "res_scale")
    res = te.compute(shape, lambda *i: res_scale(*i).astype(env.inp_dtype), "res")
    s = te.create_schedule(res.op)
    s[a_buf].pragma(s[a_buf].op.axis[0], env.dma_copy)
    _alu_pipeline(env, s, [a_buf, res_shift, res_scale], [res_shift, res_scale], res)
    data = rng.integers(-10, 10, size=shape).astype(np.int32)
    return Case(s, [a, res], {"a": data}, "res", shape, "int8",
                lambda d: ((d["a"] + imm_shift) >> imm_scale).astype(np.int8))


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


def random_alu_pipeline(env, rng) -> Case:
    """1-3 ALU stages with random immediates or a second loaded tensor, on a random tile grid."""
    m, n_ = int(rng.integers(1, 6)), int(rng.integers(1, 9))
    shape = (m, n_, env.BATCH, env.BLOCK_OUT)
    a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
    b = te.placeholder(shape, name="b", dtype=env.acc_dtype)
    a_buf, b_buf = _copy(a, "a_buf"), _copy(b, "b_buf")
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
    for t in loaded + stages:
        s[t].set_scope(env.acc_scope)
    for t in loaded:
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    for t in stages:
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[res].pragma(s[res].op.axis[0], env.dma_copy)
    inputs = {"a": rng.integers(-100, 100, size=shape).astype(np.int32)}
    if use_b:
        inputs["b"] = rng.integers(-100, 100, size=shape).astype(np.int32)

    def expect(d):
        x = d["a"].astype(np.int64)
        for fn, imm in refs:
            x = x + d["b"] if fn is None else fn(x, imm)
            x = ((x + (1 << 31)) % (1 << 32)) - (1 << 31)  # int32 wrap-around
        return x.astype(np.int8)

    return Case(s, [a] + ([b] if use_b else []) + [res], inputs, "res", shape, "int8", expect)


def gemm_by_pragma(env, rng, skip_odd: bool) -> Case:
    """The matrix multiply with ``pragma(conv2d_transpose_gemm)`` on the tensor axis instead of
    tensorize; with ``skip_odd`` the input is read as ``if_then_else(ko % 2 == 0, x, 0)`` so the
    odd reduction steps (zeros, like dilation) are skipped."""
    m, n_, o = 3, 4, 1
    A = te.placeholder((o, n_, env.BATCH, env.BLOCK_IN), name="A", dtype=env.inp_dtype)
    B = te.placeholder((m, n_, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype=env.wgt_dtype)
    A_buf, B_buf = _copy(A, "A_buf"), _copy(B, "B_buf")
    ko = te.reduce_axis((0, n_), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")

    def inp(bo, bi):
        x = A_buf[bo, ko, bi, ki].astype(env.acc_dtype)
        if skip_odd:
            return te.if_then_else((ko.var % 2).equal(0), x, tn.const(0, env.acc_dtype))
        return x

    C_buf = te.compute((o, m, env.BATCH, env.BLOCK_OUT), lambda bo, co, bi, ci: te.sum(
        inp(bo, bi) * B_buf[co, ko, ci, ki].astype(env.acc_dtype), axis=[ko, ki]), name="C_buf")
    C = te.compute((o, m, env.BATCH, env.BLOCK_OUT), lambda *i: C_buf(*i).astype(env.inp_dtype), name="C")
    s = te.create_schedule(C.op)
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    s[C_buf].set_scope(env.acc_scope)
    ko, ki = s[C_buf].op.reduce_axis
    ax = s[C_buf].op.axis
    s[C_buf].reorder(ko, ax[0], ax[1], ax[2], ax[3], ki)
    s[A_buf].compute_at(s[C_buf], ko)
    s[B_buf].compute_at(s[C_buf], ko)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    s[C_buf].pragma(ax[2], "conv2d_transpose_gemm")
    a = rng.integers(-128, 128, size=(o, n_, env.BATCH, env.BLOCK_IN)).astype(np.int8)
    b = rng.integers(-128, 128, size=(m, n_, env.BLOCK_OUT, env.BLOCK_IN)).astype(np.int8)

    def expect(d):
        keep = np.array([0 if (skip_odd and k % 2) else 1 for k in range(n_)])
        a2 = (d["A"].astype(np.int64) * keep[None, :, None, None]).transpose(0, 2, 1, 3).reshape(o * env.BATCH, -1)
        b2 = d["B"].astype(np.int64).transpose(0, 2, 1, 3).reshape(m * env.BLOCK_OUT, -1)
        c2 = a2 @ b2.T
        return c2.reshape(o, env.BATCH, m, env.BLOCK_OUT).transpose(0, 2, 1, 3).astype(np.int8)

    return Case(s, [A, B, C], {"A": a, "B": b}, "C", (o, m, env.BATCH, env.BLOCK_OUT), "int8", expect)


def acc_8bit_load(env, rng) -> Case:
    """An int8 input loaded straight into the accumulator (ACC_8BIT, sign-extended), plus 3."""
    shape = (2, 4, env.BATCH, env.BLOCK_OUT)
    x = te.placeholder(shape, name="x", dtype=env.inp_dtype)
    x_buf = te.compute(shape, lambda *i: x(*i).astype(env.acc_dtype), "x_buf")
    y_buf = te.compute(shape, lambda *i: x_buf(*i) + 3, "y_buf")
    y = te.compute(shape, lambda *i: y_buf(*i).astype(env.inp_dtype), "y")
    s = te.create_schedule(y.op)
    s[x_buf].pragma(s[x_buf].op.axis[0], env.dma_copy)
    _alu_pipeline(env, s, [x_buf, y_buf], [y_buf], y)
    data = rng.integers(-128, 128, size=shape).astype(np.int8)
    return Case(s, [x, y], {"x": data}, "y", shape, "int8", lambda d: (d["x"].astype(np.int32) + 3).astype(np.int8))


def conv2d_transpose(env, rng) -> Case:
    """A stride-2 transposed convolution (3x3 input, 3x3 kernel, padding 1 -> 5x5) written as a
    convolution over the zero-dilated, padded input, the dilation expressed as a guard on the
    input read, with ``pragma(conv2d_transpose_gemm)`` instead of tensorize: GEMM uops reading
    inserted zeros are skipped (reference 2.4, InjectConv2DTransposeSkip)."""
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
    data_buf, kernel_buf = _copy(data, "data_buf"), _copy(kernel, "kernel_buf")
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
    d = rng.integers(-128, 128, size=dshape).astype(np.int8)
    k = rng.integers(-128, 128, size=kshape).astype(np.int8)

    def expect(v):
        x = v["data"][0, 0].astype(np.int64)            # (h, w, BATCH, BLOCK_IN)
        dilated = np.zeros((dil, dil) + x.shape[2:], dtype=np.int64)
        dilated[::stride, ::stride] = x
        padded = np.pad(dilated, ((bpad, bpad), (bpad, bpad), (0, 0), (0, 0)))
        wk = v["kernel"][0, 0].astype(np.int64)          # (kh, kw, BLOCK_OUT, BLOCK_IN)
        out = np.zeros((out_h, out_h, env.BATCH, env.BLOCK_OUT), dtype=np.int64)
        for a in range(kh):
            for b in range(kh):
                out += np.einsum("yxbk,ok->yxbo", padded[a:a + out_h, b:b + out_h], wk[a, b])
        return (out >> 6).astype(np.int8)[None, None]

    return Case(s, [data, kernel, res], {"data": d, "kernel": k}, "res", oshape, "int8", expect)


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


def residual(env, rng) -> Case:
    """y = max(x, 0) + x: the first ALU stage cannot overwrite x (still needed), so the compiler
    copies it first; the second adds the two tiles."""
    shape = (2, 4, env.BATCH, env.BLOCK_OUT)
    x = te.placeholder(shape, name="x", dtype=env.acc_dtype)
    x_buf = _copy(x, "x_buf")
    r_buf = te.compute(shape, lambda *i: te.max(x_buf(*i), 0), "r_buf")
    y_buf = te.compute(shape, lambda *i: r_buf(*i) + x_buf(*i), "y_buf")
    y = te.compute(shape, lambda *i: y_buf(*i).astype(env.inp_dtype), "y")
    s = te.create_schedule(y.op)
    s[x_buf].pragma(s[x_buf].op.axis[0], env.dma_copy)
    _alu_pipeline(env, s, [x_buf, r_buf, y_buf], [r_buf, y_buf], y)
    data = rng.integers(-60, 60, size=shape).astype(np.int32)
    return Case(s, [x, y], {"x": data}, "y", shape, "int8", lambda d: (np.maximum(d["x"], 0) + d["x"]).astype(np.int8))


def strided_window_load(env, rng) -> Case:
    """Copy a (3, 2, 3)-tile window out of a (3, 4, 6)-tile tensor: rows of 3 tiles, 2 rows per
    plane, planes apart by more than 2 rows -- three tile dimensions, so the load is issued as
    one 2-D transfer per plane (a host loop)."""
    full = (3, 4, 6, env.BATCH, env.BLOCK_OUT)
    win = (3, 2, 3, env.BATCH, env.BLOCK_OUT)
    x = te.placeholder(full, name="x", dtype=env.acc_dtype)
    x_buf = te.compute(win, lambda a, b, c, d, e: x[a, b, c, d, e], "x_buf")
    y_buf = te.compute(win, lambda *i: x_buf(*i) + 1, "y_buf")
    y = te.compute(win, lambda *i: y_buf(*i).astype(env.inp_dtype), "y")
    s = te.create_schedule(y.op)
    s[x_buf].pragma(s[x_buf].op.axis[0], env.dma_copy)
    _alu_pipeline(env, s, [x_buf, y_buf], [y_buf], y)
    data = rng.integers(-100, 100, size=full).astype(np.int32)
    return Case(s, [x, y], {"x": data}, "y", win, "int8", lambda d: (d["x"][:, :2, :3] + 1).astype(np.int8))
