"""InjectDMAIntrin and InjectSkipCopy: ``dma_copy`` loop nests -> VTA 2-D loads and stores.

Reference tvm-vta-software.md 2.4. Under a ``pragma_dma_copy`` attribute the matcher expects a
perfect nest of loops starting at 0 around one store whose value is a load, a cast of a load,
or ``if_then_else(cond, load, 0)`` (zero padding). The linear coefficients of the store and
load indices over the loop variables are the strides of the two sides, the loop extents their
shape, the constant parts their element offsets. The direction comes from the scopes:

* DRAM -> SRAM (destination an on-chip scope): ``VTALoadBuffer2D`` on queue 1 (inp, wgt) or
  2 (acc; an int8 source makes it an ``ACC_8BIT`` load). Padding is allowed on the two
  innermost dimensions outside the tile (rows and columns) and may depend on enclosing loops
  (the pad fields then hold run-time ``max(...)`` expressions); further unpadded outer
  dimensions become host loops of padded 2-D transfers; a padded load is never folded. A loop
  further out may be zero-padded instead when the loops inside it are contiguous in DRAM (it is
  y, they fold into x: a ragged weight chunk). A host loop may carry an overhang only if the
  pragma's value ``"crop:<axis>[,<axis>]"`` names its axis: the transfers skip the overhang and
  leave those on-chip elements as they were (the schedule guarantees nothing uses them).
* acc SRAM -> DRAM: ``VTAStoreBuffer2D`` (memory type OUT) on queue 3; no padding.

The on-chip side must be compact; the DRAM side must reduce to a 2-D pattern of whole tiles
(``x_size`` tiles per row, ``y_size`` rows, ``x_stride`` tiles between rows) after folding
contiguous dimensions. Anything else raises a :class:`~vta.errors.ScheduleError` naming the
buffers and the offending dimension.
"""

from __future__ import annotations

from ..env import Environment
from ..errors import ScheduleError
from ..tir import nodes as n
from ..tir.arith import as_const_int, const_bounds, is_const_int
from ..tir.linear import detect_clip_bound, detect_linear_equation
from ..tir.functor import StmtExprMutator
from ..tir.simplify import simplify
from ..tir.transform.lower_device_storage_access_info import exact_div
from ._util import Pass, allocation_scopes, call_extern, command_handle, coproc_scope, find_coproc_axis

__all__ = ["inject_dma_intrin", "inject_skip_copy", "two_d_pattern"]

#: Largest x_size, y_size and x_stride a memory instruction can encode (16-bit fields).
_FIELD_MAX = (1 << 16) - 1


def _fold(dims: list[tuple[int, int]], elem_block: int, what: str) -> list[tuple[int, int]]:
    """Merge dimensions (extent, stride) outer->inner into the tile and contiguous groups.

    Returns groups outer->inner, the last being ``(elem_block, 1)``.
    """
    dims = [(e, s) for e, s in dims if e != 1]
    size, k = 1, len(dims)
    while size < elem_block:
        if k == 0:
            raise ScheduleError(f"{what}: the copy moves {size} scalars, less than one {elem_block}-scalar tile")
        e, s = dims[k - 1]
        if s != size:
            raise ScheduleError(
                f"{what}: the innermost {elem_block} scalars (one tile) must be contiguous, but a dimension "
                f"of extent {e} has stride {s} where {size} was needed"
            )
        size *= e
        k -= 1
    if size != elem_block:
        raise ScheduleError(f"{what}: the inner dimensions span {size} scalars, not a whole number of {elem_block}-scalar tiles")
    groups: list[tuple[int, int]] = [(elem_block, 1)]
    outer = dims[:k]
    i = len(outer)
    while i > 0:
        e, s = outer[i - 1]
        if s % elem_block:
            raise ScheduleError(f"{what}: a dimension of extent {e} has stride {s}, not a multiple of the {elem_block}-scalar tile")
        extent, stride = e, s
        i -= 1
        while i > 0 and outer[i - 1][1] == extent * stride:
            extent *= outer[i - 1][0]
            i -= 1
        groups.insert(0, (extent, stride))
    return groups


def _unfolded(dims: list[tuple[int, int]], elem_block: int, what: str) -> list[tuple[int, int]]:
    """Like :func:`_fold` but keeping every dimension outside the tile separate."""
    live = [(e, s) for e, s in dims if e != 1]
    size, k = 1, len(live)
    while size < elem_block and k > 0:
        size *= live[k - 1][0]
        k -= 1
    _fold(live[k:], elem_block, what)
    return live[:k] + [(elem_block, 1)]


def two_d_pattern(dims: list[tuple[int, int]], offset: n.PrimExpr, elem_block: int, allow_fold: bool,
                  what: str) -> tuple[int, int, int, n.PrimExpr, list[tuple[int, int, int]]]:
    """``(x_size, y_size, x_stride, tile_offset, host)`` of a DRAM access (all in tiles).

    The two innermost dimensions of tiles (after folding contiguous ones) become the 2-D
    transfer: ``x_size`` contiguous tiles per row (1 when the innermost dimension is strided),
    ``y_size`` rows ``x_stride`` tiles apart. Further outer dimensions are returned in ``host``
    as ``(extent, dram_stride, sram_stride)`` (tiles): the caller issues one transfer per
    iteration, the on-chip side being compact.

    Parameters
    ----------
    dims : list of (extent, stride)
        The loop dimensions outer->inner, strides in scalars.
    offset : PrimExpr
        Element offset of the first scalar.
    elem_block : int
        Scalars per tile.
    allow_fold : bool
        Whether contiguous outer dimensions may be merged.
    what : str
        Description for error messages.

    Raises
    ------
    ScheduleError
        If the tiles are not whole, contiguous and aligned, or a size or stride exceeds the
        16-bit fields.
    """
    tile_offset = exact_div(offset, elem_block)
    if tile_offset is None:
        raise ScheduleError(f"{what}: element offset {offset!r} is not provably a multiple of the {elem_block}-scalar tile")
    groups = _fold(dims, elem_block, what) if allow_fold else _unfolded(dims, elem_block, what)
    outer = [(e, s // elem_block) for e, s in groups[:-1]]  # strides in tiles from here on
    if not outer:
        return 1, 1, 1, tile_offset, []
    inner_ext, inner_stride = outer[-1]
    if inner_stride == 1:
        x, (y, stride) = inner_ext, (outer[-2] if len(outer) >= 2 else (1, inner_ext))
        host_groups = outer[:-2]
    else:
        x, y, stride = 1, inner_ext, inner_stride
        host_groups = outer[:-1]
    for name, v in (("x_size", x), ("y_size", y), ("x_stride", stride)):
        if v > _FIELD_MAX:
            raise ScheduleError(
                f"{what}: {name} = {v} tiles exceeds the 16-bit field of a VTA load/store (max {_FIELD_MAX}); "
                "split the copy loop"
            )
    host, block = [], x * y
    for ext, dram_stride in reversed(host_groups):
        host.insert(0, (ext, dram_stride, block))
        block *= ext
    return x, y, stride, tile_offset, host


def _host_loops(call_of, host: list[tuple], dram_off: n.PrimExpr, sram_off: n.PrimExpr,
                elem_block: int) -> n.Stmt:
    """One transfer per iteration of the host dimensions ``(extent, dram_stride, sram_stride)``
    or, cropped, ``(extent, dram_stride, sram_stride, skip)``: the extent an expression and the
    first ``skip`` on-chip rows of the dimension left out (the DRAM offset already skips them)."""
    hvars = [n.Var(f"dma_h{k}") for k in range(len(host))]
    for v, (_, dstride, sstride, *skip) in zip(hvars, host, strict=True):
        dram_off = dram_off + v * dstride
        sram_off = sram_off + (v + skip[0] if skip else v) * (sstride * elem_block)
    stmt: n.Stmt = n.Evaluate(call_of(simplify(dram_off), simplify(sram_off)))
    for v, (ext, *_) in reversed(list(zip(hvars, host, strict=True))):
        stmt = n.For(v, n.IntImm(0), n.IntImm(ext) if isinstance(ext, int) else ext, n.ForKind.SERIAL, stmt)
    return stmt


def _unlikely(cond: n.PrimExpr) -> n.PrimExpr:
    """``cond`` without a ``likely(...)`` wrapper."""
    if isinstance(cond, n.Call) and cond.op == "tir.likely":
        return cond.args[0]
    return cond


def _strip_loops(body: n.Stmt, what: str) -> tuple[list[n.For], n.Store, n.PrimExpr | None]:
    """The loops, the store and the guard (``if (cond) store``, e.g. of a partial last tile) of a
    copy nest."""
    loops: list[n.For] = []
    while isinstance(body, n.For):
        if as_const_int(body.min) != 0:
            raise ScheduleError(f"{what}: loop {body.loop_var.name!r} must start at 0, got {body.min!r}")
        if as_const_int(body.extent) is None:
            raise ScheduleError(f"{what}: loop {body.loop_var.name!r} needs a constant extent, got {body.extent!r}")
        loops.append(body)
        body = body.body
    guard = None
    if isinstance(body, n.IfThenElse) and body.else_case is None and isinstance(body.then_case, n.Store):
        guard, body = _unlikely(body.condition), body.then_case
    if not isinstance(body, n.Store):
        raise ScheduleError(
            f"{what}: expected a perfect loop nest around one store, found {type(body).__name__}; a dma_copy "
            "pragma must sit on a copy stage's axis"
        )
    return loops, body, guard


#: Prefix of a ``dma_copy`` pragma value naming the copy's axes whose overhang may be cropped.
CROP_PREFIX = "crop:"


def _croppable(value: n.PrimExpr) -> frozenset:
    """The axis names a ``dma_copy`` pragma value ``"crop:<name>,<name>"`` lists (empty for 1)."""
    if isinstance(value, n.StringImm) and value.value.startswith(CROP_PREFIX):
        return frozenset(x for x in value.value[len(CROP_PREFIX):].split(",") if x)
    return frozenset()


def _merge_bounds(bounds: list, more: list | None, guard: n.PrimExpr, what: str) -> list:
    """The intersection of two lists of inclusive (lo, hi) bounds per loop (None: unbounded)."""
    if more is None:
        raise ScheduleError(f"{what}: guard {guard!r} is not a conjunction of bounds on the loops")
    out = []
    for k, (a, b) in enumerate(zip(bounds, more, strict=True)):
        if a is None or b is None:
            out.append(b if a is None else a)
        else:
            out.append(simplify(n.Max(a, b) if k % 2 == 0 else n.Min(a, b)))
    return out


def _linear(expr: n.PrimExpr, loop_vars: list[n.Var], what: str) -> tuple[list[int], n.PrimExpr]:
    coefs = detect_linear_equation(expr, loop_vars)
    if coefs is None:
        raise ScheduleError(f"{what}: index {expr!r} is not linear in the loops {[v.name for v in loop_vars]!r}")
    strides = []
    for v, c in zip(loop_vars, coefs[:-1], strict=True):
        ci = as_const_int(c)
        if ci is None:
            raise ScheduleError(f"{what}: stride of loop {v.name!r} is not constant ({c!r})")
        strides.append(ci)
    return strides, coefs[-1]


def _access_ptr(var: n.Var, offset: n.PrimExpr, extent: int, mask: int) -> n.Call:
    # As vta.tir.nodes.Buffer.access_ptr: the annotation holds the requested pointer type.
    return n.Call("handle", "tir.tvm_access_ptr", (
        n.Call("int32", "tir.type_annotation", ()), var, offset, n.IntImm(extent), n.IntImm(mask)))


class _DMA(StmtExprMutator):
    def __init__(self, env: Environment, scopes: dict, axis):
        self.env = env
        self.scopes = scopes
        self.axis = axis
        self.ranges: dict = {}

    def visit_For(self, op: n.For):
        # Ranges of the enclosing loops bound padding expressions that depend on them.
        self.ranges[op.loop_var] = (op.min, op.extent)
        try:
            return self.generic_visit(op)
        finally:
            del self.ranges[op.loop_var]

    def scope_of(self, var: n.Var) -> str:
        return self.scopes.get(var, "global")

    def visit_AttrStmt(self, op: n.AttrStmt):
        if op.attr_key == "virtual_thread":
            # A virtual thread index bounds padding like a loop variable does.
            var = getattr(op.node, "var", op.node)
            self.ranges[var] = (n.IntImm(0), op.value)
            try:
                return self.generic_visit(op)
            finally:
                del self.ranges[var]
        if op.attr_key != "pragma_dma_copy":
            return self.generic_visit(op)
        return self._inject(op)

    def _inject(self, op: n.AttrStmt) -> n.Stmt:
        axis_name = getattr(getattr(op.node, "var", op.node), "name", repr(op.node))
        loops, store, guard = _strip_loops(op.body, f"dma_copy at axis {axis_name!r}")
        self.croppable = _croppable(op.value)
        what = f"dma_copy of buffer {store.buffer_var.name!r} at axis {axis_name!r}"
        loop_vars = [lp.loop_var for lp in loops]
        extents = [as_const_int(lp.extent) for lp in loops]
        value, cond, pad = store.value, None, None
        if isinstance(value, n.Call) and value.op == "tir.if_then_else":
            cond, value, pad = value.args
        elif isinstance(value, n.Select):
            cond, value, pad = value.condition, value.true_value, value.false_value
        if guard is not None and self.scope_of(store.buffer_var) == "global":
            return self._cropped_store(what, loops, extents, store, value, cond, guard)
        if guard is not None and cond is None:
            # A guarded load (the overhang of a partial last tile): the on-chip elements outside
            # the guard are never used, so they are filled with zeros like padding.
            cond, pad, guard = guard, n.IntImm(0), None
        load = value.value if isinstance(value, n.Cast) else value
        if not isinstance(load, n.Load):
            raise ScheduleError(f"{what}: the stored value must be a load (or a cast of one), got {type(value).__name__}")
        if pad is not None and as_const_int(pad) != 0:
            raise ScheduleError(f"{what}: padding value must be 0 (VTA fills zeros), got {pad!r}")
        dst_strides, dst_off = _linear(store.index, loop_vars, what)
        src_strides, src_off = _linear(load.index, loop_vars, what)
        dst_scope, src_scope = self.scope_of(store.buffer_var), self.scope_of(load.buffer_var)
        # Pads may depend on enclosing loops (a padded window that moves): they stay expressions.
        pad_before: list[n.PrimExpr] = [n.IntImm(0)] * len(loops)
        pad_after: list[n.PrimExpr] = [n.IntImm(0)] * len(loops)
        src_extents: list[n.PrimExpr] = [n.IntImm(e) for e in extents]
        if cond is not None:
            bounds = detect_clip_bound(cond, loop_vars)
            if bounds is None:
                raise ScheduleError(f"{what}: padding condition {cond!r} is not a conjunction of bounds on the loops")
            if guard is not None:
                bounds = _merge_bounds(bounds, detect_clip_bound(guard, loop_vars), guard, what)
            for i, lp in enumerate(loops):
                lo, hi = bounds[2 * i], bounds[2 * i + 1]
                if lo is not None:
                    pad_before[i] = simplify(n.Max(lo, n.IntImm(0)))
                    src_off = simplify(src_off + pad_before[i] * src_strides[i])
                if hi is not None:
                    pad_after[i] = simplify(n.Max(n.IntImm(extents[i]) - hi - 1, n.IntImm(0)))
                src_extents[i] = simplify(n.IntImm(extents[i]) - pad_before[i] - pad_after[i])
        if dst_scope == "global":
            return self._store(what, loops, extents, store, load, src_scope, src_strides, src_off, dst_strides, dst_off, cond)
        return self._load(what, loops, extents, src_extents, store, load, dst_scope, src_scope, src_strides, src_off,
                          dst_strides, dst_off, pad_before, pad_after)

    def _check_compact(self, what, extents, strides, side):
        expect, acc = [], 1
        for e in reversed(extents):
            expect.append(acc)
            acc *= e
        expect.reverse()
        for e, s, x in zip(extents, strides, expect, strict=True):
            if e != 1 and s != x:
                raise ScheduleError(
                    f"{what}: the on-chip {side} must be compact, but a dimension of extent {e} has stride {s} "
                    f"(expected {x}); strides {strides!r} for extents {extents!r}"
                )

    def _store(self, what, loops, extents, store, load, src_scope, src_strides, src_off, dst_strides, dst_off, cond):
        env = self.env
        if cond is not None:
            raise ScheduleError(f"{what}: a store to DRAM cannot be padded")
        if src_scope != env.acc_scope:
            raise ScheduleError(f"{what}: a store to DRAM must read {env.acc_scope!r}, but {load.buffer_var.name!r} is in {src_scope!r}")
        elem_block = env.BATCH * env.BLOCK_OUT
        bits = n.dtype_bits(store.value.dtype)
        if bits != env.OUT_WIDTH and min(bits, env.OUT_WIDTH) < 8:
            raise ScheduleError(
                f"{what}: the store writes {env.OUT_WIDTH}-bit elements (OUT_WIDTH) but {store.buffer_var.name!r} "
                f"holds {store.value.dtype}; cast the result to {env.out_dtype} first")
        self._check_compact(what, extents, src_strides, "source")
        x, y, stride, offset, host = two_d_pattern(list(zip(extents, dst_strides, strict=True)), dst_off, elem_block, True, what)
        total = 1
        for e in extents:
            total *= e

        def call(dram, sram):
            return call_extern("int32", "VTAStoreBuffer2D", command_handle(), _access_ptr(load.buffer_var, sram, total, 1),
                               env.dev.MEM_ID_OUT, store.buffer_var, dram, x, y, stride)

        return coproc_scope(self.axis, env.dev.QID_STORE_OUT, _host_loops(call, host, offset, src_off, elem_block))

    def _cropped_store(self, what, loops, extents, store, value, cond, guard) -> n.Stmt:
        """A store under a guard bounding its loops from above (a partial last tile): the
        transfer covers only the rows and columns inside the guard. The innermost dimension
        outside the tile is x and the next one y; where x is cropped short of its extent each
        row is its own transfer (the on-chip rows are not contiguous any more). Further
        dimensions are host loops, cropped ones over their run-time extent."""
        env = self.env
        if cond is not None:
            raise ScheduleError(f"{what}: a store to DRAM cannot be padded")
        load = value.value if isinstance(value, n.Cast) else value
        if not isinstance(load, n.Load):
            raise ScheduleError(f"{what}: the stored value must be a load (or a cast of one), got {type(value).__name__}")
        src_scope = self.scope_of(load.buffer_var)
        if src_scope != env.acc_scope:
            raise ScheduleError(f"{what}: a store to DRAM must read {env.acc_scope!r}, but {load.buffer_var.name!r} is in {src_scope!r}")
        loop_vars = [lp.loop_var for lp in loops]
        dst_strides, dst_off = _linear(store.index, loop_vars, what)
        src_strides, src_off = _linear(load.index, loop_vars, what)
        self._check_compact(what, extents, src_strides, "source")
        bounds = detect_clip_bound(guard, loop_vars)
        if bounds is None:
            raise ScheduleError(f"{what}: guard {guard!r} is not a conjunction of upper bounds on the loops")
        elem_block = env.BATCH * env.BLOCK_OUT
        tile, outer = _split_tile_loops(extents, elem_block)
        _fold([(extents[i], dst_strides[i]) for i in tile], elem_block, what)
        crop: dict = {}
        for i in range(len(loops)):
            lo, hi = bounds[2 * i], bounds[2 * i + 1]
            if lo is not None and as_const_int(simplify(n.Max(lo, n.IntImm(0)))) != 0:
                raise ScheduleError(f"{what}: guard {guard!r} crops loop {loops[i].loop_var.name!r} from below")
            if hi is None or extents[i] == 1:
                continue
            if i not in outer:
                raise ScheduleError(f"{what}: guard {guard!r} crops loop {loops[i].loop_var.name!r} inside the tile")
            crop[i] = simplify(n.Min(n.IntImm(extents[i]), hi + 1))
        for i in outer:
            if dst_strides[i] % elem_block:
                raise ScheduleError(f"{what}: loop {loops[i].loop_var.name!r} has DRAM stride {dst_strides[i]}, not a "
                                    f"multiple of the {elem_block}-scalar tile")
        offset = exact_div(dst_off, elem_block)
        if offset is None:
            raise ScheduleError(f"{what}: element offset {dst_off!r} is not provably a multiple of the {elem_block}-scalar tile")

        def ext(i):
            return crop.get(i, n.IntImm(extents[i]))

        total = 1
        for e in extents:
            total *= e

        def transfers(host, x_size, y_size, stride) -> n.Stmt:
            dram, sram = offset, src_off
            hvars = [n.Var(f"dma_h{k}") for k in range(len(host))]
            for v, i in zip(hvars, host, strict=True):
                dram = dram + v * (dst_strides[i] // elem_block)
                sram = sram + v * src_strides[i]
            stmt: n.Stmt = n.Evaluate(call_extern(
                "int32", "VTAStoreBuffer2D", command_handle(),
                _access_ptr(load.buffer_var, simplify(sram), total, 1), env.dev.MEM_ID_OUT, store.buffer_var,
                simplify(dram), x_size, y_size, stride))
            for v, i in reversed(list(zip(hvars, host, strict=True))):
                stmt = n.For(v, n.IntImm(0), ext(i), n.ForKind.SERIAL, stmt)
            return stmt

        one = n.IntImm(1)
        if not outer:
            return coproc_scope(self.axis, env.dev.QID_STORE_OUT, transfers([], one, one, one))
        xi, rest = outer[-1], outer[:-1]
        if dst_strides[xi] != elem_block:   # strided tiles: each one its own row
            stmt = transfers(rest, one, ext(xi), n.IntImm(dst_strides[xi] // elem_block))
        elif not rest:
            stmt = transfers([], ext(xi), one, one)
        else:
            yi = rest[-1]
            rows = transfers(rest[:-1], ext(xi), ext(yi), n.IntImm(dst_strides[yi] // elem_block))
            if xi in crop:
                # a cropped row is not contiguous on chip: one transfer per row, except in the
                # tiles where the crop leaves the whole row
                per_row = transfers(rest, ext(xi), one, one)
                rows = n.IfThenElse(n.EQ(crop[xi], n.IntImm(extents[xi])), rows, per_row)
            stmt = rows
        return coproc_scope(self.axis, env.dev.QID_STORE_OUT, stmt)

        return coproc_scope(self.axis, env.dev.QID_STORE_OUT, stmt)

    def _padded_pattern(self, what, loops, extents, src_extents, src_strides, dst_strides, src_off, pad_before,
                        pad_after, elem_block):
        """2-D pattern of a zero-padded load: rows y and columns x, further outer loops returned as
        host dimensions (one padded 2-D transfer per iteration).

        y and x are the two innermost loops outside the tile; or, when a loop further out is
        padded (e.g. the overhang of a ragged channel tile), that loop is y and the unpadded
        loops inside it, contiguous in DRAM, fold into x. A host loop may carry an overhang only
        if the pragma names it croppable (``"crop:<axis>"``): the transfers then skip it and
        those on-chip elements are left as they were (the schedule knows nothing reads them
        into a result)."""
        tile, outer = _split_tile_loops(extents, elem_block)
        for i in range(len(loops)):
            if i not in outer and not (is_const_int(pad_before[i], 0) and is_const_int(pad_after[i], 0)):
                raise ScheduleError(
                    f"{what}: only the two loops outside the tile may be padded, but loop "
                    f"{loops[i].loop_var.name!r} has padding ({pad_before[i]!r}, {pad_after[i]!r})"
                )

        def padded(i):
            return not (is_const_int(pad_before[i], 0) and is_const_int(pad_after[i], 0))

        def crop_ok(i):
            return loops[i].loop_var.name in self.croppable

        _fold([(extents[i], src_strides[i]) for i in tile], elem_block, what)
        zero = [i for i in outer if padded(i) and not crop_ok(i)]
        if len(outer) >= 2 and all(i in outer[-2:] for i in zero):
            y_dims, x_dims, host_dims = [outer[-2]], [outer[-1]], outer[:-2]
        elif len(zero) == 1:
            k = outer.index(zero[0])
            y_dims, x_dims, host_dims = [zero[0]], outer[k + 1:], outer[:k]
            stride = elem_block
            for i in reversed(x_dims):
                if padded(i) or src_strides[i] != stride:
                    raise ScheduleError(
                        f"{what}: padding on loop {loops[zero[0]].loop_var.name!r} needs the loops inside it "
                        f"unpadded and contiguous in DRAM (columns of one padded row)")
                stride *= extents[i]
        elif not zero:   # every padded loop is croppable: one tile per transfer
            y_dims, x_dims, host_dims = [], [], outer
        else:
            names = [loops[i].loop_var.name for i in zero]
            raise ScheduleError(
                f"{what}: only the two innermost loops outside the tile (rows and columns), or one loop over "
                f"contiguous columns, may be zero-padded, but loops {names!r} are padded"
            )
        host = []
        for i in host_dims:
            if padded(i) and not crop_ok(i):
                raise ScheduleError(
                    f"{what}: only the two innermost loops outside the tile (rows and columns) may be padded, but "
                    f"loop {loops[i].loop_var.name!r} has padding ({pad_before[i]!r}, {pad_after[i]!r})"
                )
            if src_strides[i] % elem_block or dst_strides[i] % elem_block:
                raise ScheduleError(
                    f"{what}: loop {loops[i].loop_var.name!r} has strides {src_strides[i]} (DRAM) and "
                    f"{dst_strides[i]} (on-chip), not multiples of the {elem_block}-scalar tile"
                )
            if padded(i):   # croppable: only the rows inside the tensor are transferred
                host.append((src_extents[i], src_strides[i] // elem_block, dst_strides[i] // elem_block,
                             pad_before[i]))
            else:
                host.append((extents[i], src_strides[i] // elem_block, dst_strides[i] // elem_block))
        offset = exact_div(src_off, elem_block)
        if offset is None:
            raise ScheduleError(f"{what}: element offset {src_off!r} is not provably a multiple of the {elem_block}-scalar tile")
        if not y_dims:
            zero_pad = (n.IntImm(0), n.IntImm(0))
            return n.IntImm(1), n.IntImm(1), 1, offset, zero_pad, zero_pad, host
        yi = y_dims[0]
        if len(x_dims) == 1:
            xi = x_dims[0]
            if extents[xi] > 1 and src_strides[xi] != elem_block:
                raise ScheduleError(
                    f"{what}: the tiles of a padded row must be contiguous in DRAM, but loop "
                    f"{loops[xi].loop_var.name!r} has stride {src_strides[xi]} instead of {elem_block}"
                )
            x_size, x_pad = src_extents[xi], (pad_before[xi], pad_after[xi])
        else:
            cols = 1
            for i in x_dims:
                cols *= extents[i]
            x_size, x_pad = n.IntImm(cols), (n.IntImm(0), n.IntImm(0))
        if src_strides[yi] % elem_block:
            raise ScheduleError(f"{what}: row stride {src_strides[yi]} is not a multiple of the {elem_block}-scalar tile")
        limit = (1 << 4) - 1
        pads = [(pad_before[yi], yi), (pad_after[yi], yi)]
        if len(x_dims) == 1:
            pads += [(x_pad[0], x_dims[0]), (x_pad[1], x_dims[0])]
        for p, i in pads:
            hi = const_bounds(p, self.ranges)[1]
            if hi is None or hi > limit:
                raise ScheduleError(
                    f"{what}: padding {p!r} on loop {loops[i].loop_var.name!r} may exceed the 4-bit pad field "
                    f"(max {limit})"
                )
        return (x_size, src_extents[yi], src_strides[yi] // elem_block, offset,
                x_pad, (pad_before[yi], pad_after[yi]), host)

    def _load(self, what, loops, extents, src_extents, store, load, dst_scope, src_scope, src_strides, src_off,
              dst_strides, dst_off, pad_before, pad_after):
        env, dev = self.env, self.env.dev
        if src_scope != "global":
            raise ScheduleError(f"{what}: copies between on-chip buffers ({src_scope!r} -> {dst_scope!r}) are not supported")
        bits = n.dtype_bits(load.dtype)
        if dst_scope == env.inp_scope:
            elem_block, mem, qid = env.BATCH * env.BLOCK_IN, dev.MEM_ID_INP, dev.QID_LOAD_INP
            _check_width(what, load, bits, env.INP_WIDTH, "INP_WIDTH", env.inp_dtype)
        elif dst_scope == env.wgt_scope:
            elem_block, mem, qid = env.BLOCK_OUT * env.BLOCK_IN, dev.MEM_ID_WGT, dev.QID_LOAD_WGT
            _check_width(what, load, bits, env.WGT_WIDTH, "WGT_WIDTH", env.wgt_dtype)
        elif dst_scope == env.acc_scope:
            elem_block, mem, qid = env.BATCH * env.BLOCK_OUT, dev.MEM_ID_ACC, dev.QID_LOAD_OUT
            if load.dtype != store.value.dtype and bits < env.ACC_WIDTH:
                # ACC_8BIT reads one byte per lane and sign-extends it; nothing reads narrower lanes.
                if bits != 8:
                    raise ScheduleError(
                        f"{what}: {load.buffer_var.name!r} holds {load.dtype} values, but a widening load into "
                        f"{env.acc_scope!r} (ACC_8BIT) reads 8-bit lanes; load int8 or {env.acc_dtype} data")
                mem = dev.MEM_ID_ACC_8BIT
        else:
            raise ScheduleError(
                f"{what}: destination scope {dst_scope!r} is not a VTA buffer; accepted: "
                f"{env.inp_scope!r}, {env.wgt_scope!r}, {env.acc_scope!r}"
            )
        self._check_compact(what, extents, dst_strides, "destination")
        padded = not all(is_const_int(p, 0) for p in (*pad_before, *pad_after))
        x_pad = y_pad = (0, 0)
        host: list = []
        if padded:
            x_size, y_size, stride, offset, x_pad, y_pad, host = self._padded_pattern(
                what, loops, extents, src_extents, src_strides, dst_strides, src_off, pad_before, pad_after,
                elem_block)
        else:
            x_size, y_size, stride, offset, host = two_d_pattern(list(zip(extents, src_strides, strict=True)), src_off, elem_block,
                                                                 True, what)
        total = 1
        for e in extents:
            total *= e

        def call(dram, sram):
            return call_extern("int32", "VTALoadBuffer2D", command_handle(), load.buffer_var, dram, x_size, y_size, stride,
                               x_pad[0], y_pad[0], x_pad[1], y_pad[1], _access_ptr(store.buffer_var, sram, total, 2), mem)

        return coproc_scope(self.axis, qid, _host_loops(call, host, offset, dst_off, elem_block))


def _split_tile_loops(extents, elem_block: int) -> tuple[list[int], list[int]]:
    """The indices of a copy's loops with extent > 1, split into the innermost ones that make up
    one on-chip element of ``elem_block`` values (the tile) and the outer rest."""
    live = [i for i, e in enumerate(extents) if e != 1]
    tile, size = [], 1
    for i in reversed(live):
        if size >= elem_block:
            break
        size *= extents[i]
        tile.insert(0, i)
    return tile, [i for i in live if i not in tile]


def _check_width(what: str, load, bits: int, width: int, key: str, dtype: str) -> None:
    """Refuse a load whose DRAM elements are not the width the buffer's tiles hold."""
    if bits != width:
        raise ScheduleError(
            f"{what}: {load.buffer_var.name!r} holds {load.dtype} values, but the buffer's tiles hold {width}-bit "
            f"elements ({key}); its DRAM tensor must be {dtype}")


def inject_dma_intrin(env: Environment) -> Pass:
    """The InjectDMAIntrin pass for ``env`` (module docstring).

    Raises
    ------
    ScheduleError
        (when run) If a ``dma_copy`` nest is not a supported copy.
    """

    def run(func: n.PrimFunc) -> n.PrimFunc:
        scopes = allocation_scopes(func.body)
        return func.with_body(_DMA(env, scopes, find_coproc_axis(func.body)).visit(func.body))

    return Pass("InjectDMAIntrin", run)


class _Skip(StmtExprMutator):
    def __init__(self, keys):
        self.keys = keys

    def visit_AttrStmt(self, op: n.AttrStmt):
        if op.attr_key in self.keys:
            return n.Evaluate(n.IntImm(0))
        return self.generic_visit(op)


def inject_skip_copy() -> Pass:
    """InjectSkipCopy: every ``pragma_skip_dma_copy`` region (mock environments) becomes a no-op."""
    return Pass("InjectSkipCopy", lambda f: f.with_body(_Skip({"pragma_skip_dma_copy"}).visit(f.body)))
