"""LiftAllocToScopeBegin: move every allocation to the start of its enclosing scope.

Scopes are the function body, each loop and each ``virtual_thread`` attribute. An allocation
found anywhere inside is removed from its position and re-emitted around the scope's body, so
it no longer separates statements that LiftAttrScope("coproc_scope") should merge (reference
tvm-vta-software.md 2.4).
"""

from __future__ import annotations

import dataclasses

from ..tir import nodes as n
from ..tir.functor import StmtExprMutator
from ._util import Pass

__all__ = ["lift_alloc_to_scope_begin"]


class _Lift(StmtExprMutator):
    def __init__(self):
        self.frames: list[list[n.Allocate]] = [[]]

    def _wrap(self, allocs: list[n.Allocate], body: n.Stmt) -> n.Stmt:
        for a in reversed(allocs):
            body = dataclasses.replace(a, body=body)
        return body

    def _scoped(self, op, body_field: str = "body"):
        self.frames.append([])
        new = self.generic_visit(op)
        allocs = self.frames.pop()
        if not allocs:
            return new
        return dataclasses.replace(new, **{body_field: self._wrap(allocs, getattr(new, body_field))})

    def visit_For(self, op: n.For):
        return self._scoped(op)

    def visit_AttrStmt(self, op: n.AttrStmt):
        if op.attr_key == "virtual_thread":
            return self._scoped(op)
        return self.generic_visit(op)

    def visit_Allocate(self, op: n.Allocate):
        body = self.visit(op.body)
        self.frames[-1].append(op)
        return body

    def run(self, body: n.Stmt) -> n.Stmt:
        new = self.visit(body)
        return self._wrap(self.frames.pop(), new)


def lift_alloc_to_scope_begin() -> Pass:
    """The LiftAllocToScopeBegin pass (module docstring)."""
    return Pass("LiftAllocToScopeBegin", lambda f: f.with_body(_Lift().run(f.body)))
