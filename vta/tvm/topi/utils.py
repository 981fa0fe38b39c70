"""``topi.utils``: reading constant shapes (``get_const_tuple(res.shape)``)."""

from __future__ import annotations

from typing import Any, Sequence

from ...tir import nodes as _n
from ...tir.simplify import simplify
from .._missing import missing

__all__ = ["get_const_int", "get_const_tuple"]


def get_const_int(expr: Any) -> int:
    """The value of a constant integer expression (an int or an ``IntImm``, after simplification).

    Raises
    ------
    ValueError
        If ``expr`` is not a constant integer.
    """
    if isinstance(expr, bool):
        raise ValueError(f"expected a constant integer, got the bool {expr!r}")
    if isinstance(expr, int):
        return expr
    if isinstance(expr, _n.PrimExpr):
        folded = simplify(expr)
        if isinstance(folded, _n.IntImm):
            return int(folded.value)
    raise ValueError(f"expected a constant integer, got {expr!r}")


def get_const_tuple(in_tuple: Sequence[Any]) -> tuple[int, ...]:
    """A shape (a sequence of ints or constant expressions) as a tuple of ints.

    Raises
    ------
    ValueError
        If an entry is not a constant integer (the message names its position).
    """
    out = []
    for i, e in enumerate(in_tuple):
        try:
            out.append(get_const_int(e))
        except ValueError as exc:
            raise ValueError(f"get_const_tuple: entry {i} of {tuple(in_tuple)!r}: {exc}") from None
    return tuple(out)


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
