"""cocotb tests of vta_insn_seq (both token channels): the take-and-decode / execute / retire
sequence and its cycle counts, token waits and pushes, halt_i, and an error halting the sequencer."""

import itertools

import cocotb
from cocotb.triggers import FallingEdge, RisingEdge, Timer

from tests.hw.tbutil import hw_env, start_clock_and_reset, u
from vta import isa
from vta.sim import hwgen


class TB:
    """Owns clock, reset, the instruction queue, the two token channels and a model unit.

    Each queued instruction comes with what the unit does with it: ``("done", 0)`` done in its
    decode cycle, ``("exec", n)`` done in its n-th execute cycle, ``("err", 0)`` an error in the
    decode cycle, ``("err", n)`` an error in the n-th execute cycle. The queue, tokens and halt
    are driven after each falling edge; 1 ns later the model unit answers decode_o / exec_o
    (combinational on those inputs, as the real units' done and error are) and 1 ns after that
    the outputs are sampled; every cycle is recorded in ``self.trace``.
    """

    def __init__(self, dut):
        self.dut = dut
        self.env = hw_env()
        self.queue = []            # (index, insn, behaviour)
        self.tokens = [0, 0]       # available on [prev, next]
        self.halt = 0
        self.exec_cycles = 0       # execute cycles of the current instruction so far
        self.trace = []            # per cycle: dict of the sampled outputs

    async def start(self):
        self.idle_inputs()
        await start_clock_and_reset(self.dut)

    def idle_inputs(self):
        for name in ("halt_i", "q_valid_i", "q_data_i", "tok_avail_i", "done_i", "err_i"):
            getattr(self.dut, name).value = 0

    async def reset(self):
        """Reset the running design (the clock keeps going) and forget the trace."""
        d = self.dut
        await FallingEdge(d.clk_i)
        self.idle_inputs()
        d.rst_ni.value = 0
        for _ in range(2):
            await RisingEdge(d.clk_i)
        d.rst_ni.value = 1
        self.trace = []

    def push(self, index, insn, behaviour=("done", 0)):
        self.queue.append((index, insn, behaviour))

    async def run(self, cycles):
        d = self.dut
        for _ in range(cycles):
            await FallingEdge(d.clk_i)
            d.halt_i.value = self.halt
            if self.queue:
                idx, insn, _ = self.queue[0]
                d.q_valid_i.value = 1
                d.q_data_i.value = (idx << 128) | int.from_bytes(isa.encode(insn, self.env), "little")
            else:
                d.q_valid_i.value = 0
            d.tok_avail_i.value = (int(self.tokens[1] > 0) << 1) | int(self.tokens[0] > 0)
            d.done_i.value = 0
            d.err_i.value = 0
            await Timer(1, unit="ns")
            done = err = 0
            decode, exec_ = u(d.decode_o), u(d.exec_o)
            if decode or exec_:
                kind, n = self.queue[0][2]
                self.exec_cycles = 0 if decode else self.exec_cycles + 1
                step = 0 if decode else self.exec_cycles
                done = int(kind in ("done", "exec") and step == n)
                err = int(kind == "err" and step == n)
            d.done_i.value = done
            d.err_i.value = err
            await Timer(1, unit="ns")
            row = {name: u(getattr(d, name)) for name in
                   ("q_ready_o", "tok_pop_o", "tok_push_o", "decode_o", "start_o", "exec_o", "err_o",
                    "state_o", "index_o", "insn_index_o", "retire_o")}
            self.trace.append(row)
            for c in range(2):
                if (row["tok_pop_o"] >> c) & 1:
                    assert self.tokens[c] > 0, f"pop from empty channel {c}"
                    self.tokens[c] -= 1
            if row["q_ready_o"]:
                self.queue.pop(0)

    def cycles_where(self, key):
        return [t for t, row in enumerate(self.trace) if row[key]]


@cocotb.test()
async def noop_one_cycle_exec_adds_its_own(dut):
    """Back-to-back no-ops retire every cycle: each is taken, decoded and retired in one cycle
    (the next one is at the queue head the cycle after). An instruction that the unit executes
    for n cycles retires in its n-th execute cycle, n cycles later than a no-op would; start_o
    only for it, in its decode cycle."""
    tb = TB(dut)
    await tb.start()
    for i in range(3):
        tb.push(i, isa.FinishInsn())
    tb.push(3, isa.FinishInsn(), ("exec", 5))
    tb.push(4, isa.FinishInsn())
    await tb.run(40)
    retires = tb.cycles_where("retire_o")
    assert len(retires) == 5
    assert [b - a for a, b in itertools.pairwise(retires)] == [1, 1, 1 + 5, 1]
    assert tb.cycles_where("q_ready_o") == retires
    starts = tb.cycles_where("start_o")
    assert len(starts) == 1 and tb.trace[starts[0]]["decode_o"]
    assert len(tb.cycles_where("exec_o")) == 5
    assert [tb.trace[t]["insn_index_o"] for t in retires] == [0, 1, 2, 3, 4]
    assert not tb.cycles_where("err_o")
    assert tb.trace[-1]["state_o"] == hwgen.STATE_IDLE


@cocotb.test()
async def waits_for_both_tokens_and_pushes_its_flags(dut):
    """An instruction that pops prev and next waits (STATE_WAIT_TOKEN, nothing popped) until
    both channels hold a token, then pops both in one cycle; it pushes exactly its push flags."""
    tb = TB(dut)
    await tb.start()
    tb.push(7, isa.FinishInsn(pop_prev_dep=1, pop_next_dep=1, push_next_dep=1))
    tb.push(8, isa.FinishInsn(pop_next_dep=1, push_prev_dep=1, push_next_dep=1))
    tb.tokens = [1, 0]
    await tb.run(6)
    assert not tb.cycles_where("tok_pop_o") and not tb.cycles_where("decode_o")
    assert all(row["state_o"] == hwgen.STATE_WAIT_TOKEN and row["index_o"] == 7 for row in tb.trace)
    tb.tokens[1] = 1
    await tb.run(10)
    pops = tb.cycles_where("tok_pop_o")
    assert len(pops) == 1 and tb.trace[pops[0]]["tok_pop_o"] == 0b11
    assert tb.tokens == [0, 0]
    # the second instruction now waits for a next token
    assert tb.trace[-1]["state_o"] == hwgen.STATE_WAIT_TOKEN and tb.trace[-1]["index_o"] == 8
    tb.tokens[1] = 1
    await tb.run(6)
    retires = tb.cycles_where("retire_o")
    assert [tb.trace[t]["tok_push_o"] for t in retires] == [0b10, 0b11]
    assert tb.cycles_where("tok_push_o") == retires
    assert tb.tokens == [0, 0]


@cocotb.test()
async def halt_takes_no_new_instruction(dut):
    """With halt_i the head is not taken (no pop, no decode); the one running still retires."""
    tb = TB(dut)
    await tb.start()
    tb.push(0, isa.FinishInsn(), ("exec", 4))
    tb.push(1, isa.FinishInsn(pop_prev_dep=1))
    tb.tokens = [1, 0]
    await tb.run(2)            # taken, decoding
    tb.halt = 1
    await tb.run(12)
    assert len(tb.cycles_where("retire_o")) == 1
    assert len(tb.cycles_where("decode_o")) == 1
    assert tb.tokens == [1, 0] and tb.queue[0][0] == 1
    tb.halt = 0
    await tb.run(5)
    assert len(tb.cycles_where("retire_o")) == 2 and tb.tokens == [0, 0]


@cocotb.test()
async def error_halts_until_reset(dut):
    """err_i in decode or in execute: err_o for one cycle, no retire, no push, state IDLE, the
    queue head stays; after a reset the sequencer runs again."""
    tb = TB(dut)
    await tb.start()
    for when in (0, 3):
        await tb.reset()
        tb.queue = []
        tb.push(5, isa.FinishInsn(push_prev_dep=1, push_next_dep=1), ("err", when))
        tb.push(6, isa.FinishInsn())
        await tb.run(20)
        errs = tb.cycles_where("err_o")
        assert len(errs) == 1
        assert tb.trace[errs[0]]["decode_o" if when == 0 else "exec_o"]
        assert len(tb.cycles_where("start_o")) == (0 if when == 0 else 1)
        assert not tb.cycles_where("retire_o") and not tb.cycles_where("q_ready_o")
        assert not tb.cycles_where("tok_push_o")
        assert all(row["state_o"] == hwgen.STATE_IDLE for row in tb.trace[errs[0] + 1:])
        assert all(row["index_o"] == 5 for row in tb.trace[errs[0]:])
        assert len(tb.queue) == 2
    await tb.reset()
    tb.queue = [(5, isa.FinishInsn(push_prev_dep=1), ("done", 0)), (6, isa.FinishInsn(), ("done", 0))]
    await tb.run(12)
    retires = tb.cycles_where("retire_o")
    assert [tb.trace[t]["insn_index_o"] for t in retires] == [5, 6] and not tb.queue
