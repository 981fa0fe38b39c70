"""LiftAttrScope: hoist one kind of attribute as far up as it can go, merging neighbours.

Every ``AttrStmt`` with the chosen key is removed from where it stands and carried upwards
through loops and other attributes. In a sequence, consecutive statements carrying the same
(node, value) are grouped under one attribute; when all statements agree the attribute keeps
rising. It stops at an ``Allocate`` (re-wrapped inside it) and at the function root
(reference tvm-vta-software.md 2.4). Integer values compare by value, other values (the uop
scope's ``StringImm``) by identity, so only scopes built from one shared value merge.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .. import nodes as n
from ..functor import StmtExprMutator

__all__ = ["lift_attr_scope", "LiftAttrScope"]


def _value_same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, n.IntImm) and isinstance(b, n.IntImm):
        return a.value == b.value and a.dtype == b.dtype
    return False


class _Lifter(StmtExprMutator):
    def __init__(self, key: str):
        self.key = key
        self.node: Any = None  # the pending attribute (node, value) carried upwards
        self.value: Any = None

    def _take(self):
        pending = (self.node, self.value)
        self.node = self.value = None
        return pending

    def visit_AttrStmt(self, op: n.AttrStmt):
        if op.attr_key == self.key:
            body = self.visit(op.body)
            # An inner attribute of the same key is subsumed by this one.
            self.node, self.value = op.node, op.value
            return body
        return self.generic_visit(op)

    def visit_Allocate(self, op: n.Allocate):
        new = self.generic_visit(op)
        if self.node is not None:
            node, value = self._take()
            return dataclasses.replace(new, body=n.AttrStmt(node, self.key, value, new.body))
        return new

    def visit_SeqStmt(self, op: n.SeqStmt):
        stmts, tags = [], []
        for child in op.seq:
            self.node = self.value = None
            stmts.append(self.visit(child))
            tags.append((self.node, self.value))
        self.node = self.value = None
        groups: list[tuple[int, int]] = []
        begin = 0
        while begin < len(stmts):
            end = begin + 1
            while end < len(stmts) and tags[end][0] is tags[begin][0] and _value_same(tags[end][1], tags[begin][1]):
                end += 1
            groups.append((begin, end))
            begin = end
        if len(groups) == 1:
            # Every child agrees (possibly on "no attribute"): lift to the parent.
            self.node, self.value = tags[0]
            return n.seq(*stmts)
        out = []
        for begin, end in groups:
            body = n.seq(*stmts[begin:end])
            node, value = tags[begin]
            out.append(body if node is None else n.AttrStmt(node, self.key, value, body))
        return n.seq(*out)

    def visit_IfThenElse(self, op: n.IfThenElse):
        if op.else_case is None:
            return self.generic_visit(op)
        cond = self.visit(op.condition)
        self.node = self.value = None
        then_case = self.visit(op.then_case)
        first = self._take()
        else_case = self.visit(op.else_case)
        second = (self.node, self.value)
        if (
            first[0] is not None
            and second[0] is not None
            and first[0] is second[0]
            and _value_same(first[1], second[1])
        ):
            return n.IfThenElse(cond, then_case, else_case)
        if first[0] is not None:
            then_case = n.AttrStmt(first[0], self.key, first[1], then_case)
        if second[0] is not None:
            else_case = n.AttrStmt(second[0], self.key, second[1], else_case)
        self.node = self.value = None
        return n.IfThenElse(cond, then_case, else_case)


def lift_attr_scope(func: n.PrimFunc, attr_key: str) -> n.PrimFunc:
    """Return ``func`` with every ``attr_key`` attribute lifted (see the module docstring)."""
    lifter = _Lifter(attr_key)
    body = lifter.visit(func.body)
    if lifter.node is not None:
        body = n.AttrStmt(lifter.node, attr_key, lifter.value, body)
    return func.with_body(body)


class LiftAttrScope:
    """Pass: lift the attributes with key ``attr_key`` (see the module docstring).

    Examples
    --------
    >>> func = LiftAttrScope("coproc_scope")(func)  # doctest: +SKIP
    """

    def __init__(self, attr_key: str):
        self.attr_key = attr_key
        self.name = f"LiftAttrScope({attr_key})"

    def __call__(self, func: n.PrimFunc) -> n.PrimFunc:
        return lift_attr_scope(func, self.attr_key)

    def __repr__(self) -> str:
        return f"Pass({self.name})"
