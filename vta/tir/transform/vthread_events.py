"""The dependency tokens and buffers of a virtual thread's statements, for the passes that reorder threads.

:mod:`.vthread_stagger` and :mod:`.vthread_rotate` emit the per-thread copies of a body in another order
than the lock-step expansion; both keep that order only if every token channel still pairs. This module
holds what both read: the token pushes and pops of a statement in program order with its loops expanded
(:func:`events`), the pairing check (:func:`tokens_consistent`), and which buffers a statement touches.
"""

from __future__ import annotations

from .. import nodes as n
from ..arith import as_const_int
from ..functor import post_order_visit

__all__ = ["PUSH", "POP", "SCOPES", "MOV", "MAX_EVENTS", "Unsupported", "uses", "has_scope", "has_call",
           "has_loop", "events", "tokens_consistent", "token_stmt", "token", "scope_queue", "buffers"]


PUSH = "tir.vta.coproc_dep_push"
POP = "tir.vta.coproc_dep_pop"
SCOPES = ("coproc_scope", "coproc_uop_scope")
MOV = "tir.vta.mov"
#: Most token events a check expands before giving up on reordering.
MAX_EVENTS = 1 << 20


class Unsupported(Exception):
    """The body has a shape a reordered expansion does not handle (use lock-step)."""


def uses(node, var: n.Var) -> bool:
    found = []

    def f(x):
        if x is var:
            found.append(x)

    post_order_visit(node, f)
    return bool(found)


def has_scope(stmt: n.Stmt) -> bool:
    found = []

    def f(x):
        if isinstance(x, n.AttrStmt) and x.attr_key in SCOPES:
            found.append(x)

    post_order_visit(stmt, f)
    return bool(found)


def has_call(stmts, op: str) -> bool:
    found = []

    def f(x):
        if isinstance(x, n.Call) and x.op == op:
            found.append(x)

    for s in stmts:
        post_order_visit(s, f)
    return bool(found)


def has_loop(stmt: n.Stmt) -> bool:
    found = []

    def f(x):
        if isinstance(x, n.For):
            found.append(x)

    post_order_visit(stmt, f)
    return bool(found)


def events(stmt: n.Stmt) -> list[tuple[str, tuple[int, int]]]:
    """Token pushes and pops of one thread's ``stmt`` in program order, loops expanded."""
    if isinstance(stmt, n.Evaluate):
        v = stmt.value
        if isinstance(v, n.Call) and v.op in (PUSH, POP):
            chan = tuple(as_const_int(a) for a in v.args)
            if None in chan:
                raise Unsupported("token with a non-constant queue")
            return [("push" if v.op == PUSH else "pop", chan)]
        return []
    if isinstance(stmt, n.SeqStmt):
        out = []
        for c in stmt.seq:
            out.extend(events(c))
        return out
    if isinstance(stmt, n.For):
        body = events(stmt.body)
        if not body:
            return []
        ext = as_const_int(stmt.extent)
        if ext is None or len(body) * ext > MAX_EVENTS:
            raise Unsupported("tokens in a loop of unknown or huge extent")
        return body * ext
    if isinstance(stmt, n.IfThenElse):
        if events(stmt.then_case) or (stmt.else_case is not None and events(stmt.else_case)):
            raise Unsupported("tokens under a condition")
        return []
    body = getattr(stmt, "body", None)
    return events(body) if isinstance(body, n.Stmt) else []


def tokens_consistent(events) -> bool:
    """Every channel's pushes and pops come from the threads in the same order, and each pop
    follows its push in program order."""
    pushes: dict = {}
    pops: dict = {}
    for kind, chan, t in events:
        if kind == "push":
            pushes.setdefault(chan, []).append(t)
        else:
            got = pops.setdefault(chan, [])
            seq = pushes.get(chan, [])
            if len(got) >= len(seq) or seq[len(got)] != t:
                return False
            got.append(t)
    return True


def token_stmt(op: str, chan) -> n.Evaluate:
    return n.Evaluate(n.Call("int32", op, tuple(n.IntImm(c) for c in chan)))


def token(stmt: n.Stmt, op: str):
    """The constant channel of a push/pop statement ``stmt`` (``op``), else None."""
    if isinstance(stmt, n.Evaluate) and isinstance(stmt.value, n.Call) and stmt.value.op == op:
        chan = tuple(as_const_int(a) for a in stmt.value.args)
        return None if None in chan else chan
    return None


def scope_queue(stmt: n.Stmt):
    if isinstance(stmt, n.AttrStmt) and stmt.attr_key == "coproc_scope":
        return as_const_int(stmt.value)
    return None


def buffers(stmt: n.Stmt, written: bool = False) -> set[int]:
    """Buffers ``stmt`` accesses (``written``: only those it writes)."""
    out: set[int] = set()

    def f(x):
        if isinstance(x, n.Call) and x.op == "tir.tvm_access_ptr" and isinstance(x.args[1], n.Var):
            if not written or (as_const_int(x.args[4]) or 0) & 2:
                out.add(id(x.args[1]))
        elif isinstance(x, n.Store):
            out.add(id(x.buffer_var))
        elif isinstance(x, n.Load) and not written:
            out.add(id(x.buffer_var))

    post_order_visit(stmt, f)
    return out
