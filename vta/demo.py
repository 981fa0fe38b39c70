"""A small hand-written VTA program: a blocked GEMM with bias, a right shift and a clip.

The program computes, for int8 matrices ``A`` (rows x K) and ``W`` (cols x K) and an int32
bias ``B`` (rows x cols)::

    C = clip((A @ W.T + B) >> shift, -(2**(OUT_WIDTH-1) - 1), 2**(OUT_WIDTH-1) - 1)

with every instruction written by hand from :mod:`vta.isa` records: LOAD INP and LOAD WGT on the
load stage; LOAD UOP, LOAD ACC, one GEMM whose two loop levels walk the output tiles while its
micro-ops walk the reduction, and three ALU instructions (SHR, MIN, MAX) on the compute stage;
STORE on the store stage; dependency tokens between them; FINISH. :func:`build_demo_pack`
returns it as a :class:`~vta.pack.Pack` whose expected output is computed with NumPy.
"""

from __future__ import annotations

import numpy as np

from . import isa
from .env import PAGE_BYTES, Environment
from .pack import Pack, Region

__all__ = ["build_demo_pack", "DEMO_TILES", "demo_shift", "reference"]

#: Tiles of the demo: (batch tiles N, reduction tiles K, output-channel tiles M).
DEMO_TILES = (2, 2, 3)


def demo_shift(env: Environment) -> int:
    """Right shift applied to the accumulators before clipping (keeps some outputs unclipped)."""
    return env.INP_WIDTH + env.WGT_WIDTH - env.OUT_WIDTH + 1


def _lane_pack(values: np.ndarray, bits: int) -> tuple[np.ndarray, str]:
    """Pack signed ``values`` into DRAM bytes: 8/16/32-bit as themselves, narrower LSB first."""
    if bits >= 8:
        return values.astype(f"<i{bits // 8}"), f"int{bits}"
    flat = (values.reshape(-1).astype(np.int64) & ((1 << bits) - 1)).astype(np.uint8)
    per_byte = 8 // bits
    groups = flat.reshape(-1, per_byte)
    packed = np.zeros(groups.shape[0], dtype=np.uint8)
    for j in range(per_byte):
        packed |= (groups[:, j] << (j * bits)).astype(np.uint8)
    return packed.reshape(values.shape[:-1] + (values.shape[-1] * bits // 8,)), "uint8"


def reference(a: np.ndarray, w: np.ndarray, bias: np.ndarray, shift: int, out_bits: int) -> np.ndarray:
    """The NumPy result of the demo: ``clip((a @ w.T + bias) >> shift)`` as int64 values."""
    acc = a.astype(np.int64) @ w.astype(np.int64).T + bias.astype(np.int64)
    acc = ((acc + (1 << 31)) % (1 << 32)) - (1 << 31)  # the accumulator wraps at 32 bits
    lim = (1 << (out_bits - 1)) - 1
    return np.clip(acc >> shift, -lim, lim)


def _tiles(mat: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """(R*rows, C*cols) matrix -> (R, C, rows, cols) tiles, row-major."""
    r, c = mat.shape[0] // rows, mat.shape[1] // cols
    return mat.reshape(r, rows, c, cols).transpose(0, 2, 1, 3).copy()


def build_demo_pack(env: Environment, seed: int = 0) -> Pack:
    """Build the demo program for ``env`` with random inputs and its NumPy-computed expectation.

    Parameters
    ----------
    env : Environment
        The configuration to build for (any encodable one).
    seed : int
        Seed of the random inputs.

    Raises
    ------
    vta.errors.EncodingError
        If the configuration's buffers are too small for the demo's tiles.
    """
    n, k, m = DEMO_TILES
    bat, bin_, bout = env.BATCH, env.BLOCK_IN, env.BLOCK_OUT
    rng = np.random.default_rng(seed)
    inp_lim, wgt_lim = 1 << (env.INP_WIDTH - 1), 1 << (env.WGT_WIDTH - 1)
    a = rng.integers(-inp_lim, inp_lim, size=(n * bat, k * bin_))
    w = rng.integers(-wgt_lim, wgt_lim, size=(m * bout, k * bin_))
    bias_lim = 1 << (env.INP_WIDTH + env.WGT_WIDTH)
    bias = rng.integers(-bias_lim, bias_lim, size=(n * bat, m * bout))
    shift = demo_shift(env)
    expect = reference(a, w, bias, shift, env.OUT_WIDTH)

    inp_img, inp_dt = _lane_pack(_tiles(a, bat, bin_), env.INP_WIDTH)      # (n, k, bat, bin)
    wgt_img, wgt_dt = _lane_pack(_tiles(w, bout, bin_), env.WGT_WIDTH)     # (m, k, bout, bin)
    acc_img, acc_dt = _lane_pack(_tiles(bias, bat, bout), env.ACC_WIDTH)   # (n, m, bat, bout)
    out_exp, out_dt = _lane_pack(_tiles(expect, bat, bout), env.OUT_WIDTH)
    out_img = np.zeros_like(out_exp)

    # Micro-ops: K GEMM uops walking the reduction, then one ALU uop (in place).
    uops = [isa.Uop(dst_idx=0, src_idx=kk, wgt_idx=kk) for kk in range(k)] + [isa.Uop(0, 0, 0)]
    uop_img = np.array([isa.encode_uop(u, env) for u in uops], dtype="<u4")
    alu_uop = k

    # Lay the regions out page by page from the first valid page.
    arrays = [("inp", "input", inp_img, inp_dt), ("wgt", "input", wgt_img, wgt_dt),
              ("bias", "input", acc_img, acc_dt), ("uop", "uop", uop_img, "uint32"),
              ("out", "output", out_img, out_dt)]
    addr = PAGE_BYTES
    regions, image = [], {}
    for name, kind, arr, dt in arrays:
        regions.append(Region(name, kind, addr, arr.nbytes, dt, tuple(arr.shape)))
        image[name] = arr.tobytes()
        addr += -(-arr.nbytes // PAGE_BYTES) * PAGE_BYTES
    at = {r.name: r.addr for r in regions}
    insn_addr = addr

    def mem(opcode, mtype, sram, base_addr, y, x, stride, **deps):
        return isa.MemInsn(opcode=opcode, memory_type=mtype, sram_base=sram,
                           dram_base=base_addr // env.elem_bytes(mtype), y_size=y, x_size=x,
                           x_stride=stride, **deps)

    alu_loop = dict(uop_bgn=alu_uop, uop_end=alu_uop + 1, iter_out=n, iter_in=m,
                    dst_factor_out=m, dst_factor_in=1, src_factor_out=m, src_factor_in=1, use_imm=1)
    lim = (1 << (env.OUT_WIDTH - 1)) - 1
    program = [
        # load stage: input tiles (n x k) and weight tiles (m x k); tell compute they are ready
        mem(isa.OPCODE_LOAD, isa.MEM_INP, 0, at["inp"], n, k, k),
        mem(isa.OPCODE_LOAD, isa.MEM_WGT, 0, at["wgt"], m, k, k, push_next_dep=1),
        # compute stage: micro-ops, bias into the accumulators
        mem(isa.OPCODE_LOAD, isa.MEM_UOP, 0, at["uop"], 1, len(uops), len(uops)),
        mem(isa.OPCODE_LOAD, isa.MEM_ACC, 0, at["bias"], n, m, m),
        # acc[i*m + j] += sum_kk inp[i*k + kk] . wgt[j*k + kk]
        isa.GemmInsn(pop_prev_dep=1, uop_bgn=0, uop_end=k, iter_out=n, iter_in=m,
                     dst_factor_out=m, dst_factor_in=1, src_factor_out=k, src_factor_in=0,
                     wgt_factor_out=0, wgt_factor_in=k),
        isa.AluInsn(alu_opcode=isa.ALU_SHR, imm=shift, **alu_loop),
        isa.AluInsn(alu_opcode=isa.ALU_MIN, imm=lim, **alu_loop),
        isa.AluInsn(alu_opcode=isa.ALU_MAX, imm=-lim, push_next_dep=1, **alu_loop),
        # store stage: results out; tell compute the store is done
        mem(isa.OPCODE_STORE, isa.MEM_OUT, 0, at["out"], n, m, m, pop_prev_dep=1, push_prev_dep=1),
        # compute-stage no-op waiting for the store, then FINISH (the runtime's Synchronize)
        mem(isa.OPCODE_LOAD, isa.MEM_UOP, 0, 0, 0, 0, 0, pop_next_dep=1),
        isa.FinishInsn(),
    ]
    insn_img = isa.encode_program(program, env).astype("<u8")
    regions.append(Region("insn", "insn", insn_addr, insn_img.nbytes, "uint64", tuple(insn_img.shape)))
    image["insn"] = insn_img.tobytes()
    expected = {"out": out_exp}
    return Pack(dict(env.cfg_dict), regions, image, insn_addr, len(program), expected)
