"""RemoveNoOp: drop statements that do nothing.

A no-op is ``Evaluate`` of a constant or variable, an empty sequence, a loop of extent 0 or
with a no-op body, and an attribute, ``let``, allocation or condition around a no-op.
"""

from __future__ import annotations

from .. import nodes as n
from ..functor import StmtExprMutator

__all__ = ["remove_no_op", "RemoveNoOp", "is_no_op"]


def is_no_op(stmt: n.Stmt | None) -> bool:
    """Whether ``stmt`` has no effect (``None`` counts as a no-op)."""
    if stmt is None:
        return True
    if isinstance(stmt, n.Evaluate):
        return isinstance(stmt.value, (n.IntImm, n.FloatImm, n.Var, n.StringImm))
    if isinstance(stmt, n.SeqStmt):
        return all(is_no_op(s) for s in stmt.seq)
    return False


class _Remover(StmtExprMutator):
    def visit_SeqStmt(self, op: n.SeqStmt):
        kept = [s for s in (self.visit(c) for c in op.seq) if not is_no_op(s)]
        return n.seq(*kept)

    def visit_For(self, op: n.For):
        new = self.generic_visit(op)
        if is_no_op(new.body) or (isinstance(new.extent, n.IntImm) and new.extent.value <= 0):
            return n.Evaluate(n.IntImm(0))
        return new

    def _drop_if_empty(self, op):
        new = self.generic_visit(op)
        return n.Evaluate(n.IntImm(0)) if is_no_op(new.body) else new

    visit_AttrStmt = _drop_if_empty
    visit_LetStmt = _drop_if_empty
    visit_Allocate = _drop_if_empty

    def visit_IfThenElse(self, op: n.IfThenElse):
        new = self.generic_visit(op)
        then_empty, else_empty = is_no_op(new.then_case), is_no_op(new.else_case)
        if then_empty and else_empty:
            return n.Evaluate(n.IntImm(0))
        if else_empty and new.else_case is not None:
            return n.IfThenElse(new.condition, new.then_case, None)
        if then_empty:
            return n.IfThenElse(n.Not(new.condition), new.else_case, None)
        return new


def remove_no_op(func: n.PrimFunc) -> n.PrimFunc:
    """Return ``func`` without no-op statements."""
    return func.with_body(_Remover().visit(func.body))


class RemoveNoOp:
    """Pass: drop no-op statements (see :func:`remove_no_op`)."""

    name = "RemoveNoOp"

    def __call__(self, func: n.PrimFunc) -> n.PrimFunc:
        return remove_no_op(func)

    def __repr__(self) -> str:
        return "Pass(RemoveNoOp)"
