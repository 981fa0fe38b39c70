"""The pre-run checks of one instruction, as scalar functions the compiled passes share.

:mod:`vta.sim.stream` checks a whole stream with NumPy columns and raises the precise errors.
Two compiled passes make the same checks row by row first, to find out cheaply whether the
slow way is needed: fsim's pre-pass (:func:`vta.sim.fsim.kernels._prepass`) and the cycle
model's timing-only pass (:func:`vta.sim.model.replay._scan`). Both call the functions below,
which numba compiles into them (:mod:`vta.sim.numba_cache` keys the on-disk cache by this file
too). A row these functions pass is one :mod:`vta.sim.stream` accepts; a row they flag is
checked again there.

Field values are plain integers: ``op`` the opcode, ``pp``/``pn``/``up``/``un`` the pop-prev,
pop-next, push-prev and push-next flags, ``mt`` the memory type, ``aop`` the ALU opcode, and
for a LOAD or STORE its memory fields (``base`` the SRAM base, ``dbase`` the DRAM base in
elements, ``ys``/``xs`` the sizes, ``stride`` the x stride, ``yp0``, ``yp1``, ``xp0``,
``xp1`` the pads). Tokens are counted in fsim's channel order l2g, g2l, s2g, g2s.
"""

from __future__ import annotations

from .. import isa

__all__ = ["alu_mask", "suspect", "token_step"]

#: Most tokens a channel may hold (as :data:`vta.sim.fsim.sched.MAX_TOKENS`).
_MAX_TOKENS = 255


def alu_mask(env) -> int:
    """The ALU opcodes ``env`` accepts as a bit mask (bit ``k`` set: opcode ``k`` is valid): MIN to
    MUL always, REQ with the option ``ALU_REQUANT``, MOV with ``ALU_MOV`` (as
    :meth:`vta.sim.stream.Program.validate`, which names the option when it refuses an opcode)."""
    return sum(1 << op for op in isa.ALU_NAMES if isa.check_alu_opcode(op, env) is None)


def token_step(op, pp, pn, up, un, mt, aop, alu_ok, l2g, g2l, s2g, g2s):
    """One instruction of the in-order check: the token counts after it, and whether it is valid
    there (a valid opcode, memory type and ALU opcode, token flags of channels its stage has, no
    pop without a token and no channel above 255 tokens when the stream runs in stream order).

    ``mt`` is read for LOAD and STORE only, ``aop`` for ALU only; ``alu_ok`` is the mask of the
    ALU opcodes the configuration accepts (:func:`alu_mask`). Returns ``(l2g, g2l, s2g, g2s, ok)``;
    when ``ok`` is False the counts mean nothing.
    """
    if op > 4:
        return l2g, g2l, s2g, g2s, False
    stage = 2  # 1 load, 2 compute, 3 store (as vta.isa.stage_of)
    if op <= 1:
        if mt > 5:
            return l2g, g2l, s2g, g2s, False
        if op == 1:
            stage = 3
        elif mt == 1 or mt == 2:
            stage = 1
    elif op == 4 and ((alu_ok >> aop) & 1) == 0:
        return l2g, g2l, s2g, g2s, False
    if stage == 1:
        if pp != 0 or up != 0:
            return l2g, g2l, s2g, g2s, False
        g2l -= pn
        l2g += un
    elif stage == 2:
        l2g -= pp
        s2g -= pn
        g2l += up
        g2s += un
    else:
        if pn != 0 or un != 0:
            return l2g, g2l, s2g, g2s, False
        g2s -= pp
        s2g += up
    ok = min(l2g, g2l, s2g, g2s) >= 0 and max(l2g, g2l, s2g, g2s) <= _MAX_TOKENS
    return l2g, g2l, s2g, g2s, ok


def suspect(op, mt, base, dbase, ys, xs, stride, yp0, yp1, xp0, xp1, depths, elems, allocs, hit):
    """Whether a LOAD (``op`` 0) or STORE (``op`` 1) with ``xs > 0`` and a valid memory type
    (``mt <= 5``) fails a check on its fields alone, as :func:`vta.sim.fsim.units.check_mem`
    would find when it executes: a LOAD of OUT, a STORE of anything but OUT or with padding, an
    SRAM rectangle past the buffer (``depths``: rows per memory type 0..5; a STORE reads the
    accumulator, ``depths[3]``), DRAM rows outside one live allocation (``elems``: bytes per
    element per memory type 0..5, ``elems[4]`` the bytes a STORE writes). ``allocs`` is a k x 2
    integer array (start and end of each live allocation, sorted by start, disjoint); allocation
    ``hit`` is tried first (consecutive transfers mostly use one buffer). Returns ``(bad, the
    allocation to try first next time)``.
    """
    if op == 0:
        bad = mt == 4 or base + (yp0 + ys + yp1) * (xp0 + xs + xp1) > depths[mt]
    else:
        bad = mt != 4 or (yp0 | yp1 | xp0 | xp1) != 0 or base + xs * ys > depths[3]
    if bad or ys == 0:
        return bad, hit
    e = elems[mt] if op == 0 else elems[4]
    start = dbase * e
    end = (dbase + (ys - 1) * stride + xs) * e  # (xs > 0: never empty)
    if allocs[hit, 0] <= start and end <= allocs[hit, 1]:
        return False, hit
    lo = 0
    hi = allocs.shape[0]  # the last allocation starting at or before ``start``
    while lo < hi:
        mid = (lo + hi) >> 1
        if allocs[mid, 0] <= start:
            lo = mid + 1
        else:
            hi = mid
    k = lo - 1
    if k >= 0 and end <= allocs[k, 1] and allocs[k, 0] <= start:
        return False, k
    return True, hit
