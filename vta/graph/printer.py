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
        return _spec_summary(value)
    return repr(value)


def _spec_summary(spec: Any) -> str:
    """A spec of a fused operator in a few words (sizes, zero points, clip, residual)."""
    name = type(spec).__name__
    f = spec.__dict__
    if "kernel_h" in f:
        core = (f"{f['in_channels']}->{f['out_channels']} {f['kernel_h']}x{f['kernel_w']}/{f['strides'][0]} "
                f"pad={tuple(f['padding'])}")
    elif "in_features" in f:
        core = f"{f['in_features']}->{f['out_features']}"
    elif "pool_size" in f:
        core = f"{f['channels']}ch {f['pool_size'][0]}x{f['pool_size'][1]}/{f['strides'][0]}"
    else:
        core = f"{f.get('channels', '?')}ch"
    extra = []
    if "input_zero_point" in f:
        extra.append(f"zin={f['input_zero_point']}")
    if "output_zero_point" in f:
        extra.append(f"zout={f['output_zero_point']}")
    if "clip" in f:
        extra.append(f"clip={tuple(f['clip'])}")
    if f.get("residual") is not None:
        extra.append("+residual")
    return f"<{name} {core}{' ' if extra else ''}{' '.join(extra)}>"


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
