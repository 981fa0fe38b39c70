"""Linear-form detection, clip bounds and the simplifier, checked against direct evaluation."""

from __future__ import annotations

import random

import pytest

from vta.tir import nodes as n
from vta.tir.arith import as_const_int, const_bounds, is_const_int, structural_equal
from vta.tir.linear import detect_clip_bound, detect_linear_equation
from vta.tir.simplify import simplify

from .interp import Interpreter

i, j, k = n.Var("i"), n.Var("j"), n.Var("k")
RANGES = {i: (0, 4), j: (0, 16), k: (0, 3)}


def ev(e, env):
    return Interpreter({}).eval(e, env)


def check_equivalent(expr, simplified, ranges=RANGES, samples=60):
    rng = random.Random(7)
    for _ in range(samples):
        env = {v: rng.randrange(lo, lo + ext) for v, (lo, ext) in ranges.items()}
        assert ev(expr, env) == ev(simplified, env), (expr, simplified, env)


def test_const_helpers():
    assert as_const_int(n.IntImm(5)) == 5 and as_const_int(i) is None and as_const_int(3) == 3
    assert is_const_int(n.IntImm(0), 0) and not is_const_int(n.IntImm(1), 0) and not is_const_int(i)


@pytest.mark.parametrize("make, expected", [
    (lambda: i + j - i + 3 * j + 2 - 2, "4j"),
    (lambda: (i * 16 + j) // 16, "i"),
    (lambda: (i * 16 + j) % 16, "j"),
    (lambda: (i * 32 + j + 16) // 16, "2i+1"),
    (lambda: n.Min(i + 1, i), "i"),
    (lambda: n.Max(i, n.IntImm(0)), "i"),
    (lambda: n.LT(i, n.IntImm(4)), 1),
    (lambda: n.GE(j, n.IntImm(16)), 0),
    (lambda: n.Call("int32", "tir.shift_right", (i, n.IntImm(0))), "i"),
    (lambda: n.Select(n.LT(k, n.IntImm(5)), i, j), "i"),
    (lambda: (n.IntImm(7) * 3 - 1) // 4, 5),
])
def test_simplify_cases(make, expected):
    expr = make()
    out = simplify(expr, RANGES)
    check_equivalent(expr, out)
    if isinstance(expected, int):
        assert as_const_int(out) == expected
    elif expected == "i":
        assert out is i
    elif expected == "j":
        assert out is j
    elif expected == "4j":
        assert isinstance(out, n.Mul) and out.a is j and as_const_int(out.b) == 4
    elif expected == "2i+1":
        assert isinstance(out, n.Add) and as_const_int(out.b) == 1


def test_floordiv_of_multiples_plus_small_constant():
    e = n.FloorDiv(i * 4 + j * 8 + 3, n.IntImm(8))
    out = simplify(e)  # no ranges needed: i*4 + j*8 is a multiple of 4, + 3 never crosses a multiple of 8
    check_equivalent(e, out, ranges={i: (-20, 40), j: (-5, 10), k: (0, 1)})
    assert isinstance(out, n.Add) and not any(
        isinstance(x, n.IntImm) and x.value == 3 for x in (out.a, out.b))
    m = n.FloorMod(i * 6 + 1, n.IntImm(4))
    check_equivalent(m, simplify(m), ranges={i: (-20, 40), j: (0, 1), k: (0, 1)})


def test_simplify_random_linear_expressions():
    rng = random.Random(1)
    leaves = [i, j, k]
    for _ in range(150):
        e = rng.choice(leaves)
        for _ in range(rng.randrange(1, 6)):
            op = rng.randrange(7)
            other = rng.choice(leaves + [n.IntImm(rng.randrange(-5, 9))])
            if op == 0:
                e = e + other
            elif op == 1:
                e = e - other
            elif op == 2:
                e = e * rng.randrange(-3, 5)
            elif op == 3:
                e = e // rng.randrange(1, 9)
            elif op == 4:
                e = e % rng.randrange(1, 9)
            elif op == 5:
                e = n.Min(e, other)
            else:
                e = n.Max(e, other)
        check_equivalent(e, simplify(e, RANGES), samples=25)


def test_simplify_statements_remove_dead_code():
    buf = n.Var("A", "handle")
    store = n.Store(buf, n.IntImm(1), i)
    loop = n.For(i, n.IntImm(0), n.IntImm(4), n.ForKind.SERIAL,
                 n.IfThenElse(n.LT(i, n.IntImm(8)), store, n.Evaluate(n.IntImm(7))))
    out = simplify(loop)
    assert isinstance(out, n.For) and out.body is store
    assert isinstance(simplify(n.For(j, n.IntImm(0), n.IntImm(0), n.ForKind.SERIAL, store)), n.Evaluate)


def test_detect_linear_equation():
    coefs = detect_linear_equation(i * 3 + j * k + 5 - i, [i, j])
    assert as_const_int(coefs[0]) == 2 and coefs[1] is k and as_const_int(coefs[2]) == 5
    assert detect_linear_equation(i * i, [i]) is None
    assert detect_linear_equation((i + j) // 2, [i]) is None
    coefs = detect_linear_equation(k * 4 + 7, [i, j])
    assert is_const_int(coefs[0], 0) and is_const_int(coefs[1], 0)
    check_equivalent(k * 4 + 7, coefs[2])


def test_detect_clip_bound():
    cond = n.And(n.And(n.LE(n.IntImm(2), i), n.LT(i, n.IntImm(7))), n.GE(j, n.IntImm(1)))
    b = detect_clip_bound(cond, [i, j])
    assert [as_const_int(x) if x is not None else None for x in b] == [2, 6, 1, None]
    assert detect_clip_bound(n.LT(i + j, n.IntImm(3)), [i, j]) is None
    b = detect_clip_bound(n.GT(n.IntImm(10), i * 2), [i])
    assert as_const_int(b[1]) == 4


def test_const_bounds_and_structural_equal():
    assert const_bounds(i * 16 + j, RANGES) == (0, 63)
    assert const_bounds((i * 16 + j) // 8, RANGES) == (0, 7)
    assert const_bounds(j % 5, RANGES) == (0, 4)
    assert structural_equal(i // 16 + 1, i // 16 + 1)
    assert not structural_equal(i // 16, n.Var("i") // 16)
