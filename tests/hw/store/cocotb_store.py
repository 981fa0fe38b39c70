"""cocotb tests of vta_store: 2-D stores of truncated accumulators, write bursts, tokens, errors."""

import random

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, Timer

from tests.hw.tbutil import hw_env, pack, start_clock_and_reset, u
from vta import isa
from vta.isa import MemInsn
from vta.sim.tsim import hwgen


class TB:
    """Owns clock, reset, the acc scratchpad (one-cycle reads), DRAM with a write channel that
    stalls at random and acknowledges each burst, the instruction queue and the g2s count.

    ``streaming``: the write channel of tsim's memory instead, always ready: a request is taken
    when no burst is open or with the open burst's last beat, and every burst is acknowledged
    the cycle after its last beat, whatever was requested since."""

    def __init__(self, dut, seed=0, streaming=False):
        self.streaming = streaming
        self.acks = []         # cycles in which an ack is due (streaming)
        self.cycle = 0
        self.beat_cycles = []  # cycle of every write beat
        self.done_cycles = []  # cycle of every retire
        self.dut = dut
        self.env = hw_env()
        self.rng = random.Random(seed)
        lanes = self.env.BATCH * self.env.BLOCK_OUT
        self.acc = np.random.default_rng(seed).integers(-(1 << 31), 1 << 31, (64, lanes))
        self.mem = bytearray(1 << 16)
        self.queue = []
        self.tokens = 0
        self.pushed = []
        self.retired = []
        self.errors = []
        self.bursts = []
        self.write = None      # [addr, beats left]
        self.ack_in = -1
        self.read_addr = None

    async def start(self):
        d = self.dut
        for name in ("halt_i", "q_valid_i", "q_data_i", "tok_avail_i", "acc_rdata_i", "wr_req_ready_i",
                     "wr_ready_i", "wr_ack_i"):
            getattr(d, name).value = 0
        await start_clock_and_reset(d)

    async def run(self, cycles):
        d = self.dut
        for _ in range(cycles):
            await FallingEdge(d.clk_i)
            if self.read_addr is not None:  # the read issued at the last edge returns now
                d.acc_rdata_i.value = pack(self.acc[self.read_addr], 32)
                self.read_addr = None
            if self.queue:
                idx, insn = self.queue[0]
                d.q_valid_i.value = 1
                d.q_data_i.value = (idx << 128) | int.from_bytes(isa.encode(insn, self.env), "little")
            else:
                d.q_valid_i.value = 0
            d.tok_avail_i.value = int(self.tokens > 0)
            self.cycle += 1
            if self.streaming:
                d.wr_ack_i.value = int(self.cycle in self.acks)
                d.wr_ready_i.value = int(self.write is not None)
                await Timer(1, unit="ns")
                last = self.write is not None and self.write[1] == 1 and u(d.wr_valid_o)
                req_ready = int(self.write is None or bool(last))
                beat_ready = int(self.write is not None)
                d.wr_req_ready_i.value = req_ready
            else:
                d.wr_ack_i.value = int(self.ack_in == 0)
                if self.ack_in >= 0:
                    self.ack_in -= 1
                req_ready = int(self.write is None and self.ack_in < 0 and self.rng.random() < 0.7)
                beat_ready = int(self.write is not None and self.rng.random() < 0.7)
                d.wr_req_ready_i.value = req_ready
                d.wr_ready_i.value = beat_ready
            await Timer(1, unit="ns")
            if u(d.acc_re_o):
                self.read_addr = u(d.acc_raddr_o)
            if beat_ready and u(d.wr_valid_o):
                self.mem[self.write[0]:self.write[0] + 8] = u(d.wr_data_o).to_bytes(8, "little")
                self.beat_cycles.append(self.cycle)
                self.write[0] += 8
                self.write[1] -= 1
                assert u(d.wr_last_o) == int(self.write[1] == 0)
                if self.write[1] == 0:
                    self.write = None
                    self.ack_in = 1
                    self.acks.append(self.cycle + 1)
            if req_ready and u(d.wr_req_valid_o):
                assert self.write is None, "write request while a burst is open"
                self.write = [u(d.wr_req_addr_o), u(d.wr_req_len_o) + 1]
                self.bursts.append((self.write[0], self.write[1] - 1))
            if u(d.tok_pop_o):
                assert self.tokens > 0
                self.tokens -= 1
            if u(d.tok_push_o):
                self.pushed.append(u(d.index_o))
            if u(d.retire_o):
                self.retired.append(self.queue[0][0])
                self.done_cycles.append(self.cycle)
            if u(d.q_ready_o):
                self.queue.pop(0)
            if u(d.err_o):
                self.errors.append((u(d.err_field_o), u(d.err_value_o), u(d.err_limit_o), u(d.err_index_o)))

    def oracle(self, insn, out):
        """Expected DRAM bytes: element (y, x) = low OUT_WIDTH bits of acc[sram_base + y*x_size + x]."""
        e = self.env
        for y in range(insn.y_size):
            for x in range(insn.x_size):
                row = self.acc[insn.sram_base + y * insn.x_size + x]
                addr = (insn.dram_base + y * insn.x_stride + x) * e.OUT_ELEM_BYTES
                out[addr:addr + e.OUT_ELEM_BYTES] = pack(row, e.OUT_WIDTH).to_bytes(e.OUT_ELEM_BYTES, "little")


@cocotb.test()
async def strided_store_of_truncated_rows(dut):
    """Two stores (one 3 x 5 with a stride of 7, one crossing 128-byte bursts) write exactly the
    truncated accumulators, in bursts that respect the 128-byte rule; s2g pushes in order."""
    tb = TB(dut, seed=1)
    await tb.start()
    e = tb.env
    stores = [
        MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, sram_base=4, dram_base=0x400 // e.OUT_ELEM_BYTES + 1,
                y_size=3, x_size=5, x_stride=7, pop_prev_dep=1, push_prev_dep=1),
        MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, sram_base=30, dram_base=0x900 // e.OUT_ELEM_BYTES + 3,
                y_size=1, x_size=20, x_stride=20),
    ]
    for i, s in enumerate(stores):
        tb.queue.append((i, s))
    tb.tokens = 1
    await tb.run(1500)
    assert tb.retired == [0, 1] and tb.pushed == [0] and tb.tokens == 0 and not tb.errors
    expected = bytearray(len(tb.mem))
    for s in stores:
        tb.oracle(s, expected)
    assert tb.mem == expected
    assert all(a % 8 == 0 and n < 16 and (a % 128) // 8 + n < 16 for a, n in tb.bursts)
    assert len(tb.bursts) > 4


@cocotb.test()
async def store_range_error_and_noop(dut):
    """x_size 0 is a no-op that still pushes; a source range past the acc buffer is an error."""
    tb = TB(dut, seed=2)
    await tb.start()
    depth = tb.env.ACC_BUFF_DEPTH
    tb.queue.append((0, MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, push_prev_dep=1)))
    tb.queue.append((1, MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, sram_base=depth - 3,
                                y_size=2, x_size=2, x_stride=2)))
    await tb.run(30)
    assert tb.retired == [0] and tb.pushed == [0]
    assert tb.errors[:1] == [(hwgen.FIELD_SRAM_END, depth + 1, depth, 1)]
    assert tb.bursts == []


@cocotb.test()
async def streams_at_the_bus_rate(dut):
    """With tsim's write channel (always ready, acks the cycle after a burst's last beat) a store
    of 4 rows x 64 elements keeps the bus busy: element reads run ahead of the beats and no burst
    waits for the previous ack.

    Scalar expectation: an element is OUT_ELEM_BYTES / 8 beats of the 64-bit bus, one beat per
    cycle; the old store paid an acc read cycle per element and a request and ack per burst."""
    tb = TB(dut, seed=5, streaming=True)
    await tb.start()
    e = tb.env
    rows, cols = 4, 64
    tb.acc = np.random.default_rng(5).integers(-(1 << 31), 1 << 31, (rows * cols, e.BATCH * e.BLOCK_OUT))
    st = MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, sram_base=0,
                 dram_base=0x1000 // e.OUT_ELEM_BYTES, y_size=rows, x_size=cols, x_stride=cols + 8)
    tb.queue.append((0, st))
    beats_per_elem = e.OUT_ELEM_BYTES // 8
    await tb.run(rows * cols * beats_per_elem + 60)
    assert tb.retired == [0] and not tb.errors
    expected = bytearray(len(tb.mem))
    tb.oracle(st, expected)
    assert tb.mem == expected
    n = rows * cols
    span = tb.beat_cycles[-1] - tb.beat_cycles[0] + 1
    per_elem = span / n
    dut._log.info(f"store: {per_elem:.3f} cycles per element over {n} elements "
                  f"({len(tb.bursts)} bursts); bus bound {beats_per_elem}")
    assert per_elem <= beats_per_elem + 0.05, per_elem
    # done: the last beat, its ack a cycle later, then retire
    assert tb.done_cycles[0] - tb.beat_cycles[-1] <= 4
