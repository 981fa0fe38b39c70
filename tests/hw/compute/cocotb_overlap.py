"""cocotb tests of the two-lane compute unit (option COMPUTE_OVERLAP) in the whole core.

Each test runs short programs on vta_top built for ``configs/extended.json`` and checks the
accumulator rows (stored to memory) against NumPy oracles written here, and the cycle counter
against the serial sum of the same instructions run alone: a GEMM and an ALU instruction on
disjoint rows overlap, on shared rows (or with a LOAD into what the other lane uses) they do not.
"""

import cocotb
import numpy as np

from tests.hw.top.cocotb_top import TB, _sint
from tests.hw.tbutil import wrap
from vta import isa
from vta.isa import AluInsn, FinishInsn, GemmInsn, MemInsn, Uop
from vta.sim.tsim import hwgen

#: Rows of the long GEMM / ALU loops, and how often each loop runs over them (iter_in).
R = 48
REPEAT = 8
#: Entries of the long LOAD UOP.
BIG = 256


class Bench:
    """Inputs, weights, initial accumulators and micro-ops of the tests, and program runs."""

    def __init__(self, tb: TB, rng):
        env = tb.env
        self.tb, self.env = tb, env
        B, BI, BO = env.BATCH, env.BLOCK_IN, env.BLOCK_OUT
        self.lanes = B * BO
        self.x = _sint(rng, (2 * R, B, BI), env.INP_WIDTH)
        self.w = _sint(rng, (2, BO, BI), env.WGT_WIDTH)
        self.acc0 = rng.integers(-1000, 1000, (4 * R, self.lanes)).astype(np.int64)
        self.x_addr = tb.put(self.x.reshape(2 * R, B * BI), env.INP_ELEM_BYTES, env.INP_WIDTH)
        self.w_addr = tb.put(self.w.reshape(2, BO * BI), env.WGT_ELEM_BYTES, env.WGT_WIDTH)
        self.acc_addr = tb.put(self.acc0, env.ACC_ELEM_BYTES, 32)
        # uop slots: 0 GEMM rows 0.. (inp 0.., wgt 0); 1 ALU on rows R..; 2 ALU on rows 0..;
        # 3 tensor ALU dst R.., src 0..; 4 GEMM rows 0.. with wgt 1 (the replacement of slot 0);
        # in memory only: 5 an ALU on row 3R
        self.uops = [Uop(0, 0, 0), Uop(R, R, 0), Uop(0, 0, 0), Uop(R, 0, 0), Uop(0, 0, 1), Uop(3 * R, 0, 0)]
        self.uop_addr = tb.put_uops(self.uops)
        self.big_addr = tb.put_uops([Uop(0, 0, 1)] * BIG)
        self.out_addr = tb.soc.alloc(4 * R * env.OUT_ELEM_BYTES, 64)

    def load_uops(self, sram_base: int, first: int, count: int, **deps) -> MemInsn:
        return MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, sram_base=sram_base,
                       dram_base=self.uop_addr // 4 + first, y_size=1, x_size=count, x_stride=count, **deps)

    def load_big(self, sram_base: int) -> MemInsn:
        """BIG copies of Uop(0, 0, 1) into entries ``sram_base`` on."""
        return MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, sram_base=sram_base,
                       dram_base=self.big_addr // 4, y_size=1, x_size=BIG, x_stride=BIG)

    def load_acc(self, sram_base: int, first: int, count: int) -> MemInsn:
        return MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_ACC, sram_base=sram_base,
                       dram_base=self.acc_addr // self.env.ACC_ELEM_BYTES + first, y_size=1, x_size=count,
                       x_stride=count)

    def program(self, body) -> list:
        """Loads of inp, wgt, uops 0..4 and acc rows 0..4R-1, ``body``, a STORE of every row."""
        env = self.env
        head = [
            MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_INP, sram_base=0,
                    dram_base=self.x_addr // env.INP_ELEM_BYTES, y_size=1, x_size=2 * R, x_stride=2 * R),
            MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_WGT, sram_base=0,
                    dram_base=self.w_addr // env.WGT_ELEM_BYTES, y_size=1, x_size=2, x_stride=2, push_next_dep=1),
            self.load_uops(0, 0, 5, pop_prev_dep=1),
            self.load_acc(0, 0, 4 * R),
        ]
        tail = [
            MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, push_next_dep=1),
            MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT, sram_base=0,
                    dram_base=self.out_addr // env.OUT_ELEM_BYTES, y_size=1, x_size=4 * R, x_stride=4 * R,
                    pop_prev_dep=1, push_prev_dep=1),
            MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, pop_next_dep=1),
            FinishInsn(),
        ]
        return head + list(body) + tail

    async def run(self, body) -> tuple[int, np.ndarray]:
        """Run ``body`` in :meth:`program`; return the cycles and the stored rows (OUT lanes). The
        memory model's random choices restart from one seed, so the loads before ``body`` take
        the same cycles in every run."""
        self.tb.soc.rng.seed(1234)
        ctrl = await self.tb.run(self.program(body))
        assert ctrl == hwgen.CTRL_FINISH, hex(ctrl)
        cycles = await self.tb.reg("ECNT0")
        return cycles, self.tb.get_out(self.out_addr, 4 * R).reshape(4 * R, self.lanes)

    # ---------------------------------------------------------------- oracles (NumPy)
    def gemm(self, acc, wgt: int = 0):
        for _ in range(REPEAT):
            for i in range(R):
                acc[i] = wrap(acc[i] + (self.x[i].astype(np.int64) @ self.w[wgt].astype(np.int64).T).reshape(-1), 32)

    def out(self, acc):
        return wrap(acc, self.env.OUT_WIDTH)


def gemm_insn(slot: int = 0) -> GemmInsn:
    """REPEAT passes of the uop in ``slot`` over R rows (dst and src advance by one per row)."""
    return GemmInsn(uop_bgn=slot, uop_end=slot + 1, iter_out=R, iter_in=REPEAT, dst_factor_out=1, src_factor_out=1)


def alu_insn(slot: int, op=isa.ALU_ADD, imm: int = 3, use_imm: int = 1, repeat: int = REPEAT) -> AluInsn:
    """``repeat`` passes of the uop in ``slot`` over R rows."""
    return AluInsn(uop_bgn=slot, uop_end=slot + 1, iter_out=R, iter_in=repeat, dst_factor_out=1, src_factor_out=1,
                   alu_opcode=op, use_imm=use_imm, imm=imm)


@cocotb.test()
async def gemm_and_alu_overlap_on_disjoint_rows(dut):
    """A GEMM on rows 0..R-1 and an ALU on rows R..2R-1 run together; on the same rows the ALU
    waits for the GEMM (and a GEMM after an ALU on its rows waits for the ALU)."""
    tb = TB(dut, seed=11)
    await tb.start()
    bench = Bench(tb, np.random.default_rng(11))
    empty, _ = await bench.run([])
    g, _ = await bench.run([gemm_insn()])
    a, _ = await bench.run([alu_insn(1)])
    serial = g + a - empty

    both, got = await bench.run([gemm_insn(), alu_insn(1)])
    acc = bench.acc0.copy()
    bench.gemm(acc)
    acc[R:2 * R] += 3 * REPEAT
    np.testing.assert_array_equal(got, bench.out(acc))
    # the ALU (R x REPEAT micro-ops) runs under the GEMM; the memory model's timing varies a little
    assert serial - both >= R * REPEAT - 64, f"disjoint rows: {both} cycles, serially {serial}"

    same, got = await bench.run([gemm_insn(), alu_insn(2, isa.ALU_SHR, imm=2)])
    acc = bench.acc0.copy()
    bench.gemm(acc)
    acc[:R] >>= 2 * REPEAT
    np.testing.assert_array_equal(got, bench.out(acc))
    assert same >= serial - 64, f"shared rows: {same} cycles, serially {serial}"

    after, got = await bench.run([alu_insn(2, isa.ALU_MUL, imm=-3), gemm_insn()])
    acc = bench.acc0.copy()
    acc[:R] *= (-3) ** REPEAT
    bench.gemm(acc)
    np.testing.assert_array_equal(got, bench.out(acc))
    assert after >= serial - 64, f"GEMM after an ALU on its rows: {after} cycles, serially {serial}"


@cocotb.test()
async def back_to_back_dependencies(dut):
    """GEMM -> ALU -> GEMM on the same rows, a tensor ALU whose src the GEMM writes (dst elsewhere),
    and an independent ALU in between, in program order semantics."""
    tb = TB(dut, seed=12)
    await tb.start()
    bench = Bench(tb, np.random.default_rng(12))
    body = [gemm_insn(), alu_insn(1, isa.ALU_MAX, imm=-5), alu_insn(2, isa.ALU_SHR, imm=1, repeat=1), gemm_insn(),
            alu_insn(3, isa.ALU_ADD, use_imm=0, repeat=1), gemm_insn(), alu_insn(1, isa.ALU_MIN, imm=400)]
    _, got = await bench.run(body)
    acc = bench.acc0.copy()
    bench.gemm(acc)
    acc[R:2 * R] = np.maximum(acc[R:2 * R], -5)
    acc[:R] >>= 1
    bench.gemm(acc)
    acc[R:2 * R] = wrap(acc[R:2 * R] + acc[:R], 32)
    bench.gemm(acc)
    acc[R:2 * R] = np.minimum(acc[R:2 * R], 400)
    np.testing.assert_array_equal(got, bench.out(acc))


@cocotb.test()
async def uop_load_against_an_inflight_gemm(dut):
    """A LOAD UOP over the entry the running GEMM reads waits for it (the GEMM uses the old uop,
    the next one the new); into other entries it runs alongside."""
    tb = TB(dut, seed=13)
    await tb.start()
    bench = Bench(tb, np.random.default_rng(13))
    over, got = await bench.run([gemm_insn(), bench.load_big(0), gemm_insn()])
    acc = bench.acc0.copy()
    bench.gemm(acc, 0)
    bench.gemm(acc, 1)
    np.testing.assert_array_equal(got, bench.out(acc))
    beside, got = await bench.run([gemm_insn(), bench.load_big(8), gemm_insn(8)])
    np.testing.assert_array_equal(got, bench.out(acc))
    # the same work; the LOAD of BIG / 2 beats runs under the first GEMM only beside it
    assert over - beside >= BIG // 2 - 32, f"LOAD UOP into other entries {beside} cycles, into the GEMM's {over}"


@cocotb.test()
async def acc_load_against_an_inflight_gemm(dut):
    """A LOAD ACC over the running GEMM's rows waits for it (the load's values win); a LOAD ACC
    into other rows runs alongside."""
    tb = TB(dut, seed=14)
    await tb.start()
    bench = Bench(tb, np.random.default_rng(14))
    over, got = await bench.run([gemm_insn(), bench.load_acc(0, 2 * R, R)])
    row_beats = bench.env.ACC_ELEM_BYTES // 8
    acc = bench.acc0.copy()
    acc[:R] = bench.acc0[2 * R:3 * R]
    np.testing.assert_array_equal(got, bench.out(acc))
    beside, got = await bench.run([gemm_insn(), bench.load_acc(R, 2 * R, R)])
    acc = bench.acc0.copy()
    bench.gemm(acc)
    acc[R:2 * R] = bench.acc0[2 * R:3 * R]
    np.testing.assert_array_equal(got, bench.out(acc))
    # the load's R x row_beats beats run under the GEMM only beside it
    assert over - beside >= R * row_beats // 2, f"LOAD ACC beside the GEMM {beside} cycles, over its rows {over}"


@cocotb.test()
async def retirement_buffer_fills_behind_a_long_gemm(dut):
    """40 one-row ALU instructions on another row behind a GEMM of 2R x REPEAT micro-ops: 32 wait to retire
    behind it (the retirement buffer is full), the rest are taken as it drains; every result and
    count is right."""
    tb = TB(dut, seed=15)
    await tb.start()
    bench = Bench(tb, np.random.default_rng(15))
    # GEMM over rows 0..2R-1 twice (iter_in 2 over the same rows, src 0..2R-1), then ALUs on rows 2R..
    gemm = GemmInsn(uop_bgn=0, uop_end=1, iter_out=2 * R, iter_in=REPEAT, dst_factor_out=1, src_factor_out=1)
    alus = [AluInsn(uop_bgn=5, uop_end=6, iter_out=1, iter_in=1, alu_opcode=isa.ALU_ADD, use_imm=1, imm=k + 1)
            for k in range(40)]
    body = [bench.load_uops(5, 5, 1)] + [gemm] + alus
    _, got = await bench.run(body)
    acc = bench.acc0.copy()
    for _ in range(REPEAT):
        for i in range(2 * R):
            acc[i] = wrap(acc[i] + (bench.x[i].astype(np.int64) @ bench.w[0].astype(np.int64).T).reshape(-1), 32)
    acc[3 * R] += sum(range(1, 41))
    np.testing.assert_array_equal(got, bench.out(acc))
    assert await tb.reg("RETIRED_COMPUTE") == len(bench.program(body)) - 3  # all but LOAD INP / WGT, STORE
    assert await tb.reg("ALU_UOPS") == 40 and await tb.reg("GEMM_UOPS") == 2 * R * REPEAT
