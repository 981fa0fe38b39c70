"""An optional compiled engine for fsim (numba), bit-identical to the NumPy opcode functions.

The NumPy functions of :mod:`vta.sim.fsim_units` are the specification. Executing one small
instruction through them costs tens of microseconds of interpreter overhead, so a stream of
many small instructions is slow. This module compiles one loop that executes a stretch of the
execution order directly on the same scratchpad arrays and the DRAM arena, with the plain
sequential loops of ``reference/vta-isa.md`` section 4.

The compiled loop handles the common case and *defers* everything else: when an instruction
would fail a check (an index or address out of range, an invalid field), is an enormous GEMM,
starts a run of GEMMs that one BLAS product does faster (:func:`vta.sim.fsim_units.gemm_run`),
or uses an element width the loop does not implement (sub-byte loads and stores, accumulators
narrower than 32 bits), the loop stops and returns its position. The simulator then executes
that instruction through the NumPy functions -- which raise the precise error when there is
one -- and resumes the loop after it. Both paths therefore always agree.

numba is optional: without it (or with ``engine="numpy"``) fsim uses the NumPy path alone.
Compiled code is cached under :func:`vta.cache.cache_dir` ``("numba")``.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np

from .. import isa
from ..cache import cache_dir
from ..env import Environment

__all__ = ["available", "JitEngine", "BIG_GEMM_MACS"]

#: GEMMs with at least this many multiply-accumulates go to the BLAS path instead. Measured on
#: the benchmark's 1024^3 GEMM, the compiled loop beats the BLAS path even at 2048
#: uop-iterations per GEMM (about 16 vs 12 M uop-iter/s of CPU time), because the BLAS path
#: pays ~100 us of Python per instruction; only enormous single instructions go to BLAS.
BIG_GEMM_MACS = 1 << 30

# Column layout of the field matrix handed to the compiled loop.
_MEM = ("memory_type", "sram_base", "dram_base", "y_size", "x_size", "x_stride", "y_pad_0", "y_pad_1",
        "x_pad_0", "x_pad_1")
_GEMM = ("reset_reg", "uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
         "src_factor_out", "src_factor_in", "wgt_factor_out", "wgt_factor_in")
_ALU = ("uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in", "src_factor_out",
        "src_factor_in", "alu_opcode", "use_imm", "imm")

_kernel = None

#: Statistics the compiled loop counts, in the order of its ``counts`` array.
COUNT_KEYS = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes",
              "gemm_counter", "alu_counter", "insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish",
              "insn_nop")


def available() -> bool:
    """Whether numba can be imported (the compiled engine is usable)."""
    return importlib.util.find_spec("numba") is not None


def _compile():
    """Import numba with its cache in the project's build cache and compile the loop (once)."""
    global _kernel, _field, _in_dram, _gemm_nest, _as_written
    if _kernel is not None:
        return _kernel
    os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir("numba")))
    import numba

    if not numba.config.CACHE_DIR:
        numba.config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]
    # The helpers are module globals, so the loop compiled below calls their compiled versions.
    _field = numba.njit(cache=True)(_field_py)
    _in_dram = numba.njit(cache=True)(_in_dram_py)
    _as_written = numba.njit(cache=True)(_as_written_py)
    # fastmath lets LLVM reorder the float32 dot products: every partial sum is an integer of
    # at most 2^24 in magnitude, so any order gives the exact result.
    _gemm_nest = numba.njit(cache=True, fastmath=True)(_gemm_nest_py)
    _kernel = numba.njit(cache=True, nogil=True, fastmath=True)(_run_stretch)
    return _kernel


class JitEngine:
    """Runs execution orders for one configuration with the compiled loop.

    Raises
    ------
    ImportError
        If numba is not installed.
    """

    def __init__(self, env: Environment):
        self.kernel = _compile()
        lay = isa.layout(env)
        uf = {f.name: f for f in lay.uop}
        narrow_ok = env.INP_WIDTH == 8 and env.WGT_WIDTH == 8
        self.cfg = np.array([
            env.BATCH, env.BLOCK_IN, env.BLOCK_OUT,
            env.INP_ELEM_BYTES, env.WGT_ELEM_BYTES, env.ACC_ELEM_BYTES, env.OUT_ELEM_BYTES, env.ACC_8BIT_ELEM_BYTES,
            uf["dst_idx"].lo, uf["dst_idx"].width, uf["src_idx"].lo, uf["src_idx"].width,
            uf["wgt_idx"].lo, uf["wgt_idx"].width,
            int(narrow_ok), int(env.ACC_WIDTH == 32), BIG_GEMM_MACS,
        ], dtype=np.int64)

        fields = [lay.header[0]] + [lay.field("mem", k) for k in _MEM] + [lay.field("gemm", k) for k in _GEMM] \
            + [lay.field("alu", k) for k in _ALU]
        #: Per column of the field layout above: (word, shift, width, signed).
        self.table = np.array([(f.lo // 64, f.lo % 64, f.width, int(f.signed)) for f in fields], dtype=np.int64)

    def runs_as_written(self, words: np.ndarray, tokens: list) -> bool:
        """Whether a stream is valid and its tokens let it run in stream order (one compiled pass).

        On success ``tokens`` is updated to the counts after the run. False means "check the
        slow way": the stream may be invalid, out of order or deadlocked.
        """
        out = np.asarray(tokens, dtype=np.int64)
        if not _as_written(np.ascontiguousarray(words), self.table, out):
            return False
        tokens[:] = out.tolist()
        return True

    def run(self, sim, program, order: np.ndarray, count_numpy, runs=None) -> None:
        """Execute ``order`` on ``sim``; advance ``sim._position`` as instructions complete.

        Adds the statistics of everything executed to ``sim``'s counters, using
        ``count_numpy(stats, program, indices, env)`` for the instructions run by the NumPy path.
        ``runs`` (lengths of GEMM runs to batch, by first index) makes the loop stop at each run
        so that ``sim.step_run`` can execute it with one BLAS call.
        """
        stop = np.zeros(order.size, dtype=np.int8) if runs is None else (runs > 0).astype(np.int8)
        words = np.ascontiguousarray(program.words)
        allocs = list(sim.dram.allocations())
        starts = np.array([a for a, _ in allocs] or [0], dtype=np.int64)
        ends = np.array([a + n for a, n in allocs] or [0], dtype=np.int64)
        sp = sim.sram
        order = np.ascontiguousarray(order, dtype=np.int64)
        n = order.size
        counts = np.zeros(len(COUNT_KEYS), dtype=np.int64)
        deferred = []
        data = sim.dram.data
        try:
            while sim._position < n:
                i = int(order[sim._position])
                if stop[i] and sim.step_run(program, i, int(runs[i])):
                    deferred.extend(range(i, i + int(runs[i])))
                    sim._position += int(runs[i])
                    continue
                if not stop[i]:
                    sim._position = self.kernel(order, sim._position, words, self.table, sp.uop_dst, sp.uop_src,
                                                sp.uop_wgt, sp.inp, sp.wgt, sp.acc, data, data.view(np.int8),
                                                data.view(np.int32), starts, ends, self.cfg, counts, stop)
                    if sim._position == n:
                        break
                    i = int(order[sim._position])
                    if stop[i]:
                        continue
                # deferred (or a run that did not line up): the NumPy path executes it, or raises
                # the precise error
                sim.step(program, i)
                deferred.append(i)
                sim._position += 1
        finally:
            for key, value in zip(COUNT_KEYS, counts.tolist()):
                sim._stats[key] += value
            count_numpy(sim._stats, program, np.asarray(deferred, dtype=np.int64), sim.env)


# ---------------------------------------------------------------------------------- the loop
# Column indices in the field matrix.
_OP = 0
_M = 1      # memory fields start
_G = 11     # GEMM fields start
_A = 22     # ALU fields start


def _in_dram_py(start, end, starts, ends):
    """Whether [start, end) lies inside one live allocation."""
    if end <= start:
        return True
    k = np.searchsorted(starts, start, side="right") - 1
    return k >= 0 and end <= ends[k] and starts[k] <= start


def _field_py(words, table, i, c):
    """Field ``c`` of instruction ``i`` from the raw int64 words."""
    v = (words[i, table[c, 0]] >> table[c, 1]) & ((1 << table[c, 2]) - 1)
    if table[c, 3] and (v >> (table[c, 2] - 1)) & 1:
        v -= 1 << table[c, 2]
    return v


def _gemm_nest_py(uop_dst, uop_src, uop_wgt, inp, wgt, acc, part, bgn, end, io, ii, dfo, dfi, sfo, sfi, wfo, wfi):
    """A non-reset GEMM nest (indices already checked).

    Accumulation into ``acc`` is addition modulo 2^32, so the iterations may run in any order:
    micro-ops run outside the inner loop, and when the inner loop does not move the destination
    (``dst_factor_in == 0``) its products are summed in float32 -- in chunks whose sums stay
    below 2^24, so they are exact -- and added to the accumulator once per chunk.
    """
    nb, nj, nk = inp.shape[1], wgt.shape[1], inp.shape[2]
    chunk = max(1, 1024 // nk)  # chunk * nk products of at most 2^14 each: |sum| <= 2^24
    for o in range(io):
        for u in range(bgn, end):
            d0 = uop_dst[u] + o * dfo
            s0 = uop_src[u] + o * sfo
            w0 = uop_wgt[u] + o * wfo
            if dfi == 0:
                t0 = 0
                while t0 < ii:
                    t1 = min(ii, t0 + chunk)
                    part[:, :] = 0.0
                    for t in range(t0, t1):
                        s = s0 + t * sfi
                        w = w0 + t * wfi
                        for b in range(nb):
                            for j in range(nj):
                                tot = np.float32(0.0)
                                for k in range(nk):
                                    tot += inp[s, b, k] * wgt[w, j, k]
                                part[b, j] += tot
                    for b in range(nb):
                        for j in range(nj):
                            acc[d0, b, j] = np.int32((np.int64(acc[d0, b, j]) + np.int64(part[b, j])) & 0xFFFFFFFF)
                    t0 = t1
            else:
                for t in range(ii):
                    d = d0 + t * dfi
                    s = s0 + t * sfi
                    w = w0 + t * wfi
                    for b in range(nb):
                        for j in range(nj):
                            tot = np.float32(0.0)
                            for k in range(nk):
                                tot += inp[s, b, k] * wgt[w, j, k]
                            acc[d, b, j] = np.int32((np.int64(acc[d, b, j]) + np.int64(tot)) & 0xFFFFFFFF)


def _as_written_py(words, table, tokens):
    """One pass over the stream: valid codes and flags, a FINISH, and every pop satisfied when
    the instructions run in stream order without a channel passing 255 tokens.
    Updates ``tokens`` (l2g, g2l, s2g, g2s) in place only on success."""
    l2g, g2l, s2g, g2s = tokens[0], tokens[1], tokens[2], tokens[3]
    finish = False
    for i in range(words.shape[0]):
        op = (words[i, 0]) & 7
        pp = (words[i, 0] >> 3) & 1
        pn = (words[i, 0] >> 4) & 1
        up = (words[i, 0] >> 5) & 1
        un = (words[i, 0] >> 6) & 1
        if op > 4:
            return False
        stage = 2
        if op <= 1:
            mt = _field(words, table, i, _M)
            if mt > 5:
                return False
            if op == 1:
                stage = 3
            elif mt == 1 or mt == 2:
                stage = 1
        elif op == 4:
            if _field(words, table, i, _A + 8) > 4:
                return False
        elif op == 3:
            finish = True
        if stage == 1:
            if pp or up:
                return False
            g2l -= pn
            l2g += un
        elif stage == 2:
            l2g -= pp
            s2g -= pn
            g2l += up
            g2s += un
        else:
            if pn or un:
                return False
            g2s -= pp
            s2g += up
        if min(l2g, g2l, s2g, g2s) < 0 or max(l2g, g2l, s2g, g2s) > 255:
            return False
    if not finish:
        return False
    tokens[0], tokens[1], tokens[2], tokens[3] = l2g, g2l, s2g, g2s
    return True


def _run_stretch(order, pos, words, table, uop_dst, uop_src, uop_wgt, inp, wgt, acc, dram, dram_s8, dram_s32,
                 starts, ends, cfg, counts, stop):
    """Execute ``order[pos:]`` until an instruction must be deferred; return its position.

    ``dram``, ``dram_s8`` and ``dram_s32`` are the arena as uint8, int8 and int32. ``counts``
    accumulates the statistics of the executed instructions in the order of :data:`COUNT_KEYS`.
    The loop also stops before any instruction whose ``stop`` flag is set.
    """
    batch, blk_in, blk_out = cfg[0], cfg[1], cfg[2]
    e_inp, e_wgt, e_acc, e_out, e_acc8 = cfg[3], cfg[4], cfg[5], cfg[6], cfg[7]
    widths8, acc32, big = cfg[14], cfg[15], cfg[16]
    if acc32 == 0:
        return pos
    n = order.shape[0]
    part = np.zeros((batch, blk_out), dtype=np.float32)
    uop_depth, inp_depth, wgt_depth, acc_depth = uop_dst.shape[0], inp.shape[0], wgt.shape[0], acc.shape[0]
    while pos < n:
        i = order[pos]
        if stop[i] != 0:
            return pos
        op = _field(words, table, i, _OP)
        if op == 2 or op == 4:  # GEMM / ALU share the loop header
            is_gemm = op == 2
            base = _G + 1 if is_gemm else _A
            bgn = _field(words, table, i, base)
            end = _field(words, table, i, base + 1)
            io = _field(words, table, i, base + 2)
            ii = _field(words, table, i, base + 3)
            dfo = _field(words, table, i, base + 4)
            dfi = _field(words, table, i, base + 5)
            sfo = _field(words, table, i, base + 6)
            sfi = _field(words, table, i, base + 7)
            if end > uop_depth:
                return pos
            if end < bgn:
                end = bgn
            reset = is_gemm and _field(words, table, i, _G) != 0
            if is_gemm:
                wfo = _field(words, table, i, _G + 9)
                wfi = _field(words, table, i, _G + 10)
                if not reset and io * ii * (end - bgn) * batch * blk_in * blk_out >= big:
                    return pos
                aop, use_imm, imm = 0, 1 if reset else 0, 0
            else:
                wfo, wfi = 0, 0
                aop = _field(words, table, i, _A + 8)
                use_imm = _field(words, table, i, _A + 9)
                imm = _field(words, table, i, _A + 10)
                if aop > 4:
                    return pos
            if io > 0 and ii > 0 and end > bgn:
                # bounds of every role over the whole nest
                for u in range(bgn, end):
                    if uop_dst[u] + (io - 1) * dfo + (ii - 1) * dfi >= acc_depth:
                        return pos
                    if is_gemm and not reset:
                        if uop_src[u] + (io - 1) * sfo + (ii - 1) * sfi >= inp_depth:
                            return pos
                        if uop_wgt[u] + (io - 1) * wfo + (ii - 1) * wfi >= wgt_depth:
                            return pos
                    if not is_gemm and use_imm == 0:
                        if uop_src[u] + (io - 1) * sfo + (ii - 1) * sfi >= acc_depth:
                            return pos
            if is_gemm and not reset:
                _gemm_nest(uop_dst, uop_src, uop_wgt, inp, wgt, acc, part, bgn, end, io, ii, dfo, dfi, sfo, sfi,
                           wfo, wfi)
            else:
                for o in range(io):
                    for t in range(ii):
                        for u in range(bgn, end):
                            d = uop_dst[u] + o * dfo + t * dfi
                            if is_gemm:  # reset
                                acc[d, :, :] = 0
                                continue
                            s = uop_src[u] + o * sfo + t * sfi
                            for b in range(batch):
                                for j in range(blk_out):
                                    a = np.int64(acc[d, b, j])
                                    v = np.int64(imm) if use_imm else np.int64(acc[s, b, j])
                                    if aop == 0:
                                        r = min(a, v)
                                    elif aop == 1:
                                        r = max(a, v)
                                    elif aop == 2:
                                        r = a + v
                                    elif aop == 4:
                                        r = a * v
                                    elif v >= 0:
                                        r = a >> (v & 31)
                                    else:
                                        r = a << ((-v) & 31)
                                    acc[d, b, j] = np.int32(r & 0xFFFFFFFF)
            n_it = io * ii * (end - bgn)
            if is_gemm:
                counts[9] += 1
                if not reset:
                    counts[5] += n_it
            else:
                counts[10] += 1
                counts[6] += n_it
        elif op == 3:
            counts[11] += 1
        elif op == 0 or op == 1:
            mt = _field(words, table, i, _M)
            sram = _field(words, table, i, _M + 1)
            dbase = _field(words, table, i, _M + 2)
            ys = _field(words, table, i, _M + 3)
            xs = _field(words, table, i, _M + 4)
            stride = _field(words, table, i, _M + 5)
            yp0 = _field(words, table, i, _M + 6)
            yp1 = _field(words, table, i, _M + 7)
            xp0 = _field(words, table, i, _M + 8)
            xp1 = _field(words, table, i, _M + 9)
            if xs == 0:
                if mt > 5:
                    return pos
                counts[12] += 1
                pos += 1
                continue
            if op == 1:
                if mt != 4 or yp0 != 0 or yp1 != 0 or xp0 != 0 or xp1 != 0 or widths8 == 0:
                    return pos
                if sram + xs * ys > acc_depth:
                    return pos
                if ys > 0 and not _in_dram(dbase * e_out, (dbase + (ys - 1) * stride + xs) * e_out, starts, ends):
                    return pos
                for y in range(ys):
                    for x in range(xs):
                        row = sram + y * xs + x
                        addr = (dbase + y * stride + x) * e_out
                        for b in range(batch):
                            for j in range(blk_out):
                                dram[addr + b * blk_out + j] = np.uint8(acc[row, b, j] & 0xFF)
                counts[4] += xs * ys * e_out
                counts[8] += 1
            else:
                if mt == 4 or mt > 5:
                    return pos
                if (mt == 1 or mt == 2) and widths8 == 0:
                    return pos
                elem = 4
                depth = uop_depth
                if mt == 1:
                    elem, depth = e_wgt, wgt_depth
                elif mt == 2:
                    elem, depth = e_inp, inp_depth
                elif mt == 3:
                    elem, depth = e_acc, acc_depth
                elif mt == 5:
                    elem, depth = e_acc8, acc_depth
                w_ = xp0 + xs + xp1
                h_ = yp0 + ys + yp1
                if sram + w_ * h_ > depth:
                    return pos
                if ys > 0 and not _in_dram(dbase * elem, (dbase + (ys - 1) * stride + xs) * elem, starts, ends):
                    return pos
                counts[7] += 1
                if mt == 0:
                    counts[3] += 4 * xs * ys
                elif mt == 1:
                    counts[1] += e_wgt * xs * ys
                elif mt == 2:
                    counts[0] += e_inp * xs * ys
                else:  # ACC and ACC_8BIT both count the 32-bit footprint, like upstream
                    counts[2] += e_acc * xs * ys
                for yy in range(h_):
                    for xx in range(w_):
                        idx = sram + yy * w_ + xx
                        y = yy - yp0
                        x = xx - xp0
                        inside = y >= 0 and y < ys and x >= 0 and x < xs
                        addr = (dbase + y * stride + x) * elem
                        if mt == 0:
                            word = np.int64(0)
                            if inside:
                                word = (np.int64(dram[addr]) | (np.int64(dram[addr + 1]) << 8)
                                        | (np.int64(dram[addr + 2]) << 16) | (np.int64(dram[addr + 3]) << 24))
                            uop_dst[idx] = (word >> cfg[8]) & ((1 << cfg[9]) - 1)
                            uop_src[idx] = (word >> cfg[10]) & ((1 << cfg[11]) - 1)
                            uop_wgt[idx] = (word >> cfg[12]) & ((1 << cfg[13]) - 1)
                        elif mt == 1:
                            for j in range(blk_out):
                                for k in range(blk_in):
                                    wgt[idx, j, k] = dram_s8[addr + j * blk_in + k] if inside else 0
                        elif mt == 2:
                            for b in range(batch):
                                for k in range(blk_in):
                                    inp[idx, b, k] = dram_s8[addr + b * blk_in + k] if inside else 0
                        elif mt == 3:
                            for b in range(batch):
                                for j in range(blk_out):
                                    acc[idx, b, j] = dram_s32[(addr >> 2) + b * blk_out + j] if inside else 0
                        else:
                            for b in range(batch):
                                for j in range(blk_out):
                                    acc[idx, b, j] = dram_s8[addr + b * blk_out + j] if inside else 0
        else:
            return pos
        pos += 1
    return pos


# Pure-Python versions until _compile() replaces them with compiled ones.
_field, _in_dram, _gemm_nest, _as_written = _field_py, _in_dram_py, _gemm_nest_py, _as_written_py
