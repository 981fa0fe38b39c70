"""CPUAccessRewrite: CPU loads and stores of VTA buffers go through ``VTABufferCPUPtr``.

Every remaining ``Load``/``Store`` of buffer ``X`` is redirected to a new handle ``X_ptr``
bound by ``let X_ptr = VTABufferCPUPtr(cmd, X)``, placed inside ``X``'s allocation when it has
one, else at the top of the function (reference tvm-vta-software.md 2.4). In fully offloaded
schedules no CPU access remains and the pass changes nothing.
"""

from __future__ import annotations

import dataclasses

from ..tir import nodes as n
from ..tir.functor import StmtExprMutator
from ._util import Pass, call_extern, command_handle

__all__ = ["cpu_access_rewrite"]


class _Rewrite(StmtExprMutator):
    def __init__(self):
        self.ptrs: dict[int, tuple[n.Var, n.Var]] = {}

    def _ptr(self, var: n.Var) -> n.Var:
        if id(var) not in self.ptrs:
            self.ptrs[id(var)] = (var, n.Var(var.name + "_ptr", "handle"))
        return self.ptrs[id(var)][1]

    def visit_Load(self, op: n.Load):
        return n.Load(op.dtype, self._ptr(op.buffer_var), self.visit(op.index))

    def visit_Store(self, op: n.Store):
        return n.Store(self._ptr(op.buffer_var), self.visit(op.value), self.visit(op.index))

    def visit_Allocate(self, op: n.Allocate):
        new = self.generic_visit(op)
        entry = self.ptrs.pop(id(op.buffer_var), None)
        if entry is None:
            return new
        let = n.LetStmt(entry[1], call_extern("handle", "VTABufferCPUPtr", command_handle(), op.buffer_var), new.body)
        return dataclasses.replace(new, body=let)


def _run(func: n.PrimFunc) -> n.PrimFunc:
    rw = _Rewrite()
    body = rw.visit(func.body)
    for var, ptr in rw.ptrs.values():
        body = n.LetStmt(ptr, call_extern("handle", "VTABufferCPUPtr", command_handle(), var), body)
    return func.with_body(body)


def cpu_access_rewrite() -> Pass:
    """The CPUAccessRewrite pass (module docstring)."""
    return Pass("CPUAccessRewrite", _run)
