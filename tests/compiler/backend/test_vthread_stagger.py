"""InjectVirtualThread's staggered order (pragma ``vthread_stagger``) on hand-built TIR.

The per-thread program mirrors a fused convolution's: per tile a bias copy (compute), a
reduction loop of loads (load unit) and GEMMs (compute), an epilogue (compute) and a store, with
the dependency tokens the token pass gives one thread. The expanded program is checked by a
scalar model written here: the three units run their instruction lists in order under many
random interleavings, a pop waiting for a token of its channel; every data dependency of each
thread must hold in every run, no run may deadlock, and no token may be left over.
"""

from __future__ import annotations

import random

import pytest

from vta.tir import nodes as n
from vta.tir.simplify import simplify
from vta.tir.functor import substitute
from vta.tir.transform.inject_virtual_thread import inject_virtual_thread
from vta.tir.transform.vthread_stagger import STAGGER_PRAGMA
from vta.transform._util import VTA_AXIS, call_extern, coproc_scope

from .helpers import alloc, func, loop

ACC, INP = "local.acc_buffer", "local.inp_buffer"
TILES, STEPS = 3, 4
WORK = ("mov", "load", "gemm", "alu", "store")


def _tok(op: str, a: int, b: int) -> n.Evaluate:
    return n.Evaluate(n.Call("int32", f"tir.vta.coproc_dep_{op}", (n.IntImm(a), n.IntImm(b))))


def _ptr(var, mask):
    return n.Call("handle", "tir.tvm_access_ptr",
                  (n.Call("int32", "tir.type_annotation"), var, n.IntImm(0), n.IntImm(64), n.IntImm(mask)))


def _work(name, *args):
    return n.Evaluate(call_extern("int32", name, *args))


def _program(mov_reads_inp: bool = False, stagger: bool = True, tiles: int = TILES) -> n.PrimFunc:
    """One thread's tiles (module docstring) under a two-thread ``cthread`` scope."""
    t, tile, k = n.Var("cthread"), n.Var("tile"), n.Var("k")
    acc, inp = n.Var("acc", "handle"), n.Var("inp", "handle")
    mov_args = (_ptr(acc, 3), _ptr(inp, 1)) if mov_reads_inp else (_ptr(acc, 3),)
    tile_body = n.seq(
        coproc_scope(VTA_AXIS, 2, n.seq(_tok("pop", 3, 2), _work("mov", *mov_args, t, tile), _tok("push", 2, 1))),
        loop(k, STEPS, n.seq(
            coproc_scope(VTA_AXIS, 1, n.seq(_tok("pop", 2, 1), _work("load", _ptr(inp, 2), t, tile, k),
                                            _tok("push", 1, 2))),
            coproc_scope(VTA_AXIS, 2, n.seq(_tok("pop", 1, 2), _work("gemm", _ptr(acc, 3), _ptr(inp, 1), t, tile, k),
                                            _tok("push", 2, 1))))),
        _tok("pop", 2, 1),
        coproc_scope(VTA_AXIS, 2, n.seq(_work("alu", _ptr(acc, 3), t, tile), _tok("push", 2, 3))),
        coproc_scope(VTA_AXIS, 3, n.seq(_tok("pop", 2, 3), _work("store", _ptr(acc, 1), t, tile), _tok("push", 3, 2))),
    )
    body = n.seq(_tok("push", 3, 2), loop(tile, tiles, tile_body), _tok("pop", 3, 2))
    vt = n.AttrStmt(t, "virtual_thread", n.IntImm(2), alloc(acc, "int32", 64, ACC, alloc(inp, "int8", 64, INP, body)))
    if stagger:
        vt = n.AttrStmt(t, "pragma_" + STAGGER_PRAGMA, n.IntImm(1), vt)
    return func(vt)


def _flatten(stmt: n.Stmt, env: dict, queue: int | None, out: dict) -> None:
    """Each unit's operations in program order: ("pop"/"push", channel) or (name, thread, tile, step)."""
    if isinstance(stmt, n.SeqStmt):
        for c in stmt.seq:
            _flatten(c, env, queue, out)
    elif isinstance(stmt, n.For):
        for i in range(stmt.extent.value):
            _flatten(stmt.body, {**env, stmt.loop_var: n.IntImm(i)}, queue, out)
    elif isinstance(stmt, n.AttrStmt):
        q = stmt.value.value if stmt.attr_key == "coproc_scope" else queue
        _flatten(stmt.body, env, q, out)
    elif isinstance(stmt, n.Allocate):
        _flatten(stmt.body, env, queue, out)
    elif isinstance(stmt, n.Evaluate):
        call = stmt.value
        if call.op.startswith("tir.vta.coproc_dep_"):
            kind = call.op.rsplit("_", 1)[1]
            chan = (call.args[0].value, call.args[1].value)
            unit = queue if queue is not None else (chan[0] if kind == "push" else chan[1])
            out.setdefault(unit, []).append((kind, chan))
        elif call.op == "tir.call_extern" and call.args[0].value in WORK:
            vals = [simplify(substitute(a, env)) for a in call.args[1:] if not isinstance(a, n.Call)]
            out.setdefault(queue, []).append((call.args[0].value, *(v.value for v in vals)))
    else:
        raise AssertionError(f"unexpected statement {type(stmt).__name__}")


def _units(f: n.PrimFunc) -> dict:
    out: dict = {}
    _flatten(f.body, {}, None, out)
    return out


def _run_random(units: dict, rng: random.Random) -> dict:
    """One random interleaving: the position at which each work item ran."""
    pc = {u: 0 for u in units}
    tokens: dict = {}
    when, step = {}, 0
    while True:
        ready = []
        for u, prog in units.items():
            if pc[u] < len(prog):
                op = prog[pc[u]]
                if op[0] != "pop" or tokens.get(op[1], 0) > 0:
                    ready.append(u)
        if not ready:
            break
        u = rng.choice(ready)
        op = units[u][pc[u]]
        pc[u] += 1
        if op[0] == "pop":
            tokens[op[1]] -= 1
        elif op[0] == "push":
            tokens[op[1]] = tokens.get(op[1], 0) + 1
        else:
            when[op] = step
        step += 1
    assert all(pc[u] == len(p) for u, p in units.items()), f"deadlock at {pc}"
    assert not any(tokens.values()), f"tokens left over: {tokens}"
    return when


def _check_dependencies(when: dict) -> None:
    """Each thread's data dependencies (the buffers are private to a thread)."""
    assert len(when) == 2 * TILES * (3 + 2 * STEPS)
    for t in range(2):
        for i in range(TILES):
            mov, alu, store = when[("mov", t, i)], when[("alu", t, i)], when[("store", t, i)]
            if i:
                assert when[("store", t, i - 1)] < mov, "the copy overwrote a tile not yet stored"
            for k in range(STEPS):
                load, gemm = when[("load", t, i, k)], when[("gemm", t, i, k)]
                assert load < gemm and mov < gemm, "GEMM before its operands"
                prev = ("gemm", t, i, k - 1) if k else ("gemm", t, i - 1, STEPS - 1) if i else None
                if prev:
                    assert when[prev] < load, "a load overwrote an input still being read"
            assert when[("gemm", t, i, STEPS - 1)] < alu < store


@pytest.mark.parametrize("stagger", [True, False])
def test_expanded_program_keeps_every_dependency(stagger):
    units = _units(inject_virtual_thread(_program(stagger=stagger)))
    rng = random.Random(7)
    for _ in range(300):
        _check_dependencies(_run_random(units, rng))


def test_staggered_order_thread_one_a_step_behind():
    compute = [op for op in _units(inject_virtual_thread(_program()))[2] if op[0] in WORK]
    first = [(op[0], op[1]) + ((op[3],) if op[0] == "gemm" else ()) for op in compute[:2 * STEPS + 4]]
    assert first == [("mov", 0), ("gemm", 0, 0), ("mov", 1), ("gemm", 0, 1), ("gemm", 1, 0), ("gemm", 0, 2),
                     ("gemm", 1, 1), ("gemm", 0, 3), ("gemm", 1, 2), ("alu", 0), ("gemm", 1, 3), ("alu", 1)]


@pytest.mark.parametrize("kw", [dict(stagger=False), dict(tiles=1)], ids=["no_pragma", "one_tile"])
def test_lock_step_without_the_pragma_or_with_one_tile(kw):
    compute = [op[:2] for op in _units(inject_virtual_thread(_program(**kw)))[2] if op[0] in WORK]
    assert compute[:4] == [("mov", 0), ("mov", 1), ("gemm", 0), ("gemm", 1)]


def _credit_before_copy(f: n.PrimFunc) -> bool:
    """Whether the compute unit pushes the first load's credit before its first bias copy."""
    prog = _units(f)[2]
    first_mov = next(i for i, op in enumerate(prog) if op[0] == "mov")
    return prog.index(("push", (2, 1))) < first_mov


def test_load_credit_carried_past_the_copy_only_when_safe():
    # the copy touches no loaded buffer: thread 0's credit comes from before the copy (the one
    # pushed before everything, then the one after the previous tile's last GEMM)
    assert _credit_before_copy(inject_virtual_thread(_program()))
    assert not _credit_before_copy(inject_virtual_thread(_program(stagger=False)))
    # a copy reading the input buffer keeps its credit after its work; still correct
    f = inject_virtual_thread(_program(mov_reads_inp=True))
    assert not _credit_before_copy(f)
    rng = random.Random(3)
    for _ in range(100):
        _check_dependencies(_run_random(_units(f), rng))
