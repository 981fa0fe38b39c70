"""cocotb tests of the whole core (vta_top) against NumPy oracles written in the test.

Each test writes data, micro-ops and an instruction stream into the memory model, launches the
core through the host registers, and checks DRAM results, counters and error registers.
"""

import os

import cocotb
import numpy as np

from tests.hw.soc import Soc
from tests.hw.tbutil import hw_env, pack, unpack, wrap
from vta import isa
from vta.isa import AluInsn, FinishInsn, GemmInsn, MemInsn, Uop
from vta.sim.tsim import hwgen


class TB:
    """The core with its memory model; helpers to place tensors and programs in memory."""

    def __init__(self, dut, seed=0):
        self.dut = dut
        self.env = hw_env()
        self.soc = Soc(dut, seed=seed)

    async def start(self):
        await self.soc.start()

    def put(self, elems: np.ndarray, elem_bytes: int, bits: int) -> int:
        """Place rows of ``elems`` (one element each) as ``bits``-wide lanes packed LSB first,
        at an address aligned to the element size."""
        data = b"".join(pack(e, bits).to_bytes(elem_bytes, "little") for e in elems)
        align = elem_bytes
        addr = self.soc.alloc(len(data), align)
        self.soc.mem[addr:addr + len(data)] = data
        return addr

    def get(self, addr: int, nbytes: int) -> bytes:
        return bytes(self.soc.mem[addr:addr + nbytes])

    def get_out(self, addr: int, count: int) -> np.ndarray:
        """``count`` OUT elements at ``addr`` as signed OUT_WIDTH lanes, shape (count, lanes)."""
        e = self.env
        raw = self.get(addr, count * e.OUT_ELEM_BYTES)
        lanes = e.BATCH * e.BLOCK_OUT
        return np.stack([unpack(int.from_bytes(raw[i * e.OUT_ELEM_BYTES:(i + 1) * e.OUT_ELEM_BYTES], "little"),
                                e.OUT_WIDTH, lanes) for i in range(count)])

    def put_uops(self, uops, offset_words: int = 0) -> int:
        """Place uops so that the first one sits ``offset_words`` 4-byte words after a 64-byte line."""
        words = np.array([isa.encode_uop(u, self.env) for u in uops], dtype=np.uint32)
        base = self.soc.alloc(len(words) * 4 + 64, 64) + 4 * offset_words
        self.soc.mem[base:base + 4 * len(words)] = words.tobytes()
        return base

    def put_program(self, insns) -> tuple[int, int]:
        code = b"".join(isa.encode(i, self.env) for i in insns)
        addr = self.soc.alloc(len(code), 64)
        self.soc.mem[addr:addr + len(code)] = code
        return addr, len(insns)

    async def run(self, insns, **kw) -> int:
        addr, n = self.put_program(insns)
        return await self.soc.run(addr, n, **kw)

    async def reg(self, name: str) -> int:
        return await self.soc.read_reg(hwgen.REGISTERS[name])


def _sint(rng, shape, bits=8):
    return rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), shape).astype(np.int64)


@cocotb.test()
async def gemm_alu_store_with_padding(dut):
    """Padded INP load, WGT load, uops from a mid-beat address, reset GEMM, two-uop GEMM over a
    loop, ALU with immediates and a tensor operand, clipping, STORE with a row stride."""
    tb = TB(dut, seed=1)
    await tb.start()
    env = tb.env
    assert env.ACC_WIDTH == 32
    rng = np.random.default_rng(5)
    B, BI, BO = env.BATCH, env.BLOCK_IN, env.BLOCK_OUT
    n = 3                                        # data elements per row
    x = _sint(rng, (2, n, B, BI), env.INP_WIDTH)  # two rows of inputs
    w = _sint(rng, (2, BO, BI), env.WGT_WIDTH)
    x_addr = tb.put(x.reshape(2 * n, B * BI), env.INP_ELEM_BYTES, env.INP_WIDTH)
    w_addr = tb.put(w.reshape(2, BO * BI), env.WGT_ELEM_BYTES, env.WGT_WIDTH)
    # LOAD INP: 2 rows of 3, x_pad 1/1, y_pad 1/0, source stride 3 -> a 5 x 3 rectangle
    W_, H_ = 1 + n + 1, 1 + 2
    inp_base = 7
    # padded rectangle as the oracle sees it
    rect = np.zeros((H_, W_, B, BI), dtype=np.int64)
    rect[1:, 1:1 + n] = x
    flat = rect.reshape(H_ * W_, B, BI)
    rows = H_ * W_                               # 15 acc rows, one per inp element
    # uops: dst i, src i (+ inp_base), wgt 0 / 1 alternate via two uops per iteration
    uops = [Uop(0, inp_base, 3), Uop(0, inp_base, 4), Uop(0, 0, 0), Uop(0, 1, 0)]
    uop_addr = tb.put_uops(uops, offset_words=1)  # starts in the high half of a beat
    out_addr = tb.soc.alloc(rows * 2 * env.OUT_ELEM_BYTES, 64)
    prog = [
        MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_INP, sram_base=inp_base,
                dram_base=x_addr // env.INP_ELEM_BYTES, y_size=2, x_size=n, x_stride=n,
                y_pad_0=1, y_pad_1=0, x_pad_0=1, x_pad_1=1),
        MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_WGT, sram_base=3,
                dram_base=w_addr // env.WGT_ELEM_BYTES, y_size=1, x_size=2, x_stride=2, push_next_dep=1),
        MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, sram_base=5,
                dram_base=uop_addr // 4, y_size=1, x_size=4, x_stride=4, pop_prev_dep=1),
        # reset acc rows 0..14 with uop 7 (dst 0) over iter_out
        GemmInsn(reset_reg=1, uop_bgn=7, uop_end=8, iter_out=rows, iter_in=1, dst_factor_out=1),
        # acc[i] += inp[7+i] . wgt[3]^T + inp[7+i] . wgt[4]^T  (uops 5 and 6)
        GemmInsn(uop_bgn=5, uop_end=7, iter_out=rows, iter_in=1, dst_factor_out=1, src_factor_out=1),
        # ALU: acc[i] = acc[i] >> 2 (imm), then acc[i] += acc[i+1] (tensor) for i < rows-1,
        # then clip to [-128, 127] and MUL row 0 by -1
        AluInsn(uop_bgn=7, uop_end=8, iter_out=rows, iter_in=1, dst_factor_out=1, src_factor_out=1,
                alu_opcode=isa.ALU_SHR, use_imm=1, imm=2),
        AluInsn(uop_bgn=8, uop_end=9, iter_out=1, iter_in=rows - 1, dst_factor_in=1, src_factor_in=1,
                alu_opcode=isa.ALU_ADD, use_imm=0),
        AluInsn(uop_bgn=7, uop_end=8, iter_out=rows, iter_in=1, dst_factor_out=1,
                alu_opcode=isa.ALU_MIN, use_imm=1, imm=127),
        AluInsn(uop_bgn=7, uop_end=8, iter_out=rows, iter_in=1, dst_factor_out=1,
                alu_opcode=isa.ALU_MAX, use_imm=1, imm=-128),
        AluInsn(uop_bgn=7, uop_end=8, iter_out=1, iter_in=1, dst_factor_out=1,
                alu_opcode=isa.ALU_MUL, use_imm=1, imm=-1, push_next_dep=1),
        # store rows as 3 rows of 5 with a destination stride of 10 elements
        MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, sram_base=0,
                dram_base=out_addr // env.OUT_ELEM_BYTES, y_size=3, x_size=5, x_stride=10,
                pop_prev_dep=1, push_prev_dep=1),
        MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, pop_next_dep=1),
        FinishInsn(),
    ]
    # the uops land at 5..8: 7 is Uop(0, 0, 0) and 8 is Uop(0, 1, 0)
    ctrl = await tb.run(prog)
    assert ctrl == hwgen.CTRL_FINISH, hex(ctrl)

    # oracle
    acc = np.zeros((rows, B, BO), dtype=np.int64)
    for i in range(rows):
        for wi in (0, 1):
            acc[i] += flat[i].astype(np.int64) @ w[wi].astype(np.int64).T
    acc = wrap(acc, 32)
    acc = acc >> 2
    for i in range(rows - 1):
        acc[i] = wrap(acc[i] + acc[i + 1], 32)
    acc = np.clip(acc, -128, 127)
    acc[0] = -acc[0]
    got = tb.get_out(out_addr, rows * 2).reshape(3, 10, B, BO)[:, :5].reshape(rows, B, BO)
    np.testing.assert_array_equal(got, wrap(acc, env.OUT_WIDTH))
    assert await tb.reg("GEMM_UOPS") == 2 * rows
    assert await tb.reg("ALU_UOPS") == rows + (rows - 1) + rows + rows + 1
    assert await tb.reg("RETIRED_COMPUTE") == 10
    assert await tb.reg("RETIRED_LOAD") == 2 and await tb.reg("RETIRED_STORE") == 1
    assert await tb.reg("UCNT0") == rows + 2 * rows + (rows + (rows - 1) + rows + rows + 1)
    for reqs in tb.soc.bursts:
        addr, ln, _ = reqs
        assert addr % 8 == 0 and ln < 16 and (addr % 128) // 8 + ln < 16


@cocotb.test()
async def acc_loads_and_store(dut):
    """LOAD ACC and LOAD ACC_8BIT (sign-extended), then STORE the low 8 bits of each lane."""
    tb = TB(dut, seed=2)
    await tb.start()
    env = tb.env
    rng = np.random.default_rng(6)
    L = env.BATCH * env.BLOCK_OUT
    a32 = rng.integers(-(1 << 31), 1 << 31, (4, L)).astype(np.int32)
    a8 = _sint(rng, (3, L))
    a32_addr = tb.put(a32, env.ACC_ELEM_BYTES, 32)
    a8_addr = tb.put(a8, env.ACC_8BIT_ELEM_BYTES, 8)
    out_addr = tb.soc.alloc(8 * env.OUT_ELEM_BYTES, 64)
    prog = [
        MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_ACC, sram_base=10,
                dram_base=a32_addr // env.ACC_ELEM_BYTES, y_size=1, x_size=4, x_stride=4),
        MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_ACC_8BIT, sram_base=14,
                dram_base=a8_addr // env.ACC_8BIT_ELEM_BYTES, y_size=1, x_size=3, x_stride=3,
                x_pad_1=1, push_next_dep=1),
        MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, sram_base=10,
                dram_base=out_addr // env.OUT_ELEM_BYTES, y_size=1, x_size=8, x_stride=8,
                pop_prev_dep=1, push_prev_dep=1),
        MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, pop_next_dep=1),
        FinishInsn(),
    ]
    ctrl = await tb.run(prog)
    assert ctrl == hwgen.CTRL_FINISH, hex(ctrl)
    expected = np.concatenate([a32.astype(np.int64), a8.astype(np.int64), np.zeros((1, L), np.int64)])
    np.testing.assert_array_equal(tb.get_out(out_addr, 8), wrap(expected, env.OUT_WIDTH))


def _alu_scalar(op: int, a: int, b: int) -> int:
    """DESIGN.md's ALU semantics on one 32-bit lane, written for this test."""
    def s32(x):
        x &= 0xFFFFFFFF
        return x - (1 << 32) if x >> 31 else x

    if op == isa.ALU_MIN:
        return min(a, b)
    if op == isa.ALU_MAX:
        return max(a, b)
    if op == isa.ALU_ADD:
        return s32(a + b)
    if op == isa.ALU_MUL:
        return s32(a * b)
    if b >= 0:  # SHR
        return a >> (b & 31)
    return s32(a << ((-b) & 31))


def _alu_chain_model(acc, prog, stale: bool):
    """Run ALU instructions ``prog`` ((op, use_imm, imm), one pass over ``CHAIN``) on the rows of
    ``acc`` (lists of lanes) one uop after the other. ``stale``: a broken core whose reads miss the
    write of the uop just before (the model of the bug the test guards against)."""
    acc = [list(r) for r in acc]
    for op, use_imm, imm in prog:
        before = None  # (row, old lanes) of the previous uop's write
        for dst, src in CHAIN:
            def read(row):
                return before[1] if stale and before is not None and before[0] == row else acc[row]
            a, b = read(dst), read(src)
            old = list(acc[dst])
            acc[dst] = [_alu_scalar(op, x, imm if use_imm else y) for x, y in zip(a, b, strict=True)]
            before = (dst, old)
    return acc


#: (dst, src) rows of the ALU chain: every uop's src is the row the uop before wrote (read on
#: acc port 1), and some also read and write that row as dst (port 0).
CHAIN = [(1, 0), (2, 1), (3, 2), (3, 3), (3, 3), (4, 3), (4, 4), (0, 4), (0, 0), (5, 0), (6, 5), (6, 6)]


@cocotb.test()
async def alu_chain_reads_the_previous_write(dut):
    """A tensor ALU issues a uop every cycle, so each uop's dst and src reads (S1) happen in the
    cycle the uop before writes (S2): the chain where each uop's src (and sometimes dst) is the
    row the previous uop wrote matches a scalar model run one uop after the other, for every
    opcode. The test first checks that a core with stale reads would give other outputs."""
    tb = TB(dut, seed=7)
    await tb.start()
    env = tb.env
    rng = np.random.default_rng(11)
    L = env.BATCH * env.BLOCK_OUT
    rows = 8
    init = rng.integers(-(1 << 12), 1 << 12, (rows, L)).astype(np.int64)
    init[:, ::3] = rng.integers(-4, 8, (rows, (L + 2) // 3))  # small values: SHR / MUL operands
    prog_ops = [(isa.ALU_ADD, 0, 0), (isa.ALU_MUL, 0, 0), (isa.ALU_ADD, 1, -7), (isa.ALU_MAX, 0, 0),
                (isa.ALU_ADD, 0, 0), (isa.ALU_SHR, 0, 0), (isa.ALU_MIN, 0, 0), (isa.ALU_ADD, 0, 0)]
    acc0 = [[int(v) for v in r] for r in init]
    expected = np.array(_alu_chain_model(acc0, prog_ops, stale=False), np.int64)
    stale = np.array(_alu_chain_model(acc0, prog_ops, stale=True), np.int64)
    assert not np.array_equal(wrap(expected, env.OUT_WIDTH), wrap(stale, env.OUT_WIDTH))

    acc_addr = tb.put(init.astype(np.int32), env.ACC_ELEM_BYTES, 32)
    uop_addr = tb.put_uops([Uop(d, s, 0) for d, s in CHAIN])
    out_addr = tb.soc.alloc(rows * env.OUT_ELEM_BYTES, 64)
    prog = [
        MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_ACC, sram_base=0,
                dram_base=acc_addr // env.ACC_ELEM_BYTES, y_size=1, x_size=rows, x_stride=rows),
        MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, sram_base=0, dram_base=uop_addr // 4,
                y_size=1, x_size=len(CHAIN), x_stride=len(CHAIN)),
    ]
    for k, (op, use_imm, imm) in enumerate(prog_ops):
        prog.append(AluInsn(uop_bgn=0, uop_end=len(CHAIN), iter_out=1, iter_in=1, alu_opcode=op,
                            use_imm=use_imm, imm=imm, push_next_dep=int(k == len(prog_ops) - 1)))
    prog += [
        MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, sram_base=0,
                dram_base=out_addr // env.OUT_ELEM_BYTES, y_size=1, x_size=rows, x_stride=rows,
                pop_prev_dep=1, push_prev_dep=1),
        MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, pop_next_dep=1),
        FinishInsn(),
    ]
    ctrl = await tb.run(prog)
    assert ctrl == hwgen.CTRL_FINISH, hex(ctrl)
    assert await tb.reg("ALU_UOPS") == len(CHAIN) * len(prog_ops)
    np.testing.assert_array_equal(tb.get_out(out_addr, rows), wrap(expected, env.OUT_WIDTH))


@cocotb.test()
async def errors_stop_the_core(dut):
    """Out-of-range SRAM index, invalid opcode, token overflow and a deadlock (watchdog) each stop
    the core with CTRL = finish | error and the documented STATUS, index and value."""
    tb = TB(dut, seed=3)
    await tb.start()
    env = tb.env
    uop_addr = tb.put_uops([Uop(env.ACC_BUFF_DEPTH - 2, 0, 0)])
    # 1. GEMM reset row depth-2 + 1*2 = depth: out of range at instruction 1
    prog = [MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, sram_base=0,
                    dram_base=uop_addr // 4, y_size=1, x_size=1, x_stride=1),
            GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=3, iter_in=1, dst_factor_out=1),
            FinishInsn()]
    ctrl = await tb.run(prog)
    assert ctrl == hwgen.CTRL_FINISH | hwgen.CTRL_ERROR, hex(ctrl)
    status = await tb.reg("STATUS")
    assert status & 0xFF == hwgen.ERR_SRAM_INDEX
    assert (status >> 8) & 0xFF == hwgen.FIELD_ACC_INDEX
    assert (status >> 16) & 0xF == hwgen.UNIT_COMPUTE
    assert await tb.reg("ERR_INSN") == 1
    assert await tb.reg("ERR_VALUE") == env.ACC_BUFF_DEPTH
    assert await tb.reg("ERR_LIMIT") == env.ACC_BUFF_DEPTH

    # 2. invalid opcode 6 at index 1 (encoded by patching a FINISH) after a load no-op (not a
    # FINISH: fetch reads ahead, so whether an error after a FINISH is seen depends on timing)
    await tb.soc.reset()
    addr, n = tb.put_program([MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_INP), FinishInsn()])
    tb.soc.mem[addr + 16] = 6
    ctrl = await tb.soc.run(addr, n)
    assert ctrl & hwgen.CTRL_ERROR
    status = await tb.reg("STATUS")
    assert status & 0xFF == hwgen.ERR_INVALID_INSN and (status >> 8) & 0xFF == hwgen.FIELD_OPCODE
    assert await tb.reg("ERR_INSN") == 1 and await tb.reg("ERR_VALUE") == 6

    # 3. 256 load no-ops pushing l2g with nobody popping: overflow at index 255 (the FINISH waits
    # for an s2g token that never comes, so it cannot retire first however fast fetch runs)
    await tb.soc.reset()
    prog = [MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_INP, push_next_dep=1)] * 256 + [
        FinishInsn(pop_next_dep=1)]
    ctrl = await tb.run(prog)
    assert ctrl & hwgen.CTRL_ERROR
    status = await tb.reg("STATUS")
    assert status & 0xFF == hwgen.ERR_TOKEN_OVERFLOW
    assert await tb.reg("ERR_VALUE") == hwgen.CHAN_L2G
    assert await tb.reg("ERR_INSN") == 255
    assert await tb.reg("TOKENS_L2G") == 255

    # 4. compute pops l2g that never comes: the watchdog fires with compute waiting on a token
    await tb.soc.reset()
    await tb.soc.write_reg(hwgen.REG_WATCHDOG, 300)
    prog = [MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, pop_prev_dep=1), FinishInsn()]
    ctrl = await tb.run(prog)
    assert ctrl & hwgen.CTRL_ERROR
    assert await tb.reg("STATUS") & 0xFF == hwgen.ERR_WATCHDOG
    state = await tb.reg("UNIT_STATE")
    assert (state >> 8) & 0xF == hwgen.STATE_WAIT_TOKEN
    assert await tb.reg("INDEX_COMPUTE") == 0
    assert await tb.reg("FILL_COMPUTE") == 2


@cocotb.test(skip=os.environ.get("VTA_HW_CONFIG", "vta_config.json") != "vta_config.json")
async def throughput_figures(dut):
    """Long GEMM and ALU loops retire every uop (checked through the counters); the cycles they
    take are logged as figures (never asserted)."""
    tb = TB(dut, seed=4)
    await tb.start()
    env = tb.env
    uop_addr = tb.put_uops([Uop(i % 64, i % 64, i % 16) for i in range(64)])
    load = MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, sram_base=0, dram_base=uop_addr // 4,
                   y_size=1, x_size=64, x_stride=64)
    n_iter = 16
    cases = {
        "gemm": GemmInsn(uop_bgn=0, uop_end=64, iter_out=n_iter, iter_in=1),
        "alu_imm": AluInsn(uop_bgn=0, uop_end=64, iter_out=n_iter, iter_in=1, alu_opcode=isa.ALU_ADD,
                           use_imm=1, imm=1),
        "alu_tensor": AluInsn(uop_bgn=0, uop_end=64, iter_out=n_iter, iter_in=1, alu_opcode=isa.ALU_ADD),
    }
    base = None
    for name, insn in [("empty", None)] + list(cases.items()):
        prog = [load] + ([insn] if insn is not None else []) + [FinishInsn()]
        await tb.run(prog)
        cycles = await tb.reg("ECNT0")
        if insn is None:
            base = cycles
            continue
        uops = 64 * n_iter
        counter = "GEMM_UOPS" if name == "gemm" else "ALU_UOPS"
        assert await tb.reg(counter) == uops
        dut._log.info("figure %s: %d uops in %d cycles beyond the empty program (%.2f cycles/uop)",
                      name, uops, cycles - base, (cycles - base) / uops)

    # 128 compute no-ops: the per-instruction cost of fetch, dispatch and a unit's bookkeeping
    await tb.run([MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP)] * 128 + [FinishInsn()])
    assert await tb.reg("RETIRED_COMPUTE") == 129
    dut._log.info("figure no-op: 129 instructions in %d cycles", await tb.reg("ECNT0"))

    # a 16 KiB weight load and a store of 128 OUT elements: bus efficiency (the memory model
    # delivers a beat in about 85% of cycles after 3 cycles of latency)
    nw = (1 << 14) // env.WGT_ELEM_BYTES
    w_addr = tb.soc.alloc(nw * env.WGT_ELEM_BYTES, env.WGT_ELEM_BYTES)
    out_addr = tb.soc.alloc(128 * env.OUT_ELEM_BYTES, 64)
    wgt = MemInsn(memory_type=isa.MEM_WGT, dram_base=w_addr // env.WGT_ELEM_BYTES, y_size=1,
                  x_size=nw, x_stride=nw, push_next_dep=1)
    store = MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, dram_base=out_addr // env.OUT_ELEM_BYTES,
                    y_size=1, x_size=128, x_stride=128, pop_prev_dep=1, push_prev_dep=1)
    uop_noop = MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP)
    for name, prog, beats in [
        ("wgt load", [wgt, isa.replace(uop_noop, pop_prev_dep=1), FinishInsn()], nw * env.WGT_ELEM_BYTES // 8),
        ("store", [isa.replace(uop_noop, push_next_dep=1), store, isa.replace(uop_noop, pop_next_dep=1),
                   FinishInsn()], 128 * env.OUT_ELEM_BYTES // 8),
    ]:
        await tb.run(prog)
        dut._log.info("figure %s: %d beats in %d cycles (whole program)", name, beats, await tb.reg("ECNT0"))
