"""cocotb bench: both RAM views under one random stimulus against a Python model of the RAM.

The model: a write stores the enabled lanes of its row at the clock edge; a read port that is
enabled samples its row at the same edge, after the write (write-first), and holds the value
while it is not enabled. Both views' outputs are compared with the model every cycle."""

from __future__ import annotations

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

from tests.hw.tbutil import u

CYCLES = 3000


@cocotb.test()
async def random_traffic(dut):
    width, depth, lanes, ports = (int(v) for v in os.environ["SRAM_SHAPE"].split(","))
    lane_w = width // lanes
    aw = max(1, (depth - 1).bit_length())
    rng = random.Random(7)
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    dut.we_i.value = 0
    dut.re_i.value = 0
    # The contents are not reset: write every row once, whole, so the model knows them.
    mem = [0] * depth
    for row in range(depth):
        await FallingEdge(dut.clk_i)
        mem[row] = rng.getrandbits(width)
        dut.we_i.value, dut.wmask_i.value, dut.waddr_i.value, dut.wdata_i.value = 1, (1 << lanes) - 1, row, mem[row]
    held = [None] * ports
    await FallingEdge(dut.clk_i)
    for cycle in range(CYCLES):  # one operation per cycle, back to back
        we = rng.random() < 0.6
        # whole rows, single lanes (the load unit's beats) and random masks
        kind = rng.random()
        mask = ((1 << lanes) - 1 if kind < 0.3 else 1 << rng.randrange(lanes) if kind < 0.6
                else rng.getrandbits(lanes))
        waddr, wdata = rng.randrange(depth), rng.getrandbits(width)
        re = rng.getrandbits(ports)
        # reads often hit the row being written, to test write-first
        raddr = [waddr if rng.random() < 0.4 else rng.randrange(depth) for _ in range(ports)]
        dut.we_i.value, dut.wmask_i.value, dut.waddr_i.value, dut.wdata_i.value = int(we), mask, waddr, wdata
        dut.re_i.value = re
        dut.raddr_i.value = sum(a << (p * aw) for p, a in enumerate(raddr))
        if we:
            for lane in range(lanes):
                if mask >> lane & 1:
                    field = ((1 << lane_w) - 1) << (lane * lane_w)
                    mem[waddr] = (mem[waddr] & ~field) | (wdata & field)
        for p in range(ports):
            if re >> p & 1:
                held[p] = mem[raddr[p]]
        await RisingEdge(dut.clk_i)
        await FallingEdge(dut.clk_i)
        sim, syn = u(dut.rdata_sim_o), u(dut.rdata_syn_o)
        for p in range(ports):
            if held[p] is None:
                continue
            got_sim = (sim >> (p * width)) & ((1 << width) - 1)
            got_syn = (syn >> (p * width)) & ((1 << width) - 1)
            assert got_sim == held[p], f"cycle {cycle}: simulation view port {p} read {got_sim:#x}, model {held[p]:#x}"
            assert got_syn == held[p], f"cycle {cycle}: synthesis view port {p} read {got_syn:#x}, model {held[p]:#x}"
