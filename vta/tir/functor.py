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
_NODES = (n.PrimExpr, n.Stmt, n.Range)

# Per node type, the names of the fields that may hold child nodes (fields annotated ``str`` or
# ``int`` never do), and the names of all ``__init__`` fields (to rebuild a node).
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
_INIT_FIELDS: dict[type, tuple[str, ...]] = {}
_MUTABLE_FIELDS: dict[type, tuple[str, ...]] = {}
_SCALAR_ANNOTATIONS = ("str", "int", str, int)


def _is_node(x: Any) -> bool:
    return isinstance(x, _NODES)


def _child_fields(cls: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        if issubclass(cls, _LEAVES) or not dataclasses.is_dataclass(cls):
            names = ()
        else:
            names = tuple(f.name for f in dataclasses.fields(cls) if f.type not in _SCALAR_ANNOTATIONS)
        _CHILD_FIELDS[cls] = names
    return names


def _init_fields(cls: type) -> tuple[str, ...]:
    names = _INIT_FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.init) if dataclasses.is_dataclass(cls) else ()
        _INIT_FIELDS[cls] = names
    return names


def _mutable_child_fields(cls: type) -> tuple[str, ...]:
    names = _MUTABLE_FIELDS.get(cls)
    if names is None:
        init = set(_init_fields(cls))
        names = tuple(name for name in _child_fields(cls) if name in init)
        _MUTABLE_FIELDS[cls] = names
    return names


class _Dispatch:
    """Shared by both traversals: ``visit_<ClassName>`` looked up once per (visitor class, node
    class); every subclass gets its own table."""

    _visit_table: dict = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._visit_table = {}

    def _method_for(self, cls: type) -> Any:
        table = type(self)._visit_table
        try:
            return table[cls]
        except KeyError:
            vcls = type(self)
            method = getattr(vcls, "visit_" + cls.__name__, None)
            if method is None and not _child_fields(cls) and vcls.generic_visit is vcls._base_generic_visit:
                # A leaf the subclass does not handle: the generic traversal has nothing to do.
                method = self._leaf
            table[cls] = method
            return method


class StmtExprVisitor(_Dispatch):
    """Read-only traversal; override ``visit_<ClassName>`` and call ``self.generic_visit``."""

    @staticmethod
    def _leaf(self: Any, node: Any) -> None:
        return None

    def visit(self, node: Any) -> None:
        if node is None:
            return
        method = self._method_for(node.__class__)
        if method is not None:
            method(self, node)
        else:
            self.generic_visit(node)

    def generic_visit(self, node: Any) -> None:
        for name in _child_fields(node.__class__):
            value = getattr(node, name)
            if isinstance(value, _NODES):
                self.visit(value)
            elif isinstance(value, tuple):
                self._visit_value(value)

    _base_generic_visit = generic_visit

    def _visit_value(self, value: Any) -> None:
        if isinstance(value, _NODES):
            self.visit(value)
        elif isinstance(value, tuple):
            for v in value:
                self._visit_value(v)


class StmtExprMutator(_Dispatch):
    """Rebuilding traversal; override ``visit_<ClassName>`` and return the replacement node."""

    @staticmethod
    def _leaf(self: Any, node: Any) -> Any:
        return node

    def visit(self, node: Any) -> Any:
        if node is None:
            return None
        method = self._method_for(node.__class__)
        if method is not None:
            return method(self, node)
        return self.generic_visit(node)

    def generic_visit(self, node: Any) -> Any:
        cls = node.__class__
        changes = None
        for name in _mutable_child_fields(cls):
            old = getattr(node, name)
            if isinstance(old, _NODES):
                new = self.visit(old)
            elif isinstance(old, tuple):
                new = self._visit_value(old)
            else:
                continue
            if new is not old:
                if changes is None:
                    changes = {}
                changes[name] = new
        if changes is None:
            return node
        if cls is n.SeqStmt:
            return n.seq(*changes.get("seq", node.seq))
        return cls(**{name: changes[name] if name in changes else getattr(node, name) for name in _init_fields(cls)})

    _base_generic_visit = generic_visit

    def _visit_value(self, value: Any) -> Any:
        if isinstance(value, _NODES):
            return self.visit(value)
        if isinstance(value, tuple):
            new = tuple(self._visit_value(v) for v in value)
            return value if all(a is b for a, b in zip(new, value, strict=True)) else new
        return value


class _PostOrder(StmtExprVisitor):
    def __init__(self, fvisit: Callable[[Any], None]):
        self.fvisit = fvisit

    def visit(self, x: Any) -> None:
        if x is None:
            return
        self.generic_visit(x)
        self.fvisit(x)


def post_order_visit(node: Any, fvisit: Callable[[Any], None]) -> None:
    """Call ``fvisit`` on every node below ``node`` (children before parents)."""
    _PostOrder(fvisit).visit(node)


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
    return _StmtMap(fpost).visit(stmt)


class _StmtMap(StmtExprMutator):
    def __init__(self, fpost: Callable[[n.Stmt], n.Stmt]):
        self.fpost = fpost

    def visit(self, x: Any) -> Any:
        x = super().visit(x)
        return self.fpost(x) if isinstance(x, n.Stmt) else x
