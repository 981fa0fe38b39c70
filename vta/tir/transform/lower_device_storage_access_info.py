"""LowerDeviceStorageAccessInfo: turn on-chip buffer pointers into element indices.

For every allocation whose scope has a :class:`MemoryInfo` (the VTA SRAMs), the ``Allocate``
disappears (on-chip memory has no CPU address), and every
``tvm_access_ptr(type, buf, offset, extent, mask)`` on such a buffer becomes
``int32(offset / (unit_bits / elem_bits))`` (the pointer type is the call's type annotation,
the element type the allocation's): the index of the on-chip element (tile) where the
access starts (reference tvm-vta-software.md 2.4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ...errors import ScheduleError
from .. import nodes as n
from ..arith import to_linear
from ..functor import StmtExprMutator
from ..simplify import simplify

__all__ = ["MemoryInfo", "lower_device_storage_access_info", "LowerDeviceStorageAccessInfo", "exact_div"]


@dataclass(frozen=True)
class MemoryInfo:
    """What the compiler knows about an on-chip memory scope.

    Attributes
    ----------
    unit_bits : int
        Bits of one addressable element (a VTA tile).
    max_simd_bits : int
        Alignment of buffers merged into this memory (one tile).
    max_num_bits : int
        Capacity in bits.
    """

    unit_bits: int
    max_simd_bits: int
    max_num_bits: int


def exact_div(expr: n.PrimExpr, k: int) -> n.PrimExpr | None:
    """``expr / k`` when every term of ``expr``'s linear form is a multiple of ``k``, else None."""
    form = to_linear(simplify(expr))
    if form.const % k:
        return None
    for _atom, coef in form.terms.values():
        if coef % k:
            return None
    out = form.scale(1)
    out.const //= k
    for term in out.terms.values():
        term[1] //= k
    return simplify(out.to_expr(expr.dtype if expr.dtype != "bool" else "int32"))


class _Lower(StmtExprMutator):
    def __init__(self, info: Mapping[str, MemoryInfo]):
        self.info = info
        self.tagged: dict[int, tuple[MemoryInfo, str, str]] = {}

    def visit_Allocate(self, op: n.Allocate):
        mi = self.info.get(op.scope)
        if mi is None:
            return self.generic_visit(op)
        self.tagged[id(op.buffer_var)] = (mi, op.dtype, op.scope)
        return self.visit(op.body)

    def visit_Call(self, op: n.Call):
        new = self.generic_visit(op)
        if new.op != "tir.tvm_access_ptr" or not isinstance(new.args[1], n.Var):
            return new
        entry = self.tagged.get(id(new.args[1]))
        if entry is None:
            return new
        mi, dtype, scope = entry
        # The IR contract (vta.tir.nodes.Buffer.access_ptr) carries the requested pointer type in
        # the type annotation; the element type comes from the allocation.
        ptr_type = new.args[0].dtype if isinstance(new.args[0], n.Call) else new.dtype
        if ptr_type == "handle":
            raise ScheduleError(
                f"buffer {new.args[1].name!r} in {scope!r} is on-chip memory without a CPU address; "
                "only index pointers (a non-handle pointer type) can be taken"
            )
        bits = n.dtype_bits(dtype)
        if mi.unit_bits % bits:
            raise ScheduleError(f"{scope!r} elements of {mi.unit_bits} bits do not hold whole {dtype} values")
        per_unit = mi.unit_bits // bits
        offset = new.args[2]
        index = exact_div(offset, per_unit)
        if index is None:
            raise ScheduleError(
                f"access to {new.args[1].name!r} in {scope!r} starts at element offset {offset!r}, which is "
                f"not provably a multiple of the {per_unit}-element tile"
            )
        return index if index.dtype == ptr_type else n.Cast(ptr_type, index)


def lower_device_storage_access_info(func: n.PrimFunc, info: Mapping[str, MemoryInfo]) -> n.PrimFunc:
    """Return ``func`` with on-chip allocations removed and their pointers lowered to indices.

    Raises
    ------
    ScheduleError
        If a handle pointer into on-chip memory is requested, or an access does not start on a
        tile boundary.
    """
    return func.with_body(_Lower(info).visit(func.body))


class LowerDeviceStorageAccessInfo:
    """Pass: remove on-chip allocations, lower their pointers to indices (module docstring)."""

    name = "LowerDeviceStorageAccessInfo"

    def __init__(self, info: Mapping[str, MemoryInfo]):
        self.info = dict(info)

    def __call__(self, func: n.PrimFunc) -> n.PrimFunc:
        return lower_device_storage_access_info(func, self.info)

    def __repr__(self) -> str:
        return "Pass(LowerDeviceStorageAccessInfo)"
