"""ISA codec: the reference test vectors, round trips on every config, field overflow."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from vta import isa
from vta.errors import DecodeError, EncodingError

# ISA reference section 2.9 (default configuration).
VECTORS = [
    (isa.MemInsn(opcode=0, pop_next_dep=1, push_next_dep=1, memory_type=isa.MEM_INP, sram_base=0x12,
                 dram_base=0x345, y_size=4, x_size=4, x_stride=16, y_pad_0=1, y_pad_1=1, x_pad_0=1, x_pad_1=1),
     0x0000000D14004950, 0x1111001000040004),
    (isa.GemmInsn(pop_prev_dep=1, push_next_dep=1, uop_bgn=5, uop_end=21, iter_out=3, iter_in=7,
                  dst_factor_out=16, dst_factor_in=1, src_factor_out=32, src_factor_in=2,
                  wgt_factor_out=4, wgt_factor_in=1),
     0x000E001802A0054A, 0x0040400408000810),
    (isa.AluInsn(alu_opcode=isa.ALU_SHR, imm=-3, use_imm=1, uop_bgn=0, uop_end=1, iter_out=1, iter_in=8,
                 dst_factor_in=1, src_factor_in=1),
     0x0010000800200004, 0xFFFDB00200000800),
    (isa.FinishInsn(), 0x3, 0x0),
]


@pytest.mark.parametrize("insn, w0, w1", VECTORS)
def test_reference_vectors(env, insn, w0, w1):
    assert isa.encode_words(insn) == (w0, w1)
    assert isa.decode((w0, w1)) == insn
    assert isa.encode(insn) == (w0 | (w1 << 64)).to_bytes(16, "little")


def test_uop_vector(env):
    assert isa.encode_uop(isa.Uop(3, 5, 7)) == 0x01C02803
    assert isa.decode_uop(0x01C02803) == isa.Uop(3, 5, 7)


def test_decode_array_matches_scalar_decode(env):
    words = isa.encode_program([v[0] for v in VECTORS])
    cols = isa.decode_array(words)
    assert list(cols.header["opcode"]) == [0, 2, 4, 3]
    assert cols.mem["dram_base"][0] == 0x345 and cols.mem["x_pad_1"][0] == 1
    assert cols.gemm["wgt_factor_out"][1] == 4 and cols.gemm["uop_end"][1] == 21
    assert cols.alu["imm"][2] == -3 and cols.alu["use_imm"][2] == 1


def test_field_overflow_is_an_error(env):
    with pytest.raises(EncodingError, match="sram_base.*65536"):
        isa.encode(isa.MemInsn(sram_base=65536))
    with pytest.raises(EncodingError, match="imm"):
        isa.encode(isa.AluInsn(imm=40000))
    with pytest.raises(EncodingError, match="uop_bgn"):
        isa.encode(isa.GemmInsn(uop_bgn=1 << 13))
    with pytest.raises(EncodingError, match="wgt_idx"):
        isa.encode_uop(isa.Uop(0, 0, 1024))
    with pytest.raises(EncodingError, match="dst_factor_out"):
        isa.encode(isa.GemmInsn(dst_factor_out=-1))


def test_bad_opcode_and_types(env):
    with pytest.raises(DecodeError, match="opcode 5"):
        isa.decode((5, 0))
    with pytest.raises(DecodeError, match="memory_type 6"):
        isa.decode(((6 << 7), 0))
    with pytest.raises(DecodeError, match="alu_opcode 7"):
        isa.decode((4, 7 << (108 - 64)))


def _field_values(fields, draw):
    return {f.name: draw(st.integers(f.min, f.max)) for f in fields}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_round_trip_every_config(any_env, data):
    lay = isa.layout(any_env)
    kind = data.draw(st.sampled_from(["mem", "gemm", "alu"]))
    if kind == "mem":
        vals = _field_values(lay.mem[1:], data.draw)
        vals["memory_type"] = data.draw(st.integers(0, 5))
        insn = isa.MemInsn(opcode=data.draw(st.integers(0, 1)), **vals)
    elif kind == "gemm":
        insn = isa.GemmInsn(**_field_values(lay.gemm[1:], data.draw))
    else:
        vals = _field_values(lay.alu[1:], data.draw)
        vals["alu_opcode"] = data.draw(st.integers(0, 4))
        insn = isa.AluInsn(**vals)
    assert isa.decode(isa.encode(insn)) == insn
    uop = isa.Uop(**_field_values(lay.uop, data.draw))
    assert isa.decode_uop(isa.encode_uop(uop)) == uop


def test_layout_never_straddles_words(any_env):
    lay = isa.layout(any_env)
    for fields, word in ((lay.mem, 64), (lay.gemm, 64), (lay.alu, 64), (lay.uop, 32)):
        for f in fields:
            assert f.lo // word == f.hi // word, f


def test_c_header_layout_agrees_with_python(any_env, tmp_path):
    """Compile the generated header and let C's bit-field packing encode the vectors."""
    header = tmp_path / "hw_spec.h"
    header.write_text(isa.c_header(any_env))
    lay = isa.layout(any_env)
    gemm = isa.GemmInsn(**{f.name: (f.max // 3) for f in lay.gemm[1:]})
    alu = isa.AluInsn(**{f.name: (f.max // 5 if f.name != "alu_opcode" else 3) for f in lay.alu[1:]})
    mem = isa.MemInsn(**{f.name: (f.max // 7 if f.name != "memory_type" else 2) for f in lay.mem[1:]})
    src = ['#include <stdio.h>', '#include <string.h>', '#include "hw_spec.h"', "int main(void) {",
           "  VTAInsn i; unsigned long long w[2];"]
    for name, rec, member in (("gemm", gemm, "gemm"), ("alu", alu, "alu"), ("mem", mem, "mem")):
        src.append("  memset(&i, 0, sizeof i);")
        for f in getattr(lay, name):
            src.append(f"  i.{member}.{f.name} = {getattr(rec, f.name)}LL;")
        src.append('  memcpy(w, &i, 16); printf("%llx %llx\\n", w[0], w[1]);')
    src.append("  VTAUop u; u.dst_idx = 3; u.src_idx = 5; u.wgt_idx = 7; unsigned int x; memcpy(&x, &u, 4);")
    src.append('  printf("%x\\n", x); return 0; }')
    (tmp_path / "t.c").write_text("\n".join(src))
    exe = tmp_path / "t"
    subprocess.run(["cc", "-O0", "-o", str(exe), str(tmp_path / "t.c")], check=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    got = [(int(lines[k], 16), int(lines[k + 1], 16)) for k in (0, 2, 4)]
    assert got == [isa.encode_words(r) for r in (gemm, alu, mem)]
    assert int(lines[6], 16) == isa.encode_uop(isa.Uop(3, 5, 7))


def test_disassemble_format(env):
    text = isa.disassemble([v[0] for v in VECTORS])
    assert text.startswith("There are 4 instructions\n")
    assert "INSTRUCTION 0: LOAD INP" in text
    assert "\tDRAM: 0x00000345, SRAM:0x0012" in text
    assert "INSTRUCTION 1: GEMM" in text and "range (5, 21)" in text
    assert "INSTRUCTION 2: ALU - shr" in text
    assert "INSTRUCTION 3: FINISH" in text
    nop = isa.MemInsn(memory_type=isa.MEM_UOP, x_size=0, pop_prev_dep=1)
    assert "NOP-COMPUTE-STAGE" in isa.disassemble([nop])
    assert isa.disassemble(isa.encode_program([nop])) == isa.disassemble([nop])
