"""What the TIR keeps on its immutable nodes (derived dtypes, linear forms, structural keys,
the simplifier's canonical mark) never leaks between expressions or changes a result."""

from __future__ import annotations

import random

from vta.tir import nodes as n
from vta.tir.arith import structural_equal, structural_key, to_linear
from vta.tir.functor import StmtExprMutator, StmtExprVisitor, post_order_visit
from vta.tir.simplify import simplify

from .interp import Interpreter

i, j = n.Var("i"), n.Var("j")


def _value(e, env):
    return Interpreter({}).eval(e, env)


def test_to_linear_returns_a_fresh_form_each_time():
    e = i * 4 + j - 3
    first = to_linear(e)
    first.const = 100
    first.terms.clear()
    again = to_linear(e)
    assert again.const == -3
    assert [c for _, c in again.terms.values()] == [4, 1]


def test_binary_dtype_is_derived_once_and_stays_right():
    a = n.Var("a", "int8")
    e = n.Add(a, n.IntImm(1, "int8"))
    assert e.dtype == "int8" and e.dtype == "int8"
    assert n.LT(i, j).dtype == "bool"
    assert n.Add(a, n.Var("w", "int32")).dtype == "int32"


def test_simplify_is_a_fixed_point_and_keeps_identity():
    e = (i * 16 + 3) + (j * 2 - i * 8) - 1
    once = simplify(e)
    twice = simplify(once)
    assert twice is once
    assert structural_equal(simplify(n.Add(once, n.IntImm(0))), once)


def test_simplified_sums_agree_with_evaluation():
    rng = random.Random(3)
    leaves = [i, j, n.FloorDiv(i, n.IntImm(4)), n.FloorMod(j, n.IntImm(3))]
    for _ in range(200):
        e = n.IntImm(rng.randrange(-5, 6))
        for _ in range(rng.randrange(1, 6)):
            term = rng.choice(leaves) * rng.randrange(-4, 5)
            e = e + term if rng.random() < 0.5 else e - term
        s = simplify(e)
        assert simplify(s) is s
        for _ in range(5):
            env = {i: rng.randrange(0, 32), j: rng.randrange(0, 32)}
            assert _value(e, env) == _value(s, env)


def test_structural_key_separates_variables_and_matches_rebuilt_trees():
    k = n.Var("i")
    assert structural_key(i + 1) == structural_key(i + 1)
    assert structural_key(i + 1) != structural_key(k + 1)


def test_visitor_dispatch_is_per_class():
    class CountVars(StmtExprVisitor):
        def __init__(self):
            self.seen = 0

        def visit_Var(self, v):
            self.seen += 1

    class Plain(StmtExprVisitor):
        pass

    e = i * j + i
    v = CountVars()
    v.visit(e)
    assert v.seen == 3
    Plain().visit(e)  # leaves are skipped, nothing counted
    order = []
    post_order_visit(e, lambda x: order.append(type(x).__name__))
    assert order == ["Var", "Var", "Mul", "Var", "Add"]

    class Rename(StmtExprMutator):
        def visit_Var(self, v):
            return j if v is i else v

    out = Rename().visit(e)
    assert structural_equal(out, j * j + j)
    assert Rename().visit(j + 1) is not None
