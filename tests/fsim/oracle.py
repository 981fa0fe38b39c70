"""A slow scalar model of VTA, written independently of fsim, used as the tests' oracle.

Plain Python loops over Python ints, straight from ``reference/vta-isa.md`` sections 4 and 5
and the semantics table of DESIGN.md. It shares nothing with :mod:`vta.sim` -- only the
instruction and micro-op decoders of :mod:`vta.isa`.
"""

from __future__ import annotations

from vta import isa

MASK32 = (1 << 32) - 1


def sext(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


class _Rows(dict):
    """A buffer of ``depth`` rows stored sparsely; indexing checks the depth."""

    def __init__(self, depth, zero):
        super().__init__()
        self.depth, self.zero = depth, zero

    def __missing__(self, idx):
        assert 0 <= idx < self.depth, f"oracle: index {idx} outside a buffer of {self.depth}"
        row = self.zero()
        super().__setitem__(idx, row)
        return row

    def __setitem__(self, idx, value):
        assert 0 <= idx < self.depth, f"oracle: index {idx} outside a buffer of {self.depth}"
        super().__setitem__(idx, value)


class Oracle:
    """Executes a stream one instruction at a time (earliest ready stage head first)."""

    def __init__(self, env, dram):
        self.env, self.dram = env, dram
        e = env
        # Buffers are sparse: row index -> value; a row never written reads as zeros (power-on state).
        self.uop = _Rows(e.UOP_BUFF_DEPTH, lambda: (0, 0, 0))
        self.inp = _Rows(e.INP_BUFF_DEPTH, lambda: [[0] * e.BLOCK_IN for _ in range(e.BATCH)])
        self.wgt = _Rows(e.WGT_BUFF_DEPTH, lambda: [[0] * e.BLOCK_IN for _ in range(e.BLOCK_OUT)])
        self.acc = _Rows(e.ACC_BUFF_DEPTH, lambda: [[0] * e.BLOCK_OUT for _ in range(e.BATCH)])
        self.tokens = {"l2g": 0, "g2l": 0, "s2g": 0, "g2s": 0}
        self.stats = dict(inp_load_nbytes=0, wgt_load_nbytes=0, acc_load_nbytes=0, uop_load_nbytes=0,
                          out_store_nbytes=0, gemm_counter=0, alu_counter=0, insn_load=0, insn_store=0,
                          insn_gemm=0, insn_alu=0, insn_finish=0, insn_nop=0)

    # ------------------------------------------------------------------ elements
    def _elem_values(self, raw: bytes, width: int, count: int) -> list[int]:
        word = int.from_bytes(raw, "little")
        return [sext(word >> (k * width), width) for k in range(count)]

    def _wrap(self, v: int) -> int:
        return sext(v, self.env.ACC_WIDTH)

    # ------------------------------------------------------------------ run
    def run(self, addr: int, count: int) -> None:
        insns = [isa.decode(self.dram.read(addr + 16 * k, 16), self.env) for k in range(count)]
        queues = {1: [], 2: [], 3: []}
        for k, insn in enumerate(insns):
            queues[isa.stage_of(insn)].append(k)
        heads = {1: 0, 2: 0, 3: 0}
        pops = {1: {"pop_next_dep": "g2l"}, 2: {"pop_prev_dep": "l2g", "pop_next_dep": "s2g"},
                3: {"pop_prev_dep": "g2s"}}
        pushes = {1: {"push_next_dep": "l2g"}, 2: {"push_prev_dep": "g2l", "push_next_dep": "g2s"},
                  3: {"push_prev_dep": "s2g"}}
        done = 0
        while done < count:
            ready = []
            for stage in (1, 2, 3):
                if heads[stage] < len(queues[stage]):
                    k = queues[stage][heads[stage]]
                    insn = insns[k]
                    if all(self.tokens[ch] > 0 for flag, ch in pops[stage].items() if getattr(insn, flag)):
                        ready.append((k, stage))
            assert ready, "oracle: deadlock"
            k, stage = min(ready)
            insn = insns[k]
            for flag, ch in pops[stage].items():
                if getattr(insn, flag):
                    self.tokens[ch] -= 1
            self.execute(insn)
            for flag, ch in pushes[stage].items():
                if getattr(insn, flag):
                    self.tokens[ch] += 1
            heads[stage] += 1
            done += 1

    def execute(self, insn) -> None:
        if isinstance(insn, isa.FinishInsn):
            self.stats["insn_finish"] += 1
        elif isinstance(insn, isa.GemmInsn):
            self.stats["insn_gemm"] += 1
            self.gemm(insn)
        elif isinstance(insn, isa.AluInsn):
            self.stats["insn_alu"] += 1
            self.alu(insn)
        elif insn.x_size == 0:
            self.stats["insn_nop"] += 1
        elif insn.opcode == isa.OPCODE_LOAD:
            self.stats["insn_load"] += 1
            self.load(insn)
        else:
            self.stats["insn_store"] += 1
            self.store(insn)

    # ------------------------------------------------------------------ opcodes
    def load(self, i) -> None:
        e = self.env
        mt = i.memory_type
        elem = e.elem_bytes(mt)
        key = {isa.MEM_UOP: "uop", isa.MEM_WGT: "wgt", isa.MEM_INP: "inp", isa.MEM_ACC: "acc",
               isa.MEM_ACC_8BIT: "acc"}[mt]
        self.stats[f"{key}_load_nbytes"] += i.x_size * i.y_size * (e.ACC_ELEM_BYTES if mt == isa.MEM_ACC_8BIT else elem)
        w = i.x_pad_0 + i.x_size + i.x_pad_1
        h = i.y_pad_0 + i.y_size + i.y_pad_1
        for yy in range(h):
            for xx in range(w):
                idx = i.sram_base + yy * w + xx
                y, x = yy - i.y_pad_0, xx - i.x_pad_0
                inside = 0 <= y < i.y_size and 0 <= x < i.x_size
                raw = self.dram.read((i.dram_base + y * i.x_stride + x) * elem, elem) if inside else bytes(elem)
                if mt == isa.MEM_UOP:
                    u = isa.decode_uop(int.from_bytes(raw, "little"), e)
                    self.uop[idx] = (u.dst_idx, u.src_idx, u.wgt_idx)
                elif mt == isa.MEM_INP:
                    v = self._elem_values(raw, e.INP_WIDTH, e.BATCH * e.BLOCK_IN)
                    self.inp[idx] = [v[b * e.BLOCK_IN:(b + 1) * e.BLOCK_IN] for b in range(e.BATCH)]
                elif mt == isa.MEM_WGT:
                    v = self._elem_values(raw, e.WGT_WIDTH, e.BLOCK_OUT * e.BLOCK_IN)
                    self.wgt[idx] = [v[j * e.BLOCK_IN:(j + 1) * e.BLOCK_IN] for j in range(e.BLOCK_OUT)]
                else:
                    width = e.ACC_WIDTH if mt == isa.MEM_ACC else 8
                    v = [self._wrap(t) for t in self._elem_values(raw, width, e.BATCH * e.BLOCK_OUT)]
                    self.acc[idx] = [v[b * e.BLOCK_OUT:(b + 1) * e.BLOCK_OUT] for b in range(e.BATCH)]

    def store(self, i) -> None:
        e = self.env
        self.stats["out_store_nbytes"] += i.x_size * i.y_size * e.BATCH * e.BLOCK_OUT * e.OUT_WIDTH // 8
        for y in range(i.y_size):
            for x in range(i.x_size):
                row = self.acc[i.sram_base + y * i.x_size + x]
                word = 0
                for k, v in enumerate(lane for b in row for lane in b):
                    word |= (v & ((1 << e.OUT_WIDTH) - 1)) << (k * e.OUT_WIDTH)
                addr = (i.dram_base + y * i.x_stride + x) * e.OUT_ELEM_BYTES
                self.dram.write(addr, word.to_bytes(e.OUT_ELEM_BYTES, "little"))

    def _nest(self, i, roles):
        for o in range(i.iter_out):
            for n in range(i.iter_in):
                for u in range(i.uop_bgn, i.uop_end):
                    base = dict(zip(("dst", "src", "wgt"), self.uop[u], strict=True))
                    yield tuple(base[r] + o * getattr(i, f"{r}_factor_out") + n * getattr(i, f"{r}_factor_in")
                                for r in roles)

    def gemm(self, i) -> None:
        e = self.env
        for d, s, w in self._nest(i, ("dst", "src", "wgt")):
            if i.reset_reg:
                self.acc[d] = [[0] * e.BLOCK_OUT for _ in range(e.BATCH)]
                continue
            self.stats["gemm_counter"] += 1
            for b in range(e.BATCH):
                x = self.inp[s][b]
                for j in range(e.BLOCK_OUT):
                    dot = sum(p * q for p, q in zip(x, self.wgt[w][j], strict=True))
                    self.acc[d][b][j] = self._wrap(self.acc[d][b][j] + dot)

    def alu(self, i) -> None:
        for d, s in self._nest(i, ("dst", "src")):
            self.stats["alu_counter"] += 1
            new = []
            for b, row in enumerate(self.acc[d]):
                new.append([self._wrap(alu_scalar(i.alu_opcode, a, i.imm if i.use_imm else self.acc[s][b][j],
                                                  self.env.OUT_WIDTH))
                            for j, a in enumerate(row)])
            self.acc[d] = new


def alu_scalar(op: int, a: int, b: int, out_width: int = 8) -> int:
    """DESIGN semantics of one ALU lane (the result is wrapped by the caller); REQ as README's
    hardware options table words it, with exact Python integers and a float-free rounding; MOV
    (option ``ALU_MOV``) is the operand ``b``."""
    if op == isa.ALU_MOV:
        return b
    if op == isa.ALU_REQ:
        m, s = b & 0xFFFF, (b >> 16) & 63
        q = (a * m + (1 << s) // 2) // (1 << s)
        return max(-(1 << (out_width - 1)), min((1 << (out_width - 1)) - 1, q))
    if op == isa.ALU_MIN:
        return min(a, b)
    if op == isa.ALU_MAX:
        return max(a, b)
    if op == isa.ALU_ADD:
        return a + b
    if op == isa.ALU_MUL:
        return a * b
    if b >= 0:
        return a >> (b & 31)
    return (a << ((-b) & 31)) & MASK32
