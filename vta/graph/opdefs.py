"""Operator definitions by name: the graph layer's operators (:data:`vta.graph.infer.OPS`) and the
accelerator's registered operators (:data:`vta.graph.accel_ops.ACCEL_OPS`), their attribute
defaults and their type inference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import GraphError, UnsupportedOperatorError
from .accel_ops import ACCEL_OPS
from .infer import OPS, OpDef
from .ir import TensorType, Value

__all__ = ["op_def", "known_ops", "normalise_attrs", "infer_type"]


def op_def(op: str) -> OpDef | None:
    """The definition of ``op``: :data:`OPS`, or the registration of an accelerator operator
    (:data:`vta.graph.accel_ops.ACCEL_OPS`); None when unknown."""
    d = OPS.get(op)
    if d is None:
        a = ACCEL_OPS.get(op)
        d = None if a is None else a.opdef
    return d


def known_ops() -> list[str]:
    """Every operator of the IR, sorted (the accelerator operators included)."""
    return sorted({*OPS, *ACCEL_OPS})


def normalise_attrs(op: str, attrs: Mapping[str, Any] | None, node: str = "?") -> dict[str, Any]:
    """``attrs`` completed with the operator's defaults.

    Raises
    ------
    UnsupportedOperatorError
        If ``op`` is not an operator of the IR.
    GraphError
        If an attribute is not one the operator knows.
    """
    d = op_def(op)
    if d is None:
        raise UnsupportedOperatorError(
            f"node {node!r}: operator {op!r} is not supported by the graph layer (neither the accelerator nor "
            f"the host runs it); known operators: {', '.join(known_ops())}")
    attrs = dict(attrs or {})
    unknown = sorted(set(attrs) - set(d.defaults))
    if unknown:
        raise GraphError(f"node {node!r} ({op}): unknown attribute(s) {unknown}; accepted: {sorted(d.defaults)}")
    return {k: _plain(v) for k, v in {**d.defaults, **attrs}.items()}


def _plain(v: Any) -> Any:
    """NumPy scalars and arrays as Python scalars and tuples (attributes stay hashable and JSON-able)."""
    if isinstance(v, np.ndarray):
        return v.item() if v.ndim == 0 else tuple(_plain(x) for x in v.tolist())
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, list):
        return tuple(_plain(x) for x in v)
    return v


def infer_type(op: str, inputs: Sequence[Value], attrs: Mapping[str, Any], node: str = "?") -> TensorType:
    """The output type of ``op`` applied to ``inputs`` with (complete) ``attrs``.

    Raises
    ------
    UnsupportedOperatorError
        If ``op`` is unknown.
    GraphError
        If the number of inputs is wrong, or shapes/dtypes disagree (naming both tensors), or an
        attribute is invalid.
    """
    d = op_def(op)
    if d is None:
        normalise_attrs(op, attrs, node)  # raises the specific error
    arity = d.arity
    n = len(inputs)
    ok = (n >= 1) if arity is None else (n in arity if isinstance(arity, tuple) else n == arity)
    if not ok:
        raise GraphError(f"node {node!r} ({op}): takes {arity if arity is not None else 'one or more'} "
                         f"input(s), got {n}")
    try:
        return d.infer(node, op, list(inputs), attrs)
    except GraphError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise GraphError(f"node {node!r} ({op}): invalid attributes {dict(attrs)!r}: {exc}") from exc
