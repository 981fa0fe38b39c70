"""cocotb tests of vta_gemm, the combinational GEMM core, against a NumPy oracle."""

import cocotb
import numpy as np
from cocotb.triggers import Timer

from tests.hw.tbutil import hw_env, pack, unpack, wrap


class TB:
    """Drives vta_gemm's operands and reads its result (no clock: the unit is combinational)."""

    def __init__(self, dut):
        self.dut = dut
        self.env = hw_env()

    async def apply(self, inp, wgt, acc, reset=False, en=True):
        e = self.env
        self.dut.en_i.value = int(en)
        self.dut.inp_i.value = pack(inp, e.INP_WIDTH)
        self.dut.wgt_i.value = pack(wgt, e.WGT_WIDTH)
        self.dut.acc_i.value = pack(acc, e.ACC_WIDTH)
        self.dut.reset_i.value = int(reset)
        await Timer(1, unit="ns")
        out = unpack(self.dut.acc_o.value.to_unsigned(), e.ACC_WIDTH, e.BATCH * e.BLOCK_OUT)
        return out.reshape(e.BATCH, e.BLOCK_OUT)

    def oracle(self, inp, wgt, acc):
        dot = inp.astype(np.int64) @ wgt.astype(np.int64).T
        return wrap(acc.astype(np.int64) + dot, self.env.ACC_WIDTH)


def _operands(env, rng, extreme=False):
    lo_i, hi_i = -(1 << (env.INP_WIDTH - 1)), (1 << (env.INP_WIDTH - 1))
    lo_w, hi_w = -(1 << (env.WGT_WIDTH - 1)), (1 << (env.WGT_WIDTH - 1))
    if extreme:
        inp = np.full((env.BATCH, env.BLOCK_IN), lo_i)
        wgt = np.full((env.BLOCK_OUT, env.BLOCK_IN), lo_w)
        acc = np.full((env.BATCH, env.BLOCK_OUT), (1 << (env.ACC_WIDTH - 1)) - 1)  # overflows: wraps
    else:
        inp = rng.integers(lo_i, hi_i, (env.BATCH, env.BLOCK_IN))
        wgt = rng.integers(lo_w, hi_w, (env.BLOCK_OUT, env.BLOCK_IN))
        acc = rng.integers(-(1 << 31), 1 << 31, (env.BATCH, env.BLOCK_OUT)) if env.ACC_WIDTH == 32 else \
            rng.integers(-(1 << (env.ACC_WIDTH - 1)), 1 << (env.ACC_WIDTH - 1), (env.BATCH, env.BLOCK_OUT))
    return inp, wgt, acc


@cocotb.test()
async def random_products_accumulate(dut):
    """Random signed operands: acc + inp . wgt^T, wrapping to ACC_WIDTH bits."""
    tb = TB(dut)
    rng = np.random.default_rng(1)
    for _ in range(20):
        inp, wgt, acc = _operands(tb.env, rng)
        got = await tb.apply(inp, wgt, acc)
        np.testing.assert_array_equal(got, tb.oracle(inp, wgt, acc))


@cocotb.test()
async def extreme_values_wrap(dut):
    """Most negative inputs and weights on a maximal accumulator wrap modulo 2^ACC_WIDTH."""
    tb = TB(dut)
    inp, wgt, acc = _operands(tb.env, None, extreme=True)
    got = await tb.apply(inp, wgt, acc)
    expected = tb.oracle(inp, wgt, acc)
    assert expected.min() < 0  # the oracle itself wrapped
    np.testing.assert_array_equal(got, expected)


@cocotb.test()
async def reset_zeroes(dut):
    """reset_reg gives zero whatever the operands."""
    tb = TB(dut)
    inp, wgt, acc = _operands(tb.env, np.random.default_rng(2))
    got = await tb.apply(inp, wgt, acc, reset=True)
    np.testing.assert_array_equal(got, np.zeros_like(acc))


@cocotb.test()
async def disabled_gives_zero(dut):
    """en_i low (no GEMM uop in the cycle): the output is zero whatever the operands."""
    tb = TB(dut)
    inp, wgt, acc = _operands(tb.env, np.random.default_rng(3))
    got = await tb.apply(inp, wgt, acc, en=False)
    np.testing.assert_array_equal(got, np.zeros_like(acc))
