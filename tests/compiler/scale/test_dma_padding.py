"""InjectDMAIntrin on padded loads whose padding depends on the tile (a loop or a virtual thread)
and that span several channel blocks (host loops of padded 2-D transfers).

The oracle is the geometry worked out by hand: an 8 x 8 image padded by 1, cut into two row tiles
of 4 output rows (one per virtual thread) needs input rows -1..4 and 3..8 of the padded image:
the first tile has one zero row before, the second one after; every tile has one zero column on
each side; each of the two channel blocks is one transfer.
"""

from __future__ import annotations

import itertools

import numpy as np

from vta import te, topi
from vta.build import lower
from vta.tir import nodes as n
from vta.tir.functor import StmtExprVisitor, substitute
from vta.tir.simplify import simplify

from .runner import run

# VTALoadBuffer2D(cmd, src, offset, x_size, y_size, x_stride, x_pad_0, y_pad_0, x_pad_1, y_pad_1, dst, mem)
_FIELDS = ("offset", "x_size", "y_size", "x_stride", "x_pad_0", "y_pad_0", "x_pad_1", "y_pad_1")


class _Loads(StmtExprVisitor):
    """Every ``VTALoadBuffer2D`` of input memory with the ranges of its enclosing loops."""

    def __init__(self, mem_inp: int):
        self.mem_inp = mem_inp
        self.loops: list = []
        self.found: list = []

    def visit_For(self, op):
        self.loops.append((op.loop_var, int(op.extent.value)))
        self.generic_visit(op)
        self.loops.pop()

    def visit_Call(self, op):
        if (op.op == "tir.call_extern" and op.args[0].value == "VTALoadBuffer2D"
                and int(op.args[-1].value) == self.mem_inp):
            self.found.append((list(self.loops), op.args[3:11]))
        self.generic_visit(op)


def _evaluate(loads):
    """Each load's fields for every value of the loops around it, as a sorted list of tuples."""
    rows = []
    for loops, args in loads:
        for values in itertools.product(*[range(e) for _, e in loops]):
            vmap = {v: n.IntImm(x) for (v, _), x in zip(loops, values, strict=True)}
            rows.append(tuple(simplify(substitute(a, vmap)).value for a in args))
    return sorted(rows)


def _layer(env):
    data = te.placeholder((1, 2, 8, 8, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
    kernel = te.placeholder((1, 2, 3, 3, env.BLOCK_OUT, env.BLOCK_IN), name="kernel", dtype=env.wgt_dtype)
    res = topi.requantize(topi.conv2d_packed(data, kernel, 1, 1, env.acc_dtype))
    tiling = topi.Conv2DTiling(tile_h=4, tile_w=8, tile_co=1, tile_ci=2, h_nthread=2)
    return topi.schedule_conv2d_packed(res, tiling), [data, kernel, res]


def test_padded_loads_follow_the_tile_and_span_channel_blocks(env):
    s, args = _layer(env)
    func = lower(s, args)
    visitor = _Loads(env.dev.MEM_ID_INP)
    visitor.visit(func.body)
    got = [dict(zip(_FIELDS, row, strict=True)) for row in _evaluate(visitor.found)]
    # Two tiles x two channel blocks, each an 8-wide, 5-row window (6 padded rows, one of them zeros).
    assert len(got) == 4
    for row in got:
        assert (row["x_size"], row["y_size"], row["x_stride"], row["x_pad_0"], row["x_pad_1"]) == (8, 5, 8, 1, 1)
    assert sorted((r["y_pad_0"], r["y_pad_1"]) for r in got) == [(0, 1), (0, 1), (1, 0), (1, 0)]
    # DRAM offsets (in tiles): channel block c starts at c*64; the first tile reads rows 0..4,
    # the second rows 3..7 (offset 3*8).
    assert sorted(r["offset"] for r in got) == [0, 24, 64, 88]


def test_padded_loads_compute_the_convolution(env, tmp_path):
    s, args = _layer(env)
    rng = np.random.default_rng(16)
    a = rng.integers(-128, 128, size=(env.BATCH, 32, 8, 8)).astype(np.int8)
    w = rng.integers(-128, 128, size=(16, 32, 3, 3)).astype(np.int8)
    outs, _ = run(s, args, {"data": topi.pack_nchw(a), "kernel": topi.pack_oihw(w)}, tmp_path)
    expect = np.clip(topi.conv2d_nchw_python(a, w, 1, 1) >> 8, 0, 127).astype(np.int8)
    np.testing.assert_equal(topi.unpack_nchw(outs["res"]), expect)
