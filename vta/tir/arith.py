"""Integer arithmetic analysis on TIR expressions.

Helpers used by the simplifier and by the pattern-matching passes:

* constant helpers: :func:`as_const_int`, :func:`is_const_int`;
* structural identity of expressions (:func:`structural_key`, :func:`structural_equal`), so two
  separately built ``floordiv(i, 16)`` nodes are recognised as the same term;
* linear forms: :class:`LinearForm` (integer-coefficient sums of atoms, the canonical form of the
  simplifier);
* interval bounds: :func:`const_bounds` (an inclusive ``(lo, hi)`` interval of an integer
  expression given the ranges of its variables, ``None`` for an unbounded side).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

from . import nodes as n
from .functor import post_order_visit

__all__ = [
    "as_const_int", "is_const_int", "structural_key", "structural_equal", "LinearForm",
    "to_linear", "const_bounds", "uses_var",
    "RangeMap",
]

#: Variable ranges accepted by the analyses: ``Var -> Range`` or ``Var -> (min, extent)``.
RangeMap = Mapping[n.Var, Any]


# ------------------------------------------------------------------------------ constants
def as_const_int(expr: Any) -> int | None:
    """The Python int held by ``expr`` when it is an integer constant, else ``None``.

    Plain Python ints (not bools) are accepted too; ``IntImm`` of any integer or bool dtype
    yields its value.
    """
    if isinstance(expr, bool):
        return int(expr)
    if isinstance(expr, int):
        return expr
    if isinstance(expr, n.IntImm):
        return expr.value
    return None


def is_const_int(expr: Any, value: int | None = None) -> bool:
    """Whether ``expr`` is an integer constant (equal to ``value`` when given)."""
    c = as_const_int(expr)
    return c is not None and (value is None or c == value)


# ------------------------------------------------------------------------------ structure
_KEY_FIELDS: dict[type, tuple[str, ...]] = {}


def structural_key(node: Any) -> Any:
    """A hashable key equal for structurally identical expressions.

    Variables and buffers are identified by object identity (two ``Var("i")`` are different),
    constants by value and dtype, everything else by node type and children.
    """
    if isinstance(node, n.Var):
        return ("var", id(node))
    if isinstance(node, n.IntImm):
        return ("int", node.value, node.dtype)
    if isinstance(node, n.FloatImm):
        return ("float", node.value, node.dtype)
    if isinstance(node, n.StringImm):
        return ("str", node.value)
    if isinstance(node, (n.PrimExpr, n.Range)):
        # Nodes are immutable and hold their variables alive, so the key is computed once.
        key = node.__dict__.get("_structural_key")
        if key is None:
            cls = type(node)
            names = _KEY_FIELDS.get(cls)
            if names is None:
                names = _KEY_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
            key = (cls.__name__,) + tuple(structural_key(getattr(node, name)) for name in names)
            node.__dict__["_structural_key"] = key
        return key
    if isinstance(node, tuple):
        return ("tuple",) + tuple(structural_key(x) for x in node)
    if isinstance(node, (str, int, float)) or node is None:
        return node
    return ("obj", id(node))


def structural_equal(a: Any, b: Any) -> bool:
    """Whether two expressions have the same structure (variables compared by identity)."""
    return a is b or structural_key(a) == structural_key(b)


class _Found(Exception):
    """Stops :func:`_mentions` at the first match."""


def _mentions(expr: Any, ids: set[int]) -> bool:
    """Whether ``expr`` mentions a variable whose id is in ``ids``."""

    def visit(x: Any) -> None:
        if isinstance(x, n.Var) and id(x) in ids:
            raise _Found

    try:
        post_order_visit(expr, visit)
    except _Found:
        return True
    return False


def uses_var(expr: Any, variables: Iterable[n.Var] | n.Var) -> bool:
    """Whether ``expr`` mentions any of ``variables`` (compared by identity)."""
    if isinstance(variables, n.Var):
        variables = (variables,)
    ids = {id(v) for v in variables}
    return bool(ids) and _mentions(expr, ids)


# ------------------------------------------------------------------------------ linear forms
#: Key in a node's ``__dict__`` marking a sum or product :meth:`LinearForm.to_expr` built.
CANONICAL = "_canonical"


class LinearForm:
    """``sum(coef_k * atom_k) + const`` with integer coefficients.

    Atoms are arbitrary expressions (variables, ``floordiv`` nodes, loads, products of
    variables ...), keyed by :func:`structural_key`; their order is the order of first
    appearance, so rebuilding an expression is deterministic.
    """

    __slots__ = ("terms", "const")

    def __init__(self, terms: dict | None = None, const: int = 0):
        self.terms: dict[Any, list] = terms if terms is not None else {}
        self.const = const

    @staticmethod
    def constant(value: int) -> "LinearForm":
        return LinearForm({}, value)

    @staticmethod
    def atom(expr: n.PrimExpr, coef: int = 1) -> "LinearForm":
        return LinearForm({structural_key(expr): [expr, coef]}, 0)

    def copy(self) -> "LinearForm":
        return LinearForm({k: [a, c] for k, (a, c) in self.terms.items()}, self.const)

    def add(self, other: "LinearForm", scale: int = 1) -> "LinearForm":
        out = self.copy()
        for k, (atom, coef) in other.terms.items():
            if k in out.terms:
                out.terms[k][1] += coef * scale
            else:
                out.terms[k] = [atom, coef * scale]
        out.const += other.const * scale
        out.terms = {k: v for k, v in out.terms.items() if v[1] != 0}
        return out

    def scale(self, factor: int) -> "LinearForm":
        if factor == 0:
            return LinearForm.constant(0)
        return LinearForm({k: [a, c * factor] for k, (a, c) in self.terms.items()}, self.const * factor)

    @property
    def is_const(self) -> bool:
        return not self.terms

    def to_expr(self, dtype: str = "int32") -> n.PrimExpr:
        """Rebuild an expression: positive terms first in order, then negative ones, then the constant.

        Every sum and product built here is marked :data:`CANONICAL` (when its dtype is
        ``dtype``): decomposing and rebuilding it again gives an equal tree (each prefix of the
        terms is in this order too), so the simplifier may keep it as it is.
        """
        result: n.PrimExpr | None = None
        built: list[n.PrimExpr] = []
        ordered = [t for t in self.terms.values() if t[1] > 0] + [t for t in self.terms.values() if t[1] < 0]
        for atom, coef in ordered:
            mag = abs(coef)
            if mag == 1:
                term = atom
            else:
                term = n.Mul(atom, n.IntImm(mag, dtype))
                built.append(term)
            if result is None:
                if coef < 0:
                    term = n.Mul(atom, n.IntImm(coef, dtype))
                    built.append(term)
                result = term
            else:
                result = n.Add(result, term) if coef > 0 else n.Sub(result, term)
                built.append(result)
        if result is None:
            return n.IntImm(self.const, dtype)
        if self.const > 0:
            result = n.Add(result, n.IntImm(self.const, dtype))
            built.append(result)
        elif self.const < 0:
            result = n.Sub(result, n.IntImm(-self.const, dtype))
            built.append(result)
        for node in built:
            if node.dtype == dtype:
                node.__dict__[CANONICAL] = True
        if isinstance(result, (n.Add, n.Sub, n.Mul)) and "_linear" not in result.__dict__:
            # What _linear(result) would compute: the terms in the order written, then the constant.
            result.__dict__["_linear"] = LinearForm({structural_key(a): [a, c] for a, c in ordered}, self.const)
        return result


def to_linear(expr: n.PrimExpr) -> LinearForm:
    """Decompose an integer expression into a :class:`LinearForm`.

    ``Add``, ``Sub`` and ``Mul`` by a constant are expanded; every other node (including a
    product of two non-constant expressions) becomes an atom. The caller owns the result (a
    fresh object it may modify).
    """
    return _linear(expr).copy()


def _linear(expr: n.PrimExpr) -> LinearForm:
    """:func:`to_linear`, remembered on ``Add``/``Sub``/``Mul`` nodes (immutable), so that a sum
    rebuilt from already decomposed parts costs one merge. The result is shared: never modify it."""
    if isinstance(expr, n.IntImm):
        return LinearForm({}, expr.value)
    if not isinstance(expr, (n.Add, n.Sub, n.Mul)):
        return LinearForm.atom(expr)
    lin = expr.__dict__.get("_linear")
    if lin is not None:
        return lin
    if isinstance(expr, n.Add):
        lin = _linear(expr.a).add(_linear(expr.b))
    elif isinstance(expr, n.Sub):
        lin = _linear(expr.a).add(_linear(expr.b), -1)
    else:
        la, lb = _linear(expr.a), _linear(expr.b)
        if lb.is_const:
            lin = la.scale(lb.const)
        elif la.is_const:
            lin = lb.scale(la.const)
        else:
            lin = LinearForm.atom(expr)
    expr.__dict__["_linear"] = lin
    return lin


# ------------------------------------------------------------------------------ bounds
def _range_of(ranges: RangeMap | None, var: n.Var) -> tuple[int | None, int | None] | None:
    if not ranges or var not in ranges:
        return None
    r = ranges[var]
    if isinstance(r, n.Range):
        lo, ext = as_const_int(r.min), as_const_int(r.extent)
    else:
        lo, ext = as_const_int(r[0]), as_const_int(r[1])
    if lo is None:
        return None
    if ext is None:
        return (lo, None)
    return (lo, lo + ext - 1)


def _dtype_bounds(dtype: str) -> tuple[int | None, int | None]:
    if dtype == "bool":
        return (0, 1)
    if dtype.startswith("uint"):
        return (0, (1 << n.dtype_bits(dtype)) - 1)
    if dtype.startswith("int"):
        bits = n.dtype_bits(dtype)
        return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return (None, None)


def _add_b(a, b):
    return None if a is None or b is None else a + b


def _floordiv_b(lo, hi, c):
    return (None if lo is None else lo // c, None if hi is None else hi // c)


def const_bounds(expr: n.PrimExpr, ranges: RangeMap | None = None) -> tuple[int | None, int | None]:
    """Inclusive integer bounds ``(lo, hi)`` of ``expr``; ``None`` marks an unknown side.

    Parameters
    ----------
    expr : PrimExpr
        An integer expression.
    ranges : mapping, optional
        ``Var -> Range`` (or ``(min, extent)``) for the loop variables in scope; only constant
        ranges are used.
    """
    c = as_const_int(expr)
    if c is not None:
        return (c, c)
    if isinstance(expr, n.Var):
        r = _range_of(ranges, expr)
        if r is not None:
            return r
        if isinstance(expr, n.SizeVar):
            return (0, None)
        return _dtype_bounds(expr.dtype) if expr.dtype == "bool" else (None, None)
    if isinstance(expr, (n.Add, n.Sub, n.Mul)):
        lin = _linear(expr)
        if not (len(lin.terms) == 1 and lin.const == 0 and next(iter(lin.terms.values()))[1] == 1):
            lo = hi = lin.const
            for atom, coef in lin.terms.values():
                alo, ahi = const_bounds(atom, ranges)
                if coef < 0:
                    alo, ahi = ahi, alo
                lo = _add_b(lo, None if alo is None else alo * coef)
                hi = _add_b(hi, None if ahi is None else ahi * coef)
            return (lo, hi)
        if isinstance(expr, n.Mul):
            alo, ahi = const_bounds(expr.a, ranges)
            blo, bhi = const_bounds(expr.b, ranges)
            if None not in (alo, ahi, blo, bhi):
                prods = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
                return (min(prods), max(prods))
        return (None, None)
    if isinstance(expr, (n.FloorDiv, n.FloorMod)):
        cb = as_const_int(expr.b)
        if cb is None or cb <= 0:
            return (None, None)
        alo, ahi = const_bounds(expr.a, ranges)
        if isinstance(expr, n.FloorDiv):
            return _floordiv_b(alo, ahi, cb)
        if alo is not None and ahi is not None and alo // cb == ahi // cb:
            return (alo % cb, ahi % cb)
        return (0, cb - 1)
    if isinstance(expr, (n.Min, n.Max)):
        alo, ahi = const_bounds(expr.a, ranges)
        blo, bhi = const_bounds(expr.b, ranges)
        pick = min if isinstance(expr, n.Min) else max
        if isinstance(expr, n.Min):
            lo = None if alo is None or blo is None else min(alo, blo)
            hi = bhi if ahi is None else (ahi if bhi is None else min(ahi, bhi))
        else:
            lo = blo if alo is None else (alo if blo is None else max(alo, blo))
            hi = None if ahi is None or bhi is None else pick(ahi, bhi)
        return (lo, hi)
    if isinstance(expr, n.Cast):
        if n.is_int_dtype(expr.dtype) and n.is_int_dtype(expr.value.dtype):
            lo, hi = const_bounds(expr.value, ranges)
            dlo, dhi = _dtype_bounds(expr.dtype)
            if lo is not None and hi is not None and dlo <= lo and hi <= dhi:
                return (lo, hi)
            return (dlo, dhi)
        return (None, None)
    if isinstance(expr, n.Select):
        tlo, thi = const_bounds(expr.true_value, ranges)
        flo, fhi = const_bounds(expr.false_value, ranges)
        lo = None if tlo is None or flo is None else min(tlo, flo)
        hi = None if thi is None or fhi is None else max(thi, fhi)
        return (lo, hi)
    if isinstance(expr, n.CmpOp) or isinstance(expr, n.Not):
        return (0, 1)
    if n.is_int_dtype(expr.dtype) or expr.dtype == "bool":
        return _dtype_bounds(expr.dtype)
    return (None, None)
