"""Differential tests: the same programs on fsim (the executable spec) and tsim (the RTL).

Each program runs on fsim, its output regions are saved and cleared, then it runs on tsim; the
DRAM outputs must be byte-identical and so must the upstream statistics (and the per-opcode
instruction counts and tokens left over). Error programs must raise the same exception class
on both, naming the same instruction.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vta import isa
from vta.errors import (DeadlockError, DRAMAccessError, InvalidInstructionError, SimulationError,
                        SRAMIndexError, TokenOverflowError)
from vta.sim.device import STAT_KEYS

pytestmark = pytest.mark.verilator

#: Random programs per configuration, in chunks (one test per chunk, one device for all).
PROGRAMS_PER_CONFIG = 1000
CHUNK = 100
COMPARED_KEYS = STAT_KEYS + ("insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish", "insn_nop",
                             "tokens_l2g", "tokens_g2l", "tokens_g2s", "tokens_s2g")
_REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fsim_for():
    """``fsim_for(env, dram)`` -> one FunctionalSimulator per arena, reused by the module."""
    from vta.sim.fsim import FunctionalSimulator

    made = {}

    def get(env, dram):
        if id(dram) not in made:
            made[id(dram)] = FunctionalSimulator(env, dram)
        return made[id(dram)]

    yield get
    for dev in made.values():
        dev.close()


def _compare_run(env, dram, fsim, tsim, insn_addr, insn_count, outputs, what):
    """Run on both devices; return a description of the first difference, or None."""
    fsim.clear_stats()
    tsim.clear_stats()
    fsim.run(insn_addr, insn_count)
    want = [dram.read(a, n) for a, n in outputs]
    for a, n in outputs:
        dram.write(a, bytes(n))
    tsim.run(insn_addr, insn_count)
    got = [dram.read(a, n) for a, n in outputs]
    for k, (w, g) in enumerate(zip(want, got, strict=True)):
        if w != g:
            diff = np.nonzero(np.frombuffer(w, np.uint8) != np.frombuffer(g, np.uint8))[0]
            return f"{what}: output {k} differs in {diff.size} bytes, first at byte {diff[0]}"
    fs, ts = fsim.stats(), tsim.stats()
    bad = {key: (fs[key], ts[key]) for key in COMPARED_KEYS if fs[key] != ts[key]}
    return f"{what}: statistics (fsim, tsim) differ: {bad!r}" if bad else None


@pytest.mark.parametrize("chunk", range(PROGRAMS_PER_CONFIG // CHUNK))
def test_random_programs(tsim_setup, fsim_for, chunk):
    from vta.testing.programs import random_program

    env, dram, tsim = tsim_setup
    fsim = fsim_for(env, dram)
    failures = []
    for seed in range(chunk * CHUNK, (chunk + 1) * CHUNK):
        prog = random_program(env, dram, seed, length=int(8 + seed % 24))
        try:
            msg = _compare_run(env, dram, fsim, tsim, prog.insn_addr, prog.insn_count, prog.outputs,
                               f"seed {seed} ({prog.insn_count} instructions)")
        finally:
            prog.close()
        if msg:
            failures.append(msg)
    assert not failures, f"{len(failures)} of {CHUNK} programs differ:\n" + "\n".join(failures[:10])


def _pack_dirs():
    found = sorted(p.parent for p in (_REPO / "tests").glob("**/program.json")
                   if (p.parent / "regions.json").exists())
    return found


def test_program_packs(tsim_library, fsim_for, tmp_path):
    """Every program pack in the test tree, and demo packs (one through a saved file), agree."""
    from tests.conftest import make_env
    from vta.demo import build_demo_pack
    from vta.dram import DRAM
    from vta.pack import Pack
    from vta.sim.tsim import TSim

    from .conftest import CONFIGS

    packs = [(f"demo {name} seed {s}", build_demo_pack(make_env(name), seed=s)) for name in CONFIGS for s in range(3)]
    packs[0][1].save(tmp_path / "demo")
    packs.append(("saved demo", Pack.load(tmp_path / "demo")))
    packs += [(str(d.relative_to(_REPO)), Pack.load(d)) for d in _pack_dirs()]
    failures, ran = [], 0
    for name, pack in packs:
        env = pack.env
        try:
            lib = tsim_library(_config_name(env))
        except LookupError:
            continue  # a configuration the differential tests do not build
        with DRAM(1 << 28) as dram, TSim(env, dram, library=lib) as tsim:
            pack.install(dram)
            outputs = [(r.addr, r.size) for r in pack.regions if r.kind == "output"]
            msg = _compare_run(env, dram, fsim_for(env, dram), tsim, pack.insn_addr, pack.insn_count, outputs, name)
            if msg is None and pack.expected:
                bad = {k: v for k, v in pack.check(dram).items() if v}
                msg = f"{name}: tsim output differs from the pack's expected arrays: {bad!r}" if bad else None
            if msg:
                failures.append(msg)
            ran += 1
    assert ran >= 7, f"only {ran} packs ran"
    assert not failures, "\n".join(failures)


def _config_name(env) -> str:
    from tests.conftest import make_env

    from .conftest import CONFIGS

    for name in CONFIGS:
        if make_env(name).cfg_dict == {**env.cfg_dict, "TARGET": make_env(name).TARGET}:
            return name
    raise LookupError(env.MODEL)


# ------------------------------------------------------------------------------ error programs
def _error_programs(env, b):
    """(name, expected exception class, builder function) for each error program."""
    acc = env.ACC_BUFF_DEPTH
    cases = []

    def sram_load():  # a LOAD past the end of the input buffer
        src = b.buffer(nbytes=8 * env.INP_ELEM_BYTES)
        b.load(isa.MEM_INP, env.INP_BUFF_DEPTH - 2, src, 1, 4)
        b.nop(isa.STAGE_LOAD, push_next_dep=1)
        b.finish(pop_prev_dep=1)
    cases.append(("LOAD INP past the buffer end", SRAMIndexError, sram_load))

    def sram_gemm():  # a GEMM whose destination row reaches beyond the accumulator
        b.uops([isa.Uop(acc - 1, 0, 0)])
        b.append(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=2, iter_in=1, dst_factor_out=1))
        b.finish()
    cases.append(("GEMM dst past ACC depth", SRAMIndexError, sram_gemm))

    def sram_alu():
        b.uops([isa.Uop(0, acc - 1, 0)])
        b.append(isa.AluInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=3, src_factor_in=1, alu_opcode=isa.ALU_ADD))
        b.finish()
    cases.append(("ALU src past ACC depth", SRAMIndexError, sram_alu))

    def sram_uop():
        b.append(isa.GemmInsn(uop_bgn=env.UOP_BUFF_DEPTH - 1, uop_end=env.UOP_BUFF_DEPTH + 1, iter_out=1, iter_in=1))
        b.finish()
    cases.append(("GEMM uop range past the uop buffer", SRAMIndexError, sram_uop))

    def bad_alu_opcode():
        b.append(isa.AluInsn(uop_bgn=0, uop_end=1, alu_opcode=isa.ALU_ADD))
        b.finish()
    cases.append(("ALU opcode 6", InvalidInstructionError, bad_alu_opcode))

    def bad_opcode():
        b.append(isa.FinishInsn())
        b.finish()
    cases.append(("opcode 7", InvalidInstructionError, bad_opcode))

    def load_out():
        src = b.buffer(nbytes=4 * env.OUT_ELEM_BYTES)
        b.append(isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_OUT, dram_base=src // env.OUT_ELEM_BYTES,
                             y_size=1, x_size=1, x_stride=1))
        b.finish()
    cases.append(("LOAD of memory type OUT", InvalidInstructionError, load_out))

    def token_overflow():
        for _ in range(256):
            b.nop(isa.STAGE_STORE, push_prev_dep=1)
        b.finish()
    cases.append(("256 tokens on s2g", TokenOverflowError, token_overflow))

    def deadlock():
        b.finish(pop_prev_dep=1)  # waits for a load that never pushes
    cases.append(("pop without a push", DeadlockError, deadlock))

    def dram_error():
        src = b.buffer(nbytes=env.INP_ELEM_BYTES)
        b.load(isa.MEM_INP, 0, src, 1, 8, push_next_dep=1)
        b.finish(pop_prev_dep=1)
    cases.append(("LOAD past its allocation", DRAMAccessError, dram_error))
    return cases


#: Raw patches applied to the encoded stream after building (instruction index, field, value).
_PATCHES = {"ALU opcode 6": ("alu", "alu_opcode", 6, -2), "opcode 7": ("mem", "opcode", 7, -2)}


def _patch(env, words: np.ndarray, kind: str, field: str, value: int, index: int) -> None:
    lay = isa.layout(env)
    f = lay.field(kind, field)
    row = words.reshape(-1, 2)[index]
    word, lo = divmod(f.lo, 64)
    mask = ((1 << f.width) - 1) << lo
    row[word] = np.uint64((int(row[word]) & ~mask & ((1 << 64) - 1)) | (value << lo))


@pytest.mark.parametrize("config", ["vta_config.json", "batch2.json"])
def test_error_programs_raise_like_fsim(tsim_library, config):
    from tests.conftest import make_env
    from vta.dram import DRAM
    from vta.sim.fsim import FunctionalSimulator
    from vta.sim.tsim import TSim
    from vta.testing.programs import ProgramBuilder

    env = make_env(config)
    # check_streams=False: the RTL's own checks find the errors fsim rejects before running.
    with env, DRAM(1 << 26) as dram, TSim(env, dram, library=tsim_library(config), check_streams=False) as tsim, \
            FunctionalSimulator(env, dram) as fsim:  # noqa: E127
        names = [name for name, _, _ in _error_programs(env, ProgramBuilder(env, dram))]
        for k, name in enumerate(names):
            with ProgramBuilder(env, dram) as b:
                _, cls, make = _error_programs(env, b)[k]
                make()
                addr, count = b.build()
                if name in _PATCHES:
                    kind, field, value, index = _PATCHES[name]
                    words = dram.copy_out(addr, (count * 2,), np.uint64)
                    _patch(env, words, kind, field, value, index % count)
                    dram.write(addr, words)
                with pytest.raises(cls) as f_exc:
                    fsim.run(addr, count)
                with pytest.raises(cls) as t_exc:
                    tsim.run(addr, count)
                assert type(t_exc.value) is type(f_exc.value), name
                if cls is DeadlockError:  # the hung design is reported with its state
                    assert "compute: waiting for a token at instruction 0" in str(t_exc.value), str(t_exc.value)
                if f_exc.value.insn_index is not None and t_exc.value.insn_index is not None:
                    assert t_exc.value.insn_index == f_exc.value.insn_index, (name, str(t_exc.value))
                fsim.reset()
            # tsim still works after the error (it resets itself).
            with ProgramBuilder(env, dram) as ok:
                ok.finish()
                assert tsim.run(*ok.build()) == 0
            assert isinstance(t_exc.value, SimulationError)
