"""cocotb tests of vta_fetch: burst reads, in-order dispatch to three queues, blocking, errors."""

import random

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from tests.hw.tbutil import ReadServer, hw_env, start_clock_and_reset, u
from vta import isa
from vta.isa import AluInsn, FinishInsn, GemmInsn, MemInsn
from vta.sim.tsim import hwgen

INSN_MASK = (1 << 128) - 1


class TB:
    """Owns clock, reset, the instruction memory and the three queues' ready signals."""

    def __init__(self, dut, seed=0, beat_prob=0.85):
        self.dut = dut
        self.env = hw_env()
        self.mem = bytearray(1 << 16)
        self.server = ReadServer(dut, self.mem, seed=seed, beat_prob=beat_prob)
        self.rng = random.Random(seed)
        self.dispatched = []   # (queue, index, insn word)
        self.errors = []       # (field, value, index)
        self.blocked_cycles = 0
        self.dispatch_cycles = []  # cycle (since launch) of each dispatch

    async def start(self):
        d = self.dut
        for name in ("launch_i", "halt_i", "insn_addr_i", "insn_count_i", "req_ready_i", "rsp_valid_i",
                     "rsp_data_i", "q_ready_i"):
            getattr(d, name).value = 0
        await start_clock_and_reset(d)

    async def run(self, addr, count, cycles=600, ready_prob=0.7):
        d = self.dut
        await FallingEdge(d.clk_i)
        d.insn_addr_i.value = addr
        d.insn_count_i.value = count
        d.launch_i.value = 1
        await FallingEdge(d.clk_i)
        d.launch_i.value = 0
        for cycle in range(cycles):
            await RisingEdge(d.clk_i)
            await ReadOnly()
            req = self.server.sample()
            qv = u(d.q_valid_o)
            data = u(d.q_data_o) if qv else 0
            if int(d.err_o.value):
                self.errors.append((u(d.err_field_o), u(d.err_value_o),
                                    u(d.err_index_o)))
            if u(d.state_o) == hwgen.STATE_BLOCKED:
                self.blocked_cycles += 1
            await FallingEdge(d.clk_i)
            self.server.drive(req)
            ready = sum(1 << q for q in range(3) if self.rng.random() < ready_prob)
            d.q_ready_i.value = ready
            if qv & ready:
                q = qv.bit_length() - 1
                self.dispatched.append((q, data >> 128, data & INSN_MASK))
                self.dispatch_cycles.append(cycle)


def _program(env, rng, n):
    insns = []
    for i in range(n):
        kind = rng.randrange(6)
        if kind == 0:
            insns.append(MemInsn(memory_type=rng.choice([isa.MEM_INP, isa.MEM_WGT]), x_size=rng.randrange(3),
                                 push_next_dep=rng.randrange(2)))
        elif kind == 1:
            insns.append(MemInsn(memory_type=rng.choice([isa.MEM_UOP, isa.MEM_ACC, isa.MEM_ACC_8BIT]),
                                 x_size=rng.randrange(3)))
        elif kind == 2:
            insns.append(MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, x_size=rng.randrange(3)))
        elif kind == 3:
            insns.append(GemmInsn(uop_bgn=rng.randrange(8), uop_end=9, iter_out=i % 7))
        elif kind == 4:
            insns.append(AluInsn(alu_opcode=rng.randrange(5), imm=-i))
        else:
            insns.append(FinishInsn())
    return insns


STAGE_QUEUE = {isa.STAGE_LOAD: 0, isa.STAGE_COMPUTE: 1, isa.STAGE_STORE: 2}


@cocotb.test()
async def dispatches_in_order(dut):
    """37 instructions from a start that is not 128-byte aligned: every one reaches the queue of
    its stage, in program order, with its stream index; bursts respect the 128-byte rule."""
    tb = TB(dut, seed=1)
    await tb.start()
    rng = random.Random(11)
    insns = _program(tb.env, rng, 37)
    addr = 0x1000 + 48
    code = b"".join(isa.encode(i, tb.env) for i in insns)
    tb.mem[addr:addr + len(code)] = code
    await tb.run(addr, len(insns))
    assert not tb.errors
    assert [x[1] for x in tb.dispatched] == list(range(len(insns)))
    for (q, _, word), insn in zip(tb.dispatched, insns, strict=True):
        assert q == STAGE_QUEUE[isa.stage_of(insn)]
        assert word == int.from_bytes(isa.encode(insn, tb.env), "little")
    assert tb.server.bursts_ok()
    assert tb.server.requests[0][1] == 2 * 5 - 1  # 5 instructions up to the first 128-byte boundary
    assert tb.blocked_cycles > 0  # back-pressure was exercised


@cocotb.test()
async def invalid_instructions_stop_fetch(dut):
    """An ALU opcode the configuration lacks (5, REQ, without the option ALU_REQUANT; 6, MOV,
    without ALU_MOV; else 7) at index 3 raises the error with its field and index; 0..2 were
    dispatched."""
    tb = TB(dut, seed=2)
    await tb.start()
    bad = 5 if not tb.env.ALU_REQUANT else (6 if not tb.env.ALU_MOV else 7)
    insns = [FinishInsn(), MemInsn(memory_type=isa.MEM_INP, x_size=1), FinishInsn(), FinishInsn(), FinishInsn()]
    code = bytearray(b"".join(isa.encode(i, tb.env) for i in insns))
    lay = isa.layout(tb.env)
    f = lay.field("alu", "alu_opcode")
    word = int.from_bytes(isa.encode(AluInsn(alu_opcode=0), tb.env), "little") | (bad << f.lo)
    code[48:64] = word.to_bytes(16, "little")
    tb.mem[0x2000:0x2000 + len(code)] = code
    await tb.run(0x2000, len(insns), cycles=200, ready_prob=1.0)
    assert [x[1] for x in tb.dispatched] == [0, 1, 2]
    assert tb.errors[:1] == [(hwgen.FIELD_ALU_OPCODE, bad, 3)]


@cocotb.test()
async def req_dispatched_only_with_its_option(dut):
    """ALU opcode 5 (REQ) reaches the compute queue with the option ALU_REQUANT and is refused
    (field alu_opcode, value 5) without it."""
    tb = TB(dut, seed=3)
    await tb.start()
    lay = isa.layout(tb.env)
    f = lay.field("alu", "alu_opcode")
    word = int.from_bytes(isa.encode(AluInsn(alu_opcode=0, imm=7), tb.env), "little") | (5 << f.lo)
    code = word.to_bytes(16, "little") + isa.encode(FinishInsn(), tb.env)
    tb.mem[0x3000:0x3000 + len(code)] = code
    await tb.run(0x3000, 2, cycles=200, ready_prob=1.0)
    if tb.env.ALU_REQUANT:
        assert not tb.errors
        assert [(q, i, w) for q, i, w in tb.dispatched][:1] == [(1, 0, word)]
    else:
        assert tb.dispatched == []
        assert tb.errors[:1] == [(hwgen.FIELD_ALU_OPCODE, 5, 0)]


@cocotb.test()
async def mov_dispatched_only_with_its_option(dut):
    """ALU opcode 6 (MOV) reaches the compute queue with the option ALU_MOV and is refused (field
    alu_opcode, value 6) without it; the instructions before it are dispatched either way."""
    tb = TB(dut, seed=4)
    await tb.start()
    lay = isa.layout(tb.env)
    f = lay.field("alu", "alu_opcode")
    word = int.from_bytes(isa.encode(AluInsn(alu_opcode=0, use_imm=1, imm=-9), tb.env), "little") | (6 << f.lo)
    code = isa.encode(FinishInsn(), tb.env) + word.to_bytes(16, "little") + isa.encode(FinishInsn(), tb.env)
    tb.mem[0x3800:0x3800 + len(code)] = code
    await tb.run(0x3800, 3, cycles=200, ready_prob=1.0)
    if tb.env.ALU_MOV:
        assert not tb.errors
        assert [(q, i) for q, i, _ in tb.dispatched] == [(1, 0), (1, 1), (1, 2)]
        assert tb.dispatched[1][2] == word
    else:
        assert [(q, i) for q, i, _ in tb.dispatched] == [(1, 0)]
        assert tb.errors[:1] == [(hwgen.FIELD_ALU_OPCODE, 6, 1)]


@cocotb.test()
async def invalid_memory_type_and_flags(dut):
    """LOAD OUT with data, a STORE of INP, a STORE with padding, a load with pop_prev: each an
    error naming its field; a LOAD OUT with x_size 0 is a valid compute no-op."""
    cases = [
        (MemInsn(memory_type=isa.MEM_OUT, x_size=1), hwgen.FIELD_MEMORY_TYPE, isa.MEM_OUT),
        (MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_INP, x_size=1), hwgen.FIELD_MEMORY_TYPE, isa.MEM_INP),
        (MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, x_size=1, x_pad_0=2), hwgen.FIELD_PAD, 2 << 8),
        (MemInsn(memory_type=isa.MEM_WGT, x_size=1, pop_prev_dep=1), hwgen.FIELD_DEP_FLAGS, 1),
    ]
    for n, (bad, field, value) in enumerate(cases):
        tb = TB(dut, seed=3 + n)
        await tb.start()
        insns = [MemInsn(memory_type=isa.MEM_OUT, x_size=0), bad, FinishInsn()]
        code = b"".join(isa.encode(i, tb.env) for i in insns)
        tb.mem[0x3000:0x3000 + len(code)] = code
        await tb.run(0x3000, len(insns), cycles=100, ready_prob=1.0)
        assert [(x[0], x[1]) for x in tb.dispatched] == [(1, 0)]
        assert tb.errors[:1] == [(field, value, 1)], (tb.errors, field, value)


@cocotb.test()
async def streams_at_the_bus_rate(dut):
    """Fetch overlaps reading with dispatching: with a memory that delivers a beat every cycle
    and queues that are always ready, 96 instructions (12 bursts) dispatch at the bus rate.

    Scalar expectation: an instruction is 128 bits, two 64-bit beats, so the stream cannot be
    faster than 2 cycles per instruction; a fetch that drained each burst before requesting the
    next one paid the request latency and the burst again (about 4 cycles per instruction)."""
    tb = TB(dut, seed=9, beat_prob=1.0)
    await tb.start()
    n = 96
    insns = [GemmInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1) for _ in range(n)]
    code = b"".join(isa.encode(i, tb.env) for i in insns)
    tb.mem[0x4000:0x4000 + len(code)] = code
    await tb.run(0x4000, n, cycles=2 * n + 40, ready_prob=1.0)
    assert [x[1] for x in tb.dispatched] == list(range(n))
    beats_per_insn = 128 // 64
    expected = beats_per_insn * 1.0  # cycles per instruction at one beat per cycle
    first, last = tb.dispatch_cycles[0], tb.dispatch_cycles[-1]
    per_insn = (last - first) / (n - 1)
    dut._log.info(f"fetch: {per_insn:.3f} cycles per instruction (first dispatch in cycle {first}); "
                  f"bus bound {expected:.1f}")
    assert per_insn <= expected + 0.05, per_insn
    assert first <= 8, first  # request, memory latency 2, two beats, dispatch
