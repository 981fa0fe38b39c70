"""A Python model of vta_top's surroundings for cocotb: host register port, memory, bus timing.

The memory serves read bursts after a short latency, one beat per cycle, choosing among the
pending ids at random (bursts of one id stay in order), and accepts write bursts with random
back-pressure, acknowledging each one. Signals are sampled in the read-only phase after a
rising edge and driven after the following falling edge, so every handshake seen here is the
one the design sees at the next rising edge.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from tests.hw.tbutil import start_clock_and_reset
from vta.sim.tsim import hwgen


class Soc:
    """Clock, reset, host port and memory around a ``vta_top`` instance."""

    def __init__(self, dut, mem_bytes: int = 1 << 20, seed: int = 0, latency: int = 3):
        self.dut = dut
        self.mem = bytearray(mem_bytes)
        self.rng = random.Random(seed)
        self.latency = latency
        self.pending: list[list[int]] = []      # [ready_cycle, addr, beats_left, id]
        self.write: list[int] | None = None     # [addr, beats_left]
        self.ack_in = -1
        self.cycle = 0
        self.host_queue: list[tuple[int, int, int | None]] = []
        self.host_result: list[int] = []
        self.bursts: list[tuple[int, int, int]] = []  # (addr, len, id) of every read request
        self.next_free = 0x1000

    # ------------------------------------------------------------------ set-up
    async def start(self) -> None:
        d = self.dut
        for name in ("host_req_i", "host_we_i", "host_addr_i", "host_wdata_i", "mem_rd_req_ready_i",
                     "mem_rd_valid_i", "mem_rd_data_i", "mem_rd_id_i", "mem_rd_last_i",
                     "mem_wr_req_ready_i", "mem_wr_ready_i", "mem_wr_ack_i"):
            getattr(d, name).value = 0
        await start_clock_and_reset(d)
        cocotb.start_soon(self._bus())

    async def reset(self) -> None:
        """Pulse rst_ni (the memory model keeps its contents)."""
        self.dut.rst_ni.value = 0
        for _ in range(3):
            await RisingEdge(self.dut.clk_i)
        self.pending.clear()
        self.write = None
        self.dut.rst_ni.value = 1
        await RisingEdge(self.dut.clk_i)

    def alloc(self, nbytes: int, align: int = 64) -> int:
        addr = (self.next_free + align - 1) // align * align
        self.next_free = addr + nbytes
        assert self.next_free <= len(self.mem)
        return addr

    # ------------------------------------------------------------------ host port
    async def write_reg(self, addr: int, value: int) -> None:
        self.host_queue.append((addr, value & 0xFFFFFFFF, 1))
        while self.host_queue:
            await RisingEdge(self.dut.clk_i)

    async def read_reg(self, addr: int) -> int:
        self.host_queue.append((addr, 0, 0))
        n = len(self.host_result)
        while len(self.host_result) == n:
            await RisingEdge(self.dut.clk_i)
        return self.host_result[-1]

    async def run(self, insn_addr: int, count: int, max_cycles: int = 200_000) -> int:
        """Launch and poll CTRL until finish or error; return the final CTRL value."""
        await self.write_reg(hwgen.REG_VAL0, count)
        await self.write_reg(hwgen.REG_PTR0, insn_addr)
        await self.write_reg(hwgen.REG_CTRL, hwgen.CTRL_LAUNCH)
        start = self.cycle
        while self.cycle - start < max_cycles:
            ctrl = await self.read_reg(hwgen.REG_CTRL)
            if ctrl & (hwgen.CTRL_FINISH | hwgen.CTRL_ERROR):
                await self.write_reg(hwgen.REG_CTRL, 0)
                return ctrl
            for _ in range(8):
                await RisingEdge(self.dut.clk_i)
        raise AssertionError(f"no FINISH within {max_cycles} cycles")

    # ------------------------------------------------------------------ the bus, cycle by cycle
    async def _bus(self) -> None:
        d = self.dut
        while True:
            await RisingEdge(d.clk_i)
            await ReadOnly()
            self.cycle += 1
            if int(d.host_rvalid_o.value):
                self.host_result.append(d.host_rdata_o.value.to_unsigned())
            rd_req = int(d.mem_rd_req_valid_o.value)
            if rd_req:
                req = (d.mem_rd_req_addr_o.value.to_unsigned(), d.mem_rd_req_len_o.value.to_unsigned(),
                       d.mem_rd_req_id_o.value.to_unsigned())
            wr_req = int(d.mem_wr_req_valid_o.value) and self.write is None
            if wr_req:
                wreq = (d.mem_wr_req_addr_o.value.to_unsigned(), d.mem_wr_req_len_o.value.to_unsigned())
            wr_beat = int(d.mem_wr_valid_o.value)
            if wr_beat:
                wdata = d.mem_wr_data_o.value.to_unsigned()
                wlast = int(d.mem_wr_last_o.value)
            await FallingEdge(d.clk_i)

            # host: one access per cycle
            if self.host_queue:
                addr, value, we = self.host_queue.pop(0)
                d.host_req_i.value = 1
                d.host_we_i.value = we
                d.host_addr_i.value = addr
                d.host_wdata_i.value = value
            else:
                d.host_req_i.value = 0

            # read requests (always ready): the one seen now is accepted at the next edge
            d.mem_rd_req_ready_i.value = 1
            if rd_req:
                self.pending.append([self.cycle + self.latency, req[0], req[1] + 1, req[2]])
                self.bursts.append(req)
            # read data: one beat of a random ready id
            ready_ids = []
            for p in self.pending:
                if p[0] <= self.cycle and p[3] not in ready_ids:
                    ready_ids.append(p[3])
            if ready_ids and self.rng.random() < 0.85:
                rid = self.rng.choice(ready_ids)
                p = next(p for p in self.pending if p[3] == rid)
                d.mem_rd_valid_i.value = 1
                d.mem_rd_data_i.value = int.from_bytes(self.mem[p[1]:p[1] + 8], "little")
                d.mem_rd_id_i.value = rid
                p[1] += 8
                p[2] -= 1
                d.mem_rd_last_i.value = int(p[2] == 0)
                if p[2] == 0:
                    self.pending.remove(p)
            else:
                d.mem_rd_valid_i.value = 0
                d.mem_rd_last_i.value = 0

            # writes: the request and the beats seen now complete at the next edge
            d.mem_wr_ack_i.value = int(self.ack_in == 0)
            if self.ack_in >= 0:
                self.ack_in -= 1
            req_ready = int(self.write is None and self.ack_in < 0)
            beat_ready = int(self.write is not None and self.rng.random() < 0.8)
            if wr_req and req_ready:
                self.write = [wreq[0], wreq[1] + 1]
            elif wr_beat and beat_ready and self.write is not None:
                self.mem[self.write[0]:self.write[0] + 8] = wdata.to_bytes(8, "little")
                self.write[0] += 8
                self.write[1] -= 1
                if wlast:
                    assert self.write[1] == 0, "mem_wr_last_o before the burst's last beat"
                    self.write = None
                    self.ack_in = 2
            d.mem_wr_req_ready_i.value = req_ready
            d.mem_wr_ready_i.value = beat_ready
