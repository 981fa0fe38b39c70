"""FoldUopLoop: turn up to two loops around GEMM micro-ops into hardware loop descriptors.

Reference tvm-vta-software.md 2.4. Inside a ``coproc_uop_scope = "VTAPushGEMMOp"`` whose body
is a loop ``v``, the loop folds when the dst, src and wgt indices of every ``tir.vta.uop_push``
are linear in ``v`` with the same coefficients across all pushes and ``v`` is gone once the
indices are replaced by their ``v``-free parts; the loop becomes
``VTAUopLoopBegin(extent, dst_coef, src_coef, wgt_coef) ... VTAUopLoopEnd()``. The second
attempt looks at the body the first produced. A loop that does not fold stays a host loop
inside the kernel-recording closure (one uop per iteration). A guard left around the uops
(from InjectConv2DTransposeSkip) that does not depend on the kernel's remaining loops is hoisted
around the whole kernel.
"""

from __future__ import annotations

from ..errors import ScheduleError
from ..tir import nodes as n
from ..tir.arith import structural_equal, uses_var
from ..tir.linear import detect_linear_equation
from ..tir.functor import StmtExprMutator, post_order_visit, stmt_map
from ._util import Pass, call_extern

__all__ = ["fold_uop_loop"]

_ALLOWED = ("tir.vta.uop_push", "tir.vta.command_handle", "tir.tvm_thread_context")


class _NotFoldable(Exception):
    """Internal signal: this loop stays a host loop."""


class _Rebase(StmtExprMutator):
    def __init__(self, var: n.Var):
        self.var = var
        self.coefs: list = [None, None, None]

    def visit_Call(self, op: n.Call):
        if op.op not in _ALLOWED:
            name = (
                op.args[0].value
                if op.op == "tir.call_extern" and op.args and isinstance(op.args[0], n.StringImm)
                else op.op
            )
            raise ScheduleError(
                f"a GEMM micro-op kernel may only contain uop pushes, but loop {self.var.name!r} contains a call of "
                f"{name!r}; tensorize must cover the whole compute body"
            )
        if op.op != "tir.vta.uop_push":
            return op
        args = list(op.args)
        for i in range(3):
            m = detect_linear_equation(args[2 + i], [self.var])
            if m is None:
                raise _NotFoldable
            if self.coefs[i] is None:
                self.coefs[i] = m[0]
            elif not structural_equal(self.coefs[i], m[0]):
                raise _NotFoldable
            args[2 + i] = m[1]
        return n.Call(op.dtype, op.op, tuple(args))


def _fold_outer(body: n.Stmt):
    if not isinstance(body, n.For):
        raise _NotFoldable
    rb = _Rebase(body.loop_var)
    new = rb.visit(body.body)
    if any(c is None for c in rb.coefs) or uses_var(new, body.loop_var):
        raise _NotFoldable
    begin = n.Evaluate(call_extern("int32", "VTAUopLoopBegin", body.extent, *rb.coefs))
    return begin, new, n.Evaluate(call_extern("int32", "VTAUopLoopEnd"))


def _fold_scope(stmt: n.Stmt) -> n.Stmt:
    if not (isinstance(stmt, n.AttrStmt) and stmt.attr_key == "coproc_uop_scope"
            and isinstance(stmt.value, n.StringImm) and stmt.value.value == "VTAPushGEMMOp"):
        return stmt
    body, begins, ends = stmt.body, [], []
    for _ in range(2):
        try:
            begin, body, end = _fold_outer(body)
        except _NotFoldable:
            break
        begins.append(begin)
        ends.insert(0, end)
    # A guard that does not depend on the kernel's own loops selects the whole kernel: push it
    # only when the guard holds (no empty GEMM, and the kernel need not capture the guard's
    # variables, so one recorded kernel serves every iteration).
    guard = None
    if isinstance(body, n.IfThenElse) and body.else_case is None and not _binds_used(body.then_case, body.condition):
        guard, body = body.condition, body.then_case
    if not begins and guard is None:
        return stmt
    scope = n.AttrStmt(stmt.node, stmt.attr_key, stmt.value, n.seq(*begins, body, *ends))
    return scope if guard is None else n.IfThenElse(guard, scope, None)


def _binds_used(stmt: n.Stmt, cond: n.PrimExpr) -> bool:
    """Whether ``cond`` uses a variable bound inside ``stmt`` (a host loop of the kernel)."""
    bound: list[n.Var] = []

    def visit(x):
        if isinstance(x, n.For):
            bound.append(x.loop_var)
        elif isinstance(x, n.LetStmt):
            bound.append(x.var)

    post_order_visit(stmt, visit)
    return bool(bound) and uses_var(cond, bound)


def fold_uop_loop() -> Pass:
    """The FoldUopLoop pass (module docstring).

    Raises
    ------
    ScheduleError
        (when run) If a loop in a GEMM kernel contains a call other than a uop push.
    """
    return Pass("FoldUopLoop", lambda f: f.with_body(stmt_map(f.body, _fold_scope)))


def _reset_flags(body: n.Stmt) -> set:
    flags: set = set()

    def visit(x):
        if isinstance(x, n.Call) and x.op == "tir.vta.uop_push":
            flags.add(x.args[1].value if isinstance(x.args[1], n.IntImm) else None)

    post_order_visit(body, visit)
    return flags


def separate_reset_kernels() -> Pass:
    """Give GEMM uop scopes that only reset a distinct (shared) scope value.

    LiftAttrScope merges neighbouring uop scopes with the same value into one kernel, but every
    uop of a kernel must agree on the reset flag. Reset-only scopes therefore get their own
    value object, so resets merge with resets and accumulations with accumulations, never with
    each other.
    """

    def run(func: n.PrimFunc) -> n.PrimFunc:
        reset_value = n.StringImm("VTAPushGEMMOp")

        def fpost(s):
            if (isinstance(s, n.AttrStmt) and s.attr_key == "coproc_uop_scope" and isinstance(s.value, n.StringImm)
                    and s.value.value == "VTAPushGEMMOp" and _reset_flags(s.body) == {1}):
                return n.AttrStmt(s.node, s.attr_key, reset_value, s.body)
            return s

        return func.with_body(stmt_map(func.body, fpost))

    return Pass("SeparateResetKernels", run)
