"""Linear equations and bounds in chosen variables, on top of the simplifier.

:func:`detect_linear_equation` is TVM's ``DetectLinearEquation`` (the coefficients of chosen
variables plus the remaining base, each simplified) and :func:`detect_clip_bound` TVM's
``DetectClipBound`` (per-variable bounds implied by a conjunction of comparisons). The DMA,
ALU, uop and tensorize passes match their index expressions with them.
"""

from __future__ import annotations

from typing import Any, Sequence

from . import nodes as n
from .arith import _mentions, as_const_int, is_const_int, structural_equal
from .simplify import simplify

__all__ = ["detect_linear_equation", "detect_clip_bound"]


def _linear_in(expr: n.PrimExpr, ids: set[int]):
    """(coefficient map id(var) -> expr, base expr) or None when non-linear in the variables."""
    if isinstance(expr, n.Var) and id(expr) in ids:
        return {id(expr): n.IntImm(1, expr.dtype)}, n.IntImm(0, expr.dtype)
    if not _mentions(expr, ids):
        return {}, expr
    if isinstance(expr, (n.Add, n.Sub)):
        la, lb = _linear_in(expr.a, ids), _linear_in(expr.b, ids)
        if la is None or lb is None:
            return None
        coefs = dict(la[0])
        for k, v in lb[0].items():
            if isinstance(expr, n.Add):
                coefs[k] = coefs[k] + v if k in coefs else v
            else:
                coefs[k] = coefs[k] - v if k in coefs else n.IntImm(0, v.dtype) - v
        base = la[1] + lb[1] if isinstance(expr, n.Add) else la[1] - lb[1]
        return coefs, base
    if isinstance(expr, n.Mul):
        for lin, other in ((expr.a, expr.b), (expr.b, expr.a)):
            if not _mentions(other, ids):
                l = _linear_in(lin, ids)
                if l is None:
                    return None
                return {k: v * other for k, v in l[0].items()}, l[1] * other
        return None
    if (isinstance(expr, n.Cast) and n.is_int_dtype(expr.dtype) and n.is_int_dtype(expr.value.dtype)
            and n.dtype_bits(expr.dtype) >= n.dtype_bits(expr.value.dtype)):
        return _linear_in(expr.value, ids)  # a widening cast keeps the value
    return None


def detect_linear_equation(expr: n.PrimExpr, variables: Sequence[n.Var]) -> list[n.PrimExpr] | None:
    """Coefficients of ``expr`` as a linear function of ``variables``, plus the base.

    Returns ``[c_0, ..., c_{k-1}, base]`` with ``expr == sum(c_i * v_i) + base``, where no
    ``c_i`` and not the base mention any of the variables; every entry is simplified (a
    constant coefficient is an ``IntImm``). Returns ``None`` when ``expr`` is not linear in the
    variables (e.g. ``v * v``, ``floordiv(v, 2)``, a variable coefficient depending on ``v``).
    """
    ids = {id(v) for v in variables}
    res = _linear_in(expr, ids)
    if res is None:
        return None
    coefs, base = res
    out = []
    for v in variables:
        c = coefs.get(id(v), n.IntImm(0, v.dtype))
        c = simplify(c)
        if _mentions(c, ids):
            return None
        out.append(c)
    out.append(simplify(base))
    return out


def _conjuncts(cond: n.PrimExpr) -> list[n.PrimExpr]:
    if isinstance(cond, n.And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def detect_clip_bound(cond: n.PrimExpr, variables: Sequence[n.Var]) -> list[n.PrimExpr | None] | None:
    """Per-variable bounds implied by a conjunction of comparisons.

    ``cond`` must be an ``And`` of comparisons (``< <= > >= ==``), each linear in exactly one
    of ``variables`` with a constant coefficient (and free of the others). Returns
    ``[min_0, max_0, min_1, max_1, ...]`` (inclusive bounds; ``None`` where the condition sets
    no bound), or ``None`` when some conjunct does not have that shape.
    """
    lows: list[Any] = [None] * len(variables)
    highs: list[Any] = [None] * len(variables)
    for term in _conjuncts(cond):
        if not isinstance(term, (n.LT, n.LE, n.GT, n.GE, n.EQ)):
            return None
        # Normalise to  diff >= 0  (and for EQ, diff == 0).
        if isinstance(term, (n.GE, n.GT, n.EQ)):
            diff = term.a - term.b
        else:
            diff = term.b - term.a
        if isinstance(term, (n.GT, n.LT)):
            diff = diff - 1
        coefs = detect_linear_equation(diff, variables)
        if coefs is None:
            return None
        used = [i for i, c in enumerate(coefs[:-1]) if not is_const_int(c, 0)]
        if len(used) != 1:
            return None
        i = used[0]
        c = as_const_int(coefs[i])
        base = coefs[-1]
        if c is None:
            return None
        kb = as_const_int(base)
        # c*v + base >= 0
        if c > 0:
            if kb is not None:
                lo = -(kb // c)  # ceil(-kb / c)
            elif c == 1:
                lo = simplify(n.IntImm(0, base.dtype) - base)
            else:
                return None
            new = [("lo", lo)]
            if isinstance(term, n.EQ):
                new.append(("hi", lo))
        else:
            cpos = -c
            if kb is not None:
                hi = kb // cpos
            elif cpos == 1:
                hi = base
            else:
                return None
            new = [("hi", hi)]
            if isinstance(term, n.EQ):
                new.append(("lo", hi))
        for side, value in new:
            value = n.convert(value) if isinstance(value, int) else value
            store = lows if side == "lo" else highs
            old = store[i]
            if old is None:
                store[i] = value
                continue
            ov, nv = as_const_int(old), as_const_int(value)
            if ov is None or nv is None:
                if structural_equal(old, value):
                    continue
                return None
            store[i] = n.IntImm(max(ov, nv) if side == "lo" else min(ov, nv))
    out: list[Any] = []
    for lo, hi in zip(lows, highs, strict=True):
        out.extend([lo, hi])
    return out
