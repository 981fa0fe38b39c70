"""``tvm.tir``: IR nodes and constructors, backed by :mod:`vta.tir`.

``tir.const``, the node classes (``Var``, ``IntImm``, ``Call``, ``For``, ``PrimFunc`` ...) and the
expression helpers upstream operator code calls: ``all``/``any``, ``if_then_else``, ``likely``,
the shifts, ``min``/``max``, the divisions (``truncdiv``, ``floordiv``, ``indexdiv`` ... ), the
bitwise operations, ``abs``, ``max_value``/``min_value`` and ``call_extern``. Passes
(``tir.transform``) are not part of it: ``vta.build`` runs its own pipeline.
"""

from __future__ import annotations

from typing import Any

from ..tir import nodes as _n
from ..tir.nodes import *  # noqa: F401,F403
from ..tir.nodes import __all__ as _nodes_all
from ..tir.functor import StmtExprMutator, StmtExprVisitor, post_order_visit, stmt_map, substitute
from ..tir.op import (abs, all, any, bitwise_and, bitwise_not, bitwise_or, bitwise_xor,  # noqa: F401 (TVM's names)
                      call_extern, div, floordiv, floormod, indexdiv, indexmod, likely, max_value, min_value,
                      truncdiv, truncmod)
from ..tir.op import __all__ as _op_all
from ._missing import missing

__all__ = list(_nodes_all) + [
    "StmtExprMutator", "StmtExprVisitor", "post_order_visit", "stmt_map", "substitute",
    "shift_right", "shift_left", "if_then_else", "max", "min",
] + [name for name in _op_all if name != "if_then_else"]


def shift_right(a: Any, b: Any) -> _n.PrimExpr:
    """``a >> b`` (arithmetic for signed types).

    Raises
    ------
    TypeError
        If an operand is not an integer.
    """
    if not isinstance(a, _n.PrimExpr) and isinstance(b, _n.PrimExpr):
        return b.__rrshift__(a)
    return _n.convert(a) >> b


def shift_left(a: Any, b: Any) -> _n.PrimExpr:
    """``a << b``.

    Raises
    ------
    TypeError
        If an operand is not an integer.
    """
    if not isinstance(a, _n.PrimExpr) and isinstance(b, _n.PrimExpr):
        return b.__rlshift__(a)
    return _n.convert(a) << b


def if_then_else(cond: Any, t: Any, f: Any) -> _n.PrimExpr:
    """``t if cond else f`` (``tir.if_then_else``; only the chosen side is evaluated).

    Raises
    ------
    TypeError
        If ``cond`` is not boolean or the two values have different dtypes.
    """
    from ..te import if_then_else as _ite

    return _ite(cond, t, f)


def max(a: Any, b: Any) -> _n.PrimExpr:  # noqa: A001 - the TVM name
    """The elementwise maximum of two expressions.

    Raises
    ------
    TypeError
        If an operand is not an expression or number.
    """
    from ..te import max as _max

    return _max(a, b)


def min(a: Any, b: Any) -> _n.PrimExpr:  # noqa: A001 - the TVM name
    """The elementwise minimum of two expressions.

    Raises
    ------
    TypeError
        If an operand is not an expression or number.
    """
    from ..te import min as _min

    return _min(a, b)


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
