"""The per-instruction check rules both compiled passes share (vta.sim.rules), against fsim's own
checks: ``units.check_mem`` for the field checks, ``stream.check_stream`` for the token walk.
Plus the content-keyed cache directory of the compiled loops (vta.sim.numba_cache)."""

import numpy as np
import pytest

from vta import isa
from vta.dram import DRAM
from vta.env import Environment, load_config
from vta.errors import SimulationError
from vta.sim import numba_cache, rules
from vta.sim.fsim.units import check_mem
from vta.sim.stream import check_stream

from ..conftest import make_env


def _tables(env):
    depths = np.array([env.UOP_BUFF_DEPTH, env.WGT_BUFF_DEPTH, env.INP_BUFF_DEPTH, env.ACC_BUFF_DEPTH,
                       env.ACC_BUFF_DEPTH, env.ACC_BUFF_DEPTH], np.int64)
    elems = np.array([env.elem_bytes(isa.MEM_UOP), env.WGT_ELEM_BYTES, env.INP_ELEM_BYTES, env.ACC_ELEM_BYTES,
                      env.OUT_ELEM_BYTES, env.elem_bytes(isa.MEM_ACC_8BIT)], np.int64)
    return depths, elems


def test_suspect_agrees_with_check_mem(env):
    rng = np.random.default_rng(7)
    depths, elems = _tables(env)
    with DRAM(1 << 22) as dram:
        bufs = [dram.alloc(n) for n in (4096, 1 << 16, 300)]
        dram.free(bufs[1])  # a hole between two live allocations
        allocs = np.array(sorted((a, a + n) for a, n in dram.allocations()), np.int64)
        flagged = passed = 0
        for _ in range(3000):
            op = int(rng.integers(0, 2))
            mt = 4 if op == 1 and rng.random() < 0.8 else int(rng.choice([0, 1, 2, 3, 5] if op == 0 else range(6)))
            f = {"memory_type": mt, "sram_base": int(rng.integers(0, depths[mt] + 20)),
                 "y_size": int(rng.integers(0, 6)), "x_size": int(rng.integers(1, 40)),
                 "x_stride": int(rng.integers(0, 60)),
                 "dram_base": int(rng.choice([bufs[0], bufs[1], bufs[2], 0])) // 4 + int(rng.integers(0, 200))}
            for pad in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
                f[pad] = int(rng.integers(0, 3)) if rng.random() < 0.1 else 0
            try:
                check_mem(env, dram, 0, f, op)
                want = False
            except SimulationError:
                want = True
            got, hit = rules.suspect(op, f["memory_type"], f["sram_base"], f["dram_base"], f["y_size"], f["x_size"],
                                     f["x_stride"], f["y_pad_0"], f["y_pad_1"], f["x_pad_0"], f["x_pad_1"], depths,
                                     elems, allocs, int(rng.integers(0, allocs.shape[0])))
            assert got == want, f"op {op} fields {f}"
            assert 0 <= hit < allocs.shape[0]
            flagged += want
            passed += not want
        assert flagged > 200 and passed > 200  # both outcomes were exercised


def _word(op, pp=0, pn=0, up=0, un=0, mt=0, aop=0, env=None):
    lay = isa.layout(env)
    w = [0, 0]
    for fld, v in ((lay.header[0], op), (lay.field("mem", "pop_prev_dep"), pp), (lay.field("mem", "pop_next_dep"), pn),
                   (lay.field("mem", "push_prev_dep"), up), (lay.field("mem", "push_next_dep"), un)):
        w[fld.lo // 64] |= v << (fld.lo % 64)
    fld = lay.field("alu", "alu_opcode") if op == isa.OPCODE_ALU else lay.field("mem", "memory_type")
    w[fld.lo // 64] |= (aop if op == isa.OPCODE_ALU else mt) << (fld.lo % 64)
    return w


def _option_env(config):
    """The default configuration (None), a shipped file, or the default with only ``ALU_MOV`` on
    (``"mov_only"``: MOV accepted while REQ, the opcode below it, is refused)."""
    if config is None:
        return make_env()
    if config == "mov_only":
        return Environment(dict(load_config(), ALU_MOV=True))
    return make_env(config)


@pytest.mark.parametrize("config", [None, "extended.json", "mov_only"])
def test_token_step_agrees_with_check_stream(env, config):
    """Random short streams (ending in FINISH): the walk of token_step accepts exactly the streams
    check_stream accepts with the same outstanding tokens, and ends with its token counts; ALU
    opcode 5 (REQ) is valid with the option ALU_REQUANT only, 6 (MOV) with ALU_MOV only, 7 never."""
    env = _option_env(config)
    mask = rules.alu_mask(env)
    want = {op for op in range(5)} | ({isa.ALU_REQ} if env.ALU_REQUANT else set()) \
        | ({isa.ALU_MOV} if env.ALU_MOV else set())
    assert {op for op in range(8) if (mask >> op) & 1} == want
    rng = np.random.default_rng(11)
    seen = set()
    outcomes = set()
    for _ in range(1500):
        n = int(rng.integers(1, 7))
        rows = []
        for _ in range(n):
            op = int(rng.choice([0, 0, 1, 2, 4, 5]))
            flags = [int(rng.random() < 0.3) for _ in range(4)]
            rows.append((op, *flags, int(rng.choice([0, 1, 2, 3, 5, 6])), int(rng.choice([0, 2, 4, 5, 6, 7]))))
        rows.append((isa.OPCODE_FINISH, 0, 0, 0, 0, 0, 0))
        words = np.array([_word(*r, env=env) for r in rows], np.uint64).view(np.int64).reshape(-1, 2)
        tokens = [int(t) for t in rng.integers(0, 2, 4)]
        t, ok = list(tokens), True
        for op, pp, pn, up, un, mt, aop in rows:
            *t, ok = rules.token_step(op, pp, pn, up, un, mt, aop, mask, *t)
            if not ok:
                break
            if op == isa.OPCODE_ALU:
                seen.add(aop)
        try:
            lent, left = check_stream(env, words, None, tokens)
            accepted = True
        except SimulationError:
            accepted = False
        if ok:  # token_step never accepts what check_stream rejects, and counts the same tokens
            assert accepted, rows
            assert [a + b - c for a, b, c in zip(left, tokens, lent, strict=True)] == t, rows
        outcomes.add(ok)
    assert outcomes == {True, False}
    assert seen == want & {0, 2, 4, 5, 6}


def test_cache_path_is_keyed_by_every_compiled_source(tmp_path, monkeypatch):
    sources = []
    for name in ("rules.py", "kernels.py", "replay.py"):
        (tmp_path / name).write_text(f"# {name}\n")
        sources.append(tmp_path / name)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(numba_cache, "SOURCES", tuple(sources))
    paths = []
    for edit in (None, sources[0], sources[2]):
        if edit is not None:
            edit.write_text(edit.read_text() + "x = 1\n")
        monkeypatch.setattr(numba_cache, "_PATH", [])
        paths.append(numba_cache.cache_path())
    assert len(set(paths)) == 3
    assert all(p.startswith(str(tmp_path / "cache")) for p in paths)


def test_real_sources_exist():
    assert all(p.is_file() for p in numba_cache.SOURCES)
    assert {p.name for p in numba_cache.SOURCES} == {"numba_cache.py", "rules.py", "kernels.py", "replay.py", "loop.py"}


@pytest.mark.parametrize("name", ["_stretch", "_prepass", "_token_step", "_suspect", "_mm"])
def test_kernels_names_are_plain_module_functions(name):
    from vta.sim.fsim import kernels
    assert callable(getattr(kernels, name)) and not hasattr(getattr(kernels, name), "py_func")
