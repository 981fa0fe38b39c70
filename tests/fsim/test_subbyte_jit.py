"""Sub-byte inputs, weights and outputs in fsim's compiled loop, against the NumPy engine and a scalar oracle.

With 1-, 2- or 4-bit elements (``LOG_INP_WIDTH`` / ``LOG_WGT_WIDTH`` of 0..2; outputs are stored
at the input width) several elements share a byte in DRAM: the first in the lowest bits, each
sign-extended when loaded. The compiled loop unpacks such LOADs and packs such STOREs itself
instead of deferring them to the NumPy opcode functions. These tests check, on the shipped
``narrow`` configuration and on sub-byte configurations built here:

* random valid streams give the same scratchpads, DRAM bytes and counters on both engines;
* hand-written loads (padding on all four sides, ``x_stride > x_size``) and multi-row stores
  give what a scalar model written here computes from the bytes, bit by bit;
* the compiled loop defers none of these (its deferral counter), still defers everything when
  the accumulator is narrower than 32 bits, and out-of-range instructions raise the same
  errors on both engines.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vta import isa
from vta.dram import DRAM
from vta.env import Environment, data_dir, load_config
from vta.errors import DRAMAccessError, InvalidInstructionError, SRAMIndexError
from vta.sim.fsim import FunctionalSimulator, jit
from vta.testing.programs import ProgramBuilder, random_program

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed")

#: Sub-byte configurations: (LOG_INP_WIDTH, LOG_WGT_WIDTH, LOG_BATCH, LOG_BLOCK, LOG_ACC_WIDTH).
#: "narrow" is the shipped file; the others are built by :func:`_make_env`.
CONFIGS = {
    "narrow": None,
    "i1w1": (0, 0, 0, 4, 5),
    "i2w2": (1, 1, 0, 4, 5),
    "i1w4": (0, 2, 0, 4, 5),
    "i4w1": (2, 0, 0, 4, 5),
    "i2w8": (1, 3, 0, 4, 5),
    "i8w2": (3, 1, 0, 4, 5),
    "i4w4_batch2": (2, 2, 1, 4, 5),
    "i1w2_block8": (0, 1, 0, 3, 5),
}


def _make_env(name: str) -> Environment:
    """The configuration ``name`` of :data:`CONFIGS` (buffer depths like narrow's: 2^11 inputs and
    accumulators, 2^10 weights, whatever the widths)."""
    if name == "narrow":
        return Environment(load_config(data_dir("configs") / "narrow.json"))
    li, lw, lb, lk, la = CONFIGS[name]
    cfg = load_config(data_dir("configs") / "narrow.json")
    cfg.update(LOG_INP_WIDTH=li, LOG_WGT_WIDTH=lw, LOG_BATCH=lb, LOG_BLOCK=lk, LOG_ACC_WIDTH=la,
               LOG_INP_BUFF_SIZE=11 + lb + lk + li - 3, LOG_WGT_BUFF_SIZE=10 + 2 * lk + lw - 3,
               LOG_ACC_BUFF_SIZE=11 + lb + lk + la - 3)
    return Environment(cfg)


@pytest.fixture(params=sorted(CONFIGS))
def sub_env(request):
    """Each sub-byte configuration in turn, made current for the test."""
    with _make_env(request.param) as e:
        yield e


@pytest.fixture
def narrow():
    """The shipped narrow configuration (4-bit inputs and weights), made current."""
    with _make_env("narrow") as e:
        yield e


# ---------------------------------------------------------------------- the scalar oracle
def oracle_unpack(raw: bytes, width: int, count: int) -> list[int]:
    """``count`` signed ``width``-bit values from ``raw``, bit by bit: value ``k`` takes bits
    ``k*width .. k*width + width - 1`` of the byte string read as one little-endian number."""
    vals = []
    for k in range(count):
        v = 0
        for b in range(width):
            bit = k * width + b
            v |= ((raw[bit // 8] >> (bit % 8)) & 1) << b
        vals.append(v - (1 << width) if v & (1 << (width - 1)) else v)
    return vals


def oracle_pack(vals: list[int], width: int) -> bytes:
    """The low ``width`` bits of each value, value ``k`` at bit ``k*width``, bit by bit."""
    out = bytearray(len(vals) * width // 8)
    for k, v in enumerate(vals):
        for b in range(width):
            bit = k * width + b
            out[bit // 8] |= ((v >> b) & 1) << (bit % 8)
    return bytes(out)


def test_oracle_on_literal_bytes():
    """The oracle itself, on bytes decoded by hand (low bits first, two's complement)."""
    assert oracle_unpack(b"\x9f", 4, 2) == [-1, -7]            # 0xF, 0x9
    assert oracle_unpack(b"\xe4", 2, 4) == [0, 1, -2, -1]      # 0b11_10_01_00
    assert oracle_unpack(b"\x05\x80", 1, 16) == [-1, 0, -1] + [0] * 12 + [-1]
    assert oracle_unpack(b"\x7f\x80", 8, 2) == [127, -128]
    assert oracle_pack([-1, 0, 1, -2], 2) == b"\x93"          # 3 | 0 << 2 | 1 << 4 | 2 << 6
    assert oracle_pack([0x1234567, -8], 4) == b"\x87"
    assert oracle_pack([1, 0, 0, 0, 0, 0, 0, -1], 1) == b"\x81"


# ---------------------------------------------------------------------- running both engines
def _arena(dram: DRAM) -> dict[int, bytes]:
    return {a: dram.read(a, n) for a, n in dram.allocations()}


def _restore(dram: DRAM, saved: dict[int, bytes]) -> None:
    for a, raw in saved.items():
        dram.write(a, raw)


def _state(dev: FunctionalSimulator) -> dict[str, np.ndarray]:
    sp = dev.sram
    return {"uop": np.stack([sp.uop_dst, sp.uop_src, sp.uop_wgt]), "inp": sp.inp.copy(), "wgt": sp.wgt.copy(),
            "acc": sp.acc.copy()}


def run_engines(env, dram, addr, count):
    """Run a stream on the compiled engine, then (from the same DRAM contents) on the NumPy
    engine; require every scratchpad, every byte of every live allocation and every counter to
    agree. Returns the compiled simulator (its DRAM results are in ``dram``)."""
    before = _arena(dram)
    runs = {}
    for engine in ("numpy", "jit"):
        _restore(dram, before)
        dev = FunctionalSimulator(env, dram, engine=engine)
        dev.run(addr, count)
        runs[engine] = (dev, _state(dev), _arena(dram), dev.stats())
    (_, s_np, d_np, c_np), (dev, s_jit, d_jit, c_jit) = runs["numpy"], runs["jit"]
    for name in s_np:
        np.testing.assert_array_equal(s_jit[name], s_np[name], err_msg=f"{name} buffer")
    for a in d_np:
        assert d_jit[a] == d_np[a], f"DRAM allocation at 0x{a:x}"
    assert c_jit == c_np
    return dev


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), length=st.integers(1, 16))
def test_random_streams_agree_with_numpy_engine(sub_env, dram, seed, length):
    """Random valid streams (loads with padding and strides, GEMM, ALU, stores of several rows)."""
    prog = random_program(sub_env, dram, seed, length=length, region=12)
    try:
        dev = run_engines(sub_env, dram, prog.insn_addr, prog.insn_count)
        assert dev._jit.deferred == 0  # every instruction ran in the compiled loop
    finally:
        prog.close()


# ---------------------------------------------------------------------- loads and stores by hand
def _fill(prog, rng, nbytes):
    return prog.buffer(rng.integers(0, 256, size=nbytes, dtype=np.uint8))


@pytest.mark.parametrize("mt", [isa.MEM_INP, isa.MEM_WGT])
def test_padded_strided_load_matches_scalar_oracle(sub_env, dram, mt):
    """A LOAD with padding on all four sides and ``x_stride > x_size`` over SRAM rows that hold
    other data: data elements unpacked and sign-extended, pads zero, nothing else touched."""
    env = sub_env
    rng = np.random.default_rng(5 + mt)
    elem = env.elem_bytes(mt)
    width = env.INP_WIDTH if mt == isa.MEM_INP else env.WGT_WIDTH
    lanes = env.BATCH * env.BLOCK_IN if mt == isa.MEM_INP else env.BLOCK_OUT * env.BLOCK_IN
    ys, xs, stride, pads = 3, 2, 5, (1, 2, 3, 1)         # (y_pad_0, y_pad_1, x_pad_0, x_pad_1)
    w, h = pads[2] + xs + pads[3], pads[0] + ys + pads[1]
    base, first = 3, 4                                  # SRAM row, first DRAM element
    with ProgramBuilder(env, dram) as prog:
        junk = _fill(prog, rng, (base + w * h + 4) * elem)
        src = _fill(prog, rng, (first + (ys - 1) * stride + xs) * elem)
        prog.load(mt, 0, junk, 1, base + w * h + 4)     # other data around and under the target
        prog.load(mt, base, src + first * elem, ys, xs, stride, pads)
        prog.finish()
        prog.serialize()
        addr, count = prog.build()
        raw = dram.read(src, (first + (ys - 1) * stride + xs) * elem)
        old = dram.read(junk, (base + w * h + 4) * elem)
        dev = run_engines(env, dram, addr, count)
    assert dev._jit.deferred == 0
    buf = (dev.sram.inp if mt == isa.MEM_INP else dev.sram.wgt).reshape(-1, lanes)
    for row in range(base + w * h + 4):
        yy, xx = divmod(row - base, w)
        if not base <= row < base + w * h:                  # outside the rectangle: untouched
            want = oracle_unpack(old[row * elem:(row + 1) * elem], width, lanes)
        elif pads[0] <= yy < pads[0] + ys and pads[2] <= xx < pads[2] + xs:
            e = first + (yy - pads[0]) * stride + (xx - pads[2])
            want = oracle_unpack(raw[e * elem:(e + 1) * elem], width, lanes)
        else:                                               # a pad
            want = [0] * lanes
        assert buf[row].tolist() == want, f"SRAM row {row}"


def test_multirow_store_matches_scalar_oracle(sub_env, dram):
    """A STORE of several rows with ``x_stride > x_size``: the low OUT_WIDTH bits of every lane
    packed, low bits first; the bytes between the rows keep their contents."""
    env = sub_env
    rng = np.random.default_rng(11)
    lanes = env.BATCH * env.BLOCK_OUT
    n_acc, ys, xs, stride, base, first = 12, 3, 3, 5, 2, 1
    acc_vals = rng.integers(-(1 << 31), 1 << 31, size=n_acc * lanes, dtype=np.int64)
    acc_vals[::3] = rng.integers(-9, 9, size=acc_vals[::3].size)  # small values too
    acc_vals = acc_vals.astype("<i4")
    e_out = env.OUT_ELEM_BYTES
    span = (first + (ys - 1) * stride + xs) * e_out
    with ProgramBuilder(env, dram) as prog:
        acc = prog.buffer(acc_vals)
        out = prog.buffer(np.full(span, 0xA5, dtype=np.uint8))
        prog.load(isa.MEM_ACC, 0, acc, 1, n_acc)
        prog.store(base, out + first * e_out, ys, xs, stride)
        prog.finish()
        prog.serialize()
        addr, count = prog.build()
        dev = run_engines(env, dram, addr, count)
        got = dram.read(out, span)
    assert dev._jit.deferred == 0
    want = bytearray(b"\xa5" * span)
    for y in range(ys):
        for x in range(xs):
            row = base + y * xs + x
            e = first + y * stride + x
            want[e * e_out:(e + 1) * e_out] = oracle_pack(acc_vals[row * lanes:(row + 1) * lanes].tolist(),
                                                          env.OUT_WIDTH)
    assert got == bytes(want)


def test_narrow_gemm_stream_runs_compiled(narrow, dram):
    """A small convolution-like stream on narrow (input loads, reset and GEMM, ALU, stores)
    defers nothing: the compiled loop runs its loads, GEMMs and stores."""
    env = narrow
    rng = np.random.default_rng(3)
    with ProgramBuilder(env, dram) as prog:
        inp = _fill(prog, rng, 16 * env.INP_ELEM_BYTES)
        wgt = _fill(prog, rng, 16 * env.WGT_ELEM_BYTES)
        out = prog.buffer(nbytes=16 * env.OUT_ELEM_BYTES)
        prog.load(isa.MEM_WGT, 0, wgt, 1, 16)
        prog.uops([(0, 0, 0)], sram_base=0)
        for g in range(6):
            prog.load(isa.MEM_INP, (g % 2) * 4, inp + (g % 4) * 4 * env.INP_ELEM_BYTES, 1, 4)
            prog.append(isa.GemmInsn(reset_reg=1, uop_bgn=0, uop_end=1, iter_out=4, dst_factor_out=1))
            prog.append(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=4, iter_in=4, dst_factor_out=1,
                                     src_factor_out=1, wgt_factor_in=1 + g % 3))
            prog.append(isa.AluInsn(alu_opcode=isa.ALU_SHR, use_imm=1, imm=2, uop_bgn=0, uop_end=1, iter_in=4,
                                    dst_factor_in=1, src_factor_in=1))
            prog.store(0, out + (g % 4) * 4 * env.OUT_ELEM_BYTES, 1, 4)
        prog.finish()
        prog.serialize()
        addr, count = prog.build()
        dev = run_engines(env, dram, addr, count)
        assert any(dram.read(out, 16 * env.OUT_ELEM_BYTES))  # real work was stored
    assert dev._jit.deferred == 0
    assert dev.stats()["gemm_counter"] == 6 * 16


def test_narrow_accumulator_is_still_deferred(dram):
    """Accumulators narrower than 32 bits stay with the NumPy path, every instruction of it."""
    cfg = load_config(data_dir("configs") / "narrow.json")
    cfg.update(LOG_ACC_WIDTH=4, LOG_ACC_BUFF_SIZE=11 + 4 + 4 - 3)
    with Environment(cfg) as env:
        prog = random_program(env, dram, 17, length=10, region=8)
        try:
            dev = run_engines(env, dram, prog.insn_addr, prog.insn_count)
            assert dev._jit.deferred == prog.insn_count
        finally:
            prog.close()


# ---------------------------------------------------------------------- errors
def _error_on_both(env, dram, build):
    """Build a stream, run it on both engines; return the two exceptions raised."""
    errors = {}
    with ProgramBuilder(env, dram) as prog:
        build(prog)
        addr, count = prog.build()
        for engine in ("numpy", "jit"):
            dev = FunctionalSimulator(env, dram, engine=engine)
            with pytest.raises((SRAMIndexError, DRAMAccessError, InvalidInstructionError)) as info:
                dev.run(addr, count)
            errors[engine] = info.value
    return errors["numpy"], errors["jit"]


def _bad_sram_load(env, prog):
    src = prog.buffer(nbytes=8 * env.INP_ELEM_BYTES)
    prog.load(isa.MEM_INP, env.INP_BUFF_DEPTH - 10, src, 2, 4, 4, (1, 1, 1, 1))  # 6x4 padded > 10 rows
    prog.finish()
    prog.serialize()


def _bad_dram_load(env, prog):
    src = prog.buffer(nbytes=8 * env.WGT_ELEM_BYTES)
    prog.load(isa.MEM_WGT, 0, src, 2, 4, 5)  # rows end at element 9 of 8
    prog.finish()
    prog.serialize()


def _bad_dram_store(env, prog):
    out = prog.buffer(nbytes=5 * env.OUT_ELEM_BYTES)
    prog.store(0, out, 2, 3)  # 6 elements into 5
    prog.finish()
    prog.serialize()


def _bad_sram_store(env, prog):
    out = prog.buffer(nbytes=8 * env.OUT_ELEM_BYTES)
    prog.store(env.ACC_BUFF_DEPTH - 2, out, 1, 4)
    prog.finish()
    prog.serialize()


def _bad_gemm(env, prog):
    src = prog.buffer(nbytes=4 * env.INP_ELEM_BYTES)
    prog.load(isa.MEM_INP, 0, src, 1, 4)
    prog.uops([(0, env.INP_BUFF_DEPTH - 2, 0)], sram_base=0)
    prog.append(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=3, src_factor_out=1))  # src runs past the buffer
    prog.finish()
    prog.serialize()


@pytest.mark.parametrize("build, kind", [(_bad_sram_load, SRAMIndexError), (_bad_dram_load, DRAMAccessError),
                                         (_bad_dram_store, DRAMAccessError), (_bad_sram_store, SRAMIndexError),
                                         (_bad_gemm, SRAMIndexError)],
                         ids=["load-sram", "load-dram", "store-dram", "store-sram", "gemm-src"])
def test_out_of_range_raises_the_same_error(sub_env, dram, build, kind):
    """Out-of-range loads, stores and GEMM indices raise the NumPy path's error on both engines."""
    ref, got = _error_on_both(sub_env, dram, lambda p: build(sub_env, p))
    assert type(ref) is kind and type(got) is kind
    assert str(got) == str(ref)
    assert got.insn_index == ref.insn_index
