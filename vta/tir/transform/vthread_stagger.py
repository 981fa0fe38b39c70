"""Two virtual threads run one reduction step apart instead of in lock-step.

Used by :mod:`.inject_virtual_thread` for a virtual thread whose axis carries the pragma
:data:`STAGGER_PRAGMA` (the convolution schedule sets it on a 1x1 kernel with ``ALU_MOV``).
The lock-step expansion emits every per-thread statement for thread 0 then thread 1, so both
threads reach the end of a tile together: the next tile's first
compute instruction on thread 0's accumulator waits for thread 0's store while the compute unit
has only thread 1's epilogue to run. Staggered, thread 1 starts its tile one iteration of the
innermost reduction loop later::

    pre(0); B(0, k=0); pre(1)
    for k in 1..K-1: B(0, k) interleaved with B(1, k-1)
    post(0); B(1, K-1); post(1)

where the reduction loop ``for k in 0..K: B(k)`` is the one loop of a statement sequence that
holds co-processor scopes and no other such loop, ``pre`` the statements before it and ``post``
those after it, and the sequence sits in a loop over tiles or ``pre`` copies the bias with an ALU
MOV (with one tile per thread only the last store can overlap, which pays after the MOV's short
epilogue: ResNet-18 C10 1.0% fewer cycles, but not after a reset and a four-pass epilogue: 0.4%
more; measured on the cycle model). A store of one thread then overlaps a reduction step of the
other. Where ``pre`` and ``post`` touch no buffer the loads write, thread 0's first load of a
tile no longer waits for its ``pre`` (e.g. the bias copy): its credit is pushed right after
thread 1's last GEMM of the previous tile (one credit before everything, one drained after;
:func:`_load_credit`).

Each thread's code and buffers are what the lock-step expansion gives it; only the order in
which the two threads' statements are emitted changes. The dependency tokens (inserted before
this pass, per thread) pair by order on each channel, so the staggered order is kept only if
every channel's pushes and pops come from the threads in the same sequence and every pop
follows its push in program order (checked by expanding the loops); otherwise the lock-step
expansion is used.
"""

from __future__ import annotations

import dataclasses

from .. import nodes as n
from ..arith import as_const_int
from ..functor import substitute
from . import vthread_events as ve

__all__ = ["stagger_two_threads", "STAGGER_PRAGMA"]

#: The pragma (``s[stage].pragma(thread_axis, STAGGER_PRAGMA)``) asking for the staggered order.
STAGGER_PRAGMA = "vthread_stagger"


class _Expander:
    """Expand a rebased per-thread body (buffers already replicated) for two threads."""

    def __init__(self, var: n.Var):
        self.var = var
        self.staggered = 0
        #: Channels of thread 0's load credits carried from tile to tile (see _stagger).
        self.carried: list = []
        #: Loops (of more than one iteration) around the statement being expanded.
        self.tile_loops = 0

    def _one(self, stmt: n.Stmt, t: int, extra=None):
        vmap = {self.var: n.IntImm(t, self.var.dtype)}
        vmap.update(extra or {})
        return substitute(stmt, vmap), [(kind, chan, t) for kind, chan in ve.events(stmt)]

    def _pair(self, stmt: n.Stmt, maps=(None, None)):
        """Both threads' copies of one statement (``maps``: extra substitutions per thread), as
        the lock-step expansion writes them: a loop over the threads when it has a loop."""
        (s0, e0), (s1, e1) = self._one(stmt, 0, maps[0]), self._one(stmt, 1, maps[1])
        if not ve.has_loop(stmt):
            return n.seq(s0, s1), e0 + e1
        ts = n.Var(self.var.name + ".s", self.var.dtype)
        vmap = {self.var: ts}
        for key in set(maps[0] or {}) | set(maps[1] or {}):
            a, b = (maps[0] or {}).get(key, key), (maps[1] or {}).get(key, key)
            vmap[key] = a + (b - a) * ts
        loop = n.For(ts, n.IntImm(0, ts.dtype), n.IntImm(2, ts.dtype), n.ForKind.SERIAL, substitute(stmt, vmap))
        return loop, e0 + e1

    def expand(self, stmt: n.Stmt):
        if isinstance(stmt, n.SeqStmt):
            return self._seq(stmt)
        if isinstance(stmt, n.For) and not ve.uses(stmt.extent, self.var) and ve.has_scope(stmt.body):
            ext = as_const_int(stmt.extent)
            self.tile_loops += ext is None or ext > 1
            body, ev = self.expand(stmt.body)
            self.tile_loops -= ext is None or ext > 1
            if ev and (ext is None or len(ev) * ext > ve.MAX_EVENTS):
                raise ve.Unsupported("tokens in a loop of unknown or huge extent")
            return dataclasses.replace(stmt, body=body), ev * (ext or 0)
        if isinstance(stmt, n.Allocate) and not ve.uses(n.seq(*(n.Evaluate(e) for e in stmt.extents)), self.var):
            body, ev = self.expand(stmt.body)
            return dataclasses.replace(stmt, body=body), ev
        if (isinstance(stmt, n.AttrStmt) and stmt.attr_key not in ve.SCOPES and stmt.attr_key != "virtual_thread"
                and not ve.uses(stmt.value, self.var) and ve.has_scope(stmt.body)):
            body, ev = self.expand(stmt.body)
            return dataclasses.replace(stmt, body=body), ev
        return self._pair(stmt)

    def _seq(self, stmt: n.SeqStmt):
        loops = [i for i, c in enumerate(stmt.seq) if _is_reduction(c)]
        # with one tile per thread only the last store can overlap: worth it after a bias copy
        # (its epilogue is short), not after a reset and a longer epilogue (measured)
        if len(loops) == 1 and (self.tile_loops or ve.has_call(stmt.seq[:loops[0]], ve.MOV)):
            return self._stagger(stmt.seq[: loops[0]], stmt.seq[loops[0]], stmt.seq[loops[0] + 1:])
        out, ev = [], []
        for c in stmt.seq:
            s, e = self.expand(c)
            out.append(s)
            ev.extend(e)
        return n.seq(*out), ev

    def _stagger(self, pre, loop: n.For, post):
        k, ext = loop.loop_var, as_const_int(loop.extent)
        parts = list(loop.body.seq) if isinstance(loop.body, n.SeqStmt) else [loop.body]
        out, ev = [], []

        def emit(stmts, t, extra=None):
            for s in stmts:
                a, e = self._one(s, t, extra)
                out.append(a)
                ev.extend(e)

        chan = _load_credit(pre, loop, post)
        if chan is None:
            emit(pre, 0)
        else:
            # thread 0's first load of the tile takes the credit pushed after the previous
            # tile's last GEMM (below), not the one at the end of its bias copy
            last = pre[-1]
            emit([*pre[:-1], dataclasses.replace(last, body=n.seq(*last.body.seq[:-1]))], 0)
            self.carried.append(chan)
        emit([loop.body], 0, {k: n.IntImm(0, k.dtype)})
        emit(pre, 1)
        kk = n.Var(k.name + ".st", k.dtype)
        body, body_ev = [], []
        for p in parts:
            s, e = self._pair(p, ({k: kk + 1}, {k: kk}))
            body.append(s)
            body_ev.extend(e)
        out.append(n.For(kk, n.IntImm(0, kk.dtype), n.IntImm(ext - 1, kk.dtype), loop.kind, n.seq(*body)))
        ev.extend(body_ev * (ext - 1))
        emit(post, 0)
        emit([loop.body], 1, {k: n.IntImm(ext - 1, k.dtype)})
        if chan is not None:
            out.append(ve.token_stmt(ve.PUSH, chan))
            ev.append(("push", chan, 0))
        emit(post, 1)
        self.staggered += 1
        return n.seq(*out), ev


def _is_reduction(stmt: n.Stmt) -> bool:
    """A loop from 0 of constant extent >= 2 holding co-processor scopes but no loop that does."""
    if not isinstance(stmt, n.For) or as_const_int(stmt.min) != 0:
        return False
    ext = as_const_int(stmt.extent)
    if ext is None or ext < 2 or not ve.has_scope(stmt.body):
        return False
    inner = stmt.body.seq if isinstance(stmt.body, n.SeqStmt) else (stmt.body,)
    if not all(isinstance(p, n.AttrStmt) and p.attr_key in ve.SCOPES for p in inner):
        return False
    return True


def _load_credit(pre, loop: n.For, post):
    """The token channel (compute -> load) whose push at the end of ``pre``'s last scope is the
    credit of the loop's first load, when no statement of ``pre`` or ``post`` touches a buffer
    the loop's loads write (the credit then only needs the previous tile's reduction); else None."""
    first = loop.body.seq[0] if isinstance(loop.body, n.SeqStmt) else loop.body
    lq = ve.scope_queue(first)
    if lq is None:
        return None
    head = first.body.seq[0] if isinstance(first.body, n.SeqStmt) else first.body
    chan = ve.token(head, ve.POP)
    if chan is None or chan[1] != lq:
        return None
    scope = pre[-1] if pre else None
    if (ve.scope_queue(scope) != chan[0] or not isinstance(scope.body, n.SeqStmt)
            or ve.token(scope.body.seq[-1], ve.PUSH) != chan):
        return None
    loaded = set()
    for part in (loop.body.seq if isinstance(loop.body, n.SeqStmt) else (loop.body,)):
        if ve.scope_queue(part) == lq:
            loaded |= ve.buffers(part, written=True)
    others = list(pre) + list(post)
    if any(ve.scope_queue(c) == lq for c in others) or any(ve.buffers(c) & loaded for c in others):
        return None
    return chan


def stagger_two_threads(body: n.Stmt, var: n.Var) -> n.Stmt | None:
    """The staggered expansion (module docstring) of ``body``, one thread's code over ``var``
    with its buffers already replicated and rebased; ``None`` when no reduction loop is found,
    the body has a shape this expansion does not handle, or the tokens would not pair."""
    exp = _Expander(var)
    try:
        out, events = exp.expand(body)
    except ve.Unsupported:
        return None
    if not exp.staggered or ve.uses(out, var) or len(exp.carried) > 1:
        return None
    if exp.carried:
        # thread 0's first credit before everything, its last one drained after everything
        chan = exp.carried[0]
        wrap = []
        while isinstance(out, n.Allocate):
            wrap.append(out)
            out = out.body
        out = n.seq(ve.token_stmt(ve.PUSH, chan), out, ve.token_stmt(ve.POP, chan))
        for a in reversed(wrap):
            out = dataclasses.replace(a, body=out)
        events = [("push", chan, 0), *events, ("pop", chan, 0)]
    if not ve.tokens_consistent(events):
        return None
    return out
