"""The hardware option ``ALU_MOV``: ALU opcode 6 (MOV, ``acc[dst] = b``) on fsim, both engines,
against a scalar model of the ISA loop nest written here; refused by every entry point without
the option."""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.env import Environment, load_config
from vta.errors import DecodeError, EncodingError, InvalidInstructionError
from vta.sim.fsim import FunctionalSimulator
from vta.sim.stream import check_stream
from vta.testing.programs import ProgramBuilder

from ..conftest import make_env
from .test_semantics import _compare

ROWS = 48


@pytest.fixture
def ext_env():
    """The extended configuration (every hardware option), made current."""
    with make_env("extended.json") as e:
        yield e


def _mov_model(acc: list[list[int]], insn: isa.AluInsn, uops: list[tuple[int, int, int]]) -> None:
    """MOV as the ISA loop nest reads: one micro-op at a time, in order, each lane of the
    destination row set to the source row's lane or to the (signed) immediate."""
    for o in range(insn.iter_out):
        for t in range(insn.iter_in):
            for u in range(insn.uop_bgn, insn.uop_end):
                d = uops[u][0] + o * insn.dst_factor_out + t * insn.dst_factor_in
                s = uops[u][1] + o * insn.src_factor_out + t * insn.src_factor_in
                acc[d] = [insn.imm] * len(acc[d]) if insn.use_imm else list(acc[s])


def _alu(**kw) -> isa.AluInsn:
    return isa.AluInsn(alu_opcode=isa.ALU_MOV, **kw)


#: (micro-ops, instructions): a row broadcast over a tile (src_factor 0), forward and backward
#: overlapping copies (the forward one propagates its first row only when run in order), dst == src,
#: repeated destinations, and constant fills at the edges of the immediate.
CASES = {
    "broadcast": ([(8, 0, 0)], [_alu(uop_bgn=0, uop_end=1, iter_out=2, iter_in=5, dst_factor_out=5,
                                     dst_factor_in=1)]),
    "overlap_forward": ([(11, 10, 0)], [_alu(uop_bgn=0, uop_end=1, iter_out=1, iter_in=12, dst_factor_in=1,
                                             src_factor_in=1)]),
    "overlap_backward": ([(20, 21, 0)], [_alu(uop_bgn=0, uop_end=1, iter_out=3, iter_in=4, dst_factor_out=4,
                                              dst_factor_in=1, src_factor_out=4, src_factor_in=1)]),
    "dst_is_src": ([(3, 3, 0), (30, 31, 0)], [_alu(uop_bgn=0, uop_end=2, iter_out=2, iter_in=3, dst_factor_out=3,
                                                   dst_factor_in=1, src_factor_out=3, src_factor_in=1)]),
    "repeated_dst": ([(40, 1, 0), (40, 2, 0), (41, 40, 0)], [_alu(uop_bgn=0, uop_end=3, iter_out=2, iter_in=2,
                                                                 src_factor_out=5, src_factor_in=2)]),
    "imm_fill": ([(5, 0, 0), (44, 0, 0)], [
        _alu(uop_bgn=0, uop_end=1, iter_out=3, iter_in=6, dst_factor_out=6, dst_factor_in=1, use_imm=1, imm=-32768),
        _alu(uop_bgn=1, uop_end=2, iter_out=1, iter_in=2, dst_factor_in=1, use_imm=1, imm=32767),
        _alu(uop_bgn=0, uop_end=2, iter_out=2, iter_in=1, dst_factor_out=1, use_imm=1, imm=-1),
        _alu(uop_bgn=1, uop_end=2, iter_out=2, iter_in=2, dst_factor_in=1, use_imm=1, imm=0)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_mov_against_scalar_model(ext_env, dram, engine, case):
    """The accumulator after MOV, and the OUT elements stored from it, equal the scalar model's;
    the shared oracle of the fsim tests agrees (state and counters)."""
    uops, insns = CASES[case]
    rng = np.random.default_rng(len(case))
    lanes = ext_env.BATCH * ext_env.BLOCK_OUT
    vals = rng.integers(-(1 << 31), 1 << 31, ROWS * lanes).astype("<i4")
    model = [vals[r * lanes:(r + 1) * lanes].tolist() for r in range(ROWS)]
    for insn in insns:
        _mov_model(model, insn, uops)
    with ProgramBuilder(ext_env, dram) as prog:
        acc = prog.buffer(vals)
        out = prog.buffer(nbytes=ROWS * ext_env.OUT_ELEM_BYTES)
        prog.load(isa.MEM_ACC, 0, acc, 1, ROWS)
        prog.uops(uops, sram_base=0)
        for insn in insns:
            prog.append(insn)
        prog.store(0, out, 1, ROWS)
        prog.finish()
        prog.serialize()
        addr, count = prog.build()
        with FunctionalSimulator(ext_env, dram, engine=engine) as dev:
            dev.run(addr, count)
            got = dev.sram.acc.reshape(-1, lanes)[:ROWS]
            np.testing.assert_array_equal(got, np.array(model, dtype=np.int64))
            if engine == "jit":  # the compiled loop ran MOV itself (no instruction left to NumPy)
                assert dev._jit.deferred == 0
        stored = np.frombuffer(dram.read(out, ROWS * ext_env.OUT_ELEM_BYTES), dtype=np.int8).reshape(ROWS, lanes)
        np.testing.assert_array_equal(stored, np.array(model, dtype=np.int64).astype(np.int8))
        _compare(ext_env, dram, prog, engine=engine)
    if case == "overlap_forward":  # in order, row 10 reaches every row up to 22
        assert all(model[r] == model[10] for r in range(11, 23)) and model[10] != model[9]


def test_mov_in_a_chain_of_alu_opcodes(ext_env, dram, engine):
    """MOV of a bias row over a tile, then ADD, MAX, a constant fill and an overlapping copy back
    to back on the same rows: the shared oracle's sequential semantics."""
    rng = np.random.default_rng(3)
    lanes = ext_env.BATCH * ext_env.BLOCK_OUT
    vals = rng.integers(-(1 << 20), 1 << 20, 16 * lanes).astype("<i4")
    with ProgramBuilder(ext_env, dram) as prog:
        acc = prog.buffer(vals)
        prog.load(isa.MEM_ACC, 0, acc, 1, 16)
        prog.uops([(1, 0, 0)], sram_base=0)
        tile = dict(uop_bgn=0, uop_end=1, iter_out=1, iter_in=8, dst_factor_in=1)
        prog.append(_alu(**tile))  # the bias row 0 over rows 1..8
        prog.append(isa.AluInsn(alu_opcode=isa.ALU_ADD, src_factor_in=1, **tile))
        prog.append(isa.AluInsn(alu_opcode=isa.ALU_MAX, use_imm=1, imm=-5, **tile))
        prog.append(_alu(use_imm=1, imm=-7, **tile))
        prog.append(_alu(src_factor_in=1, **tile))
        prog.finish()
        dev, _, _ = _compare(ext_env, dram, prog, engine=engine)
    # the last MOV copies rows 0..7 to 1..8 in order: row 0 (untouched) reaches every row
    assert np.all(dev.sram.acc.reshape(-1, lanes)[1:9] == vals[:lanes])


def _mov_only():
    """The default configuration with only ``ALU_MOV`` on (REQ, opcode 5, stays refused)."""
    return Environment(dict(load_config(), ALU_MOV=True))


def test_mov_names_and_header(env):
    mov_only = _mov_only()
    assert mov_only.BITSTREAM == env.BITSTREAM + "_mv" and make_env("extended.json").BITSTREAM.endswith("_rq_mv_ov")
    assert "#define VTA_ALU_OPCODE_MOV 6" in isa.c_header(mov_only)
    assert "ALU_OPCODE_MOV" not in isa.c_header(env) and "ALU_OPCODE_REQ" not in isa.c_header(mov_only)
    insn = _alu(use_imm=1, imm=-2, uop_bgn=0, uop_end=1)
    assert isa.decode(isa.encode(insn, mov_only), mov_only) == insn
    assert "ALU - mov" in isa.disassemble(isa.encode_program([insn], mov_only), mov_only)
    assert "6 MOV" in isa.alu_opcodes_text(mov_only) and "5 REQ" not in isa.alu_opcodes_text(mov_only)


@pytest.mark.parametrize("config", ["default", "requant_only"])
def test_mov_refused_without_the_option(env, dram, engine, config):
    """A configuration without ALU_MOV refuses MOV in the encoder, the decoder, the stream check
    and fsim (both engines), each naming the option; one with only ALU_MOV refuses REQ likewise."""
    cfg = env if config == "default" else Environment(dict(load_config(), ALU_REQUANT=True))
    ext = make_env("extended.json")
    insn = _alu(use_imm=1, imm=3, uop_bgn=0, uop_end=1)
    with pytest.raises(EncodingError, match="ALU_MOV"):
        isa.encode(insn, cfg)
    with pytest.raises(DecodeError, match="ALU_MOV"):
        isa.decode(isa.encode(insn, ext), cfg)
    with pytest.raises(DecodeError, match="ALU_REQUANT"):
        isa.decode(isa.encode(isa.AluInsn(alu_opcode=isa.ALU_REQ, use_imm=1, imm=3), ext), _mov_only())
    with cfg, ProgramBuilder(cfg, dram) as prog:
        prog.uops([(0, 0, 0)], sram_base=0)
        at = prog.append(isa.AluInsn(alu_opcode=isa.ALU_MIN, use_imm=1, imm=3, uop_bgn=0, uop_end=1))
        prog.finish()
        addr, count = prog.build()
        # the encoder refuses MOV here, so write the extended encoding over the MIN in DRAM
        dram.write(addr + 16 * at, np.array(isa.encode_words(insn, ext), dtype="<u8").tobytes())
        words = np.frombuffer(dram.read(addr, 16 * count), dtype="<i8").reshape(-1, 2)
        with pytest.raises(InvalidInstructionError, match="ALU_MOV"):
            check_stream(cfg, words, None, [0, 0, 0, 0])
        with FunctionalSimulator(cfg, dram, engine=engine) as dev, \
                pytest.raises(InvalidInstructionError, match="ALU_MOV"):
            dev.run(addr, count)
