"""Malformed instruction streams for robustness tests: random valid programs, damaged on purpose.

Each kind of damage in :data:`KINDS` starts from :func:`vta.testing.programs.random_program` and
changes its encoded stream in one way a buggy compiler, a corrupted file or a hostile client
could. Some damaged streams still run to their end (an early FINISH, a token too many); every
other one must end in a specific :class:`vta.errors.SimulationError` on every level. The device
contract (:mod:`vta.sim.device`) says what state each leaves behind.

Examples
--------
>>> from vta.env import get_env
>>> from vta.dram import DRAM
>>> with DRAM(1 << 24) as dram:
...     prog = malformed_program(get_env(), dram, seed=3, kind="extra_push")
...     prog.insn_count > 0
True
"""

from __future__ import annotations

import numpy as np

from .. import isa
from ..dram import DRAM
from ..env import Environment
from .programs import RandomProgram, random_program

__all__ = ["KINDS", "malformed_program", "run_bad_then_good", "work_estimate"]

#: Kinds of damage and what each does to the stream.
KINDS = {
    "finish_mid": "a FINISH without token flags inserted mid-stream (instructions after FINISH)",
    "extra_push": "a push flag set on a random instruction (a token left over)",
    "drop_pop": "a pop flag cleared (a token left over; the stages may race)",
    "extra_pop": "a pop flag set on a random instruction (usually a deadlock)",
    "token_overflow": "256 pushes onto one channel",
    "sram_index": "an SRAM base or micro-op range beyond its buffer",
    "dram_address": "a LOAD or STORE whose DRAM range lies outside every allocation",
    "zero_extent": "x_size, y_size, a trip count or the micro-op range of one instruction set to 0",
    "huge_extent": "x_size, y_size, x_stride or a trip count set to its field's maximum",
    "bit_flip": "1 to 3 random bits flipped in 1 to 3 instructions",
    "random_insn": "one instruction replaced by 16 random bytes",
    "random_words": "the whole stream replaced by random bytes",
}

_PUSH = {isa.STAGE_LOAD: ("push_next_dep",), isa.STAGE_COMPUTE: ("push_prev_dep", "push_next_dep"),
         isa.STAGE_STORE: ("push_prev_dep",)}
_POP = {isa.STAGE_LOAD: ("pop_next_dep",), isa.STAGE_COMPUTE: ("pop_prev_dep", "pop_next_dep"),
        isa.STAGE_STORE: ("pop_prev_dep",)}


def malformed_program(env: Environment, dram: DRAM, seed: int, kind: str, *, length: int = 12) -> RandomProgram:
    """A random valid program damaged by ``kind`` (see :data:`KINDS`), placed in ``dram``.

    Parameters
    ----------
    env, dram : the configuration and the arena
    seed : int
        Chooses the program and the damage; the same seed gives the same stream.
    kind : str
        A key of :data:`KINDS`.
    length : int
        Body length of the underlying random program.

    Returns
    -------
    RandomProgram
        The damaged stream (``insn_addr``, ``insn_count``) and the program's output buffers;
        ``close()`` frees everything.

    Raises
    ------
    ValueError
        For an unknown ``kind``.
    AllocationError
        If the arena cannot hold the program.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind of damage {kind!r}; accepted {', '.join(KINDS)}")
    rng = np.random.default_rng([seed, list(KINDS).index(kind)])
    prog = random_program(env, dram, seed, length=length)
    try:
        raw = np.frombuffer(dram.read(prog.insn_addr, 16 * prog.insn_count), dtype="<u8").reshape(-1, 2).copy()
        words = _damage(env, dram, raw, rng, kind)
        prog.insn_addr = prog.builder.buffer(words)
        prog.insn_count = int(words.shape[0])
    except BaseException:
        prog.close()
        raise
    return prog


def work_estimate(env: Environment, words: np.ndarray) -> int:
    """Micro-op iterations plus elements moved by a stream: a bound on how long it can run.

    Parameters
    ----------
    env : Environment
    words : ndarray of shape (n, 2)
        The encoded stream.

    Returns
    -------
    int
    """
    cols = isa.decode_array(np.ascontiguousarray(words, dtype="<u8"), env)
    op = cols.header["opcode"].astype(np.int64)
    g, m = cols.gemm, cols.mem
    loops = (g["iter_out"].astype(np.int64) * g["iter_in"]
             * np.maximum(g["uop_end"].astype(np.int64) - g["uop_bgn"], 0))
    moved = ((m["y_pad_0"].astype(np.int64) + m["y_size"] + m["y_pad_1"])
             * (m["x_pad_0"].astype(np.int64) + m["x_size"] + m["x_pad_1"]))
    compute = (op == isa.OPCODE_GEMM) | (op == isa.OPCODE_ALU)
    memory = (op == isa.OPCODE_LOAD) | (op == isa.OPCODE_STORE)
    return int(loops[compute].sum() + moved[memory].sum())


# ------------------------------------------------------------------------------ damage
def _damage(env: Environment, dram: DRAM, raw: np.ndarray, rng: np.random.Generator, kind: str) -> np.ndarray:
    insns = isa.decode_program(raw, env)
    n = len(insns)
    if kind == "random_words":
        count = int(rng.integers(1, 2 * n + 2))
        return rng.integers(0, 1 << 64, size=(count, 2), dtype=np.uint64).astype("<u8")
    if kind in ("bit_flip", "random_insn"):
        out = raw.copy()
        if kind == "random_insn":
            out[int(rng.integers(0, n))] = rng.integers(0, 1 << 64, size=2, dtype=np.uint64)
            return out
        for _ in range(int(rng.integers(1, 4))):
            i, bits = int(rng.integers(0, n)), int(rng.integers(1, 4))
            for b in rng.choice(128, size=bits, replace=False):
                out[i, int(b) // 64] ^= np.uint64(1 << (int(b) % 64))
        return out
    if kind == "finish_mid":
        insns.insert(int(rng.integers(1, n)), isa.FinishInsn())
    elif kind in ("extra_push", "extra_pop"):
        table = _PUSH if kind == "extra_push" else _POP
        i = int(rng.integers(0, n))
        insns[i] = isa.replace(insns[i], **{str(rng.choice(table[isa.stage_of(insns[i])])): 1})
    elif kind == "drop_pop":
        cands = [i for i, x in enumerate(insns) if x.pop_prev_dep or x.pop_next_dep]
        i = int(rng.choice(cands))
        insns[i] = isa.replace(insns[i], pop_prev_dep=0, pop_next_dep=0)
    elif kind == "token_overflow":
        stage = int(rng.integers(1, 4))
        flag = str(rng.choice(_PUSH[stage]))
        nop = isa.MemInsn(opcode=isa.OPCODE_STORE if stage == isa.STAGE_STORE else isa.OPCODE_LOAD,
                          memory_type=isa.MEM_INP if stage == isa.STAGE_LOAD else isa.MEM_UOP, **{flag: 1})
        at = int(rng.integers(0, n))
        insns[at:at] = [nop] * 256
    elif kind == "sram_index":
        i = _pick(insns, rng, lambda x: not isinstance(x, isa.FinishInsn) and _has_work(x))
        insns[i] = _sram_out_of_range(env, insns[i], rng)
    elif kind == "dram_address":
        i = _pick(insns, rng, lambda x: isinstance(x, isa.MemInsn) and x.x_size > 0 and x.y_size > 0)
        insns[i] = _dram_out_of_range(env, dram, insns[i], rng)
    elif kind in ("zero_extent", "huge_extent"):
        i = _pick(insns, rng, lambda x: not isinstance(x, isa.FinishInsn))
        insns[i] = _extent(env, insns[i], rng, huge=kind == "huge_extent")
    return isa.encode_program(insns, env).astype("<u8")


def _pick(insns, rng, ok) -> int:
    cands = [i for i, x in enumerate(insns) if ok(x)]
    return int(rng.choice(cands)) if cands else int(rng.integers(0, len(insns)))


def _has_work(x) -> bool:
    return x.x_size > 0 if isinstance(x, isa.MemInsn) else True


def _max(env: Environment, insn, name: str) -> int:
    lay = isa.layout(env)
    fields = lay.mem if isinstance(insn, isa.MemInsn) else lay.gemm if isinstance(insn, isa.GemmInsn) else lay.alu
    return (1 << next(f.width for f in fields if f.name == name)) - 1


def _sram_out_of_range(env: Environment, insn, rng):
    if isinstance(insn, isa.MemInsn):
        depth = {isa.MEM_UOP: env.UOP_BUFF_DEPTH, isa.MEM_WGT: env.WGT_BUFF_DEPTH, isa.MEM_INP: env.INP_BUFF_DEPTH,
                 isa.MEM_ACC: env.ACC_BUFF_DEPTH, isa.MEM_ACC_8BIT: env.ACC_BUFF_DEPTH,
                 isa.MEM_OUT: env.ACC_BUFF_DEPTH}.get(insn.memory_type, env.ACC_BUFF_DEPTH)
        top = _max(env, insn, "sram_base")
        return isa.replace(insn, sram_base=int(rng.integers(max(depth - 1, 0), top + 1)))
    if isinstance(insn, (isa.GemmInsn, isa.AluInsn)):
        if rng.random() < 0.5:  # the micro-op range leaves the uop buffer
            end = int(rng.integers(env.UOP_BUFF_DEPTH + 1, _max(env, insn, "uop_end") + 1))
            return isa.replace(insn, uop_bgn=min(insn.uop_bgn, env.UOP_BUFF_DEPTH - 1), uop_end=end)
        # a destination stride that walks off the accumulator
        return isa.replace(insn, iter_out=max(insn.iter_out, 2), uop_end=max(insn.uop_end, insn.uop_bgn + 1),
                           iter_in=max(insn.iter_in, 1), dst_factor_out=_max(env, insn, "dst_factor_out"))
    return insn


def _dram_out_of_range(env: Environment, dram: DRAM, insn, rng):
    elem = env.elem_bytes(insn.memory_type) if insn.memory_type in isa.MEM_NAMES else 1
    top = _max(env, insn, "dram_base")
    choice = int(rng.integers(0, 3))
    if choice == 0:
        base = 0  # page 0 is never valid
    elif choice == 1:
        base = int(rng.integers(dram.capacity // max(elem, 1), top + 1)) if dram.capacity // elem <= top else top
    else:  # just past the end of the allocation it pointed into
        found = dram.find(insn.dram_base * elem)
        base = (found[0] + found[1]) // elem if found else top
        base = max(base - insn.x_size + 1, 0)
    return isa.replace(insn, dram_base=min(base, top))


def _extent(env: Environment, insn, rng, *, huge: bool):
    if isinstance(insn, isa.MemInsn):
        name = str(rng.choice(["x_size", "y_size", "x_stride"] if huge else ["x_size", "y_size"]))
    else:
        name = str(rng.choice(["iter_out", "iter_in"] if huge else ["iter_out", "iter_in", "uop_end"]))
    if not huge:
        value = insn.uop_bgn if name == "uop_end" else 0
        return isa.replace(insn, **{name: value})
    changes = {name: _max(env, insn, name)}
    if not isinstance(insn, isa.MemInsn):
        # keep the index walk in the instruction so that it leaves the buffer, not runs for hours
        changes["dst_factor_out" if name == "iter_out" else "dst_factor_in"] = max(
            getattr(insn, "dst_factor_out" if name == "iter_out" else "dst_factor_in"), 1)
        changes["uop_end"] = max(insn.uop_end, insn.uop_bgn + 1)
    return isa.replace(insn, **changes)


def run_bad_then_good(dev, env: Environment, dram: DRAM, seed: int, kind: str) -> dict:
    """On one device: a stream damaged by ``kind``, then a valid program; report both.

    Parameters
    ----------
    dev : Device
        Any level; it keeps whatever state the damaged stream leaves.
    env, dram : the configuration and the arena ``dev`` is bound to
    seed : int
        Seed of the damaged stream (the valid program uses ``seed + 500_000``).
    kind : str
        A key of :data:`KINDS`.

    Returns
    -------
    dict
        ``outcome``: ``"ran"`` or the :class:`vta.errors.VTAError` subclass name the damaged
        stream raised; ``stats``: the device's statistics right after it (counters cleared
        before it); ``good``: ``"correct"``, ``"wrong"`` or the error the valid program raised,
        its outputs compared with those of a fresh fsim.
    """
    from ..errors import VTAError
    from ..sim.fsim import FunctionalSimulator

    bad = malformed_program(env, dram, seed, kind)
    dev.clear_stats()
    try:
        dev.run(bad.insn_addr, bad.insn_count)
        outcome = "ran"
    except VTAError as exc:
        outcome = type(exc).__name__
    finally:
        bad.close()
    stats = dev.stats()
    good = random_program(env, dram, seed + 500_000, length=12)
    try:
        with FunctionalSimulator(env, dram) as fresh:
            fresh.run(good.insn_addr, good.insn_count)
        want = good.read_outputs()
        good.clear_outputs()
        try:
            dev.run(good.insn_addr, good.insn_count)
            result = "correct" if good.read_outputs() == want else "wrong"
        except VTAError as exc:
            result = type(exc).__name__
    finally:
        good.close()
    return {"outcome": outcome, "stats": stats, "good": result}
