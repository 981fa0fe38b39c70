"""cocotb tests of vta_load: 2-D INP / WGT loads with strides and zero padding, tokens, range errors."""

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, Timer

from tests.hw.tbutil import ReadServer, hw_env, start_clock_and_reset, u
from vta import isa
from vta.isa import MemInsn
from vta.sim.tsim import hwgen


class TB:
    """Owns clock, reset, DRAM, the instruction queue, the g2l token count and the scratchpads.

    Inputs are driven after each falling edge; outputs are sampled 1 ns later, so what is seen
    is what the design does at the next rising edge.
    """

    def __init__(self, dut, seed=0):
        self.dut = dut
        self.env = hw_env()
        self.mem = bytearray(1 << 18)
        self.server = ReadServer(dut, self.mem, clients=2, seed=seed)
        self.queue = []          # (index, insn)
        self.tokens = 0          # g2l tokens available
        self.pushed = []         # indices of instructions that pushed l2g
        self.retired = []
        self.sram = {"inp": {}, "wgt": {}}
        self.errors = []
        self.waiting_cycles = 0

    async def start(self):
        d = self.dut
        for name in ("halt_i", "q_valid_i", "q_data_i", "tok_avail_i", "req_ready_i", "rsp_valid_i", "rsp_data_i"):
            getattr(d, name).value = 0
        await start_clock_and_reset(d)

    def push(self, insn):
        self.queue.append((len(self.retired) + len(self.queue), insn))

    async def run(self, cycles):
        d = self.dut
        sampled = (0, 0, 0)
        for _ in range(cycles):
            await FallingEdge(d.clk_i)
            self.server.drive(sampled)
            if self.queue:
                idx, insn = self.queue[0]
                d.q_valid_i.value = 1
                d.q_data_i.value = (idx << 128) | int.from_bytes(isa.encode(insn, self.env), "little")
            else:
                d.q_valid_i.value = 0
            d.tok_avail_i.value = int(self.tokens > 0)
            await Timer(1, unit="ns")
            sampled = self.server.sample()
            if u(d.tok_pop_o):
                assert self.tokens > 0
                self.tokens -= 1
            if u(d.tok_push_o):
                self.pushed.append(u(d.index_o))
            if u(d.retire_o):
                self.retired.append(self.queue[0][0])
            if u(d.q_ready_o):
                self.queue.pop(0)
            if u(d.err_o):
                self.errors.append((u(d.err_field_o), u(d.err_value_o), u(d.err_limit_o), u(d.err_index_o)))
            if u(d.state_o) == hwgen.STATE_WAIT_TOKEN:
                self.waiting_cycles += 1
            for kind in ("inp", "wgt"):
                if u(getattr(d, f"{kind}_we_o")):
                    self._write(kind, u(getattr(d, f"{kind}_waddr_o")), u(getattr(d, f"{kind}_wmask_o")),
                                u(getattr(d, f"{kind}_wdata_o")))

    def _write(self, kind, addr, mask, data):
        nbytes = self.env.INP_ELEM_BYTES if kind == "inp" else self.env.WGT_ELEM_BYTES
        old = self.sram[kind].get(addr, bytes(nbytes))
        new = bytearray(old)
        raw = data.to_bytes(nbytes, "little")
        for lane in range(nbytes // 8):
            if (mask >> lane) & 1:
                new[8 * lane:8 * lane + 8] = raw[8 * lane:8 * lane + 8]
        self.sram[kind][addr] = bytes(new)


def padded_oracle(dram: np.ndarray, insn: MemInsn) -> dict[int, bytes]:
    """SRAM index -> element bytes of a LOAD, from the DRAM elements (fsim's loop nest)."""
    W = insn.x_pad_0 + insn.x_size + insn.x_pad_1
    H = insn.y_pad_0 + insn.y_size + insn.y_pad_1
    zero = bytes(dram.shape[1])
    out = {}
    for yy in range(H):
        for xx in range(W):
            y, x = yy - insn.y_pad_0, xx - insn.x_pad_0
            inside = 0 <= y < insn.y_size and 0 <= x < insn.x_size
            elem = dram[insn.dram_base + y * insn.x_stride + x].tobytes() if inside else zero
            out[insn.sram_base + yy * W + xx] = elem
    return out


def _place(tb, kind, nelem, rng):
    nbytes = tb.env.INP_ELEM_BYTES if kind == "inp" else tb.env.WGT_ELEM_BYTES
    data = rng.integers(0, 256, (nelem, nbytes), dtype=np.uint8)
    base_elem = 0x1000 // nbytes + 3
    tb.mem[base_elem * nbytes:(base_elem + nelem) * nbytes] = data.tobytes()
    dram = np.zeros((base_elem + nelem, nbytes), dtype=np.uint8)
    dram[base_elem:] = data
    return dram, base_elem


@cocotb.test()
async def padded_strided_loads(dut):
    """INP and WGT loads with all four pads, a row stride larger than the row, and a load of
    only pad rows (y_size 0); every written element matches the padded oracle, nothing else
    is written, and the l2g pushes come in order."""
    tb = TB(dut, seed=1)
    await tb.start()
    rng = np.random.default_rng(8)
    inp_dram, inp_base = _place(tb, "inp", 40, rng)
    loads = [
        MemInsn(memory_type=isa.MEM_INP, sram_base=11, dram_base=inp_base + 2, y_size=3, x_size=4, x_stride=9,
                y_pad_0=2, y_pad_1=1, x_pad_0=1, x_pad_1=3, push_next_dep=1),
        MemInsn(memory_type=isa.MEM_INP, sram_base=200, dram_base=inp_base, y_size=0, x_size=2, x_stride=2,
                y_pad_0=1, y_pad_1=1, x_pad_0=1),
    ]
    for insn in loads:
        tb.push(insn)
    await tb.run(600)
    assert tb.retired == [0, 1] and tb.pushed == [0]
    expected = {}
    for insn in loads:
        expected.update(padded_oracle(inp_dram, insn))
    assert tb.sram["inp"] == expected
    assert tb.server.bursts_ok() and not tb.errors

    wgt_dram, wgt_base = _place(tb, "wgt", 6, rng)
    w = MemInsn(memory_type=isa.MEM_WGT, sram_base=5, dram_base=wgt_base, y_size=2, x_size=2, x_stride=3,
                y_pad_0=1, x_pad_1=1)
    tb.push(w)
    await tb.run(800)
    assert tb.sram["wgt"] == padded_oracle(wgt_dram, w)
    assert tb.server.bursts_ok()


@cocotb.test()
async def waits_for_its_token(dut):
    """A load with pop_next_dep waits (STATE_WAIT_TOKEN) until a g2l token arrives, takes it,
    and an x_size 0 no-op still pops and pushes."""
    tb = TB(dut, seed=2)
    await tb.start()
    tb.push(MemInsn(memory_type=isa.MEM_INP, pop_next_dep=1, push_next_dep=1))
    await tb.run(20)
    assert tb.retired == [] and tb.waiting_cycles >= 15
    tb.tokens = 1
    await tb.run(10)
    assert tb.retired == [0] and tb.pushed == [0] and tb.tokens == 0


@cocotb.test()
async def out_of_range_load_is_an_error(dut):
    """A padded rectangle ending past the buffer raises FIELD_SRAM_END with end and depth."""
    tb = TB(dut, seed=3)
    await tb.start()
    depth = tb.env.INP_BUFF_DEPTH
    tb.push(MemInsn(memory_type=isa.MEM_INP, sram_base=depth - 5, y_size=2, x_size=2, x_stride=2, x_pad_0=1))
    await tb.run(20)
    assert tb.errors[:1] == [(hwgen.FIELD_SRAM_END, depth - 5 + 6, depth, 0)]
    assert tb.sram["inp"] == {} and tb.retired == []
