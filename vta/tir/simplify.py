"""Arithmetic simplification of TIR expressions and statements.

``simplify(node)`` rewrites bottom-up:

* constant folding of every integer operator, comparison, logical operator, cast, shift
  (``x >> 0`` and ``x << 0`` become ``x``) and bitwise operation (with the identities of 0
  and all ones); ``a && a`` and ``a || a`` become ``a``, ``!`` of a comparison of integers
  becomes the opposite comparison, ``!!a`` becomes ``a`` and ``!`` of ``&&``/``||`` moves inward
  (De Morgan);
* integer sums are put in a canonical linear form (:class:`vta.tir.arith.LinearForm`): like
  terms merge, zero terms vanish, the constant comes last;
* ``floordiv``/``floormod`` by a positive constant split off the multiples of the divisor and
  drop the remainder when the variable ranges prove it lies in one period;
* ``min``/``max`` and comparisons decided by interval bounds;
* ``Select``/``if_then_else`` with a constant condition or equal branches, ``IfThenElse``
  statements with a constant condition (dead branch removed), loops of extent 0 removed.

Loop variables get their ranges from enclosing ``For`` loops and ``virtual_thread`` attributes;
callers may pass extra ranges.
"""

from __future__ import annotations

import math
from typing import Any

from . import nodes as n
from .arith import CANONICAL, LinearForm, RangeMap, _linear, as_const_int, const_bounds, structural_equal, to_linear
from .functor import StmtExprMutator

__all__ = ["simplify", "Simplifier"]


def _wrap(value: int, dtype: str) -> int:
    """``value`` wrapped to the integer dtype's range (two's complement)."""
    if dtype == "bool":
        return 1 if value else 0
    bits = n.dtype_bits(dtype)
    value &= (1 << bits) - 1
    if dtype.startswith("int") and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _int(value: int, dtype: str) -> n.IntImm:
    return n.IntImm(_wrap(value, dtype) if n.is_int_dtype(dtype) else value, dtype)


def _bool(value: bool) -> n.IntImm:
    return n.IntImm(1 if value else 0, "bool")


class Simplifier(StmtExprMutator):
    """The rewriting visitor behind :func:`simplify` (kept public for passes needing ranges).

    Parameters
    ----------
    ranges : mapping, optional
        ``Var -> Range`` (or ``(min, extent)``) known on entry.
    """

    def __init__(self, ranges: RangeMap | None = None):
        self.ranges: dict = dict(ranges or {})

    # ------------------------------------------------------------------ helpers
    def _bounds(self, expr: n.PrimExpr):
        return const_bounds(expr, self.ranges)

    def _diff_bounds(self, a: n.PrimExpr, b: n.PrimExpr):
        lin = _linear(a).add(_linear(b), -1)
        return self._bounds(lin.to_expr(a.dtype if n.is_int_dtype(a.dtype) else "int32"))

    # ------------------------------------------------------------------ arithmetic
    def _arith(self, node: n.BinaryOp) -> n.PrimExpr:
        a, b = self.visit(node.a), self.visit(node.b)
        if a is node.a and b is node.b and node.__dict__.get(CANONICAL):
            return node
        dtype = node.dtype
        ca, cb = as_const_int(a), as_const_int(b)
        if isinstance(a, n.FloatImm) and isinstance(b, n.FloatImm):
            fa, fb = a.value, b.value
            value = {n.Add: fa + fb, n.Sub: fa - fb, n.Mul: fa * fb}.get(type(node))
            if value is not None:
                return n.FloatImm(value, dtype)
        if not n.is_int_dtype(dtype):
            return node if (a is node.a and b is node.b) else type(node)(a, b)
        if ca is not None and cb is not None:
            value = {n.Add: ca + cb, n.Sub: ca - cb, n.Mul: ca * cb}[type(node)]
            return _int(value, dtype)
        # The canonical form of ``type(node)(a, b)``, merged from the (remembered) forms of the
        # operands without building that node first.
        unchanged = a is node.a and b is node.b
        cls = type(node)
        if cls is n.Add:
            lin = _linear(a).add(_linear(b))
        elif cls is n.Sub:
            lin = _linear(a).add(_linear(b), -1)
        else:
            la, lb = _linear(a), _linear(b)
            if lb.is_const:
                lin = la.scale(lb.const)
            elif la.is_const:
                lin = lb.scale(la.const)
            else:  # a product of two non-constants is an atom: its own canonical form
                rebuilt = node if unchanged else cls(a, b)
                rebuilt.__dict__[CANONICAL] = True
                return rebuilt
        rdtype = dtype if unchanged else n._binary_dtype(a, b)
        return lin.to_expr(rdtype)

    visit_Add = visit_Sub = visit_Mul = _arith

    def _divmod(self, node: n.BinaryOp) -> n.PrimExpr:
        a, b = self.visit(node.a), self.visit(node.b)
        dtype = node.dtype
        ca, cb = as_const_int(a), as_const_int(b)
        floor = isinstance(node, (n.FloorDiv, n.FloorMod))
        is_div = isinstance(node, (n.FloorDiv, n.Div))
        if isinstance(a, n.FloatImm) and isinstance(b, n.FloatImm) and isinstance(node, n.Div) and b.value != 0:
            return n.FloatImm(a.value / b.value, dtype)
        if cb == 0:
            return type(node)(a, b)  # left for the run time to report
        if ca is not None and cb is not None:
            if floor:
                value = ca // cb if is_div else ca % cb
            else:
                q = abs(ca) // abs(cb) * (1 if (ca >= 0) == (cb >= 0) else -1)
                value = q if is_div else ca - q * cb
            return _int(value, dtype)
        if cb is not None and cb > 0 and n.is_int_dtype(dtype):
            if cb == 1:
                return a if is_div else _int(0, dtype)
            if not floor:
                lo, _ = self._bounds(a)
                if lo is None or lo < 0:
                    return type(node)(a, b)
            lin = to_linear(a)
            quot = LinearForm({}, lin.const // cb)
            rem = LinearForm({}, lin.const % cb)
            for key, (atom, coef) in lin.terms.items():
                if coef % cb == 0:
                    quot.terms[key] = [atom, coef // cb]
                else:
                    rem.terms[key] = [atom, coef]
            rem_expr = rem.to_expr(dtype)
            rlo, rhi = self._bounds(rem_expr)
            if rlo is not None and rhi is not None and rlo // cb == rhi // cb:
                k = rlo // cb
                if is_div:
                    return quot.add(LinearForm.constant(k)).to_expr(dtype)
                return rem.add(LinearForm.constant(-k * cb)).to_expr(dtype)
            # The variable terms are multiples of g = gcd(coefficients, c) modulo c, so a
            # constant remainder below g never crosses a multiple of c.
            g = cb
            for _, coef in rem.terms.values():
                g = math.gcd(g, coef)
            if rem.terms and 0 < rem.const < g:
                k = rem.const
                rem.const = 0
                inner = type(node)(rem.to_expr(dtype), b)
                if is_div:
                    return quot.add(LinearForm.atom(inner)).to_expr(dtype) if quot.terms or quot.const else inner
                return n.Add(inner, n.IntImm(k, dtype))
            # Nested floordiv: floordiv(floordiv(x, c1), c2) == floordiv(x, c1 * c2).
            if is_div and floor and isinstance(a, n.FloorDiv) and as_const_int(a.b) and as_const_int(a.b) > 0:
                return self.visit(n.FloorDiv(a.a, n.IntImm(as_const_int(a.b) * cb, dtype)))
            if quot.terms and rem.terms:
                # floordiv(q*c + r, c) == q + floordiv(r, c); floormod drops q*c.
                inner = type(node)(rem_expr, b)
                if is_div:
                    return quot.add(LinearForm.atom(inner)).to_expr(dtype)
                return inner
        return node if (a is node.a and b is node.b) else type(node)(a, b)

    visit_FloorDiv = visit_FloorMod = visit_Div = visit_Mod = _divmod

    def _minmax(self, node: n.BinaryOp) -> n.PrimExpr:
        a, b = self.visit(node.a), self.visit(node.b)
        is_min = isinstance(node, n.Min)
        ca, cb = as_const_int(a), as_const_int(b)
        if ca is not None and cb is not None:
            return _int(min(ca, cb) if is_min else max(ca, cb), node.dtype)
        if isinstance(a, n.FloatImm) and isinstance(b, n.FloatImm):
            return n.FloatImm(min(a.value, b.value) if is_min else max(a.value, b.value), node.dtype)
        if structural_equal(a, b):
            return a
        if n.is_int_dtype(node.dtype):
            lo, hi = self._diff_bounds(a, b)
            if hi is not None and hi <= 0:  # a <= b
                return a if is_min else b
            if lo is not None and lo >= 0:  # a >= b
                return b if is_min else a
        return node if (a is node.a and b is node.b) else type(node)(a, b)

    visit_Min = visit_Max = _minmax

    # ------------------------------------------------------------------ logic
    def _compare(self, node: n.CmpOp) -> n.PrimExpr:
        a, b = self.visit(node.a), self.visit(node.b)
        rebuilt = node if (a is node.a and b is node.b) else type(node)(a, b)
        if isinstance(node, (n.And, n.Or)):
            if structural_equal(a, b):
                return a
            ca, cb = as_const_int(a), as_const_int(b)
            if isinstance(node, n.And):
                if ca == 0 or cb == 0:
                    return _bool(False)
                if ca is not None:
                    return b
                if cb is not None:
                    return a
            else:
                if (ca is not None and ca != 0) or (cb is not None and cb != 0):
                    return _bool(True)
                if ca is not None:
                    return b
                if cb is not None:
                    return a
            return rebuilt
        if isinstance(a, n.FloatImm) and isinstance(b, n.FloatImm):
            fa, fb = a.value, b.value
        elif n.is_int_dtype(a.dtype) and n.is_int_dtype(b.dtype) or a.dtype == "bool":
            lo, hi = self._diff_bounds(a, b)
            if lo is None and hi is None:
                return rebuilt
            decided = _decide(type(node), lo, hi)
            return rebuilt if decided is None else _bool(decided)
        else:
            return rebuilt
        value = {n.EQ: fa == fb, n.NE: fa != fb, n.LT: fa < fb, n.LE: fa <= fb, n.GT: fa > fb, n.GE: fa >= fb}
        return _bool(value[type(node)])

    visit_EQ = visit_NE = visit_LT = visit_LE = visit_GT = visit_GE = visit_And = visit_Or = _compare

    def visit_Not(self, node: n.Not) -> n.PrimExpr:
        a = self.visit(node.a)
        ca = as_const_int(a)
        if ca is not None:
            return _bool(not ca)
        if isinstance(a, n.Not):
            return a.a
        if isinstance(a, (n.And, n.Or)):
            # De Morgan: the negation moves inward, where comparisons absorb it, so a padding
            # condition written as ~(x < lo | x >= hi) becomes the conjunction of bounds the
            # DMA pass reads.
            outer = n.Or if isinstance(a, n.And) else n.And
            return self.visit(outer(n.Not(a.a), n.Not(a.b)))
        flipped = _NEGATED.get(type(a))
        if flipped is not None and n.is_int_dtype(a.a.dtype) and n.is_int_dtype(a.b.dtype):
            # !(x < y) is x >= y on integers (not on floats: NaN compares false both ways).
            return flipped(a.a, a.b)
        return node if a is node.a else n.Not(a)

    def visit_Select(self, node: n.Select) -> n.PrimExpr:
        cond = self.visit(node.condition)
        c = as_const_int(cond)
        if c is not None:
            return self.visit(node.true_value if c else node.false_value)
        t, f = self.visit(node.true_value), self.visit(node.false_value)
        if structural_equal(t, f):
            return t
        return n.Select(cond, t, f)

    def visit_Cast(self, node: n.Cast) -> n.PrimExpr:
        v = self.visit(node.value)
        if v.dtype == node.dtype:
            return v
        cv = as_const_int(v)
        if cv is not None and n.is_int_dtype(node.dtype):
            return _int(cv, node.dtype)
        if cv is not None and node.dtype.startswith("float"):
            return n.FloatImm(float(cv), node.dtype)
        if isinstance(v, n.FloatImm) and n.is_int_dtype(node.dtype):
            return _int(int(v.value), node.dtype)
        return node if v is node.value else n.Cast(node.dtype, v)

    def visit_Call(self, node: n.Call) -> n.PrimExpr:
        args = tuple(self.visit(a) if isinstance(a, n.PrimExpr) else a for a in node.args)
        if node.op in ("tir.shift_right", "tir.shift_left") and len(args) == 2:
            x, k = args
            ck, cx = as_const_int(k), as_const_int(x)
            if ck == 0:
                return x
            if ck is not None and cx is not None and ck >= 0:
                return _int(cx >> ck if node.op == "tir.shift_right" else cx << ck, node.dtype)
        if node.op == "tir.likely" and len(args) == 1 and as_const_int(args[0]) is not None:
            return args[0]
        if node.op == "tir.if_then_else" and len(args) == 3:
            c = as_const_int(args[0])
            if c is not None:
                return args[1] if c else args[2]
            if structural_equal(args[1], args[2]):
                return args[1]
        if node.op in _BITWISE and n.is_int_dtype(node.dtype):
            folded = _fold_bitwise(node.op, args, node.dtype)
            if folded is not None:
                return folded
        if all(x is y for x, y in zip(args, node.args, strict=True)):
            return node
        return n.Call(node.dtype, node.op, args)

    # ------------------------------------------------------------------ statements
    def _with_range(self, var: Any, rng: tuple, visit_body):
        old = self.ranges.get(var, _MISSING)
        self.ranges[var] = rng
        try:
            return visit_body()
        finally:
            if old is _MISSING:
                del self.ranges[var]
            else:
                self.ranges[var] = old

    def visit_For(self, node: n.For) -> n.Stmt:
        lo, ext = self.visit(node.min), self.visit(node.extent)
        if as_const_int(ext) is not None and as_const_int(ext) <= 0:
            return n.Evaluate(n.IntImm(0))
        body = self._with_range(node.loop_var, (lo, ext), lambda: self.visit(node.body))
        if lo is node.min and ext is node.extent and body is node.body:
            return node
        return n.For(node.loop_var, lo, ext, node.kind, body, node.annotations)

    def visit_AttrStmt(self, node: n.AttrStmt) -> n.Stmt:
        value = self.visit(node.value) if isinstance(node.value, n.PrimExpr) else node.value
        var = getattr(node.node, "var", None)
        if node.attr_key in ("virtual_thread", "thread_extent") and isinstance(var, n.Var):
            body = self._with_range(var, (n.IntImm(0), value), lambda: self.visit(node.body))
        else:
            body = self.visit(node.body)
        if value is node.value and body is node.body:
            return node
        return n.AttrStmt(node.node, node.attr_key, value, body)

    def visit_IfThenElse(self, node: n.IfThenElse) -> n.Stmt:
        cond = self.visit(node.condition)
        c = as_const_int(cond)
        if c is not None:
            if c:
                return self.visit(node.then_case)
            return self.visit(node.else_case) if node.else_case is not None else n.Evaluate(n.IntImm(0))
        then_case = self.visit(node.then_case)
        else_case = self.visit(node.else_case) if node.else_case is not None else None
        if cond is node.condition and then_case is node.then_case and else_case is node.else_case:
            return node
        return n.IfThenElse(cond, then_case, else_case)


_MISSING = object()

#: The comparison equal to the negation of each comparison (on integers).
_NEGATED = {n.LT: n.GE, n.LE: n.GT, n.GT: n.LE, n.GE: n.LT, n.EQ: n.NE, n.NE: n.EQ}

_BITWISE = ("tir.bitwise_and", "tir.bitwise_or", "tir.bitwise_xor", "tir.bitwise_not")


def _fold_bitwise(op: str, args: tuple, dtype: str) -> n.PrimExpr | None:
    """Constant folding and the identities with 0 and -1 of the bitwise calls."""
    consts = [as_const_int(a) for a in args]
    if op == "tir.bitwise_not":
        return _int(~consts[0], dtype) if consts[0] is not None else None
    ca, cb = consts
    if ca is not None and cb is not None:
        value = {"tir.bitwise_and": ca & cb, "tir.bitwise_or": ca | cb, "tir.bitwise_xor": ca ^ cb}[op]
        return _int(value, dtype)
    all_ones = _wrap(-1, dtype)
    for c, other in ((ca, args[1]), (cb, args[0])):
        if c is None or other.dtype != dtype:
            continue
        c = _wrap(c, dtype)
        if c == 0:
            return _int(0, dtype) if op == "tir.bitwise_and" else other
        if c == all_ones and op == "tir.bitwise_and":
            return other
        if c == all_ones and op == "tir.bitwise_or":
            return _int(all_ones, dtype)
    if op in ("tir.bitwise_and", "tir.bitwise_or") and structural_equal(args[0], args[1]):
        return args[0]
    return None


def _decide(op: type, lo: int | None, hi: int | None) -> bool | None:
    """Decide ``a op b`` from the bounds ``[lo, hi]`` of ``a - b`` (``None`` if undecided)."""
    if op is n.EQ:
        if lo is not None and lo == hi:
            return lo == 0
        if (lo is not None and lo > 0) or (hi is not None and hi < 0):
            return False
        return None
    if op is n.NE:
        d = _decide(n.EQ, lo, hi)
        return None if d is None else not d
    if op is n.LT:
        if hi is not None and hi < 0:
            return True
        if lo is not None and lo >= 0:
            return False
    elif op is n.LE:
        if hi is not None and hi <= 0:
            return True
        if lo is not None and lo > 0:
            return False
    elif op is n.GT:
        if lo is not None and lo > 0:
            return True
        if hi is not None and hi <= 0:
            return False
    elif op is n.GE:
        if lo is not None and lo >= 0:
            return True
        if hi is not None and hi < 0:
            return False
    return None


def simplify(node: Any, ranges: RangeMap | None = None) -> Any:
    """Simplify an expression, a statement or a :class:`~vta.tir.nodes.PrimFunc`.

    Parameters
    ----------
    node : PrimExpr, Stmt or PrimFunc
        What to simplify. Python ints are converted to constants.
    ranges : mapping, optional
        ``Var -> Range`` or ``Var -> (min, extent)`` for variables defined outside ``node``.

    Returns
    -------
    The simplified node (the same object when nothing changed).

    Raises
    ------
    TypeError
        If ``node`` is not a TIR node.
    """
    if isinstance(node, (int, float)):
        node = n.convert(node)
    simp = Simplifier(ranges)
    if isinstance(node, n.PrimFunc):
        body = simp.visit(node.body)
        return node if body is node.body else node.with_body(body)
    if not isinstance(node, (n.PrimExpr, n.Stmt)):
        raise TypeError(f"simplify expects a PrimExpr, Stmt or PrimFunc, got {type(node).__name__}")
    return simp.visit(node)
