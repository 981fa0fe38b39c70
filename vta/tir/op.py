"""Expression constructors under TVM's ``tir`` names: conditions, divisions, bit operations.

These complement the operators of :class:`~vta.tir.nodes.PrimExpr`:

* conditions: :func:`all` and :func:`any` (conjunction and disjunction of boolean
  expressions), :func:`if_then_else` (only the chosen side is evaluated), :func:`likely`;
* division: :func:`truncdiv`/:func:`truncmod` and :func:`div` (rounding toward zero, C's
  ``/`` and ``%``), :func:`floordiv`/:func:`floormod` and their index aliases
  :func:`indexdiv`/:func:`indexmod` (rounding down, Python's ``//`` and ``%``);
* bits: :func:`bitwise_and`, :func:`bitwise_or`, :func:`bitwise_xor`, :func:`bitwise_not`;
* :func:`abs`, :func:`max_value`, :func:`min_value` and :func:`call_extern`.

Nothing is simplified here; :mod:`vta.tir.simplify` folds the results.
"""

from __future__ import annotations

from typing import Any

from . import nodes as n

__all__ = [
    "all", "any", "if_then_else", "likely", "truncdiv", "truncmod", "div", "floordiv", "floormod",
    "indexdiv", "indexmod", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "abs",
    "max_value", "min_value", "call_extern",
]


def _condition(value: Any, what: str) -> n.PrimExpr:
    """A boolean operand: a boolean expression or a Python bool."""
    expr = n.convert(value)
    if expr.dtype != "bool":
        raise TypeError(
            f"{what}: expected a boolean expression (a comparison, & |, ~), got {expr!r} of dtype {expr.dtype!r}"
        )
    return expr


def _chain(args: tuple, node: type, name: str) -> n.PrimExpr:
    if not args:
        raise ValueError(f"tir.{name} needs at least one condition")
    conds = [_condition(a, f"tir.{name} argument {k}") for k, a in enumerate(args)]
    out = conds[0]
    for c in conds[1:]:
        out = node(out, c)
    return out


def all(*args: Any) -> n.PrimExpr:  # noqa: A001 - the TVM name
    """The conjunction of boolean expressions (``And`` nodes, left-nested).

    Raises
    ------
    ValueError
        If no condition is given.
    TypeError
        If an argument is not boolean.
    """
    return _chain(args, n.And, "all")


def any(*args: Any) -> n.PrimExpr:  # noqa: A001 - the TVM name
    """The disjunction of boolean expressions (``Or`` nodes, left-nested).

    Raises
    ------
    ValueError
        If no condition is given.
    TypeError
        If an argument is not boolean.
    """
    return _chain(args, n.Or, "any")


def _same_type(t: Any, f: Any) -> tuple[n.PrimExpr, n.PrimExpr]:
    t, f = n.convert(t), n.convert(f)
    if isinstance(t, (n.IntImm, n.FloatImm)) and not isinstance(f, (n.IntImm, n.FloatImm)):
        t = n.const(t.value, f.dtype)
    elif isinstance(f, (n.IntImm, n.FloatImm)) and not isinstance(t, (n.IntImm, n.FloatImm)):
        f = n.const(f.value, t.dtype)
    if t.dtype != f.dtype:
        raise TypeError(f"the two values have different dtypes: {t!r} is {t.dtype!r}, {f!r} is {f.dtype!r}; cast one")
    return t, f


def if_then_else(cond: Any, t: Any, f: Any) -> n.Call:
    """``t if cond else f`` as a ``tir.if_then_else`` call: only the chosen side is evaluated,
    so ``t`` may read out of bounds where ``cond`` is false (padding).

    Raises
    ------
    TypeError
        If ``cond`` is not boolean or ``t`` and ``f`` have different dtypes.
    """
    cond = _condition(cond, "if_then_else condition")
    t, f = _same_type(t, f)
    return n.Call(t.dtype, "tir.if_then_else", (cond, t, f))


def likely(cond: Any) -> n.Call:
    """A hint that ``cond`` is usually true (the value is ``cond``).

    Raises
    ------
    TypeError
        If ``cond`` is not boolean.
    """
    return n.Call("bool", "tir.likely", (_condition(cond, "likely"),))


def _operands(a: Any, b: Any) -> tuple[n.PrimExpr, n.PrimExpr]:
    if not isinstance(a, n.PrimExpr) and isinstance(b, n.PrimExpr):
        a = n._operand(b, a)
    a = n.convert(a)
    b = n._operand(a, b)
    return a, b


def truncdiv(a: Any, b: Any) -> n.PrimExpr:
    """``a / b`` rounded toward zero (C semantics); ``Div`` node.

    Raises
    ------
    TypeError
        If an operand is not a number or an expression.
    """
    return n.Div(*_operands(a, b))


def truncmod(a: Any, b: Any) -> n.PrimExpr:
    """The remainder of :func:`truncdiv` (its sign is ``a``'s); ``Mod`` node.

    Raises
    ------
    TypeError
        If an operand is not a number or an expression.
    """
    return n.Mod(*_operands(a, b))


def div(a: Any, b: Any) -> n.PrimExpr:
    """Division with C semantics: truncating for integers, exact for floats.

    Raises
    ------
    TypeError
        If an operand is not a number or an expression.
    """
    return n.Div(*_operands(a, b))


def floordiv(a: Any, b: Any) -> n.PrimExpr:
    """``a / b`` rounded down (Python's ``//``).

    Raises
    ------
    TypeError
        If an operand is not a number or an expression.
    """
    return n.FloorDiv(*_operands(a, b))


def floormod(a: Any, b: Any) -> n.PrimExpr:
    """The remainder of :func:`floordiv` (its sign is ``b``'s, Python's ``%``).

    Raises
    ------
    TypeError
        If an operand is not a number or an expression.
    """
    return n.FloorMod(*_operands(a, b))


indexdiv = floordiv
indexmod = floormod


def _as_expr(a: Any, b: Any) -> tuple[n.PrimExpr, Any]:
    if not isinstance(a, n.PrimExpr) and isinstance(b, n.PrimExpr):
        return n._operand(b, a), b
    return n.convert(a), b


def bitwise_and(a: Any, b: Any) -> n.PrimExpr:
    """``a & b`` (logical on booleans).

    Raises
    ------
    TypeError
        If an operand is a float.
    """
    a, b = _as_expr(a, b)
    return a & b


def bitwise_or(a: Any, b: Any) -> n.PrimExpr:
    """``a | b`` (logical on booleans).

    Raises
    ------
    TypeError
        If an operand is a float.
    """
    a, b = _as_expr(a, b)
    return a | b


def bitwise_xor(a: Any, b: Any) -> n.PrimExpr:
    """``a ^ b`` (``!=`` on booleans).

    Raises
    ------
    TypeError
        If an operand is a float.
    """
    a, b = _as_expr(a, b)
    return a ^ b


def bitwise_not(a: Any) -> n.PrimExpr:
    """``~a`` (logical negation on booleans).

    Raises
    ------
    TypeError
        If ``a`` is a float.
    """
    return ~n.convert(a)


def abs(x: Any) -> n.PrimExpr:  # noqa: A001 - the TVM name
    """``|x|``: ``x`` itself for unsigned types, else ``select(x >= 0, x, -x)``.

    Raises
    ------
    TypeError
        If ``x`` is not a number or an expression.
    """
    x = n.convert(x)
    if x.dtype.startswith("uint") or x.dtype == "bool":
        return x
    return n.Select(x >= 0, x, -x)


def _int_range(dtype: str) -> tuple[int, int]:
    bits = n.dtype_bits(dtype)
    if dtype.startswith("uint"):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def max_value(dtype: str) -> n.PrimExpr:
    """The largest value of ``dtype`` as a constant.

    Raises
    ------
    ValueError
        If ``dtype`` is not a numeric type.
    """
    if dtype == "bool":
        return n.IntImm(1, "bool")
    if n.is_int_dtype(dtype):
        return n.IntImm(_int_range(dtype)[1], dtype)
    if dtype in ("float16", "float32", "float64"):
        import numpy as np

        return n.FloatImm(float(np.finfo(dtype).max), dtype)
    raise ValueError(f"max_value: {dtype!r} is not a numeric dtype (int<N>, uint<N>, float16/32/64 or bool)")


def min_value(dtype: str) -> n.PrimExpr:
    """The smallest (most negative) value of ``dtype`` as a constant.

    Raises
    ------
    ValueError
        If ``dtype`` is not a numeric type.
    """
    if dtype == "bool":
        return n.IntImm(0, "bool")
    if n.is_int_dtype(dtype):
        return n.IntImm(_int_range(dtype)[0], dtype)
    if dtype in ("float16", "float32", "float64"):
        import numpy as np

        return n.FloatImm(float(np.finfo(dtype).min), dtype)
    raise ValueError(f"min_value: {dtype!r} is not a numeric dtype (int<N>, uint<N>, float16/32/64 or bool)")


def call_extern(dtype: str, func_name: str, *args: Any) -> n.Call:
    """A call of the C function ``func_name`` returning ``dtype``.

    Raises
    ------
    TypeError
        If ``func_name`` is not a str or an argument is not an expression or number.
    """
    if not isinstance(func_name, str):
        raise TypeError(f"call_extern: the function name must be a str, got {func_name!r}")
    return n.Call(dtype, "tir.call_extern", (n.StringImm(func_name),) + tuple(n.convert(a) for a in args))
