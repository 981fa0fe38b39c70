"""Tiny builders and queries for pass tests on hand-built TIR."""

from __future__ import annotations

from vta.tir import nodes as n
from vta.tir.functor import post_order_visit


def loop(var: n.Var, extent: int, body: n.Stmt) -> n.For:
    return n.For(var, n.IntImm(0), n.IntImm(extent), n.ForKind.SERIAL, body)


def alloc(var: n.Var, dtype: str, size: int, scope: str, body: n.Stmt) -> n.Allocate:
    return n.Allocate(var, dtype, (n.IntImm(size),), n.IntImm(1, "bool"), body, scope)


def func(body: n.Stmt, *params) -> n.PrimFunc:
    return n.PrimFunc(tuple(p for p, _ in params), body, {p: b for p, b in params})


def calls(node, op: str | None = None) -> list[n.Call]:
    """Every Call below ``node`` in execution (pre-)order; ``op`` filters (extern names too)."""
    out: list[n.Call] = []

    def visit(x):
        if isinstance(x, n.Call):
            name = x.args[0].value if x.op == "tir.call_extern" else x.op
            if op is None or name == op:
                out.append(x)

    post_order_visit(node, visit)
    return out


def ints(call: n.Call, skip: int = 0) -> list:
    """The arguments of a call as Python ints where constant (others kept as nodes)."""
    args = call.args[1:] if call.op == "tir.call_extern" else call.args
    return [a.value if isinstance(a, n.IntImm) else a for a in args[skip:]]


def sequence(node) -> list[str]:
    """Names of calls and attribute keys in statement order (pre-order)."""
    out: list[str] = []

    def walk(s):
        if isinstance(s, n.SeqStmt):
            for c in s.seq:
                walk(c)
        elif isinstance(s, n.AttrStmt):
            v = s.value.value if isinstance(s.value, (n.IntImm, n.StringImm)) else s.value
            out.append(f"{s.attr_key}={v}")
            walk(s.body)
            out.append(f"/{s.attr_key}")
        elif isinstance(s, n.For):
            out.append(f"for {s.loop_var.name}")
            walk(s.body)
            out.append("/for")
        elif isinstance(s, (n.Allocate, n.LetStmt)):
            walk(s.body)
        elif isinstance(s, n.Evaluate) and isinstance(s.value, n.Call):
            c = s.value
            name = c.args[0].value if c.op == "tir.call_extern" else c.op.replace("tir.vta.", "")
            if name in ("coproc_dep_push", "coproc_dep_pop"):
                name += f"({c.args[0].value},{c.args[1].value})"
            out.append(name)
        elif isinstance(s, n.IfThenElse):
            out.append("if")
            walk(s.then_case)
            out.append("/if")
        else:
            out.append(type(s).__name__)

    walk(node)
    return out
