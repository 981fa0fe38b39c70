"""A readable text form of a graph (``str(graph)``), one line per node::

    graph(%x: int8[1, 16, 8, 8] q(scale=0.05, zp=0)) {
      %conv_0 = qnn.conv2d(%x, %w, strides=(1, 1), padding=(1, 1, 1, 1), ...) : int32[1, 16, 8, 8]
      ...
      return %relu_0
    }

The printer reads graphs by duck typing, so that the IR can use it for ``str(graph)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["astext", "format_attr"]


def format_attr(value: Any) -> str:
    """One attribute value, shortened (arrays by shape, specs by class name and key fields)."""
    if isinstance(value, np.ndarray):
        return f"<{value.dtype}{list(value.shape)}>"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, tuple) and len(value) > 6:
        return f"<{len(value)} values>"
    if hasattr(value, "__dataclass_fields__"):
        return f"<{type(value).__name__}>"
    return repr(value)


def astext(graph: Any, show_params: bool = False) -> str:
    """The text form of ``graph``.

    Parameters
    ----------
    graph : Graph
    show_params : bool
        Also list every constant with its type.
    """
    inputs = ", ".join(f"%{v.name}: {v.type}" for v in graph.inputs)
    lines = [f"graph({inputs}) {{"]
    if show_params:
        for v in graph.values.values():
            if v.kind == "param":
                lines.append(f"  const %{v.name}: {v.type}")
    for node in graph.nodes:
        args = [f"%{v.name}" for v in node.inputs]
        args += [f"{k}={format_attr(v)}" for k, v in node.attrs.items() if v is not None]
        lines.append(f"  %{node.name} = {node.op}({', '.join(args)}) : {node.output_type}")
    outs = ", ".join(f"%{v.name}" for v in graph.outputs)
    lines.append(f"  return {outs if len(graph.outputs) == 1 else '(' + outs + ')'}")
    lines.append("}")
    return "\n".join(lines)
