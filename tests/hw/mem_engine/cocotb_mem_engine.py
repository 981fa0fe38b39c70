"""cocotb tests of vta_mem_engine: fixed-priority read arbitration, id routing, write bursts."""

import random

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge, Timer

from tests.hw.tbutil import start_clock_and_reset

N = 5


class TB:
    """Owns clock and reset and drives the client and memory sides of the engine."""

    def __init__(self, dut):
        self.dut = dut

    async def start(self):
        d = self.dut
        for name in ("cl_req_valid_i", "cl_req_addr_i", "cl_req_len_i", "wc_req_valid_i", "wc_req_addr_i",
                     "wc_req_len_i", "wc_valid_i", "wc_data_i", "wc_last_i", "mem_rd_req_ready_i",
                     "mem_rd_valid_i", "mem_rd_data_i", "mem_rd_id_i", "mem_rd_last_i",
                     "mem_wr_req_ready_i", "mem_wr_ready_i", "mem_wr_ack_i"):
            getattr(d, name).value = 0
        await start_clock_and_reset(d)

    def set_requests(self, reqs: dict[int, tuple[int, int]]):
        valid = addr = length = 0
        for c, (a, n) in reqs.items():
            valid |= 1 << c
            addr |= a << (32 * c)
            length |= n << (8 * c)
        self.dut.cl_req_valid_i.value = valid
        self.dut.cl_req_addr_i.value = addr
        self.dut.cl_req_len_i.value = length


@cocotb.test()
async def lowest_client_wins_and_names_the_id(dut):
    """All clients request at once, memory sometimes stalls: requests go out lowest index first,
    each with its client number as id, and only the winner sees ready."""
    tb = TB(dut)
    await tb.start()
    rng = random.Random(1)
    reqs = {c: (0x1000 + 0x80 * c, c + 1) for c in range(N)}
    order = []
    while reqs:
        await FallingEdge(dut.clk_i)
        tb.set_requests(reqs)
        mem_ready = int(rng.random() < 0.6)
        dut.mem_rd_req_ready_i.value = mem_ready
        await Timer(1, unit="ns")
        winner = min(reqs)
        assert int(dut.mem_rd_req_valid_o.value) == 1
        assert dut.mem_rd_req_id_o.value.to_unsigned() == winner
        assert dut.mem_rd_req_addr_o.value.to_unsigned() == reqs[winner][0]
        assert dut.mem_rd_req_len_o.value.to_unsigned() == reqs[winner][1]
        assert dut.cl_req_ready_o.value.to_unsigned() == (mem_ready << winner)
        await RisingEdge(dut.clk_i)
        if mem_ready:
            order.append(winner)
            del reqs[winner]
    assert order == list(range(N))
    await FallingEdge(dut.clk_i)
    tb.set_requests({})
    await Timer(1, unit="ns")
    assert int(dut.mem_rd_req_valid_o.value) == 0


@cocotb.test()
async def responses_routed_by_id(dut):
    """Interleaved beats of different ids reach the client named by the id one cycle later."""
    tb = TB(dut)
    await tb.start()
    rng = random.Random(2)
    sent = []
    for _ in range(40):
        await FallingEdge(dut.clk_i)
        valid = int(rng.random() < 0.8)
        rid, data, last = rng.randrange(N), rng.getrandbits(64), rng.randrange(2)
        dut.mem_rd_valid_i.value = valid
        dut.mem_rd_id_i.value = rid
        dut.mem_rd_data_i.value = data
        dut.mem_rd_last_i.value = last
        sent.append((valid, rid, data, last))
        await RisingEdge(dut.clk_i)
        await ReadOnly()
        valid, rid, data, last = sent[-1]
        assert dut.cl_rsp_valid_o.value.to_unsigned() == (valid << rid)
        if valid:
            assert dut.cl_rsp_data_o.value.to_unsigned() == data
            assert int(dut.cl_rsp_last_o.value) == last
    await FallingEdge(dut.clk_i)
    dut.mem_rd_valid_i.value = 0


@cocotb.test()
async def write_burst_request_beats_ack(dut):
    """A write burst passes request, beats (with back-pressure) and the ack; while its beats are
    being sent no second request goes out, but one is taken in the cycle of the last beat (bursts
    stream back to back) and the ack of the first arrives later, passed to the writer."""
    tb = TB(dut)
    await tb.start()
    d = dut
    beats = [0x1111 * (i + 1) for i in range(4)]
    await FallingEdge(d.clk_i)
    d.wc_req_valid_i.value = 1
    d.wc_req_addr_i.value = 0x2000
    d.wc_req_len_i.value = 3
    d.mem_wr_req_ready_i.value = 1
    await Timer(1, unit="ns")
    assert int(d.mem_wr_req_valid_o.value) and d.mem_wr_req_addr_o.value.to_unsigned() == 0x2000
    assert int(d.wc_req_ready_o.value)
    await RisingEdge(d.clk_i)
    await FallingEdge(d.clk_i)
    d.wc_req_addr_i.value = 0x2080  # the next burst, offered at once
    got = []
    i = 0
    stall = [1, 0, 1, 1, 0, 1, 1, 1]
    k = 0
    second_taken = False
    while i < len(beats):
        await FallingEdge(d.clk_i)
        d.wc_valid_i.value = 1
        d.wc_data_i.value = beats[i]
        d.wc_last_i.value = int(i == len(beats) - 1)
        ready = stall[k % len(stall)]
        k += 1
        d.mem_wr_ready_i.value = ready
        await Timer(1, unit="ns")
        assert int(d.mem_wr_valid_o.value) == 1 and int(d.wc_ready_o.value) == ready
        assert d.mem_wr_strb_o.value.to_unsigned() == 0xFF
        last = ready and i == len(beats) - 1
        # the next request goes out only with the last beat of the open burst
        assert int(d.mem_wr_req_valid_o.value) == int(last)
        assert int(d.wc_req_ready_o.value) == int(last)
        if ready:
            got.append(d.mem_wr_data_o.value.to_unsigned())
            assert int(d.mem_wr_last_o.value) == int(i == len(beats) - 1)
            i += 1
        second_taken = second_taken or last
        await RisingEdge(d.clk_i)
    assert got == beats and second_taken
    await FallingEdge(d.clk_i)
    d.wc_req_valid_i.value = 0
    d.wc_valid_i.value = 0
    d.mem_wr_ack_i.value = 1  # the first burst's ack, while the second is open
    await Timer(1, unit="ns")
    assert int(d.wc_ack_o.value) == 1
    await FallingEdge(d.clk_i)
    d.mem_wr_ack_i.value = 0
    await Timer(1, unit="ns")
    assert int(d.wc_ack_o.value) == 0
