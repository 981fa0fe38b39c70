"""Runs of GEMMs that the compiled loop executes as BLAS products, against the scalar oracle.

The compiled engine gathers a run of consecutive one-micro-op GEMMs into float32 matrices and
multiplies them with BLAS, in reduction chunks small enough for exact sums. These tests lower
the size threshold to 0 so that small random runs take that path, and check every buffer,
output byte and counter against the oracle of ``oracle.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vta import isa
from vta.env import get_env
from vta.sim.fsim import jit, kernels
from vta.testing.programs import ProgramBuilder

from .conftest import assert_same_state, run_both

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed")


def _run_program(env, dram, *, n_run, io, ii, steps, factors, fill, rng):
    """LOAD INP/WGT/UOP, a reset, ``n_run`` GEMMs with micro-ops stepping by ``steps``, FINISH."""
    depth = {"dst": env.ACC_BUFF_DEPTH, "src": env.INP_BUFF_DEPTH, "wgt": env.WGT_BUFF_DEPTH}
    reach = {r: (n_run - 1) * steps[r] + (io - 1) * factors[r][0] + (ii - 1) * factors[r][1] + 1 for r in depth}
    assert all(reach[r] <= depth[r] for r in depth)
    prog = ProgramBuilder(env, dram)
    data = {}
    for mt, role in ((isa.MEM_INP, "src"), (isa.MEM_WGT, "wgt")):
        nbytes = reach[role] * env.elem_bytes(mt)
        raw = rng.integers(0, 256, size=nbytes, dtype=np.uint8) if fill is None else np.full(nbytes, fill, np.uint8)
        data[role] = prog.buffer(raw)
    prog.load(isa.MEM_INP, 0, data["src"], 1, reach["src"])
    prog.load(isa.MEM_WGT, 0, data["wgt"], 1, reach["wgt"], push_next_dep=1)
    uops = [(q * steps["dst"], q * steps["src"], q * steps["wgt"]) for q in range(n_run)]
    prog.uops(uops + [(0, 0, 0)], sram_base=0, pop_prev_dep=1)
    prog.append(isa.GemmInsn(reset_reg=1, uop_bgn=n_run, uop_end=n_run + 1, iter_out=reach["dst"],
                             dst_factor_out=1))
    for q in range(n_run):
        prog.append(isa.GemmInsn(uop_bgn=q, uop_end=q + 1, iter_out=io, iter_in=ii,
                                 dst_factor_out=factors["dst"][0], dst_factor_in=factors["dst"][1],
                                 src_factor_out=factors["src"][0], src_factor_in=factors["src"][1],
                                 wgt_factor_out=factors["wgt"][0], wgt_factor_in=factors["wgt"][1]))
    prog.finish()
    return prog


def _check(env, dram, prog):
    addr, count = prog.build()
    dev, ref, _, _ = run_both(env, dram, [], addr, count, engine="jit")
    assert_same_state(dev, ref)
    stats = dev.stats()
    for key, value in ref.stats.items():
        assert stats[key] == value, key
    return dev


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n_run=st.integers(1, 4), io=st.integers(1, 3), ii=st.integers(1, 6),
       steps=st.tuples(*[st.integers(0, 3)] * 3), factors=st.tuples(*[st.integers(0, 3)] * 6))
def test_random_runs_match_oracle(any_env, dram, monkeypatch, seed, n_run, io, ii, steps, factors):
    """Any loop shape (rows, columns, reductions, repetitions, or shapes BLAS cannot take and
    that fall back to the loop) gives the oracle's accumulator."""
    monkeypatch.setattr(jit, "BATCH_MIN_MACS", 0)
    prog = _run_program(any_env, dram, n_run=n_run, io=io, ii=ii, rng=np.random.default_rng(seed), fill=None,
                        steps=dict(zip(("dst", "src", "wgt"), steps, strict=True)),
                        factors={"dst": factors[0:2], "src": factors[2:4], "wgt": factors[4:6]})
    with prog:
        _check(any_env, dram, prog)


@pytest.mark.parametrize("fill", [0x80, None])
def test_blocked_product_with_long_reduction_is_exact(any_env, dram, monkeypatch, fill):
    """The classic blocked pattern (instructions = output columns, i_out = rows, i_in = the
    reduction) with a reduction longer than one exact float32 chunk: all -128 operands make
    the sums cross 2^24, which the chunked products must still get exactly right."""
    monkeypatch.setattr(jit, "BATCH_MIN_MACS", 0)
    ii = 2048 // any_env.BLOCK_IN + 3  # more than one chunk of 1024 products per output lane
    ii = min(ii, any_env.INP_BUFF_DEPTH // 2, any_env.WGT_BUFF_DEPTH // 3)
    prog = _run_program(any_env, dram, n_run=3, io=2, ii=ii, rng=np.random.default_rng(7), fill=fill,
                        steps={"dst": 1, "src": 0, "wgt": ii}, factors={"dst": (3, 0), "src": (ii, 1),
                                                                        "wgt": (0, 1)})
    with prog:
        dev = _check(any_env, dram, prog)
    if any_env.INP_WIDTH == 8 and any_env.WGT_WIDTH == 8 and any_env.ACC_WIDTH == 32:
        assert dev._jit.batched_runs == 1  # the BLAS path was taken, not the fallback


@pytest.mark.parametrize("overlap", [False, True])
def test_tall_product_read_in_place_is_exact(any_env, dram, monkeypatch, overlap):
    """More product rows than columns (the product is laid out by rows), a reduction split
    into several BLAS calls, and input rows either read where they lie in the scratchpad
    (each row's reduction contiguous) or, when consecutive rows overlap, gathered first."""
    monkeypatch.setattr(jit, "BATCH_MIN_MACS", 0)
    ii = min(40, any_env.WGT_BUFF_DEPTH // 2)
    io = min(48, any_env.ACC_BUFF_DEPTH // 2, (any_env.INP_BUFF_DEPTH - ii) // (1 if overlap else ii))
    prog = _run_program(any_env, dram, n_run=2, io=io, ii=ii, rng=np.random.default_rng(11), fill=None,
                        steps={"dst": 1, "src": 0, "wgt": ii},
                        factors={"dst": (2, 0), "src": (1 if overlap else ii, 1), "wgt": (0, 1)})
    with prog:
        dev = _check(any_env, dram, prog)
    if any_env.INP_WIDTH == 8 and any_env.WGT_WIDTH == 8 and any_env.ACC_WIDTH == 32:
        assert dev._jit.batched_runs == 1


@pytest.mark.parametrize("fill", [0x80, 0x7F, None])
def test_int8_products_span_passes_and_partial_tiles(any_env, dram, monkeypatch, fill):
    """A run whose reduction is longer than one pass of the int8 products (more than
    ``_INT8_LANES`` lanes), with a row count that is not a whole number of tiles and an odd
    number of 16-lane column groups (both padded); all -128 or all 127 operands give the
    largest sums (the int32 lanes wrap and the correction must undo the +128 exactly)."""
    monkeypatch.setattr(jit, "BATCH_MIN_MACS", 0)
    env = any_env
    ii = min(kernels._INT8_LANES // env.BLOCK_IN + 5, env.WGT_BUFF_DEPTH // 3)
    io = min(9, env.INP_BUFF_DEPTH // ii)
    prog = _run_program(env, dram, n_run=3, io=io, ii=ii, rng=np.random.default_rng(13), fill=fill,
                        steps={"dst": 1, "src": 0, "wgt": ii}, factors={"dst": (3, 0), "src": (ii, 1),
                                                                        "wgt": (0, 1)})
    with prog:
        dev = _check(env, dram, prog)
    if env.INP_WIDTH == 8 and env.WGT_WIDTH == 8 and env.ACC_WIDTH == 32:
        assert dev._jit.batched_runs == 1


@pytest.mark.parametrize("compiled", [False, True])
def test_int8_product_functions_match_numpy(monkeypatch, compiled):
    """The int8 products as a function, plain Python (the specification of the compiled tile and
    packing) and compiled, on a small run with BATCH 2, a reduction in two passes, the largest
    repeat count and scratch too small (the function allocates its own), against a NumPy product
    of the same operands: rows = (dst, src) offsets, columns = (dst, wgt), reduction steps = (src,
    wgt), scaled by the repeat count and added to the accumulator modulo 2^32."""
    if compiled:
        jit.JitEngine(get_env())  # compiles the loop
        product = kernels._COMPILED_NS["_int8_product"]
    else:
        monkeypatch.setattr(kernels, "_INT8_LANES", 64)  # passes of 4 steps (the plain Python is slow)
        product = kernels._int8_product
    rng = np.random.default_rng(3)
    nb, n_red, mult = 2, kernels._INT8_LANES // 16 + 3, 2**32 - 1
    inp = rng.integers(-128, 128, size=(3 * n_red, nb, 16)).astype(np.float32)
    wgt = rng.integers(-128, 128, size=(3 * n_red, 16, 16)).astype(np.float32)
    acc = rng.integers(-2**31, 2**31, size=(12, nb, 16), dtype=np.int64).astype(np.int32)
    row_d, row_s = np.array([0, 3, 6]), np.array([0, n_red, 2 * n_red])
    col_d, col_w = np.array([0, 1, 2]), np.array([0, n_red, 2 * n_red])
    red_s = red_w = np.arange(n_red)
    want = acc.astype(np.int64)
    for m in range(3):
        for c in range(3):
            x = inp[row_s[m] + red_s].transpose(1, 0, 2).reshape(nb, -1).astype(np.int64)   # [b][lanes]
            w = wgt[col_w[c] + red_w].transpose(1, 0, 2).reshape(16, -1).astype(np.int64)  # [j][lanes]
            want[row_d[m] + col_d[c]] += mult * (x @ w.T)
    want = ((want + 2**31) % 2**32 - 2**31).astype(np.int32)
    got = acc.copy()
    product(inp.reshape(-1), wgt.reshape(-1), got.reshape(-1), 0, 0, 0, row_d, row_s, col_d, col_w, red_s, red_w, nb,
            mult, np.empty(16, dtype=np.float32))
    assert np.array_equal(got, want)


def test_int8_products_are_used_where_the_cpu_has_them(dram, monkeypatch):
    """On a CPU with AVX-512 VNNI the compiled engine multiplies a lined-up run of the default
    configuration with int8 dot products, elsewhere with float32 BLAS products (the tests above
    check whichever path the CPU takes against the oracle)."""
    monkeypatch.setattr(jit, "BATCH_MIN_MACS", 0)
    env = get_env()
    prog = _run_program(env, dram, n_run=2, io=3, ii=4, rng=np.random.default_rng(2), fill=None,
                        steps={"dst": 1, "src": 0, "wgt": 4}, factors={"dst": (2, 0), "src": (4, 1), "wgt": (0, 1)})
    with prog:
        dev = _check(env, dram, prog)
    assert dev._jit.batched_runs == 1
    assert dev._jit.int8_runs == (1 if kernels.int8_dots_available() else 0)
