"""CoProcSync: insert the co-processor's dependency tokens and its final synchronisation.

Reference tvm-vta-software.md 2.4 (InjectCoProcSync). Three steps:

1. *Syncs for CPU code.* VTA instructions are queued and run at a synchronisation. Walking the
   top-level statements in order, a CPU statement that reads a buffer queued VTA work writes,
   or writes one it accesses (DRAM operands of ``VTALoadBuffer2D``/``VTAStoreBuffer2D`` and
   on-chip access pointers included), gets a ``tir.vta.coproc_sync()`` in front of it. A loop
   nest that interleaves such accesses is rejected with a :class:`~vta.errors.ScheduleError`
   naming the buffer (there is no barrier to put inside it).
2. *Final sync.* One ``tir.vta.coproc_sync()`` follows the whole body unless no VTA work is
   queued after the last inserted one.
3. *Dependency tokens.* Walking the statements in order, each ``coproc_scope`` of queue ``q`` is
   a state entered and left in context ``{q}``. Between consecutive states of different queues
   ``a -> b`` a ``coproc_dep_push(a, b)`` goes at the end of the first and a
   ``coproc_dep_pop(a, b)`` at the start of the second. A loop is one state (entered at its
   body's first state, left at its last) whose loop-carried edge last -> first is injected
   inside the body. Each branch of a conditional is closed off (its pops matched by pushes
   before it, its pushes by pops after it). At the top, pops expected by the first state and
   pushes left by the last state get matching partners around the function body.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ...errors import ScheduleError
from .. import nodes as n
from ..functor import StmtExprMutator, StmtExprVisitor

__all__ = ["coproc_sync", "CoProcSync"]

_PUSH = "tir.vta.coproc_dep_push"
_POP = "tir.vta.coproc_dep_pop"
_SYNC = "tir.vta.coproc_sync"


def _call_stmt(op: str, *args: int) -> n.Evaluate:
    return n.Evaluate(n.Call("int32", op, tuple(n.IntImm(a) for a in args)))


#: DRAM arguments of the VTA runtime calls: (function, argument position after the name, mode).
_DRAM_ARGS = {"VTALoadBuffer2D": (1, "r"), "VTAStoreBuffer2D": (3, "w")}


class _Touched(StmtExprVisitor):
    """How each buffer is accessed inside co-processor scopes and by CPU code ("r", "w")."""

    def __init__(self):
        self.in_scope = False
        self.coproc: dict[int, set] = {}
        self.normal: dict[int, set] = {}
        self.names: dict[int, str] = {}
        self.has_scope = False

    def _touch(self, var: n.Var, mode: str):
        self.names[id(var)] = var.name
        (self.coproc if self.in_scope else self.normal).setdefault(id(var), set()).update(mode)

    def visit_Load(self, op: n.Load):
        self._touch(op.buffer_var, "r")
        self.generic_visit(op)

    def visit_Store(self, op: n.Store):
        self._touch(op.buffer_var, "w")
        self.generic_visit(op)

    def visit_Call(self, op: n.Call):
        if op.op == "tir.tvm_access_ptr" and isinstance(op.args[1], n.Var):
            mask = op.args[4].value if isinstance(op.args[4], n.IntImm) else 3
            self._touch(op.args[1], ("r" if mask & 1 else "") + ("w" if mask & 2 else ""))
        elif op.op == "tir.call_extern" and self.in_scope and isinstance(op.args[0], n.StringImm):
            # A DRAM buffer handed to the DMA as a plain pointer is an access by the accelerator.
            known = _DRAM_ARGS.get(op.args[0].value)
            for k, a in enumerate(op.args[1:]):
                if isinstance(a, n.Var) and a.dtype == "handle":
                    self._touch(a, known[1] if known and known[0] == k else "rw")
        self.generic_visit(op)

    def visit_AttrStmt(self, op: n.AttrStmt):
        if op.attr_key == "coproc_scope" and not self.in_scope:
            self.has_scope = True
            self.in_scope = True
            self.generic_visit(op)
            self.in_scope = False
        else:
            self.generic_visit(op)

    def conflicts(self) -> list[str]:
        """Buffers written on one side and accessed on the other."""
        out = []
        for key, acc in self.coproc.items():
            cpu = self.normal.get(key)
            if cpu and (("w" in acc) or ("w" in cpu)):
                out.append(self.names[key])
        return out


@dataclass
class _State:
    node: Any = None
    enter_ctx: list = field(default_factory=list)
    exit_ctx: list = field(default_factory=list)
    enter_pop: list = field(default_factory=list)
    exit_push: list = field(default_factory=list)


class _DepDetector(StmtExprVisitor):
    """Plan push/pop insertions keyed by the identity of the statement they go around."""

    def __init__(self):
        self.first = _State()
        self.last = _State()
        self.curr = _State()
        self.before: dict[int, list[n.Stmt]] = {}
        self.after: dict[int, list[n.Stmt]] = {}

    def plan(self, stmt: n.Stmt) -> None:
        self.visit(stmt)
        if self.last.node is not None:
            self._fix_enter_pop(self.first)
            self._fix_exit_push(self.last)

    def visit_AttrStmt(self, op: n.AttrStmt):
        if op.attr_key == "coproc_scope":
            if not isinstance(op.value, n.IntImm):
                raise ScheduleError(f"coproc_scope needs a constant queue id, got {op.value!r}")
            q = op.value.value
            self.curr = _State(node=op.body, enter_ctx=[q], exit_ctx=[q])
            self._update()
        else:
            self.generic_visit(op)

    def visit_For(self, op: n.For):
        saved = (self.first, self.last)
        self.first, self.last = _State(), _State()
        self.visit(op.body)
        self.curr = _State()
        if self.last.node is not None:
            self.curr.node = op
            self._inject(self.last, self.first, self.curr.exit_push, self.curr.enter_pop)
            self.curr.enter_ctx = list(self.first.enter_ctx)
            self.curr.exit_ctx = list(self.last.exit_ctx)
        self.first, self.last = saved
        if self.curr.node is not None:
            self._update()

    def visit_IfThenElse(self, op: n.IfThenElse):
        saved = (self.first, self.last)
        state = _State()
        for branch in (op.then_case, op.else_case):
            if branch is None:
                continue
            self.first, self.last = _State(), _State()
            self.visit(branch)
            if self.last.node is not None:
                state.node = op
                self._fix_enter_pop(self.first)
                self._fix_exit_push(self.last)
                state.enter_ctx += [c for c in self.first.enter_ctx if c not in state.enter_ctx]
                state.exit_ctx += [c for c in self.last.exit_ctx if c not in state.exit_ctx]
        self.first, self.last = saved
        self.curr = state
        if self.curr.node is not None:
            self._update()

    # -------------------------------------------------------------- bookkeeping
    def _update(self):
        if self.last.node is not None:
            self._inject(self.last, self.curr, [], [])
            self.last = self.curr
        else:
            self.first = self.curr
            self.last = self.curr

    def _inject(self, prev: _State, nxt: _State, prev_exit_push: list, next_enter_pop: list) -> None:
        prev_exit_push.clear()
        next_enter_pop.clear()
        if not prev.exit_push and not nxt.enter_pop and len(prev.exit_ctx) == 1 and len(nxt.enter_ctx) == 1:
            a, b = prev.exit_ctx[0], nxt.enter_ctx[0]
            if a != b:
                self.after.setdefault(id(prev.node), []).append(_call_stmt(_PUSH, a, b))
                self.before.setdefault(id(nxt.node), []).append(_call_stmt(_POP, a, b))
                prev_exit_push.append((a, b))
                next_enter_pop.append((a, b))
            return
        vpush, vpop = list(prev.exit_push), list(nxt.enter_pop)
        pending = [(a, b) for a in prev.exit_ctx for b in nxt.enter_ctx if a != b]
        prev_after: list[n.Stmt] = []
        next_before: list[n.Stmt] = []
        for p in pending:
            if p not in prev.exit_push:
                vpush.append(p)
                prev_after.append(_call_stmt(_PUSH, *p))
            if p not in nxt.enter_pop:
                vpop.append(p)
                next_before.append(_call_stmt(_POP, *p))
        for p in vpush:
            if p not in vpop:
                prev_after.append(_call_stmt(_POP, *p))
            else:
                prev_exit_push.append(p)
        for p in vpop:
            if p not in vpush:
                next_before.append(_call_stmt(_PUSH, *p))
            else:
                next_enter_pop.append(p)
        if prev_after:
            self.after.setdefault(id(prev.node), []).extend(prev_after)
        if next_before:
            self.before.setdefault(id(nxt.node), []).extend(next_before)

    def _fix_enter_pop(self, state: _State):
        if state.enter_pop:
            self.before.setdefault(id(state.node), []).extend(_call_stmt(_PUSH, *p) for p in state.enter_pop)

    def _fix_exit_push(self, state: _State):
        if state.exit_push:
            self.after.setdefault(id(state.node), []).extend(_call_stmt(_POP, *p) for p in state.exit_push)


class _Inserter(StmtExprMutator):
    def __init__(self, before: dict, after: dict):
        self.before = before
        self.after = after

    def visit(self, node):
        if not isinstance(node, n.Stmt):
            return super().visit(node)
        key = id(node)
        new = super().visit(node)
        if key in self.before or key in self.after:
            return n.seq(*self.before.get(key, []), new, *self.after.get(key, []))
        return new


def _top_level(body: n.Stmt) -> list[n.Stmt]:
    """The statements of the function's top-level sequence (below allocations, lets, attributes)."""
    while isinstance(body, (n.Allocate, n.LetStmt)) or (
        isinstance(body, n.AttrStmt) and body.attr_key != "coproc_scope"
    ):
        body = body.body
    return list(body.seq) if isinstance(body, n.SeqStmt) else [body]


def _conflict(a: set | None, b: set | None) -> bool:
    return bool(a) and bool(b) and ("w" in a or "w" in b)


def _plan_syncs(body: n.Stmt) -> tuple[dict[int, list[n.Stmt]], bool]:
    """Syncs needed before CPU statements that touch what queued VTA work touches.

    VTA instructions only execute at a synchronisation, so CPU code may freely precede them;
    a CPU statement that reads what queued VTA work writes (or writes what it reads or writes)
    gets a ``coproc_sync`` in front. Returns the insertions and whether VTA work remains queued
    after the last of them.

    Raises
    ------
    ScheduleError
        If one top-level statement (e.g. a loop) interleaves such CPU and VTA accesses.
    """
    before: dict[int, list[n.Stmt]] = {}
    pending: dict[int, set] = {}
    queued = False
    names: dict[int, str] = {}
    for stmt in _top_level(body):
        t = _Touched()
        t.visit(stmt)
        names.update(t.names)
        inner = t.conflicts()
        if inner:
            raise ScheduleError(
                f"buffer(s) {inner!r} are written on one side and accessed on the other by CPU code and by VTA "
                "instructions inside one loop nest; the accelerator runs only at synchronisation points, so "
                "offload every access to them (is a dma_copy/alu pragma or a tensorize missing?) or move the "
                "CPU stage out of the loop"
            )
        if any(_conflict(pending.get(k), modes) for k, modes in t.normal.items()):
            before[id(stmt)] = [n.Evaluate(n.Call("int32", _SYNC, ()))]
            pending.clear()
            queued = False
        for k, modes in t.coproc.items():
            pending.setdefault(k, set()).update(modes)
        queued = queued or t.has_scope
    return before, queued or not before


def coproc_sync(func: n.PrimFunc) -> n.PrimFunc:
    """Insert dependency push/pop pairs and the ``coproc_sync`` calls (module docstring).

    Raises
    ------
    ScheduleError
        If a loop nest interleaves CPU and VTA accesses to a buffer one of them writes.
    """
    body = _fresh_statements(func.body)
    touched = _Touched()
    touched.visit(body)
    if not touched.has_scope:
        return func
    syncs, final = _plan_syncs(body)
    detector = _DepDetector()
    detector.plan(body)
    before = {k: list(v) for k, v in detector.before.items()}
    for key, stmts in syncs.items():
        before[key] = stmts + before.get(key, [])
    after = {k: list(v) for k, v in detector.after.items()}
    if final:
        # The final sync goes last, after any epilogue pop that drains a loop-carried token, so
        # every call leaves the command queue balanced. (Upstream placed the sync first when the
        # body is a single loop, leaving a pending pop for the next call: one stray NOP.)
        after.setdefault(id(body), []).append(n.Evaluate(n.Call("int32", _SYNC, ())))
    return func.with_body(_Inserter(before, after).visit(body))


def _fresh_statements(body: n.Stmt) -> n.Stmt:
    """A copy of ``body`` in which every statement is a distinct object.

    Insertions are keyed by statement identity, so a statement object shared between two
    places (e.g. one intrinsic body used at two sites) must be split first.
    """

    class _Copy(StmtExprMutator):
        def visit(self, node):
            new = super().visit(node)
            if isinstance(new, n.Stmt) and new is node:
                if isinstance(new, n.SeqStmt):
                    return n.SeqStmt(new.seq)
                return dataclasses.replace(new)
            return new

    return _Copy().visit(body)


class CoProcSync:
    """Pass: dependency tokens and the final synchronisation (see :func:`coproc_sync`)."""

    name = "CoProcSync"

    def __call__(self, func: n.PrimFunc) -> n.PrimFunc:
        return coproc_sync(func)

    def __repr__(self) -> str:
        return "Pass(CoProcSync)"
