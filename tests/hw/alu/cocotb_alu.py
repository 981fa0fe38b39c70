"""cocotb tests of vta_alu: every opcode, immediate and tensor operand, against a scalar oracle."""

import cocotb
import numpy as np
from cocotb.triggers import Timer

from tests.hw.tbutil import hw_env, pack, unpack

MIN, MAX, ADD, SHR, MUL, REQ, MOV = range(7)


def oracle(op: int, a: int, b: int, width: int = 32) -> int:
    """DESIGN.md semantics on two's-complement ``width``-bit integers, written independently."""
    m = 1 << width

    def s(x):
        x %= m
        return x - m if x >= m // 2 else x

    a, b = s(a), s(b)
    if op == MIN:
        return min(a, b)
    if op == MAX:
        return max(a, b)
    if op == ADD:
        return s(a + b)
    if op == MUL:
        return s(a * b)
    if op == SHR:
        if b >= 0:
            return a >> (b & 31)  # Python >> on negative ints is arithmetic
        return s(a << ((-b) & 31))
    raise ValueError(op)


class TB:
    """Drives vta_alu's operands (combinational unit, no clock)."""

    def __init__(self, dut):
        self.dut = dut
        self.env = hw_env()
        self.lanes = self.env.BATCH * self.env.BLOCK_OUT

    async def apply(self, op, a, b=None, imm=None, en=True):
        w = self.env.ACC_WIDTH
        self.dut.en_i.value = int(en)
        self.dut.op_i.value = op
        self.dut.use_imm_i.value = int(imm is not None)
        self.dut.imm_i.value = (imm if imm is not None else 0x8000) & 0xFFFF  # imm[15] set but unused
        self.dut.a_i.value = pack(a, w)
        self.dut.b_i.value = pack(b if b is not None else np.zeros(self.lanes, dtype=np.int64), w)
        await Timer(1, unit="ns")
        return unpack(self.dut.y_o.value.to_unsigned(), w, self.lanes)


SPECIAL = [0, 1, -1, 2, 31, 32, 33, -31, -32, -33, 7, -7, (1 << 31) - 1, -(1 << 31), 0x12345678, -0x1234567]


@cocotb.test()
async def tensor_operand_every_op(dut):
    """use_imm = 0: op(a[e], b[e]) lane by lane, for every opcode, random and corner values."""
    tb = TB(dut)
    rng = np.random.default_rng(3)
    w = tb.env.ACC_WIDTH
    for op in (MIN, MAX, ADD, SHR, MUL):
        for trial in range(6):
            a = rng.integers(-(1 << (w - 1)), 1 << (w - 1), tb.lanes)
            if trial < 2:
                b = np.array([SPECIAL[(i + trial * 5) % len(SPECIAL)] for i in range(tb.lanes)])
            elif op == SHR:
                b = rng.integers(-40, 40, tb.lanes)
            else:
                b = rng.integers(-(1 << (w - 1)), 1 << (w - 1), tb.lanes)
            got = await tb.apply(op, a, b=b)
            want = [oracle(op, int(x), int(y), w) for x, y in zip(a, b, strict=True)]
            assert got.tolist() == want, f"op {op}: a={a.tolist()} b={b.tolist()}"


@cocotb.test()
async def immediate_operand_every_op(dut):
    """use_imm = 1: op(a[e], sext(imm)); the tensor operand is ignored."""
    tb = TB(dut)
    rng = np.random.default_rng(4)
    w = tb.env.ACC_WIDTH
    for op in (MIN, MAX, ADD, SHR, MUL):
        imms = [0, 1, -1, 5, -5, 31, -31, 32, -32, 127, -128, 32767, -32768]
        for imm in imms:
            a = rng.integers(-(1 << (w - 1)), 1 << (w - 1), tb.lanes)
            a[0] = -(1 << (w - 1))
            got = await tb.apply(op, a, imm=imm)
            want = [oracle(op, int(x), imm, w) for x in a]
            assert got.tolist() == want, f"op {op} imm {imm}: a={a.tolist()}"


def req_oracle(a: int, b: int, out_bits: int) -> int:
    """REQ as README words it: b as a 32-bit value, m = its low 16 bits, s = bits 16..21."""
    m, s = b & 0xFFFF, (b >> 16) & 63
    q = (a * m + (1 << s) // 2) // (1 << s)
    return max(-(1 << (out_bits - 1)), min((1 << (out_bits - 1)) - 1, q))


@cocotb.test()
async def requant_op(dut):
    """REQ (ALU_REQUANT) with tensor and immediate operands, against the oracle; without the
    option the opcode's datapath is not built and the unit passes ``a`` through (the fetch unit
    refuses the opcode before it gets here)."""
    tb = TB(dut)
    rng = np.random.default_rng(6)
    w = tb.env.ACC_WIDTH
    for trial in range(12):
        a = rng.integers(-(1 << (w - 1)), 1 << (w - 1), tb.lanes)
        if trial % 3 == 0:
            a = rng.integers(-3000, 3000, tb.lanes)
        m = rng.integers(0, 1 << 16, tb.lanes)
        s = rng.integers(0, 64, tb.lanes) if trial % 2 else rng.integers(10, 24, tb.lanes)
        b = (m | (s << 16) | (rng.integers(0, 1 << 9, tb.lanes) << 22)) - (1 << 31)
        b[0] = 0x7FFF | (63 << 16)
        got = await tb.apply(REQ, a, b=b)
        if tb.env.ALU_REQUANT:  # (the lane is ACC_WIDTH = 32 bits wide there)
            want = [req_oracle(int(x), int(y) & 0xFFFF_FFFF, tb.env.OUT_WIDTH)
                    for x, y in zip(a, b, strict=True)]
        else:
            want = [int(x) for x in a]
        assert got.tolist() == want, f"trial {trial}: a={a.tolist()} b={b.tolist()}"
    for imm in (0, 1, -1, 12345, 32767, -32768, -20000):
        a = rng.integers(-(1 << (w - 1)), 1 << (w - 1), tb.lanes)
        got = await tb.apply(REQ, a, imm=imm)
        want = ([req_oracle(int(x), imm & 0xFFFF_FFFF, tb.env.OUT_WIDTH) for x in a] if tb.env.ALU_REQUANT
                else [int(x) for x in a])
        assert got.tolist() == want, f"imm {imm}: a={a.tolist()}"


@cocotb.test()
async def mov_op(dut):
    """MOV (ALU_MOV): every lane takes the tensor operand's lane, or the 16-bit immediate
    sign-extended to the lane; without the option the opcode is not built and the unit passes
    ``a`` through (the fetch unit refuses the opcode before it gets here)."""
    tb = TB(dut)
    rng = np.random.default_rng(7)
    w = tb.env.ACC_WIDTH
    for trial in range(6):
        a = rng.integers(-(1 << (w - 1)), 1 << (w - 1), tb.lanes)
        b = rng.integers(-(1 << (w - 1)), 1 << (w - 1), tb.lanes)
        if trial == 0:
            b = np.array([SPECIAL[i % len(SPECIAL)] for i in range(tb.lanes)])
        got = await tb.apply(MOV, a, b=b)
        want = b if tb.env.ALU_MOV else a
        assert got.tolist() == want.tolist(), f"trial {trial}: a={a.tolist()} b={b.tolist()}"
    for imm in (0, 1, -1, 127, -128, 32767, -32768, 0x1234, -0x1234):
        a = rng.integers(-(1 << (w - 1)), 1 << (w - 1), tb.lanes)
        got = await tb.apply(MOV, a, imm=imm)
        want = [imm] * tb.lanes if tb.env.ALU_MOV else a.tolist()
        assert got.tolist() == want, f"imm {imm}: a={a.tolist()}"
