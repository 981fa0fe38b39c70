"""Declaring tensors: ``placeholder``, ``compute``, reductions and expression helpers."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

from ..tir import nodes as n
from ..tir import op as _op
from .tensor import COMM_REDUCE, DATA_PAR, THREAD_INDEX, ComputeOp, IterVar, PlaceholderOp, Reduce, Tensor

__all__ = [
    "placeholder", "compute", "reduce_axis", "thread_axis", "sum", "max", "min", "if_then_else",
    "const", "var", "size_var",
]

_THREAD_TAGS = ("cthread", "vthread", "vta")


def _shape(shape: Any, what: str) -> tuple:
    if isinstance(shape, (int, n.PrimExpr)):
        shape = (shape,)
    try:
        dims = tuple(n.convert(s) for s in shape)
    except TypeError as exc:
        raise TypeError(f"{what}: shape must be a sequence of integers, got {shape!r}") from exc
    for d in dims:
        if isinstance(d, n.IntImm) and d.value <= 0:
            raise ValueError(f"{what}: every dimension must be positive, got shape {shape!r}")
    return dims


def placeholder(shape: Sequence[Any], dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor.

    Raises
    ------
    ValueError
        If a dimension is not positive or the dtype is unknown.
    """
    n.dtype_bits(dtype)
    return PlaceholderOp(name, _shape(shape, f"placeholder {name!r}"), dtype).output(0)


def compute(shape: Sequence[Any], fcompute: Callable[..., Any], name: str = "compute", tag: str = "",
            attrs: dict | None = None) -> Tensor:
    """``out[i_0, ..., i_k] = fcompute(i_0, ..., i_k)``.

    ``fcompute`` may take one argument per dimension (their names name the axes) or ``*i``
    (axes ``i0, i1, ...``). Its result is an expression, possibly a reduction
    (:func:`sum`, :func:`max`, :func:`min` with ``axis=``).

    Raises
    ------
    ValueError
        If ``fcompute`` takes a number of arguments different from the rank of ``shape``, or a
        reduction appears anywhere but at the top of the body.
    TypeError
        If ``fcompute`` returns something that is not an expression or number.
    """
    dims = _shape(shape, f"compute {name!r}")
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    if params and params[0].kind == inspect.Parameter.VAR_POSITIONAL:
        names = [f"i{k}" for k in range(len(dims))]
    else:
        names = [p.name for p in params]
        if len(names) != len(dims):
            raise ValueError(
                f"compute {name!r}: fcompute takes {len(names)} arguments {names!r} but the shape has "
                f"{len(dims)} dimensions; use one argument per dimension or *i"
            )
    axis = [IterVar(n.Range(n.IntImm(0), d), n.Var(nm), DATA_PAR) for nm, d in zip(names, dims, strict=True)]
    body = fcompute(*[iv.var for iv in axis])
    if isinstance(body, IterVar):
        body = body.var
    if isinstance(body, (list, tuple)):
        raise ValueError(f"compute {name!r}: multiple outputs are not supported; return one expression")
    try:
        body = n.convert(body)
    except TypeError as exc:
        raise TypeError(f"compute {name!r}: fcompute returned {body!r}, not an expression") from exc
    _check_no_nested_reduce(body, name)
    return ComputeOp(name, tag, axis, body, attrs).output(0)


def _check_no_nested_reduce(body: n.PrimExpr, name: str) -> None:
    from ..tir.functor import post_order_visit

    def visit(x: Any) -> None:
        if isinstance(x, Reduce) and x is not body:
            raise ValueError(f"compute {name!r}: a reduction must be the whole body, not part of {body!r}")

    post_order_visit(body, visit)


def reduce_axis(dom: Any, name: str = "rv") -> IterVar:
    """A reduction axis over ``dom`` = ``(min, max)`` (half open) or an extent.

    Raises
    ------
    ValueError
        If the domain is empty.
    """
    if isinstance(dom, n.Range):
        rng = dom
    elif isinstance(dom, (tuple, list)) and len(dom) == 2:
        lo, hi = n.convert(dom[0]), n.convert(dom[1])
        rng = n.Range(lo, n.IntImm(hi.value - lo.value) if isinstance(lo, n.IntImm) and isinstance(hi, n.IntImm) else hi - lo)
    else:
        rng = n.Range(n.IntImm(0), n.convert(dom))
    if isinstance(rng.extent, n.IntImm) and rng.extent.value <= 0:
        raise ValueError(f"reduce_axis {name!r}: empty domain {dom!r}")
    return IterVar(rng, n.Var(name), COMM_REDUCE)


def thread_axis(tag: str = "", name: str = "") -> IterVar:
    """A thread axis to ``bind`` a loop to. VTA supports the virtual threads ``cthread``/``vthread``.

    Raises
    ------
    ValueError
        If ``tag`` is not one of ``cthread``, ``vthread`` or ``vta``.
    """
    if tag not in _THREAD_TAGS:
        raise ValueError(f"thread_axis: tag {tag!r} is not supported; accepted: {', '.join(_THREAD_TAGS)}")
    return IterVar(None, n.Var(name or tag), THREAD_INDEX, tag)


def _reducer(combiner: str, binary: type):
    def reduce(expr: Any, axis: Any = None, where: Any = None) -> Any:
        if axis is None or not isinstance(axis, (IterVar, list, tuple)):
            # te.max(a, b): the elementwise operator.
            if axis is None:
                raise TypeError(f"te.{combiner} needs axis= (a reduction) or a second operand")
            a, b = n.convert(_var(expr)), n.convert(_var(axis))
            if isinstance(a, (n.IntImm, n.FloatImm)) and not isinstance(b, (n.IntImm, n.FloatImm)):
                a = n.const(a.value, b.dtype)
            elif isinstance(b, (n.IntImm, n.FloatImm)) and not isinstance(a, (n.IntImm, n.FloatImm)):
                b = n.const(b.value, a.dtype)
            return binary(a, b)
        if where is not None:
            raise ValueError(f"te.{combiner}: the where= condition is not supported")
        axes = (axis,) if isinstance(axis, IterVar) else tuple(axis)
        for a in axes:
            if not isinstance(a, IterVar) or a.iter_type != COMM_REDUCE:
                raise ValueError(f"te.{combiner}: axis must be reduce_axis IterVars, got {a!r}")
        return Reduce(combiner, n.convert(expr), axes)

    reduce.__name__ = combiner
    reduce.__doc__ = (
        f"``{combiner}`` reduction of ``expr`` over ``axis`` (reduce_axis IterVars); with a second "
        f"expression instead of an axis, the elementwise {binary.__name__}.\n\n"
        "Raises\n------\nValueError\n    If an axis is not a reduce_axis or ``where`` is given.\n"
    )
    return reduce


def _var(x: Any) -> Any:
    return x.var if isinstance(x, IterVar) else x


sum = _reducer("sum", n.Add)  # noqa: A001 - the TVM name
max = _reducer("max", n.Max)  # noqa: A001
min = _reducer("min", n.Min)  # noqa: A001


def if_then_else(cond: Any, t: Any, f: Any) -> n.Call:
    """``t if cond else f`` as ``tir.if_then_else`` (only the chosen side is evaluated).

    Raises
    ------
    TypeError
        If ``cond`` is not boolean or ``t`` and ``f`` have different dtypes.
    """
    return _op.if_then_else(_var(cond), _var(t), _var(f))


def const(value: Any, dtype: str = "int32") -> n.PrimExpr:
    """A constant of ``dtype``."""
    return n.const(value, dtype)


def var(name: str = "v", dtype: str = "int32") -> n.Var:
    """A free scalar variable."""
    return n.Var(name, dtype)


def size_var(name: str = "n", dtype: str = "int32") -> n.SizeVar:
    """A free non-negative variable (a symbolic shape)."""
    return n.SizeVar(name, dtype)
