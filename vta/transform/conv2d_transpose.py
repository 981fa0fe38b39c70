"""InjectConv2DTransposeSkip (phase 0): the ``conv2d_transpose_gemm`` pragma.

Upstream rewrites regions under ``pragma_conv2d_transpose_gemm`` into guarded GEMM uops so
that iterations multiplying dilation zeros are skipped. This project does not support that
schedule yet: the pass rejects it with a clear error instead of producing a wrong program, and
leaves every other function unchanged.
"""

from __future__ import annotations

from ..errors import ScheduleError
from ..tir import nodes as n
from ..tir.functor import post_order_visit
from ._util import Pass

__all__ = ["inject_conv2d_transpose_skip"]


def _run(func: n.PrimFunc) -> n.PrimFunc:
    def visit(x):
        if isinstance(x, n.AttrStmt) and x.attr_key == "pragma_conv2d_transpose_gemm":
            axis = getattr(getattr(x.node, "var", x.node), "name", repr(x.node))
            raise ScheduleError(
                f"pragma conv2d_transpose_gemm (at axis {axis!r}) is not supported by this compiler; "
                "tensorize the convolution with env.gemm instead"
            )

    post_order_visit(func.body, visit)
    return func


def inject_conv2d_transpose_skip() -> Pass:
    """The InjectConv2DTransposeSkip pass (module docstring)."""
    return Pass("InjectConv2DTransposeSkip", _run)
