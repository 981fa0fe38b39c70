"""StorageFlatten: multi-dimensional buffers to flat allocations, loads and stores.

* ``BufferRealize(buf, bounds)`` becomes ``Allocate(buf.data, dtype, (size,), scope=buf.scope)``
  over the realized region only; accesses subtract the region's minimum and use the compact
  row-major strides of the region.
* ``BufferLoad``/``BufferStore`` become ``Load``/``Store`` at the flat element index. Argument
  buffers (the function's ``buffer_map``) are indexed over their full shape.
* ``AttrStmt((view, target), "buffer_bind_scope", tvm_tuple(min0, ext0, ...))`` binds the
  symbolic buffer ``view`` of a tensor intrinsic to that region of ``target``: the body's uses
  of ``view.data`` become ``target``'s data variable, ``view.elem_offset`` the flat offset of the
  region, and loads/stores of ``view`` are flattened with ``target``'s strides. The region must
  start at a multiple of ``view.offset_factor`` and be in ``view``'s scope (when it names one).

Errors are :class:`vta.errors.ScheduleError` (they come from the schedule's tensorize).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import ScheduleError
from .. import nodes as n
from ..arith import as_const_int
from ..functor import StmtExprMutator, substitute
from ..simplify import simplify

__all__ = ["StorageFlatten", "storage_flatten"]


@dataclass
class _BufInfo:
    data: n.Var
    mins: tuple       # per dimension, subtracted from indices
    strides: tuple    # per dimension, in elements
    offset: n.PrimExpr


def _is_zero(e: n.PrimExpr) -> bool:
    return isinstance(e, n.IntImm) and e.value == 0


def _compact_strides(extents: list) -> tuple:
    strides = []
    acc: n.PrimExpr = n.IntImm(1)
    for e in reversed(extents):
        strides.append(acc)
        acc = simplify(acc * e)
    return tuple(reversed(strides))


class StorageFlatten(StmtExprMutator):
    """The pass object (``name`` = ``"StorageFlatten"``); call :meth:`run` on a PrimFunc."""

    name = "StorageFlatten"

    def __init__(self):
        self.info: dict[Any, _BufInfo] = {}

    def run(self, func: n.PrimFunc) -> n.PrimFunc:
        """Flatten ``func``'s body; the result is simplified."""
        self.info = {}
        for buf in func.buffer_map.values():
            strides = buf.strides if buf.strides else _compact_strides(list(buf.shape))
            self.info[buf] = _BufInfo(buf.data, tuple(n.IntImm(0) for _ in buf.shape), strides, buf.elem_offset)
        body = simplify(self.visit(func.body))
        return func.with_body(body)

    __call__ = run

    # ---------------------------------------------------------------- index arithmetic
    def _flat(self, buf: n.Buffer, indices: tuple) -> n.PrimExpr:
        info = self.info.get(buf)
        if info is None:
            raise ScheduleError(f"buffer {buf.name!r} is used outside its realize scope (no storage for it)")
        if len(indices) != len(info.strides):
            raise ScheduleError(f"buffer {buf.name!r} has {len(info.strides)} dimensions, indexed with {len(indices)}")
        idx: n.PrimExpr | None = None if _is_zero(info.offset) else info.offset
        for i, lo, st in zip(indices, info.mins, info.strides, strict=True):
            # Terms ``+ 0``, ``- 0`` and ``* 1`` are left out: the simplifier would drop them.
            term = self.visit(i)
            if not _is_zero(lo):
                term = term - lo
            if not (isinstance(st, n.IntImm) and st.value == 1):
                term = term * st
            idx = term if idx is None else idx + term
        return simplify(idx if idx is not None else n.IntImm(0))

    # ---------------------------------------------------------------- nodes
    def visit_BufferRealize(self, node: n.BufferRealize) -> n.Stmt:
        buf = node.buffer
        mins = tuple(r.min for r in node.bounds)
        exts = [r.extent for r in node.bounds]
        self.info[buf] = _BufInfo(buf.data, mins, _compact_strides(exts), n.IntImm(0))
        body = self.visit(node.body)
        size: n.PrimExpr = n.IntImm(1)
        for e in exts:
            size = simplify(size * e)
        del self.info[buf]
        return n.Allocate(buf.data, buf.dtype, (size,), n.IntImm(1, "bool"), body, buf.scope)

    def visit_BufferStore(self, node: n.BufferStore) -> n.Stmt:
        info = self.info.get(node.buffer)
        index = self._flat(node.buffer, node.indices)
        return n.Store(info.data, self.visit(node.value), index)

    def visit_BufferLoad(self, node: n.BufferLoad) -> n.PrimExpr:
        info = self.info.get(node.buffer)
        index = self._flat(node.buffer, node.indices)
        return n.Load(node.buffer.dtype, info.data, index)

    def visit_AttrStmt(self, node: n.AttrStmt) -> n.Stmt:
        if node.attr_key != "buffer_bind_scope":
            return self.generic_visit(node)
        view, target = node.node
        info = self.info.get(target)
        if info is None:
            raise ScheduleError(f"tensorize: buffer {target.name!r} is not realized where intrinsic buffer {view.name!r} is bound")
        args = node.value.args
        mins = [self.visit(a) for a in args[0::2]]
        exts = [as_const_int(a) for a in args[1::2]]
        ndim = len(view.shape)
        lead = len(mins) - ndim
        if lead < 0 or any(e != 1 for e in exts[:lead]):
            raise ScheduleError(
                f"tensorize: region {exts!r} of {target.name!r} cannot be viewed as intrinsic buffer "
                f"{view.name!r} of shape {[as_const_int(s) for s in view.shape]!r}"
            )
        if exts[lead:] != [as_const_int(s) for s in view.shape]:
            raise ScheduleError(
                f"tensorize: region extents {exts[lead:]!r} of {target.name!r} differ from intrinsic buffer "
                f"{view.name!r} shape {[as_const_int(s) for s in view.shape]!r}"
            )
        if view.scope not in ("", "global") and view.scope != target.scope:
            raise ScheduleError(
                f"tensorize: intrinsic buffer {view.name!r} must live in scope {view.scope!r}, but tensor "
                f"{target.name!r} is in scope {target.scope!r}; set_scope({view.scope!r}) on its stage"
            )
        offset: n.PrimExpr = info.offset
        for lo, rmin, st in zip(mins, info.mins, info.strides, strict=True):
            offset = offset + (lo - rmin) * st
        offset = simplify(offset)
        factor = view.offset_factor
        if factor > 1:
            rem = as_const_int(simplify(n.FloorMod(offset, n.IntImm(factor))))
            if rem != 0:
                raise ScheduleError(
                    f"tensorize: the region of {target.name!r} bound to intrinsic buffer {view.name!r} starts at "
                    f"element offset {offset!r}, which is not a multiple of {factor} (whole tensor elements)"
                )
        vmap: dict = {view.data: info.data}
        if isinstance(view.elem_offset, n.Var):
            vmap[view.elem_offset] = offset
        elif as_const_int(view.elem_offset) != as_const_int(offset):
            raise ScheduleError(
                f"tensorize: intrinsic buffer {view.name!r} has the fixed offset {view.elem_offset!r} but the "
                f"region of {target.name!r} starts at {offset!r}"
            )
        strides = info.strides[lead:]
        # (a compact intrinsic buffer declares no strides: nothing to bind)
        for s_view, s_real in zip(view.strides or strides, strides, strict=True):
            if isinstance(s_view, n.Var):
                vmap[s_view] = s_real
        self.info[view] = _BufInfo(info.data, tuple(n.IntImm(0) for _ in range(ndim)), strides, offset)
        body = self.visit(substitute(node.body, vmap))
        del self.info[view]
        return body


def storage_flatten(func: n.PrimFunc) -> n.PrimFunc:
    """Flatten ``func`` (see the module docstring).

    Raises
    ------
    vta.errors.ScheduleError
        If a tensorize binding does not fit its intrinsic buffer (shape, scope, alignment).
    """
    return StorageFlatten().run(func)
