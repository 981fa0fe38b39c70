"""Visitors and mutators over the immutable TIR.

``StmtExprVisitor.visit(node)`` calls ``visit_<ClassName>(node)`` when the subclass defines it,
otherwise visits every child. ``StmtExprMutator.visit(node)`` does the same and rebuilds a node
only when a child changed, so unchanged subtrees keep their identity (passes rely on this).

Children are the dataclass fields holding nodes, tuples of nodes, or mappings of them; a
``Buffer`` or ``Var`` reached through a field is a leaf for the generic traversal (override
``visit_Buffer``/``visit_Var`` to look inside).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from . import nodes as n

__all__ = ["StmtExprVisitor", "StmtExprMutator", "post_order_visit", "substitute", "stmt_map"]

_LEAVES = (n.Var, n.IntImm, n.FloatImm, n.StringImm, n.Buffer)


def _is_node(x: Any) -> bool:
    return isinstance(x, (n.PrimExpr, n.Stmt, n.Range))


class StmtExprVisitor:
    """Read-only traversal; override ``visit_<ClassName>`` and call ``self.generic_visit``."""

    def visit(self, node: Any) -> None:
        if node is None:
            return
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
            self.generic_visit(node)

    def generic_visit(self, node: Any) -> None:
        if isinstance(node, _LEAVES) or not dataclasses.is_dataclass(node):
            return
        for f in dataclasses.fields(node):
            self._visit_value(getattr(node, f.name))

    def _visit_value(self, value: Any) -> None:
        if _is_node(value):
            self.visit(value)
        elif isinstance(value, tuple):
            for v in value:
                self._visit_value(v)


class StmtExprMutator:
    """Rebuilding traversal; override ``visit_<ClassName>`` and return the replacement node."""

    def visit(self, node: Any) -> Any:
        if node is None:
            return None
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        return self.generic_visit(node)

    def generic_visit(self, node: Any) -> Any:
        if isinstance(node, _LEAVES) or not dataclasses.is_dataclass(node):
            return node
        changes = {}
        for f in dataclasses.fields(node):
            if not f.init:
                continue
            old = getattr(node, f.name)
            new = self._visit_value(old)
            if new is not old:
                changes[f.name] = new
        if not changes:
            return node
        if isinstance(node, n.SeqStmt):
            return n.seq(*changes.get("seq", node.seq))
        return dataclasses.replace(node, **changes)

    def _visit_value(self, value: Any) -> Any:
        if _is_node(value):
            return self.visit(value)
        if isinstance(value, tuple):
            new = tuple(self._visit_value(v) for v in value)
            return value if all(a is b for a, b in zip(new, value)) else new
        return value


def post_order_visit(node: Any, fvisit: Callable[[Any], None]) -> None:
    """Call ``fvisit`` on every node below ``node`` (children before parents)."""

    class _V(StmtExprVisitor):
        def visit(self, x):
            if x is None:
                return
            self.generic_visit(x)
            fvisit(x)

    _V().visit(node)


class _Substitute(StmtExprMutator):
    def __init__(self, vmap: Mapping[n.Var, n.PrimExpr]):
        self.vmap = vmap

    def visit_Var(self, v: n.Var):
        return self.vmap.get(v, v)

    def visit_SizeVar(self, v: n.SizeVar):
        return self.vmap.get(v, v)


def substitute(node: Any, vmap: Mapping[n.Var, Any]) -> Any:
    """Replace variables by expressions everywhere in ``node`` (Vars are matched by identity)."""
    if not vmap:
        return node
    vmap = {k: n.convert(v) for k, v in vmap.items()}
    return _Substitute(vmap).visit(node)


def stmt_map(stmt: n.Stmt, fpost: Callable[[n.Stmt], n.Stmt]) -> n.Stmt:
    """Rebuild ``stmt`` bottom-up, applying ``fpost`` to every statement after its children."""

    class _M(StmtExprMutator):
        def visit(self, x):
            x = super().visit(x)
            return fpost(x) if isinstance(x, n.Stmt) else x

    return _M().visit(stmt)
