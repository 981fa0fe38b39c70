"""TVM's expression operators and ``tir`` helpers: what they build, and that the simplifier keeps
their meaning.

The oracle of the simplification tests is the test interpreter (``interp.py``), which evaluates
the expression before and after simplification with plain Python integers at every point of the
variables' ranges.
"""

from __future__ import annotations

import itertools
import random

import pytest

from vta import te
from vta.tir import nodes as n
from vta.tir import op
from vta.tir.arith import as_const_int
from vta.tir.simplify import simplify
from vta.tvm import te as tvm_te
from vta.tvm import tir as tvm_tir

from .interp import Interpreter

i, j = n.Var("i"), n.Var("j")
b8 = n.Var("b8", "uint8")
RANGES = {i: (0, 6), j: (-3, 7), b8: (250, 6)}


def ev(e, env):
    return Interpreter({}).eval(e, env)


def points():
    return [dict(zip(RANGES, values, strict=True)) for values in itertools.product(*[range(lo, lo + ext) for lo, ext in RANGES.values()])]


def same_meaning(expr, simplified):
    for env in points():
        assert ev(expr, env) == ev(simplified, env), (expr, simplified, env)


# ------------------------------------------------------------------------------ construction
def test_logical_operators_on_booleans_build_logic_nodes():
    cond = (i >= 0) & (i < 4)
    assert isinstance(cond, n.And) and isinstance(cond.a, n.GE) and isinstance(cond.b, n.LT)
    assert isinstance((i < 1) | (i > 4), n.Or)
    assert isinstance(~(i < 1), n.Not)
    assert isinstance((i < 1) ^ (j < 1), n.NE)
    assert isinstance((i < 1) & True, n.And) and (True & (i < 1)).a.dtype == "bool"


def test_bitwise_operators_on_integers_build_calls():
    for expr, name in ((i & 3, "and"), (i | 3, "or"), (i ^ 3, "xor"), (3 & i, "and"), (~i, "not")):
        assert isinstance(expr, n.Call) and expr.op == f"tir.bitwise_{name}" and expr.dtype == "int32"
    assert (3 & i).args[0].value == 3  # the reflected form keeps the operand order
    assert (b8 & 15).dtype == "uint8" and (b8 & 15).args[1].dtype == "uint8"
    # A boolean meeting an integer is promoted to it, as TVM does.
    mixed = (i < 2) & i
    assert mixed.op == "tir.bitwise_and" and isinstance(mixed.args[0], n.Cast)


def test_shifts_and_reflected_operators():
    assert (1 << i).op == "tir.shift_left" and (1 << i).args[0].value == 1
    assert (64 >> i).op == "tir.shift_right"
    assert isinstance(7 // i, n.FloorDiv) and isinstance(7 % i, n.FloorMod)


def test_true_division_needs_a_float():
    x = n.Var("x", "float32")
    assert isinstance(x / 2, n.Div) and (x / 2).b.dtype == "float32" and (x / 2).dtype == "float32"
    assert (1.0 / x).a.value == 1.0
    assert (i + 0.5).dtype == "float32"
    with pytest.raises(TypeError, match="ambiguous"):
        i / 2
    with pytest.raises(TypeError, match="needs a boolean or integer"):
        ~x
    with pytest.raises(TypeError, match="shifts need integer"):
        x >> 1


def test_equality_builds_nodes_whose_truth_is_identity():
    eq, ne = i == j, i != 3
    assert isinstance(eq, n.EQ) and isinstance(ne, n.NE)
    assert bool(i == i) and not bool(i == n.Var("i")) and bool(i != j)
    assert bool(n.IntImm(3) == 3) and not bool(n.IntImm(3) == 4) and bool(n.const(2) != 5)
    # Nodes stay usable as dict keys and in membership tests.
    table = {i: 1, j: 2}
    assert table[j] == 2 and n.Var("i") not in table and i in [j, i] and n.Var("j") not in [i, j]
    assert (i == None) is False and (i != "i") is True  # noqa: E711 - non-expressions compare by identity


def test_python_logic_on_expressions_is_refused_with_a_hint():
    with pytest.raises(TypeError, match=r"tir.all / tir.any"):
        (i > 0) and (i < 3)  # noqa: B015
    with pytest.raises(TypeError, match="no truth value"):
        if i < 3:
            pass
    # A constant decides itself, as in TVM.
    assert n.IntImm(2) and not n.IntImm(0) and not n.const(0, "bool")


def test_all_and_any():
    c = op.all(i >= 0, i < 4, j > 1)
    assert isinstance(c, n.And) and isinstance(c.a, n.And) and isinstance(c.b, n.GT)
    assert isinstance(op.any(i < 0, j > 1), n.Or)
    assert op.all(i < 3) is not None and isinstance(op.all(i < 3), n.LT)
    assert as_const_int(simplify(op.all(True, i < 3, i < 3))) is None
    with pytest.raises(ValueError, match="at least one"):
        op.all()
    with pytest.raises(TypeError, match="argument 1"):
        op.any(i < 3, i + 1)


def test_if_then_else_checks_its_condition_and_types():
    e = op.if_then_else(i < 3, i, 0)
    assert e.op == "tir.if_then_else" and e.args[2].dtype == "int32"
    with pytest.raises(TypeError, match="boolean"):
        op.if_then_else(i, 1, 0)
    with pytest.raises(TypeError, match="different dtypes"):
        op.if_then_else(i < 3, i, b8)


def test_select_accepts_numbers_as_tvm_does():
    sel = n.Select(i < 3, 1, b8)
    assert sel.true_value.dtype == "uint8" and sel.dtype == "uint8"
    assert n.Select(True, 1, 2).condition.dtype == "bool"
    assert simplify(n.Select(True, 1, 2)).value == 1


def test_divisions_and_constants():
    assert isinstance(op.truncdiv(i, 4), n.Div) and isinstance(op.truncmod(i, 4), n.Mod)
    assert isinstance(op.indexdiv(i, 4), n.FloorDiv) and isinstance(op.indexmod(i, 4), n.FloorMod)
    assert isinstance(op.floordiv(7, i), n.FloorDiv) and op.floordiv(7, i).a.value == 7
    assert op.max_value("int8").value == 127 and op.min_value("int8").value == -128
    assert op.max_value("uint16").value == 65535 and op.min_value("uint8").value == 0
    assert op.max_value("float32").value > 3e38
    with pytest.raises(ValueError, match="not a numeric dtype"):
        op.max_value("handle")
    assert op.abs(b8) is b8 and isinstance(op.abs(j), n.Select)
    call = op.call_extern("int32", "puts", 1)
    assert call.op == "tir.call_extern" and call.args[0].value == "puts"


def test_tvm_namespaces_export_the_helpers():
    for name in ("all", "any", "if_then_else", "likely", "truncdiv", "truncmod", "indexdiv", "indexmod", "floordiv",
                 "floormod", "div", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "abs", "max_value",
                 "min_value", "call_extern", "shift_left", "shift_right"):
        assert callable(getattr(tvm_tir, name)), name
    for name in ("all", "any", "abs", "indexdiv", "indexmod", "truncdiv", "truncmod", "max_value", "min_value"):
        assert callable(getattr(tvm_te, name)), name
    assert tvm_tir.shift_left(1, i).args[0].value == 1


def test_itervar_operators():
    k = te.reduce_axis((0, 4), name="k")
    assert isinstance(k < 2, n.LT) and k.__lt__(2).a is k.var
    assert isinstance((k >= 1) & (k < 3), n.And)
    assert (k & 1).op == "tir.bitwise_and" and (~k).op == "tir.bitwise_not"
    assert isinstance(8 // k, n.FloorDiv) and isinstance(-k, n.Sub)


# ------------------------------------------------------------------------------ simplification
@pytest.mark.parametrize("make, expected", [
    (lambda: op.all(i >= 0, i < 6), 1),                # decided by the range of i
    (lambda: op.any(i < 0, j > 9), 0),
    (lambda: (i < 3) & (i < 3), "i < 3"),
    (lambda: ~(i < 3), "i >= 3"),
    (lambda: ~~(i < j), "i < j"),
    (lambda: ~((i < 1) | (j >= 2)), "i >= 1 && j < 2"),
    (lambda: i & 0, 0),
    (lambda: i | 0, "i"),
    (lambda: i ^ 0, "i"),
    (lambda: i & -1, "i"),
    (lambda: (i & i), "i"),
    (lambda: n.const(12) & 10, 8),
    (lambda: n.const(12) ^ 10, 6),
    (lambda: ~n.const(5, "uint8"), 250),
    (lambda: ~n.const(5, "int8"), -6),
    (lambda: b8 | 255, 255),
    (lambda: op.if_then_else(i < j, j, j), "j"),
    (lambda: n.FloatImm(3.0) / 2.0, 1.5),
])
def test_simplified_forms(make, expected):
    from vta.tir.printer import astext

    expr = make()
    got = simplify(expr, RANGES)
    if isinstance(expected, str):
        assert astext(got) == expected
    else:
        assert got.value == expected
    if not isinstance(expected, float):
        same_meaning(expr, got)


def _random_expr(rng: random.Random, depth: int, want_bool: bool):
    """A random integer (or boolean) expression over i and j using every operator."""
    if depth == 0:
        if want_bool:
            return rng.choice([i, j]) < rng.randrange(-2, 7)
        return rng.choice([i, j, n.const(rng.randrange(-8, 9))])
    d = depth - 1
    if want_bool:
        kind = rng.randrange(7)
        a = _random_expr(rng, d, True)
        b = _random_expr(rng, d, True)
        if kind == 0:
            return a & b
        if kind == 1:
            return a | b
        if kind == 2:
            return ~a
        if kind == 3:
            return a ^ b
        if kind == 4:
            return op.all(a, b, _random_expr(rng, 0, True))
        if kind == 5:
            return op.any(a, b)
        x, y = _random_expr(rng, d, False), _random_expr(rng, d, False)
        return rng.choice([x < y, x <= y, x > y, x >= y, x == y, x != y])
    kind = rng.randrange(10)
    a, b = _random_expr(rng, d, False), _random_expr(rng, d, False)
    if kind == 0:
        return a & b
    if kind == 1:
        return a | b
    if kind == 2:
        return a ^ b
    if kind == 3:
        return ~a
    if kind == 4:
        return op.if_then_else(_random_expr(rng, d, True), a, b)
    if kind == 5:
        return n.Select(_random_expr(rng, d, True), a, b)
    if kind == 6:
        return op.truncdiv(a, rng.randrange(1, 5)) + op.truncmod(b, rng.randrange(1, 5))
    if kind == 7:
        return op.indexdiv(a, rng.randrange(1, 5)) - op.indexmod(b, 3)
    if kind == 8:
        return (a >> rng.randrange(0, 3)) + (b << rng.randrange(0, 3))
    return a * 2 - b + op.abs(a)


@pytest.mark.parametrize("seed", range(40))
def test_simplify_keeps_the_meaning_of_random_expressions(seed):
    rng = random.Random(seed)
    expr = _random_expr(rng, 3, bool(seed % 2))
    same_meaning(expr, simplify(expr, RANGES))
