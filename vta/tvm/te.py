"""``tvm.te``: tensor expressions and schedules, backed by :mod:`vta.te`.

Everything upstream VTA code calls is here under its TVM name: ``placeholder``, ``compute``,
``reduce_axis``, ``sum``/``max``/``min`` (reductions, or elementwise with two operands),
``thread_axis``, ``create_schedule``, ``if_then_else``, ``all``/``any``, ``abs``, the
divisions (``div``, ``indexdiv``, ``indexmod``, ``truncdiv``, ``truncmod``, ``floordiv``,
``floormod``), ``max_value``/``min_value``, ``var``, ``size_var``, ``const`` and ``tag_scope``. Any other
name raises an AttributeError naming it.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Sequence

from .. import te as _te
from ..te import (ComputeOp, IterVar, Operation, PlaceholderOp, Reduce, Schedule, Stage, Tensor, TensorIntrin,
                  create_schedule, decl_buffer, decl_tensor_intrin, if_then_else, max, min, placeholder,
                  reduce_axis, size_var, sum, thread_axis, var)
from ..tir.op import (abs, all, any, div, floordiv, floormod, indexdiv, indexmod, max_value, min_value, truncdiv,
                      truncmod)
from ._missing import missing

__all__ = [
    "placeholder", "compute", "reduce_axis", "sum", "max", "min", "thread_axis", "create_schedule",
    "if_then_else", "var", "size_var", "const", "tag_scope", "TagScope", "decl_tensor_intrin", "decl_buffer",
    "Schedule", "Stage", "Tensor", "IterVar", "Operation", "ComputeOp", "PlaceholderOp", "Reduce", "TensorIntrin",
    "all", "any", "abs", "div", "indexdiv", "indexmod", "truncdiv", "truncmod", "floordiv", "floormod",
    "max_value", "min_value",
]

_state = threading.local()


def _current_tag() -> str:
    stack = getattr(_state, "tags", None)
    return stack[-1] if stack else ""


def compute(shape: Sequence[Any], fcompute: Callable[..., Any], name: str = "compute", tag: str = "",
            attrs: dict | None = None) -> Tensor:
    """``vta.te.compute``; an empty ``tag`` takes the one of the innermost :func:`tag_scope`.

    Raises
    ------
    ValueError, TypeError
        As :func:`vta.te.compute`.
    """
    return _te.compute(shape, fcompute, name=name, tag=tag or _current_tag(), attrs=attrs)


def const(value: Any, dtype: str = "int32") -> Any:
    """A constant of ``dtype`` (``tvm.tir.const``).

    Raises
    ------
    ValueError, TypeError
        If ``value`` does not fit or ``dtype`` is not a scalar type.
    """
    return _te.const(value, dtype)


class TagScope:
    """Tag every :func:`compute` without its own tag (``with tag_scope("x"):`` or ``@tag_scope("x")``).

    Parameters
    ----------
    tag : str
        The tag; nested scopes join tags with ``,`` as upstream.

    Raises
    ------
    TypeError
        If ``tag`` is not a str.
    """

    def __init__(self, tag: str):
        if not isinstance(tag, str):
            raise TypeError(f"tag_scope takes a str tag, got {tag!r}")
        self.tag = tag

    def __enter__(self) -> "TagScope":
        stack = getattr(_state, "tags", None)
        if stack is None:
            stack = _state.tags = []
        outer = stack[-1] if stack else ""
        stack.append(f"{outer},{self.tag}" if outer else self.tag)
        return self

    def __exit__(self, *exc) -> None:
        _state.tags.pop()

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def tagged(*args: Any, **kwargs: Any) -> Any:
            with TagScope(self.tag):
                return func(*args, **kwargs)

        return tagged


def tag_scope(tag: str) -> TagScope:
    """A :class:`TagScope` (``tvm.te.tag_scope``).

    Raises
    ------
    TypeError
        If ``tag`` is not a str.
    """
    return TagScope(tag)


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
