"""UnrollLoop: unroll loops explicitly marked ``unrolled`` (the default configuration).

With upstream's default settings (``auto_max_step = 0``, ``auto_max_extent = 0``) only loops a
schedule marked for unrolling are unrolled; a loop of constant extent ``k`` becomes ``k`` copies
of its body with the loop variable replaced by ``min + i``.
"""

from __future__ import annotations

from ...errors import ScheduleError
from .. import nodes as n
from ..arith import as_const_int
from ..functor import StmtExprMutator, substitute
from ..simplify import simplify

__all__ = ["unroll_loop", "UnrollLoop"]


class _Unroller(StmtExprMutator):
    def visit_For(self, op: n.For):
        new = self.generic_visit(op)
        if new.kind != n.ForKind.UNROLLED:
            return new
        extent = as_const_int(new.extent)
        if extent is None:
            raise ScheduleError(
                f"loop {op.loop_var.name!r} is marked unrolled but its extent {new.extent!r} is not constant"
            )
        return n.seq(*(substitute(new.body, {new.loop_var: simplify(new.min + i)}) for i in range(extent)))


def unroll_loop(func: n.PrimFunc) -> n.PrimFunc:
    """Return ``func`` with its ``unrolled`` loops expanded.

    Raises
    ------
    ScheduleError
        If a loop marked unrolled has a non-constant extent.
    """
    return func.with_body(_Unroller().visit(func.body))


class UnrollLoop:
    """Pass: unroll loops marked ``unrolled`` (see :func:`unroll_loop`)."""

    name = "UnrollLoop"

    def __call__(self, func: n.PrimFunc) -> n.PrimFunc:
        return unroll_loop(func)

    def __repr__(self) -> str:
        return "Pass(UnrollLoop)"
