"""The hardware option ``ALU_REQUANT``: ALU opcode 5 (REQ) on fsim, both engines, against the
scalar oracle and the ``fixed`` requantisation; refused by every entry point without the option."""

from __future__ import annotations

import numpy as np
import pytest

from vta import isa
from vta.errors import DecodeError, EncodingError, InvalidInstructionError
from vta.sim.fsim import FunctionalSimulator
from vta.testing.programs import ProgramBuilder
from vta.topi.qnn_requant import Requant, requantize_np

from ..conftest import make_env
from .test_semantics import _compare


@pytest.fixture
def ext_env():
    """The extended configuration (every hardware option), made current."""
    with make_env("extended.json") as e:
        yield e


def _req_scalar(x: int, b: int, out_bits: int = 8) -> int:
    """REQ of one lane, written from the README's words with Python integers."""
    m, s = b & 0xFFFF, (b >> 16) & 63
    q = (x * m + (1 << s) // 2) // (1 << s)
    return max(-(1 << (out_bits - 1)), min((1 << (out_bits - 1)) - 1, q))


def _acc_values(rng, n):
    return np.where(rng.random(n) < 0.5, rng.integers(-3000, 3000, n),
                    rng.integers(-(1 << 31), 1 << 31, n)).astype("<i4")


def _operands(rng, n):
    """Packed REQ operands: multipliers over the whole 16 bits, shifts 0..63, random high bits."""
    m = rng.integers(0, 1 << 16, n)
    s = rng.integers(0, 64, n)
    junk = rng.integers(0, 1 << 9, n) << 22  # bits above the shift are ignored
    return ((m | (s << 16) | junk) & 0xFFFF_FFFF).astype(np.uint32).view("<i4")


@pytest.mark.parametrize("use_imm", [0, 1])
def test_req_against_oracle(ext_env, dram, use_imm, engine):
    """REQ chains (src = the previous dst: back-to-back dependencies), repeated destinations and
    edge immediates, against the scalar oracle; the oracle's REQ matches the formula above."""
    rng = np.random.default_rng(5 + use_imm)
    lanes = ext_env.BATCH * ext_env.BLOCK_OUT
    vals = np.concatenate([_acc_values(rng, 20 * lanes), _operands(rng, 20 * lanes)])
    imms = [-32768, -1, 0, 1, 12345, 32767]
    with ProgramBuilder(ext_env, dram) as prog:
        acc = prog.buffer(vals)
        prog.load(isa.MEM_ACC, 0, acc, 1, 40)
        prog.uops([(1, 20, 0), (9, 23, 0)], sram_base=0)
        for imm in imms:
            prog.append(isa.AluInsn(alu_opcode=isa.ALU_REQ, use_imm=use_imm, imm=imm, uop_bgn=0, uop_end=1,
                                    iter_out=2, iter_in=6, dst_factor_out=7, dst_factor_in=1,
                                    src_factor_out=7, src_factor_in=1))
            prog.append(isa.AluInsn(alu_opcode=isa.ALU_REQ, use_imm=use_imm, imm=imm, uop_bgn=0, uop_end=2,
                                    iter_out=1, iter_in=5, src_factor_in=2))
        prog.finish()
        _compare(ext_env, dram, prog, engine=engine)
    assert _req_scalar(-(1 << 31), 0xFFFF) == -128 and _req_scalar(3, 1 | (1 << 16)) == 2
    assert _req_scalar(-3, 1 | (1 << 16)) == -1 and _req_scalar(5, 7) == 35 and _req_scalar(-5, 7) == -35


def test_req_equals_fixed_requantisation(ext_env, dram, engine):
    """One REQ per row gives the ``fixed`` requantisation with its int8 clip bit for bit, per
    channel (one packed operand per lane), over the whole int32 range of the accumulator."""
    rng = np.random.default_rng(11)
    lanes = ext_env.BATCH * ext_env.BLOCK_OUT
    rows = 64
    scales = np.exp(rng.uniform(np.log(1e-6), np.log(100.0), lanes))
    rq = Requant.from_scale(scales, mode="fixed")
    x = _acc_values(rng, rows * lanes).reshape(rows, lanes)
    x[:4] = [[-(1 << 31)], [(1 << 31) - 1], [0], [-1]]
    ops = np.array([isa.req_operand(int(m), int(s)) for m, s in zip(rq.multiplier, rq.shift, strict=True)],
                   dtype="<i4")
    want = requantize_np(x, rq, axis=1)
    with ProgramBuilder(ext_env, dram) as prog:
        acc = prog.buffer(np.concatenate([x.reshape(-1), ops]))
        out = prog.buffer(nbytes=rows * ext_env.OUT_ELEM_BYTES)
        prog.load(isa.MEM_ACC, 0, acc, 1, rows + 1)
        prog.uops([(0, rows, 0)], sram_base=0)
        prog.append(isa.AluInsn(alu_opcode=isa.ALU_REQ, use_imm=0, uop_bgn=0, uop_end=1, iter_out=1,
                                iter_in=rows, dst_factor_in=1, src_factor_in=0))
        prog.store(0, out, 1, rows)
        prog.finish()
        prog.serialize()
        addr, count = prog.build()
        with FunctionalSimulator(ext_env, dram, engine=engine) as dev:
            dev.run(addr, count)
        got = np.frombuffer(dram.read(out, rows * ext_env.OUT_ELEM_BYTES), dtype=np.int8).reshape(rows, lanes)
    np.testing.assert_array_equal(got, want.astype(np.int8))


def test_req_refused_without_the_option(env, dram, engine):
    """The default configuration refuses REQ in fsim (both engines), in the encoder and in the
    decoder, each naming the option."""
    ext = make_env("extended.json")
    insn = isa.AluInsn(alu_opcode=isa.ALU_REQ, use_imm=1, imm=3, uop_bgn=0, uop_end=1)
    with pytest.raises(EncodingError, match="ALU_REQUANT"):
        isa.encode(insn, env)
    with pytest.raises(DecodeError, match="ALU_REQUANT"):
        isa.decode(isa.encode(insn, ext), env)
    assert "#define VTA_ALU_OPCODE_REQ 5" in isa.c_header(ext)
    assert "ALU_OPCODE_REQ" not in isa.c_header(env)
    with ProgramBuilder(env, dram) as prog:
        prog.uops([(0, 0, 0)], sram_base=0)
        words = isa.encode_words(insn, ext)
        at = prog.append(isa.AluInsn(alu_opcode=isa.ALU_MIN, use_imm=1, imm=3, uop_bgn=0, uop_end=1))
        prog.finish()
        addr, count = prog.build()
        # the encoder refuses REQ here, so write the extended encoding over the MIN in DRAM
        raw = np.array(words, dtype="<u8").tobytes()
        dram.write(addr + 16 * at, raw)
        with FunctionalSimulator(env, dram, engine=engine) as dev, \
                pytest.raises(InvalidInstructionError, match="ALU_REQUANT"):
            dev.run(addr, count)
