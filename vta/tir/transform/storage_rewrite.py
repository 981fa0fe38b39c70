"""StorageRewrite for on-chip memories: liveness-based reuse, in-place detection, merging.

This is the SRAM address allocator of the VTA flow (reference tvm-vta-software.md 2.4,
EarlyRewrite). Only allocations whose scope has a :class:`MemoryInfo` are planned; others are
left untouched.

1. *Linear access pattern.* Statements at each allocation's nesting level are laid out in
   order; loops, conditionals and ``virtual_thread`` attributes open a scope (a begin and an
   end entry). Every load, store or mention of a buffer counts as a touch of the statement at
   the buffer's allocation level.
2. *Liveness.* A buffer is born at its first touch and dies at its last.
3. *Planning.* When a buffer is born at a statement where another buffer of the same scope,
   size and type dies, and the statement only reads the dying buffer at exactly the index it
   writes the new one (``C[i] = A[i] + B[i]``), the new buffer takes the dying one's storage
   (in place). Otherwise a free block of the same scope and attach scope is reused, preferring
   the smallest one at least as large. Dead buffers return their block to the free list.
4. *Merging.* All blocks of one scope in one attach scope (the function, or a virtual thread)
   become ONE allocation: the first block at offset 0, every other at the next offset rounded
   up to ``max_simd_bits`` (one tile). The total must fit ``max_num_bits``.
5. *Rewrite.* Loads, stores and ``tvm_access_ptr`` calls are redirected to the merged buffer
   with the block's offset added; the merged allocations are placed at the attach scope.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from ...errors import ScheduleError
from .. import nodes as n
from ..arith import as_const_int, structural_equal
from ..functor import StmtExprMutator, StmtExprVisitor
from .lower_device_storage_access_info import MemoryInfo

__all__ = ["storage_rewrite", "StorageRewrite"]

_SCOPE_ATTRS = ("virtual_thread", "thread_extent")


@dataclass
class _Entry:
    stmt: Any = None
    touched: list = field(default_factory=list)
    offset: int = 0  # >0 scope begin (distance to end), <0 scope end, 0 leaf


@dataclass
class _AllocInfo:
    alloc: n.Allocate
    level: int


@dataclass(eq=False)
class _Storage:
    scope: str
    attach: Any
    elem_type: str
    nbits: int
    allocs: list = field(default_factory=list)
    children: list = field(default_factory=list)
    bits_offset: int = 0
    is_child: bool = False
    var: n.Var | None = None


class _Finder(StmtExprVisitor):
    """Build the linear access sequence of the tagged allocations."""

    def __init__(self, tagged_scopes: Mapping[str, MemoryInfo]):
        self.tagged_scopes = tagged_scopes
        self.info: dict[int, _AllocInfo] = {}
        self.scope: list[_Entry] = []
        self.seq: list[_Entry] = []

    def _touch(self, var: n.Var):
        ai = self.info.get(id(var))
        if ai is None:
            return
        if ai.level >= len(self.scope):
            raise ScheduleError(f"buffer {var.name!r} is used outside any statement of its allocation scope")
        self.scope[ai.level].touched.append(var)

    def visit_Allocate(self, op: n.Allocate):
        if op.scope in self.tagged_scopes:
            self.info[id(op.buffer_var)] = _AllocInfo(op, len(self.scope))
        for e in op.extents:
            self.visit(e)
        self.visit(op.body)

    def _leaf(self, op, write_var=None):
        self.scope.append(_Entry())
        self.generic_visit(op)
        if write_var is not None:
            self._touch(write_var)
        e = self.scope.pop()
        if e.touched:
            e.stmt = op
            self.seq.append(e)

    def visit_Store(self, op: n.Store):
        self._leaf(op, op.buffer_var)

    def visit_Evaluate(self, op: n.Evaluate):
        self._leaf(op)

    def visit_Load(self, op: n.Load):
        self.generic_visit(op)
        self._touch(op.buffer_var)

    def visit_Var(self, op: n.Var):
        self._touch(op)

    visit_SizeVar = visit_Var

    def _new_scope(self, op):
        self.scope.append(_Entry())
        begin = len(self.seq)
        self.seq.append(_Entry(stmt=op))
        self.generic_visit(op)
        touched = self.scope.pop().touched
        end = len(self.seq)
        self.seq.append(_Entry(stmt=op, touched=touched, offset=begin - end))
        self.seq[begin].offset = end - begin

    def visit_For(self, op):
        self._new_scope(op)

    def visit_IfThenElse(self, op):
        self._new_scope(op)

    def visit_AssertStmt(self, op):
        self._new_scope(op)

    def visit_AttrStmt(self, op: n.AttrStmt):
        if op.attr_key in _SCOPE_ATTRS:
            self._new_scope(op)
        else:
            # The attribute's node is an annotation, not a buffer use.
            self.visit(op.value)
            self.visit(op.body)


class _InplaceCheck(StmtExprVisitor):
    """Whether ``dst`` may take ``src``'s storage in ``stmt`` (elementwise, same index)."""

    def __init__(self, dst: n.Var, src: n.Var):
        self.dst, self.src = dst, src
        self.ok = True
        self.store: n.Store | None = None
        self.mem_nest = 0

    def visit(self, node):
        if self.ok:
            super().visit(node)

    def visit_Var(self, op):
        if op is self.dst or op is self.src:
            self.ok = False

    visit_SizeVar = visit_Var

    def visit_Store(self, op: n.Store):
        self.mem_nest += 1
        self.visit(op.index)
        self.mem_nest -= 1
        if op.buffer_var is self.dst:
            self.store = op
            self.visit(op.value)
            self.store = None
        else:
            self.visit(op.value)

    def visit_AttrStmt(self, op: n.AttrStmt):
        if op.attr_key in ("extern_scope", "volatile_scope"):
            self.ok = False
            return
        self.visit(op.value)
        self.visit(op.body)

    def visit_Load(self, op: n.Load):
        if op.buffer_var is self.dst or self.mem_nest:
            self.ok = False
            return
        if op.buffer_var is self.src:
            if (
                self.store is None
                or self.store.value.dtype != op.dtype
                or not structural_equal(self.store.index, op.index)
            ):
                self.ok = False
                return
        self.mem_nest += 1
        self.visit(op.index)
        self.mem_nest -= 1


def _const_bits(alloc: n.Allocate) -> int:
    total = n.dtype_bits(alloc.dtype)
    for e in alloc.extents:
        v = as_const_int(e)
        if v is None:
            raise ScheduleError(
                f"on-chip buffer {alloc.buffer_var.name!r} in {alloc.scope!r} needs a constant size, got extent {e!r}"
            )
        total *= v
    return total


class _Planner:
    def __init__(self, finder: _Finder, info: Mapping[str, MemoryInfo]):
        self.finder = finder
        self.mem = info
        self.alloc_map: dict[int, _Storage] = {}
        self.storages: list[_Storage] = []
        self.free: list[_Storage] = []
        self.thread_scope: Any = None

    def plan(self) -> None:
        seq = self.finder.seq
        gen: dict[int, list[n.Var]] = {}
        kill: dict[int, list[n.Var]] = {}
        seen: set[int] = set()
        for e in reversed(seq):
            for v in e.touched:
                if id(v) not in seen:
                    seen.add(id(v))
                    kill.setdefault(id(e.stmt), []).append(v)
        seen.clear()
        for i, e in enumerate(seq):
            if e.offset < 0:
                continue
            s = seq[i + e.offset]
            for v in s.touched:
                if id(v) not in seen:
                    seen.add(id(v))
                    gen.setdefault(id(s.stmt), []).append(v)
        inplace: set[int] = set()
        for e in seq:
            key = id(e.stmt)
            if e.offset >= 0 and key in gen:
                births = gen[key]
                detect = len(births) <= 2
                for var in births:
                    alloc = self.finder.info[id(var)].alloc
                    nbits = _const_bits(alloc)
                    target = None
                    if detect:
                        for src in kill.get(key, []):
                            if id(src) in inplace or id(src) not in self.alloc_map:
                                continue
                            st = self.alloc_map[id(src)]
                            if (
                                st.scope == alloc.scope
                                and st.attach is self.thread_scope
                                and st.elem_type == alloc.dtype
                                and st.nbits == nbits
                                and _inplace_ok(e.stmt, var, src)
                            ):
                                target = st
                                inplace.add(id(src))
                                break
                    if target is None:
                        target = self._find(alloc, nbits)
                    target.allocs.append(alloc)
                    self.alloc_map[id(var)] = target
            if isinstance(e.stmt, n.AttrStmt) and e.stmt.attr_key in _SCOPE_ATTRS:
                self._new_scope(e.stmt)
            if e.offset <= 0 and key in kill:
                for var in kill[key]:
                    if id(var) not in inplace:
                        st = self.alloc_map.get(id(var))
                        if st is not None and st not in self.free:
                            self.free.append(st)

    def _new_scope(self, op):
        if self.thread_scope is not None:
            self.free = [s for s in self.free if s.attach is not op]
            self.thread_scope = None
        else:
            self.thread_scope = op

    def _find(self, alloc: n.Allocate, nbits: int) -> _Storage:
        candidates = [s for s in self.free if s.attach is self.thread_scope and s.scope == alloc.scope]
        larger = sorted((s for s in candidates if nbits <= s.nbits < nbits * 16), key=lambda s: s.nbits)
        for s in larger:
            if s.bits_offset % n.dtype_bits(alloc.dtype) == 0:
                self.free.remove(s)
                return s
        smaller = sorted((s for s in candidates if nbits // 16 < s.nbits < nbits and s.elem_type == alloc.dtype),
                         key=lambda s: -s.nbits)
        for s in smaller:
            s.nbits = nbits
            self.free.remove(s)
            return s
        st = _Storage(alloc.scope, self.thread_scope, alloc.dtype, nbits)
        self.storages.append(st)
        return st

    def merge(self) -> dict[Any, list[n.Allocate]]:
        """Assign offsets; return the new allocations per attach scope (None = function root)."""
        by_attach: dict[int, list[_Storage]] = {}
        attach_obj: dict[int, Any] = {}
        for st in self.storages:
            by_attach.setdefault(id(st.attach), []).append(st)
            attach_obj[id(st.attach)] = st.attach
        out: dict[Any, list[n.Allocate]] = {}
        for key, group in by_attach.items():
            for i, st in enumerate(group):
                for prev in group[:i]:
                    if prev.scope == st.scope and not prev.is_child:
                        prev.children.append(st)
                        st.is_child = True
                        break
            allocs = []
            for st in group:
                if st.is_child:
                    continue
                info = self.mem[st.scope]
                align = info.max_simd_bits
                total = _round_up(st.nbits, align)
                st.var = st.allocs[0].buffer_var
                for child in st.children:
                    child.bits_offset = total
                    child.var = st.var
                    total = _round_up(total + child.nbits, align)
                if total > info.max_num_bits:
                    names = [a.buffer_var.name for s in [st, *st.children] for a in s.allocs]
                    raise ScheduleError(
                        f"on-chip buffers {names!r} need {total // 8} bytes of {st.scope!r} but it holds "
                        f"{info.max_num_bits // 8} bytes; use smaller tiles (split the loops further)"
                    )
                tbits = n.dtype_bits(st.elem_type)
                allocs.append(n.Allocate(st.var, st.elem_type, (n.IntImm((total + tbits - 1) // tbits),),
                                         n.IntImm(1, "bool"), n.Evaluate(n.IntImm(0)), st.scope))
            out[attach_obj[key]] = allocs
        return out


def _round_up(x: int, align: int) -> int:
    return x if x % align == 0 else x + align - x % align


def _inplace_ok(stmt, dst: n.Var, src: n.Var) -> bool:
    if not isinstance(stmt, (n.AttrStmt, n.For, n.IfThenElse, n.Store)):
        return False
    check = _InplaceCheck(dst, src)
    check.visit(stmt)
    return check.ok


class _Rewriter(StmtExprMutator):
    def __init__(self, remap: dict[int, tuple[n.Var, int, str]], tagged: set[int], attach: dict[Any, list[n.Allocate]]):
        self.remap = remap
        self.tagged = tagged
        self.attach = attach

    def _offset(self, var: n.Var, dtype: str) -> tuple[n.Var, int]:
        new_var, bits, _ = self.remap[id(var)]
        eb = n.dtype_bits(dtype)
        if bits % eb:
            raise ScheduleError(
                f"buffer {var.name!r} lands at bit offset {bits}, not a multiple of its {dtype} elements"
            )
        return new_var, bits // eb

    def visit_Allocate(self, op: n.Allocate):
        if id(op.buffer_var) in self.tagged:
            return self.visit(op.body)
        return self.generic_visit(op)

    def visit_Load(self, op: n.Load):
        index = self.visit(op.index)
        if id(op.buffer_var) not in self.remap:
            return op if index is op.index else n.Load(op.dtype, op.buffer_var, index)
        var, off = self._offset(op.buffer_var, op.dtype)
        return n.Load(op.dtype, var, index + off if off else index)

    def visit_Store(self, op: n.Store):
        index, value = self.visit(op.index), self.visit(op.value)
        if id(op.buffer_var) not in self.remap:
            return op if index is op.index and value is op.value else n.Store(op.buffer_var, value, index)
        var, off = self._offset(op.buffer_var, op.value.dtype)
        return n.Store(var, value, index + off if off else index)

    def visit_Call(self, op: n.Call):
        if op.op == "tir.tvm_access_ptr" and isinstance(op.args[1], n.Var) and id(op.args[1]) in self.remap:
            old = op.args[1]
            var, off = self._offset(old, self.remap[id(old)][2])
            offset = self.visit(op.args[2])
            args = (op.args[0], var, offset + off if off else offset, self.visit(op.args[3]), op.args[4])
            return n.Call(op.dtype, op.op, args)
        return self.generic_visit(op)

    def visit_Var(self, op: n.Var):
        entry = self.remap.get(id(op))
        if entry is None:
            return op
        if entry[1]:
            raise ScheduleError(
                f"buffer {op.name!r} is used directly (not through a load, store or access pointer) after being "
                "merged at an offset"
            )
        return entry[0]

    visit_SizeVar = visit_Var

    def visit_AttrStmt(self, op: n.AttrStmt):
        new = self.generic_visit(op)
        allocs = self.attach.get(op)
        if allocs:
            new = dataclasses.replace(new, body=_wrap(allocs, new.body))
        return new


def _wrap(allocs: list[n.Allocate], body: n.Stmt) -> n.Stmt:
    for a in reversed(allocs):
        body = dataclasses.replace(a, body=body)
    return body


def storage_rewrite(func: n.PrimFunc, info: Mapping[str, MemoryInfo]) -> n.PrimFunc:
    """Plan and merge the on-chip allocations of ``func`` (see the module docstring).

    Raises
    ------
    ScheduleError
        If an on-chip allocation has a non-constant size, or the merged buffers of one scope
        exceed its capacity.
    """
    finder = _Finder(info)
    finder.visit(func.body)
    if not finder.info:
        return func
    planner = _Planner(finder, info)
    planner.plan()
    attach = planner.merge()
    remap: dict[int, tuple[n.Var, int, str]] = {}
    for st in planner.storages:
        for a in st.allocs:
            remap[id(a.buffer_var)] = (st.var, st.bits_offset, a.dtype)
    rewriter = _Rewriter(remap, set(finder.info), {k: v for k, v in attach.items() if k is not None})
    body = rewriter.visit(func.body)
    body = _wrap(attach.get(None, []), body)
    return func.with_body(body)


class StorageRewrite:
    """Pass: plan and merge the on-chip allocations of the scopes in ``info`` (see :func:`storage_rewrite`)."""

    name = "StorageRewrite"

    def __init__(self, info: Mapping[str, MemoryInfo]):
        self.info = dict(info)

    def __call__(self, func: n.PrimFunc) -> n.PrimFunc:
        return storage_rewrite(func, self.info)

    def __repr__(self) -> str:
        return "Pass(StorageRewrite)"
