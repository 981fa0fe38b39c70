"""Small builders and queries shared by the VTA passes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..tir import nodes as n
from ..tir.functor import post_order_visit

__all__ = [
    "Pass", "VTA_AXIS", "command_handle", "call_extern", "call_intrin", "coproc_scope",
    "find_coproc_axis", "allocation_scopes", "uop_push",
]

#: The co-processor axis annotating ``coproc_scope``/``coproc_uop_scope`` attributes. Its name
#: gives the sync intrinsics their ``tir.vta.`` prefix (reference section 0, ``vta_axis``).
VTA_AXIS = n.Var("vta", "int32")


@dataclass(frozen=True)
class Pass:
    """A named function pass ``PrimFunc -> PrimFunc`` (the unit of every pipeline list)."""

    name: str
    transform: Callable[[n.PrimFunc], n.PrimFunc]

    def __call__(self, func: n.PrimFunc) -> n.PrimFunc:
        return self.transform(func)

    def __repr__(self) -> str:
        return f"Pass({self.name})"


def command_handle() -> n.Call:
    """``tvm_thread_context(tir.vta.command_handle())``: the runtime's command queue."""
    return n.Call("handle", "tir.tvm_thread_context", (n.Call("handle", "tir.vta.command_handle", ()),))


def call_extern(dtype: str, name: str, *args: Any) -> n.Call:
    """A call of the C function ``name``."""
    return n.Call(dtype, "tir.call_extern", (n.StringImm(name),) + tuple(n.convert(a) for a in args))


def call_intrin(dtype: str, op: str, *args: Any) -> n.Call:
    """A call of a builtin such as ``tir.vta.coproc_dep_push``."""
    return n.Call(dtype, op, tuple(n.convert(a) for a in args))


def uop_push(mode, reset, dst, src, wgt, opcode, use_imm, imm) -> n.Evaluate:
    """``tir.vta.uop_push(mode, reset, dst, src, wgt, opcode, use_imm, imm)`` as a statement."""
    return n.Evaluate(call_intrin("int32", "tir.vta.uop_push", mode, reset, dst, src, wgt, opcode, use_imm, imm))


def coproc_scope(axis: Any, qid: int, body: n.Stmt) -> n.AttrStmt:
    """Run ``body`` on VTA queue ``qid`` (1 load, 2 compute, 3 store)."""
    return n.AttrStmt(axis, "coproc_scope", n.IntImm(qid), body)


def find_coproc_axis(stmt: n.Stmt) -> Any:
    """The node of the first ``coproc_scope``/``coproc_uop_scope`` attribute, else :data:`VTA_AXIS`.

    Passes that add co-processor scopes reuse the node the tensor intrinsic already used, so
    every scope of a function names one co-processor (LiftAttrScope compares nodes by identity).
    """
    found: list[Any] = []

    def visit(x):
        if isinstance(x, n.AttrStmt) and x.attr_key in ("coproc_scope", "coproc_uop_scope") and not found:
            found.append(x.node)

    post_order_visit(stmt, visit)
    return found[0] if found else VTA_AXIS


def allocation_scopes(stmt: n.Stmt) -> dict[n.Var, str]:
    """Storage scope of every buffer variable allocated in ``stmt`` (keyed by the Var)."""
    scopes: dict[n.Var, str] = {}

    def visit(x):
        if isinstance(x, n.Allocate):
            scopes[x.buffer_var] = x.scope

    post_order_visit(stmt, visit)
    return scopes
