"""InjectVirtualThread: expand ``virtual_thread`` scopes (``cthread`` bindings).

Reference tvm-vta-software.md 2.2 item 20. For a ``virtual_thread`` attribute over variable
``v`` with ``n`` threads:

* every allocation inside is replicated per thread (``cthread`` never shares): its size is
  multiplied by ``n`` and every access is rebased by ``v * size``;
* the smallest statements that depend on ``v`` (or that are co-processor scopes, calls or
  stores, since threads share nothing) are repeated per thread: unrolled when they contain no
  loop and ``n < 16`` (``v`` replaced by 0, 1, ...), otherwise wrapped in a loop over ``v.s``.

Two other orders of the same per-thread code, asked for by a pragma on the thread axis:
``vthread_stagger`` (two threads one reduction step apart, :mod:`.vthread_stagger`) and
``vthread_rotate`` (each thread's tile epilogue after the next thread's GEMM, weights loaded
once, :mod:`.vthread_rotate`). Each falls back to the lock-step order when the tokens would
not pair; a rotated body whose threads share their weights then pops the weights' token once,
before the threads.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ...errors import ScheduleError
from .. import nodes as n
from ..arith import as_const_int
from ..functor import StmtExprMutator, StmtExprVisitor, substitute
from .vthread_rotate import ROTATE_PRAGMA, hoist_shared_pops, rotate_threads
from .vthread_stagger import STAGGER_PRAGMA, stagger_two_threads

__all__ = ["inject_virtual_thread", "InjectVirtualThread"]


class _ExprTouched(StmtExprVisitor):
    def __init__(self, touched: set[int], check_write: bool):
        self.touched = touched
        self.check_write = check_write
        self.expr_touched = False
        self.used: list[n.Var] = []
        self.writes: list[n.Var] = []

    def _use(self, var: n.Var):
        if id(var) in self.touched:
            self.expr_touched = True
        if not self.expr_touched:
            self.used.append(var)

    def visit_Load(self, op: n.Load):
        self._use(op.buffer_var)
        self.visit(op.index)

    def visit_Var(self, op: n.Var):
        self._use(op)

    visit_SizeVar = visit_Var

    def visit_Call(self, op: n.Call):
        if op.op == "tir.tvm_access_ptr" and isinstance(op.args[1], n.Var):
            mask = as_const_int(op.args[4]) or 0
            if mask & 1:
                self._use(op.args[1])
            if mask & 2:
                self.writes.append(op.args[1])
            self.visit(op.args[2])
        else:
            self.generic_visit(op)


class _VarTouched(StmtExprVisitor):
    """Variables (including buffers) whose value depends on the thread variable."""

    def __init__(self):
        self.touched: set[int] = set()
        self.affect: dict[int, list[n.Var]] = {}

    def _tc(self, *exprs, write=False) -> _ExprTouched:
        tc = _ExprTouched(self.touched, write)
        for e in exprs:
            tc.visit(e)
        return tc

    def _record(self, var: n.Var, tc: _ExprTouched):
        if id(var) in self.touched:
            return
        if tc.expr_touched:
            self.touched.add(id(var))
        else:
            for r in tc.used:
                if r is not var:
                    self.affect.setdefault(id(r), []).append(var)

    def visit_LetStmt(self, op):
        self._record(op.var, self._tc(op.value))
        self.visit(op.body)

    def visit_Store(self, op):
        self._record(op.buffer_var, self._tc(op.value, op.index))

    def visit_For(self, op):
        self._record(op.loop_var, self._tc(op.min, op.extent))
        self.visit(op.body)

    def visit_Evaluate(self, op):
        tc = self._tc(op.value, write=True)
        for v in tc.writes:
            self._record(v, tc)

    def visit_Allocate(self, op):
        self._record(op.buffer_var, self._tc(*op.extents, op.condition))
        self.visit(op.body)

    def run(self, stmt: n.Stmt, var: n.Var) -> set[int]:
        self.touched.add(id(var))
        self.visit(stmt)
        pending = list(self.touched)
        while pending:
            v = pending.pop()
            for r in self.affect.get(v, []):
                if id(r) not in self.touched:
                    self.touched.add(id(r))
                    pending.append(id(r))
        return self.touched


class _VTInjector(StmtExprMutator):
    def __init__(self, var: n.Var, num_threads: int, touched: set[int], allow_share: bool):
        self.var = var
        self.num = num_threads
        self.touched = touched
        self.allow_share = allow_share
        self.visit_touched = False
        self.trigger_base = False
        self.injected = False
        self.max_loop_depth = 0
        self.remap: dict[int, n.PrimExpr] = {}

    # ------------------------------------------------------------------ statements
    def visit(self, node):
        if not isinstance(node, n.Stmt):
            return super().visit(node)
        stmt = super().visit(node)
        if self.visit_touched or self.trigger_base:
            if not self.injected:
                return self._inject(stmt, before_mutation=False)
            self.visit_touched = False
            self.trigger_base = False
        return stmt

    def visit_Var(self, op):
        if id(op) in self.remap:
            raise ScheduleError(
                f"buffer {op.name!r} of a virtual thread is used directly; only loads, stores and access "
                "pointers can be rebased"
            )
        if id(op) in self.touched:
            self.visit_touched = True
        return op

    visit_SizeVar = visit_Var

    def visit_Load(self, op: n.Load):
        index = self.visit(op.index)
        if id(op.buffer_var) in self.touched:
            self.visit_touched = True
        stride = self.remap.get(id(op.buffer_var))
        if stride is not None:
            return n.Load(op.dtype, op.buffer_var, index + self.var * stride)
        return op if index is op.index else n.Load(op.dtype, op.buffer_var, index)

    def visit_Call(self, op: n.Call):
        if op.op == "tir.tvm_access_ptr" and isinstance(op.args[1], n.Var) and id(op.args[1]) in self.remap:
            self.visit_touched = True
            offset = self.visit(op.args[2])
            extent = self.visit(op.args[3])
            stride = self.remap[id(op.args[1])]
            return n.Call(op.dtype, op.op, (op.args[0], op.args[1], self.var * stride + offset, extent, op.args[4]))
        return self.generic_visit(op)

    def visit_Evaluate(self, op: n.Evaluate):
        self.trigger_base = not self.allow_share
        return self.generic_visit(op)

    def visit_Store(self, op: n.Store):
        value, index = self.visit(op.value), self.visit(op.index)
        if id(op.buffer_var) in self.touched:
            self.visit_touched = True
        self.trigger_base = not self.allow_share
        stride = self.remap.get(id(op.buffer_var))
        if stride is not None:
            return n.Store(op.buffer_var, value, index + self.var * stride)
        if value is op.value and index is op.index:
            return op
        return n.Store(op.buffer_var, value, index)

    def visit_AttrStmt(self, op: n.AttrStmt):
        value = self.visit(op.value)
        if self.visit_touched and not self.injected:
            return self._inject(op, before_mutation=True)
        if not self.allow_share and not self.injected and op.attr_key in ("coproc_uop_scope", "coproc_scope"):
            return self._inject(op, before_mutation=True)
        body = self.visit(op.body)
        if value is op.value and body is op.body:
            return op
        return n.AttrStmt(op.node, op.attr_key, value, body)

    def visit_LetStmt(self, op: n.LetStmt):
        value = self.visit(op.value)
        if self.visit_touched and not self.injected:
            return self._inject(op, before_mutation=True)
        self.visit_touched = False
        body = self.visit(op.body)
        return op if value is op.value and body is op.body else n.LetStmt(op.var, value, body)

    def visit_For(self, op: n.For):
        if as_const_int(op.min) != 0:
            raise ScheduleError(f"loop {op.loop_var.name!r} inside a virtual thread must start at 0, got {op.min!r}")
        extent = self.visit(op.extent)
        if self.visit_touched and not self.injected:
            stmt = self._inject(op, before_mutation=True)
            self.max_loop_depth += 1
            return stmt
        self.visit_touched = False
        body = self.visit(op.body)
        self.max_loop_depth += 1
        if extent is op.extent and body is op.body:
            return op
        return dataclasses.replace(op, extent=extent, body=body)

    def visit_IfThenElse(self, op: n.IfThenElse):
        cond = self.visit(op.condition)
        if self.visit_touched and not self.injected:
            return self._inject(op, before_mutation=True)
        self.visit_touched = False
        then_case = self.visit(op.then_case)
        else_case = None
        if op.else_case is not None:
            saved = self.max_loop_depth
            self.max_loop_depth = 0
            else_case = self.visit(op.else_case)
            self.max_loop_depth = max(saved, self.max_loop_depth)
        if cond is op.condition and then_case is op.then_case and else_case is op.else_case:
            return op
        return n.IfThenElse(cond, then_case, else_case)

    def visit_SeqStmt(self, op: n.SeqStmt):
        out = []
        for child in op.seq:
            saved = self.max_loop_depth
            self.max_loop_depth = 0
            out.append(self.visit(child))
            self.max_loop_depth = max(self.max_loop_depth, saved)
        if all(a is b for a, b in zip(out, op.seq, strict=True)):
            return op
        return n.seq(*out)

    def visit_Allocate(self, op: n.Allocate):
        cond = self.visit(op.condition)
        if self.visit_touched and not self.injected:
            return self._inject(op, before_mutation=True)
        extents = []
        for e in op.extents:
            ne = self.visit(e)
            if self.visit_touched and not self.injected:
                return self._inject(op, before_mutation=True)
            extents.append(ne)
        self.visit_touched = False
        if id(op.buffer_var) in self.touched or not self.allow_share:
            stride = n.IntImm(1)
            for e in op.extents:
                stride = stride * e if as_const_int(stride) != 1 else e
            stride_c = as_const_int(stride)
            if stride_c is None:
                raise ScheduleError(
                    f"buffer {op.buffer_var.name!r} of a virtual thread needs a constant size, got {op.extents!r}"
                )
            extents = [n.IntImm(self.num)] + extents
            self.remap[id(op.buffer_var)] = n.IntImm(stride_c)
        body = self.visit(op.body)
        return dataclasses.replace(op, extents=tuple(extents), condition=cond, body=body)

    # ------------------------------------------------------------------ injection
    def _inject(self, stmt: n.Stmt, before_mutation: bool) -> n.Stmt:
        if self.injected:
            raise AssertionError("virtual-thread loop injected twice")
        self.visit_touched = False
        self.trigger_base = False
        self.injected = True
        if before_mutation:
            stmt = self.visit(stmt)
        self.injected = False
        self.visit_touched = False
        if self.max_loop_depth == 0 and self.num < 16:
            return n.seq(*(substitute(stmt, {self.var: n.IntImm(i, self.var.dtype)}) for i in range(self.num)))
        idx = n.Var(self.var.name + ".s", self.var.dtype)
        return n.For(idx, n.IntImm(0, idx.dtype), n.IntImm(self.num, idx.dtype), n.ForKind.SERIAL,
                     substitute(stmt, {self.var: idx}))


class _Rebaser(_VTInjector):
    """Replicate and rebase the buffers of a thread's body like :class:`_VTInjector`, but
    leave the per-thread statements unexpanded (for :func:`stagger_two_threads`)."""

    def _inject(self, stmt: n.Stmt, before_mutation: bool) -> n.Stmt:
        self.visit_touched = False
        self.trigger_base = False
        if before_mutation:
            saved, self.injected = self.injected, True
            stmt = self.visit(stmt)
            self.injected = saved
        self.visit_touched = False
        return stmt


def _thread_var(node: Any) -> tuple[n.Var, str]:
    """The Var and thread tag of a ``virtual_thread`` attribute's node (an IterVar or a Var)."""
    var = getattr(node, "var", node)
    tag = getattr(node, "thread_tag", None) or getattr(var, "name", "")
    if not isinstance(var, n.Var):
        raise ScheduleError(f"virtual_thread attribute on {node!r}, expected a thread IterVar")
    return var, tag


class _Expander(StmtExprMutator):
    def __init__(self, stagger: bool = False):
        super().__init__()
        self.stagger = stagger
        self.force = stagger
        self.rotate = False

    def visit_AttrStmt(self, op: n.AttrStmt):
        for key, flag in ((STAGGER_PRAGMA, "stagger"), (ROTATE_PRAGMA, "rotate")):
            if op.attr_key == "pragma_" + key:
                saved = getattr(self, flag)
                setattr(self, flag, True)
                try:
                    return self.visit(op.body)
                finally:
                    setattr(self, flag, saved)
        if op.attr_key != "virtual_thread":
            return self.generic_visit(op)
        # a pragma covers its own thread only
        (stagger, rotate), self.stagger, self.rotate = (self.stagger, self.rotate), self.force, False
        try:
            body = self.visit(op.body)
        finally:
            self.stagger, self.rotate = stagger, rotate
        var, tag = _thread_var(op.node)
        num = as_const_int(op.value)
        if num is None or num < 1:
            raise ScheduleError(f"virtual thread {var.name!r} needs a constant positive extent, got {op.value!r}")
        allow_share = str(tag).startswith("vthread")
        touched = _VarTouched().run(body, var)
        if rotate and num >= 2 and not allow_share:
            rotated = rotate_threads(_Rebaser(var, num, touched, allow_share).visit(body), var, num)
            if rotated is not None:
                return rotated
            # otherwise lock-step, the shared weights' token popped once before the threads
            pops, body = hoist_shared_pops(body)
            return n.seq(*pops, _VTInjector(var, num, _VarTouched().run(body, var), allow_share).visit(body))
        if stagger and num == 2 and not allow_share:
            staggered = stagger_two_threads(_Rebaser(var, num, touched, allow_share).visit(body), var)
            if staggered is not None:
                return staggered
        return _VTInjector(var, num, touched, allow_share).visit(body)


def inject_virtual_thread(func: n.PrimFunc, stagger: bool = False) -> n.PrimFunc:
    """Return ``func`` with every ``virtual_thread`` scope expanded (module docstring).

    Parameters
    ----------
    func : PrimFunc
        The function.
    stagger : bool
        Run two ``cthread`` threads one reduction step apart where the tokens allow it
        (:mod:`.vthread_stagger`); lock-step otherwise.

    Raises
    ------
    ScheduleError
        If a thread extent or a replicated buffer size is not constant, or a loop inside a
        virtual thread does not start at 0.
    """
    return func.with_body(_Expander(stagger).visit(func.body))


class InjectVirtualThread:
    """Pass: expand virtual threads (see :func:`inject_virtual_thread`)."""

    name = "InjectVirtualThread"

    def __init__(self, stagger: bool = False):
        self.stagger = stagger

    def __call__(self, func: n.PrimFunc) -> n.PrimFunc:
        return inject_virtual_thread(func, self.stagger)

    def __repr__(self) -> str:
        return f"Pass(InjectVirtualThread{', stagger' if self.stagger else ''})"
