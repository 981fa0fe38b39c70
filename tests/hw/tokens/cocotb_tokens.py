"""cocotb tests of vta_tokens: counting, simultaneous push and pop, overflow at 255."""

import random

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from tests.hw.tbutil import start_clock_and_reset


class TB:
    """Owns clock and reset; drives push / pop pulses, samples counts after each edge."""

    def __init__(self, dut):
        self.dut = dut

    async def start(self):
        self.dut.push_i.value = 0
        self.dut.pop_i.value = 0
        await start_clock_and_reset(self.dut)

    async def step(self, push: int, pop: int):
        """Apply one cycle of pulses; return (counts, err, err_chan) as seen in that cycle."""
        await FallingEdge(self.dut.clk_i)
        self.dut.push_i.value = push
        self.dut.pop_i.value = pop
        await ReadOnly()
        err = int(self.dut.err_o.value)
        chan = int(self.dut.err_chan_o.value)
        await RisingEdge(self.dut.clk_i)
        await ReadOnly()
        word = self.dut.count_o.value.to_unsigned()
        return [(word >> (8 * c)) & 0xFF for c in range(4)], err, chan


@cocotb.test()
async def random_traffic_matches_counters(dut):
    """Random pushes and pops (pops only when a token is there) track a Python counter."""
    tb = TB(dut)
    await tb.start()
    rng = random.Random(7)
    model = [0, 0, 0, 0]
    for _ in range(400):
        push = pop = 0
        for c in range(4):
            if rng.random() < 0.5:
                push |= 1 << c
            if model[c] and rng.random() < 0.45:
                pop |= 1 << c
        counts, err, _ = await tb.step(push, pop)
        for c in range(4):
            model[c] += ((push >> c) & 1) - ((pop >> c) & 1)
        assert not err
        assert counts == model
        avail = dut.avail_o.value.to_unsigned()
        assert avail == sum(1 << c for c in range(4) if model[c])


@cocotb.test()
async def overflow_on_the_256th_token(dut):
    """255 tokens fit; the 256th push flags the channel and the count stays at 255;
    a push and a pop in the same cycle at 255 is no overflow."""
    tb = TB(dut)
    await tb.start()
    for _ in range(255):
        counts, err, _ = await tb.step(0b0100, 0)
        assert not err
    assert counts[2] == 255
    counts, err, chan = await tb.step(0b0100, 0b0100)
    assert not err and counts[2] == 255
    counts, err, chan = await tb.step(0b0100, 0)
    assert err and chan == 2 and counts[2] == 255
