"""Virtual threads whose tile epilogues run one thread behind their GEMMs ("rotated" threads).

Used by :mod:`.inject_virtual_thread` for a virtual thread whose axis carries the pragma
:data:`ROTATE_PRAGMA` (the convolution schedule sets it on a convolution whose whole reduction
is one step, on a configuration with ``ALU_MOV`` and ``COMPUTE_OVERLAP``). Each thread's body
is a prologue, one loop nest over output tiles and an epilogue; the tile body splits into a
*head* (bias copy, input load, GEMM) and a *tail* (the ALU epilogue, the store). The lock-step
expansion emits every statement for all threads in turn, so the compute unit's in-order queue
meets the epilogue of thread ``t`` before the GEMM of thread ``t + 1``, and at each tile the
first thread's bias copy waits behind the last thread's epilogue. Rotated, the ``N`` threads'
statements come in the order::

    prologue credits of every thread
    tile 0:       W(0) H(0, 0) W(1) H(1, 0) T(0, 0) ... W(N-1) H(N-1, 0) T(N-2, 0)
    tile f >= 1:  H(0, f) T(N-1, f-1) H(1, f) T(0, f) ... H(N-1, f) T(N-2, f)
    after:        T(N-1, last), epilogues, credits drained

(``H``/``T`` head and tail, ``W`` a thread's weight load from its prologue), so the ALU
epilogue of one thread (on the compute unit's second lane with ``COMPUTE_OVERLAP``) and its
store run while the next thread's GEMM runs, and no tile boundary drains the GEMM lane.

Each thread runs exactly its own code in its own order; only the interleaving of the threads
changes, with two token rewrites that keep every dependency:

* the prologue's weight load (a load-queue scope ending with a push to the compute queue,
  popped right after) loses that push and pop: every GEMM that reads the weights first pops the
  token of an input load queued after the weight load on the same in-order load queue;
* when the tile's first statement (the bias copy) ends with the credit of the input load and
  touches none of the buffers the load writes (nor does the tail), the credit is pushed after the
  thread's GEMM instead (the load's buffer is free once that GEMM is done), with one credit per
  thread before everything and one drained after (as :mod:`.vthread_stagger` does for two).

The dependency tokens pair by order on each channel, so the rotated order is kept only if every
channel's pushes and pops come from the threads in the same sequence and every pop follows its
push in program order (checked by expanding the loops); otherwise the caller falls back.
"""

from __future__ import annotations

import dataclasses

from .. import nodes as n
from ..arith import as_const_int
from ..functor import post_order_visit, substitute
from . import vthread_events as ve

__all__ = ["rotate_threads", "hoist_shared_pops", "ROTATE_PRAGMA"]

#: The pragma (``s[stage].pragma(thread_axis, ROTATE_PRAGMA)``) asking for the rotated order.
ROTATE_PRAGMA = "vthread_rotate"

_LOAD_Q, _COMPUTE_Q = 1, 2
_GEMM_KERNEL = "VTAPushGEMMOp"


class _Unsupported(Exception):
    """The body has a shape the rotated expansion does not handle."""


def _has_gemm(stmt: n.Stmt) -> bool:
    found = []

    def f(x):
        if (isinstance(x, n.AttrStmt) and x.attr_key == "coproc_uop_scope"
                and isinstance(x.value, n.StringImm) and x.value.value == _GEMM_KERNEL):
            found.append(x)

    post_order_visit(stmt, f)
    return bool(found)


def _seq(stmt: n.Stmt) -> list:
    return list(stmt.seq) if isinstance(stmt, n.SeqStmt) else [stmt]


def _scope(like: n.AttrStmt, stmts: list) -> n.AttrStmt:
    return dataclasses.replace(like, body=n.seq(*stmts))


@dataclasses.dataclass
class _Parts:
    """One thread's body cut into the pieces the rotated order emits."""

    front: list            # token statements of the prologue, emitted for all threads first
    lazy: list             # the prologue's weight loads, emitted before the thread's first head
    shared: list           # pops of the shared weights' token, emitted for the first thread only
    loops: list            # the tile loop nest, outermost first
    head: list
    tail: list
    post: list             # statements after the loop nest
    credit: tuple | None   # the input load's credit channel when moved behind the GEMM


def _split_prologue(pre: list) -> tuple[list, list, list]:
    """``(front, lazy, shared)``: token pushes, weight loads whose push is popped right after,
    and pops of the compute queue from the load queue whose push precedes the threads (the
    weights the threads share)."""
    front, lazy, shared = [], [], []
    i = 0
    while i < len(pre):
        s = pre[i]
        if ve.token(s, ve.PUSH) is not None:
            front.append(s)
            i += 1
            continue
        if ve.scope_queue(s) == _LOAD_Q and i + 1 < len(pre):
            body = _seq(s.body)
            chan = ve.token(body[-1], ve.PUSH)
            if chan == (_LOAD_Q, _COMPUTE_Q) and ve.token(pre[i + 1], ve.POP) == chan and len(body) > 1:
                lazy.append(_scope(s, body[:-1]))
                i += 2
                continue
        if ve.token(s, ve.POP) == (_LOAD_Q, _COMPUTE_Q) and not lazy:
            shared.append(s)
            i += 1
            continue
        raise _Unsupported("a prologue statement that is neither a token push nor a weight load")
    return front, lazy, shared


def _tile_nest(loop: n.For) -> tuple[list, list]:
    """The perfect loop nest over tiles from ``loop`` and the innermost body's statements."""
    loops = [loop]
    while isinstance(loops[-1].body, n.For) and ve.has_scope(loops[-1].body):
        loops.append(loops[-1].body)
    for lp in loops:
        if as_const_int(lp.min) != 0 or as_const_int(lp.extent) is None or as_const_int(lp.extent) < 1:
            raise _Unsupported("a tile loop of non-constant extent or not starting at 0")
    body = _seq(loops[-1].body)
    if not all(isinstance(s, n.AttrStmt) and s.attr_key == "coproc_scope" for s in body):
        raise _Unsupported("a tile body that is not a sequence of queue scopes")
    return loops, body


def _split_tile(body: list) -> tuple[list, list]:
    """``(head, tail)``: up to the last GEMM (its scope cut after it), and the rest."""
    g = max((i for i, s in enumerate(body) if _has_gemm(s)), default=None)
    if g is None:
        raise _Unsupported("no GEMM in the tile body")
    scope = body[g]
    inner = _seq(scope.body)
    p = max(i for i, s in enumerate(inner) if _has_gemm(s))
    head = body[:g] + [_scope(scope, inner[:p + 1])]
    rest = inner[p + 1:]
    tail = ([_scope(scope, rest)] if rest else []) + body[g + 1:]
    if not tail or ve.scope_queue(head[-1]) != _COMPUTE_Q:
        raise _Unsupported("nothing after the GEMM, or the GEMM outside the compute queue")
    return head, tail


def _move_credit(head: list, tail: list):
    """Push the input load's credit after the GEMM instead of at the end of the head's first
    scope when that is safe (module docstring); ``(head, channel)`` or ``(head, None)``."""
    first = head[0]
    loads = [i for i, s in enumerate(head) if ve.scope_queue(s) == _LOAD_Q]
    if ve.scope_queue(first) != _COMPUTE_Q or len(loads) != 1:
        return head, None
    load = head[loads[0]]
    fbody, lbody = _seq(first.body), _seq(load.body)
    chan = ve.token(fbody[-1], ve.PUSH)
    if chan != (_COMPUTE_Q, _LOAD_Q) or ve.token(lbody[0], ve.POP) != chan:
        return head, None
    written = ve.buffers(load, written=True)
    others = [first] + tail + [s for i, s in enumerate(head) if i not in (0, loads[0])][:-1]
    if any(ve.buffers(s) & written for s in others):
        return head, None
    gemm = head[-1]
    new = [_scope(first, fbody[:-1])] + head[1:-1] + [_scope(gemm, _seq(gemm.body) + [ve.token_stmt(ve.PUSH, chan)])]
    return new, chan


def _input_token_before_gemm(head: list) -> bool:
    """Whether the GEMM scope first pops a token that a load scope of the head pushes last
    (then it also follows every earlier load, such as the prologue's weights)."""
    chan = (_LOAD_Q, _COMPUTE_Q)
    pushed = any(ve.scope_queue(s) == _LOAD_Q and ve.token(_seq(s.body)[-1], ve.PUSH) == chan for s in head[:-1])
    return pushed and ve.token(_seq(head[-1].body)[0], ve.POP) == chan


def _parts(body: n.Stmt) -> _Parts:
    items = _seq(body)
    at = [i for i, s in enumerate(items) if isinstance(s, n.For) and ve.has_scope(s)]
    if len(at) != 1:
        raise _Unsupported("not exactly one tile loop")
    pre, post = items[:at[0]], items[at[0] + 1:]
    front, lazy, shared = _split_prologue(pre)
    if any(ve.has_scope(s) for s in post):
        raise _Unsupported("queue work after the tile loop")
    loops, tile = _tile_nest(items[at[0]])
    head, tail = _split_tile(tile)
    if (lazy or shared) and not _input_token_before_gemm(head):
        raise _Unsupported("the weight load's token cannot be dropped")
    head, credit = _move_credit(head, tail)
    return _Parts(front, lazy, shared, loops, head, tail, post, credit)


class _Emitter:
    """Accumulates the rotated statements and their token events (loops expanded)."""

    def __init__(self, var: n.Var):
        self.var = var
        self.out: list = []
        self.events: list = []

    def emit(self, stmts, t: int, vmap: dict | None = None, out=None, events=None):
        out = self.out if out is None else out
        events = self.events if events is None else events
        m = {self.var: n.IntImm(t, self.var.dtype)}
        m.update(vmap or {})
        for s in stmts:
            out.append(substitute(s, m))
            events.extend((kind, chan, t) for kind, chan in ve.events(s))


def _tile_vars(loops: list, f: n.PrimExpr) -> dict:
    """The nest's loop variables at flat tile index ``f`` (outermost loop slowest)."""
    vmap, stride = {}, 1
    for lp in reversed(loops):
        ext = as_const_int(lp.extent)
        v = f if stride == 1 else n.FloorDiv(f, n.IntImm(stride, f.dtype))
        if lp is not loops[0]:
            v = n.FloorMod(v, n.IntImm(ext, f.dtype))
        if isinstance(f, n.IntImm):
            v = n.IntImm((f.value // stride) % ext, f.dtype)
        vmap[lp.loop_var] = v
        stride *= ext
    return vmap


def _rotate(body: n.Stmt, var: n.Var, num: int) -> tuple[n.Stmt, list]:
    # with three threads or more a tail waits for the next thread's GEMM to be queued (its
    # micro-op load then never queues behind the epilogue); with two it follows its own GEMM
    delay = num > 2
    p = _parts(body)
    if (len(p.head) < 2 or ve.scope_queue(p.head[0]) != _COMPUTE_Q or _has_gemm(p.head[0])
            or not ve.has_call(p.head[:1], ve.MOV)):
        raise _Unsupported("the tile does not start with a bias copy before its loads and GEMM")
    copy, work = p.head[:1], p.head[1:]
    em = _Emitter(var)
    tiles = 1
    for lp in p.loops:
        tiles *= as_const_int(lp.extent)
    dtype = p.loops[0].loop_var.dtype
    # the shared weights' push precedes the threads: the first thread pops it, the others'
    # GEMMs pop tokens of input loads queued after it (module docstring)
    em.events.extend(("push", ve.token(s, ve.POP), 0) for s in p.shared)
    em.emit(p.shared, 0)
    for t in range(num):
        em.emit(p.front, t)
        if p.credit is not None:
            em.emit([ve.token_stmt(ve.PUSH, p.credit)], t)

    def tile(f, nxt, prev, out=None, events=None, first=False, last=False):
        """Tile ``f`` of every thread (``nxt``/``prev``: the variables of tiles ``f + 1``/``f - 1``)."""
        for t in range(num):
            if first:
                em.emit(p.lazy, t, None, out, events)
            em.emit(work, t, f, out, events)
            if t + 1 < num:
                em.emit(copy, t + 1, f, out, events)
            elif not last:
                em.emit(copy, 0, nxt, out, events)
            if not delay:
                em.emit(p.tail, t, f, out, events)
            elif t:
                em.emit(p.tail, t - 1, f, out, events)
            elif not first:
                em.emit(p.tail, num - 1, prev, out, events)

    at = [_tile_vars(p.loops, n.IntImm(k, dtype)) for k in (0, 1, tiles - 2, tiles - 1)]
    em.emit(copy, 0, at[0])
    tile(at[0], at[1], None, first=True, last=tiles == 1)
    if tiles > 2:
        fv = n.Var("tile.rot", dtype)
        body_out, body_ev = [], []
        tile(_tile_vars(p.loops, fv + 1), _tile_vars(p.loops, fv + 2), _tile_vars(p.loops, fv), body_out, body_ev)
        if len(body_ev) * (tiles - 2) > ve.MAX_EVENTS:
            raise _Unsupported("too many token events to check")
        em.out.append(n.For(fv, n.IntImm(0, dtype), n.IntImm(tiles - 2, dtype), n.ForKind.SERIAL, n.seq(*body_out)))
        em.events.extend(body_ev * (tiles - 2))
    if tiles > 1:
        tile(at[3], None, at[2], last=True)
    if delay:
        em.emit(p.tail, num - 1, at[3])
    for t in range(num):
        em.emit(p.post, t)
    if p.credit is not None:
        for t in range(num):
            em.emit([ve.token_stmt(ve.POP, p.credit)], t)
    return n.seq(*em.out), em.events


def rotate_threads(body: n.Stmt, var: n.Var, num: int) -> n.Stmt | None:
    """The rotated expansion (module docstring) of ``body``, one thread's code over ``var`` with
    its buffers already replicated and rebased, for ``num`` threads; ``None`` when the body has a
    shape this expansion does not handle or the tokens would not pair."""
    allocs = []
    while isinstance(body, n.Allocate):
        allocs.append(body)
        body = body.body
    try:
        out, events = _rotate(body, var, num)
    except (_Unsupported, ve.Unsupported):
        return None
    if ve.uses(out, var) or not ve.tokens_consistent(events):
        return None
    return _rewrap(allocs, out)


def hoist_shared_pops(body: n.Stmt) -> tuple[list, n.Stmt]:
    """``(pops, body)``: the pops of the shared weights' token at the top of a thread's
    ``body`` (the schedule loads the weights once, before the threads, so each thread's copy of
    that pop would wait for a push made only once), and ``body`` without them. The caller emits
    them once before the threads when it expands ``body`` otherwise than rotated."""
    allocs = []
    while isinstance(body, n.Allocate):
        allocs.append(body)
        body = body.body
    items = _seq(body)
    pops = []
    for s in items:
        if ve.has_scope(s) or isinstance(s, n.For):
            break
        if ve.token(s, ve.POP) == (_LOAD_Q, _COMPUTE_Q):
            pops.append(s)
    if not pops:
        return [], _rewrap(allocs, body)
    return pops, _rewrap(allocs, n.seq(*(s for s in items if not any(s is p for p in pops))))


def _rewrap(allocs: list, body: n.Stmt) -> n.Stmt:
    for a in reversed(allocs):
        body = dataclasses.replace(a, body=body)
    return body
