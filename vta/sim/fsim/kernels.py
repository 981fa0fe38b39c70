"""The loops of fsim's compiled engine, as plain Python that numba compiles (see :mod:`vta.sim.fsim.jit`).

Everything numba compiles for fsim lives in this module, apart from the per-instruction checks
it shares with the cycle model (:mod:`vta.sim.rules`); :func:`compile_all` compiles them into a
namespace of their own, cached on disk by the content of both files (:mod:`vta.sim.numba_cache`).
The module's names stay the plain Python functions, which give the same results (slowly).

Semantics are those of ``reference/vta-isa.md`` section 4 and the DESIGN semantics table;
the NumPy opcode functions of :mod:`vta.sim.fsim.units` are the specification and the loop
defers to them whatever it does not implement.
"""

from __future__ import annotations

import numpy as np

from ..numba_cache import compile_into
from ..rules import suspect, token_step

__all__ = ["COUNT_KEYS", "compile_all"]

#: Statistics the compiled loop counts, in the order of its ``counts`` array.
COUNT_KEYS = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes",
              "gemm_counter", "alu_counter", "insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish",
              "insn_nop")

# ---------------------------------------------------------------------------------- the loop
# Column layout of the field matrix handed to the compiled loop (jit.py builds it).
MEM_COLUMNS = ("memory_type", "sram_base", "dram_base", "y_size", "x_size", "x_stride", "y_pad_0", "y_pad_1",
        "x_pad_0", "x_pad_1")
GEMM_COLUMNS = ("reset_reg", "uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
         "src_factor_out", "src_factor_in", "wgt_factor_out", "wgt_factor_in")
ALU_COLUMNS = ("uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in", "src_factor_out",
        "src_factor_in", "alu_opcode", "use_imm", "imm")

# Column indices in the field matrix.
_OP = 0
_M = 1      # memory fields start
_G = 11     # GEMM fields start
_A = 22     # ALU fields start


def _in_dram(start, end, starts, ends):
    """Whether [start, end) lies inside one live allocation."""
    if end <= start:
        return True
    lo, hi = 0, starts.shape[0]  # the last allocation starting at or before ``start``
    while lo < hi:
        mid = (lo + hi) >> 1
        if starts[mid] <= start:
            lo = mid + 1
        else:
            hi = mid
    k = lo - 1
    return k >= 0 and end <= ends[k] and starts[k] <= start


def _field(words, table, i, c):
    """Field ``c`` of instruction ``i`` from the raw int64 words.

    ``table[c]`` is ``(word, shift, mask, sign)``: the field is ``(word >> shift) & mask``,
    sign-extended through ``sign`` (its top bit, or 0 for an unsigned field).
    """
    v = (words[i, table[c, 0]] >> table[c, 1]) & table[c, 2]
    return (v ^ table[c, 3]) - table[c, 3]


def _gemm_nest(uop_dst, uop_src, uop_wgt, inp, wgt, acc, inp_f, wgt_f, scratch, bgn, end, io, ii, dfo, dfi, sfo,
                  sfi, wfo, wfi):
    """A non-reset GEMM nest (indices already checked).

    ``inp_f`` and ``wgt_f`` are flat views of ``inp`` and ``wgt``; ``scratch`` holds float32
    arrays ``part`` (``(BATCH, BLOCK_OUT)``), ``xsum`` (``(BATCH, BLOCK_IN)``) and its flat
    view; the transposed weight blocks (``wt``, ``(WGT depth, BLOCK_IN, BLOCK_OUT)``, its flat
    view ``wt_f`` and ``wver``, the weight version each block was transposed at: see
    :func:`_wt`); then the weight sums kept for reuse (``sums``: ``_SUM_SLOTS`` transposed weight
    blocks, ``sums_f`` the same flat, ``sum_keys`` what each holds: first block, step, count,
    weight version) and ``run``, whose slot 2 is the weight version (it goes up whenever the
    loop loads weights).

    Accumulation into ``acc`` is addition modulo 2^32, so the iterations may run in any order:
    micro-ops run outermost. When the inner loop does not move the destination
    (``dst_factor_in == 0``), its products are summed in float32 -- in chunks whose sums stay
    below 2^24, so they are exact -- and added to the accumulator once per chunk; if it moves
    only one operand, that operand's rows are summed first and multiplied once
    (``sum_t x . w_t = x . sum_t w_t``, with the same bound on the sums), and that sum is
    reused for every ``i_out`` when the outer loop does not move the operand either. A weight
    sum is also kept for later GEMMs that sum the same weight blocks while the weights are
    unchanged (the conv-like stream of ``benchmarks/fsim_throughput.py`` does, group after group;
    the GEMMs of the compiled ResNet-18 layers run no faster or slower for it).
    """
    nk = inp.shape[2]
    chunk = max(1, 1024 // nk)  # chunk * nk products of at most 2^14 each: |sum| <= 2^24
    part, xsum, xsum_f, wt, wt_f, wver, sums, sums_f, sum_keys, run = scratch
    slot = 0
    nx, nw = xsum_f.shape[0], wt.shape[1] * wt.shape[2]
    for u in range(bgn, end):
        d0, s0, w0 = uop_dst[u], uop_src[u], uop_wgt[u]
        if dfi != 0 or ii == 1:
            for o in range(io):
                for t in range(ii):
                    _dot_add(inp[s0 + o * sfo + t * sfi], _wt(wgt, wt, wver, run[2], w0 + o * wfo + t * wfi),
                             acc[d0 + o * dfo + t * dfi], part)
            continue
        for t0 in range(0, ii, chunk):
            t1 = min(ii, t0 + chunk)
            for o in range(io):
                if sfi == 0:  # only the weights move in the inner loop: sum them, one product
                    if o == 0 or wfo != 0:
                        wb = w0 + o * wfo + t0 * wfi
                        slot = (wb * 7 + wfi * 3 + t1 - t0) & (_SUM_SLOTS - 1)
                        if (sum_keys[slot, 0] != wb or sum_keys[slot, 1] != wfi or sum_keys[slot, 2] != t1 - t0
                                or sum_keys[slot, 3] != run[2]):
                            kept = sums_f[slot * nw:(slot + 1) * nw]
                            kept[:] = 0.0
                            for t in range(t0, t1):
                                w = w0 + o * wfo + t * wfi
                                _wt(wgt, wt, wver, run[2], w)
                                _add_rows(kept, wt_f[w * nw:(w + 1) * nw])
                            sum_keys[slot, 0], sum_keys[slot, 1], sum_keys[slot, 2] = wb, wfi, t1 - t0
                            sum_keys[slot, 3] = run[2]
                    _dot_add(inp[s0 + o * sfo], sums[slot], acc[d0 + o * dfo], part)
                elif wfi == 0:  # only the inputs move
                    if o == 0 or sfo != 0:
                        xsum_f[:] = 0.0
                        for t in range(t0, t1):
                            x = (s0 + o * sfo + t * sfi) * nx
                            _add_rows(xsum_f, inp_f[x:x + nx])
                    _dot_add(xsum, _wt(wgt, wt, wver, run[2], w0 + o * wfo), acc[d0 + o * dfo], part)
                else:
                    part[:, :] = 0.0
                    for t in range(t0, t1):
                        _dot_sum(inp[s0 + o * sfo + t * sfi], _wt(wgt, wt, wver, run[2], w0 + o * wfo + t * wfi), part)
                    _wrap_add(acc[d0 + o * dfo], part)


def _wt(wgt, wt, wver, version, w):
    """Weight block ``w`` transposed (``(BLOCK_IN, BLOCK_OUT)``): ``wt[w]``, made from ``wgt[w]``
    unless it was made at this weight ``version`` already (``wver[w]``).

    The dot products read the weights by columns of ``wgt[w]`` so that each input lane
    multiplies a whole contiguous row of ``BLOCK_OUT`` weights (:func:`_dot_row`); a block is
    transposed once per weight version, however many GEMMs read it.
    """
    if wver[w] != version:
        src, to = wgt[w], wt[w]
        for j in range(src.shape[0]):
            for k in range(src.shape[1]):
                to[k, j] = src[j, k]
        wver[w] = version
    return wt[w]


def _add_rows(total, rows):
    """``total += rows`` for two flat float32 arrays of one length."""
    for q in range(total.shape[0]):
        total[q] += rows[q]


def _dot_row(x, wt, p):
    """``p += x @ wt`` for one input row ``x`` (``BLOCK_IN``), a transposed weight block ``wt``
    (``(BLOCK_IN, BLOCK_OUT)``) and a float32 row ``p`` (``BLOCK_OUT``).

    Each step adds four input lanes times four contiguous weight rows to ``p``: the inner loop
    over ``BLOCK_OUT`` is vector multiply-adds, and ``p`` is loaded and stored a quarter as
    often as one lane a step would (its store-to-load round trip bounds the speed). The caller
    bounds the sums so they are exact in any order.
    """
    nk, nj = wt.shape[0], wt.shape[1]
    k4 = nk - (nk & 3)
    for k in range(0, k4, 4):
        x0, x1, x2, x3 = x[k], x[k + 1], x[k + 2], x[k + 3]
        w0, w1, w2, w3 = wt[k], wt[k + 1], wt[k + 2], wt[k + 3]
        for j in range(nj):
            p[j] += (x0 * w0[j] + x1 * w1[j]) + (x2 * w2[j] + x3 * w3[j])
    for k in range(k4, nk):
        xk, wk = x[k], wt[k]
        for j in range(nj):
            p[j] += xk * wk[j]


def _dot_sum(x, wt, part):
    """``part += x @ wt`` (float32; ``wt`` a transposed weight block; the caller bounds the sums
    so they are exact)."""
    for b in range(x.shape[0]):
        _dot_row(x[b], wt, part[b])


def _wrap_add(acc_row, part):
    """``acc_row += part`` modulo 2^32 (``part`` holds exact integers)."""
    for b in range(acc_row.shape[0]):
        for j in range(acc_row.shape[1]):
            acc_row[b, j] = np.int32((np.int64(acc_row[b, j]) + np.int64(part[b, j])) & 0xFFFFFFFF)


def _dot_add(x, wt, acc_row, part):
    """``acc_row += x @ wt`` modulo 2^32 (``wt`` a transposed weight block; float32 dot products,
    each an exact integer: the caller bounds the sums).

    With ``BLOCK_OUT`` = :data:`_VECTOR_LANES` each row is one vector sum (:func:`_dot_vec`),
    else it is summed in ``part`` by :func:`_dot_row`.
    """
    nj = part.shape[1]
    for b in range(x.shape[0]):
        if nj == _VECTOR_LANES:
            _dot_vec(x[b], wt, acc_row[b])
            continue
        p = part[b]
        for j in range(nj):
            p[j] = np.float32(0.0)
        _dot_row(x[b], wt, p)
        for j in range(nj):
            acc_row[b, j] = np.int32((np.int64(acc_row[b, j]) + np.int64(p[j])) & 0xFFFFFFFF)


#: The ``BLOCK_OUT`` whose dot products :func:`_dot_vec` sums in one vector register (the
#: default configuration's: LLVM's vectoriser, working in steps of two full vectors for loops of
#: unknown length, leaves a 16-lane loop to its scalar remainder).
_VECTOR_LANES = 16


def _dot_vec(x, wt, acc):
    """``acc += x @ wt`` modulo 2^32 for one input row ``x`` (float32, ``BLOCK_IN``), a transposed
    weight block ``wt`` (``(BLOCK_IN, 16)``) and an int32 accumulator row ``acc`` (16 lanes); the
    sums are exact integers (the caller bounds them).

    Plain Python here; :func:`compile_all` puts :func:`_dot_vec_intrinsic` in its place, which
    keeps the 16 sums in one vector register.
    """
    for j in range(acc.shape[0]):
        tot = np.float32(0.0)
        for k in range(x.shape[0]):
            tot += x[k] * wt[k, j]
        acc[j] = np.int32((np.int64(acc[j]) + np.int64(tot)) & 0xFFFFFFFF)


def _dot_vec_intrinsic():
    """A numba intrinsic ``dot_vec(x, wt, acc)``: :func:`_dot_vec` as explicit LLVM vector code.

    The 16 sums live in one ``<16 x float>`` value: per input lane one broadcast and one
    multiply-add of a whole weight row, then one conversion to int32 and one wrapping vector add
    to the accumulator row. Every product and partial sum is an integer below 2^24 in
    magnitude, so the float32 arithmetic is exact and the conversion too. The three arrays must
    be C-contiguous (numba refuses to compile a call with others).
    """
    from llvmlite import ir
    from numba.core import cgutils
    from numba.core import types as nbtypes
    from numba.extending import intrinsic

    lanes = _VECTOR_LANES

    @intrinsic
    def dot_vec(typingctx, x, wt, acc):
        if not all(isinstance(a, nbtypes.Array) and a.layout == "C" for a in (x, wt, acc)):
            return None
        sig = nbtypes.void(x, wt, acc)

        def codegen(context, builder, sig, args):
            xa, wa, aa = (context.make_array(t)(context, builder, v) for t, v in zip(sig.args, args, strict=True))
            f32, i32 = ir.FloatType(), ir.IntType(32)
            fvec, ivec = ir.VectorType(f32, lanes), ir.VectorType(i32, lanes)
            nk = builder.extract_value(xa.shape, 0)
            total = cgutils.alloca_once_value(builder, ir.Constant(fvec, None))
            rows = builder.bitcast(wa.data, fvec.as_pointer())
            zeros = ir.Constant(ir.VectorType(i32, lanes), None)
            with cgutils.for_range(builder, nk) as loop:
                xk = builder.load(builder.gep(xa.data, [loop.index]))
                splat = builder.shuffle_vector(builder.insert_element(ir.Constant(fvec, ir.Undefined), xk,
                                                                      ir.Constant(i32, 0)),
                                               ir.Constant(fvec, ir.Undefined), zeros)
                row = builder.load(builder.gep(rows, [loop.index]), align=4)
                builder.store(builder.fadd(builder.load(total), builder.fmul(splat, row, flags=("contract",)),
                                           flags=("contract",)), total)
            accp = builder.bitcast(aa.data, ivec.as_pointer())
            old = builder.load(accp, align=4)
            builder.store(builder.add(old, builder.fptosi(builder.load(total), ivec)), accp, align=4)
            return context.get_dummy_value()

        return sig, codegen

    return dot_vec


def _offsets(ext, f1, f2, role, want):
    """Index offsets of the loop levels whose ``role`` is ``want``, for two operands.

    Returns two int64 arrays over every combination of those levels' iterations (the first
    level varies slowest): ``sum_l i_l * f1[l]`` and ``sum_l i_l * f2[l]``.
    """
    n = 1
    for lv in range(ext.shape[0]):
        if role[lv] == want:
            n *= ext[lv]
    a = np.zeros(n, dtype=np.int64)
    b = np.zeros(n, dtype=np.int64)
    inner = 1
    for lv in range(ext.shape[0] - 1, -1, -1):
        if role[lv] != want:
            continue
        for q in range(n):
            digit = (q // inner) % ext[lv]
            a[q] += digit * f1[lv]
            b[q] += digit * f2[lv]
        inner *= ext[lv]
    return a, b


def _mm_blas(a, ao, lda, b, bo, ldb, m, n, k, add, out):
    """``out[c*m + r] = sum_t a[ao + r*lda + t] * b[bo + c*ldb + t]`` (``r < m``, ``c < n``,
    ``t < k``; plus ``out[c*m + r]`` when ``add``) for flat float32 arrays, by one BLAS call
    (SGEMM through the helper numba's ``np.dot`` uses, which calls SciPy's BLAS; see
    :func:`_sgemm_intrinsic`): the operands are read where they lie, rows ``lda`` and ``ldb``
    apart, without a copy."""
    return _sgemm(m, n, k, a, ao, lda, b, bo, ldb, np.float32(1.0 if add else 0.0), out)


def _mm_loops(a, ao, lda, b, bo, ldb, m, n, k, add, out):
    """:func:`_mm_blas` by plain loops (when SciPy, hence BLAS, is missing)."""
    for c in range(n):
        for r in range(m):
            tot = out[c * m + r] if add else np.float32(0.0)
            for t in range(k):
                tot += a[ao + r * lda + t] * b[bo + c * ldb + t]
            out[c * m + r] = tot
    return 0


#: The product of :func:`_gemm_batch` (:func:`compile_all` picks the BLAS one when it can).
_mm = _mm_loops


def _sgemm(m, n, k, a, ao, lda, b, bo, ldb, beta, out):
    """The SGEMM of :func:`_sgemm_intrinsic` in plain Python (by loops; :func:`compile_all`
    puts the intrinsic in its place in the compiled namespace)."""
    return _mm_loops(a, ao, lda, b, bo, ldb, m, n, k, beta != 0, out)


def _sgemm_intrinsic():
    """A numba intrinsic ``sgemm(m, n, k, a, ao, lda, b, bo, ldb, beta, out)``: column-major
    ``out (m x n) = A.T @ B + beta * out`` for float32 data ``A`` (k x m, leading dimension
    ``lda``, from ``a[ao]``) and ``B`` (k x n, ``ldb``, from ``b[bo]``); returns BLAS's status.

    It calls ``numba_xxgemm``, the C helper through which numba's own ``np.dot`` reaches
    SciPy's BLAS, so the compiled code stays cacheable; unlike ``np.dot`` it takes operands
    with any leading dimension (``np.dot`` copies every non-contiguous one first).
    """
    from llvmlite import ir
    from numba.core import cgutils
    from numba.core import types as nbtypes
    from numba.extending import intrinsic

    @intrinsic
    def sgemm(typingctx, m, n, k, a, ao, lda, b, bo, ldb, beta, out):
        sig = nbtypes.int32(m, n, k, a, ao, lda, b, bo, ldb, nbtypes.float32, out)

        def codegen(context, builder, sig, args):
            m, n, k, a, ao, lda, b, bo, ldb, beta_value, out = args
            intp = context.get_value_type(nbtypes.intp)
            char, void_p, f32 = ir.IntType(8), ir.IntType(8).as_pointer(), ir.FloatType()
            fnty = ir.FunctionType(ir.IntType(32), [char, char, char, intp, intp, intp, void_p, void_p, intp,
                                                    void_p, intp, void_p, void_p, intp])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_xxgemm")

            def at(k_arg, value, offset):
                data = context.make_array(sig.args[k_arg])(context, builder, value).data
                ptr = data if offset is None else builder.gep(data, [context.cast(builder, offset, sig.args[k_arg + 1],
                                                                                  nbtypes.intp)])
                return builder.bitcast(ptr, void_p)

            def wide(k_arg, value):
                return context.cast(builder, value, sig.args[k_arg], nbtypes.intp)

            alpha = cgutils.alloca_once_value(builder, ir.Constant(f32, 1.0))
            beta = cgutils.alloca_once_value(builder, beta_value)
            return builder.call(fn, (ir.Constant(char, ord("s")), ir.Constant(char, ord("t")),
                                     ir.Constant(char, ord("n")), wide(0, m), wide(1, n), wide(2, k),
                                     builder.bitcast(alpha, void_p), at(3, a, ao), wide(5, lda), at(6, b, bo),
                                     wide(8, ldb), builder.bitcast(beta, void_p), at(10, out, None), wide(0, m)))

        return sig, codegen

    return sgemm


def _operand(buf_f, base, rows, r0, r1, nsub, red, k0, k1, nk, scratch):
    """One operand of a batched product: rows ``r0..r1`` (each ``nsub`` sub-rows: BATCH for the
    inputs, BLOCK_OUT for the weights) by reduction steps ``k0..k1`` (each ``nk`` lanes) of the
    buffer ``buf_f`` (flat), row ``(m, s)`` and step ``q`` being element ``base + rows[m] + red[q]``,
    sub-row ``s``. Returns ``(array, offset, leading dimension)``: the buffer itself when those
    rows are evenly spaced and each one contiguous (no copy), else ``scratch`` filled with them."""
    n_k = (k1 - k0) * nk
    direct = nsub == 1
    for q in range(k0 + 1, k1):
        if red[q] != red[k0] + (q - k0):
            direct = False
    step = rows[r0 + 1] - rows[r0] if r1 - r0 > 1 else k1 - k0
    for m in range(r0 + 1, r1):
        if rows[m] != rows[r0] + (m - r0) * step:
            direct = False
    if direct and step >= k1 - k0:
        return buf_f, (base + rows[r0] + red[k0]) * nk, step * nk
    per = nsub * nk
    for m in range(r0, r1):  # each element's sub-rows are read in one sweep
        for q in range(k0, k1):
            frm = np.uint64((base + rows[m] + red[q]) * per)  # (unsigned indices: plain vector copies)
            to = np.uint64((m - r0) * nsub * n_k + (q - k0) * nk)
            for _ in range(nsub):
                for t in range(np.uint64(nk)):
                    scratch[to + t] = buf_f[frm + t]
                frm += np.uint64(nk)
                to += np.uint64(n_k)
    return scratch, 0, n_k


#: Loop-level roles of a batched GEMM: what each level moves.
_ROW, _COL, _RED, _REP = 0, 1, 2, 3
#: Weight sums a compiled loop keeps for reuse (a power of two; see :func:`_gemm_nest`).
_SUM_SLOTS = 16
#: Rows / columns of one BLAS product at most (bounds the scratch matrices).
_BLOCK_ROWS = 2048
#: Reduction lanes of one BLAS call at most: longer exact chunks are split into calls that add
#: to the product, so a gathered operand stays small enough for the core's cache.
_CALL_LANES = 256


def _gemm_batch(uop_dst, uop_src, uop_wgt, inp, wgt, acc, bgns, io, ii, dfo, dfi, sfo, sfi, wfo, wfi, mats):
    """Run consecutive one-micro-op GEMMs with equal loops as matrix products, if they line up.

    ``bgns`` holds the ``uop_bgn`` of each instruction. The run is one loop nest of three levels
    (instruction, ``i_out``, ``i_in``) when the micro-op indices step by a constant from one
    instruction to the next. Each level that moves dst and src is a row of the product, dst and wgt
    a column, src and wgt a reduction; a level moving nothing repeats the contribution. With 16-lane
    blocks on a CPU with AVX-512 VNNI (:data:`_INT8_DOTS`) the product is made by
    :func:`_int8_product`. Otherwise the operands (float32 scratchpads holding int8 values) are
    multiplied with BLAS in reduction chunks of at most ``2^24 / 2^14`` products, so every sum is
    exact; the int32 accumulation wraps modulo 2^32. GEMMs only add to the accumulator, so the
    result is the sequential one whatever the order. An operand whose rows lie evenly spaced in its
    scratchpad, each row's reduction contiguous (the inputs of a blocked product with BATCH 1), is
    read in place; others are gathered first (:func:`_operand`), in pieces of at most
    :data:`_CALL_LANES` reduction lanes that the calls add up. The product is laid out by rows when
    it has at least as many rows as columns, else by columns (BLAS is faster so), and ``mats`` is
    the float32 scratch for the gathered operands and the product (a larger one is allocated when it
    is too small).

    Returns 1 when done by float32 products, 2 when by the int8 dot products of
    :func:`_int8_product`; 0, having changed nothing, when the run does not line up, a level has
    another shape (e.g. moves all three operands), or an index would leave its buffer (the
    caller then executes the instructions one by one).
    """
    n_run = bgns.shape[0]
    uop_depth = uop_dst.shape[0]
    for q in range(n_run):
        if bgns[q] >= uop_depth:
            return 0
    u0 = bgns[0]
    d0, s0, w0 = uop_dst[u0], uop_src[u0], uop_wgt[u0]
    sd, ss, sw = 0, 0, 0
    if n_run > 1:
        u1 = bgns[1]
        sd, ss, sw = uop_dst[u1] - d0, uop_src[u1] - s0, uop_wgt[u1] - w0
    if sd < 0 or ss < 0 or sw < 0:
        return 0
    for q in range(n_run):
        u = bgns[q]
        if uop_dst[u] != d0 + q * sd or uop_src[u] != s0 + q * ss or uop_wgt[u] != w0 + q * sw:
            return 0
    ext = np.array((n_run, io, ii), dtype=np.int64)
    fd = np.array((sd, dfo, dfi), dtype=np.int64)
    fs = np.array((ss, sfo, sfi), dtype=np.int64)
    fw = np.array((sw, wfo, wfi), dtype=np.int64)
    role = np.full(3, _REP, dtype=np.int64)
    mult = np.int64(1)
    top_d, top_s, top_w = d0, s0, w0
    for lv in range(3):
        if ext[lv] <= 0:
            return 0
        if ext[lv] == 1:
            continue
        if fd[lv] < 0 or fs[lv] < 0 or fw[lv] < 0:
            return 0
        top_d += (ext[lv] - 1) * fd[lv]
        top_s += (ext[lv] - 1) * fs[lv]
        top_w += (ext[lv] - 1) * fw[lv]
        md, ms, mw = fd[lv] != 0, fs[lv] != 0, fw[lv] != 0
        if md and ms and not mw:
            role[lv] = _ROW
        elif md and mw and not ms:
            role[lv] = _COL
        elif ms and mw and not md:
            role[lv] = _RED
        elif not md and not ms and not mw:
            mult *= ext[lv]
        else:
            return 0
    if top_d >= acc.shape[0] or top_s >= inp.shape[0] or top_w >= wgt.shape[0]:
        return 0
    mult &= 0xFFFFFFFF
    row_d, row_s = _offsets(ext, fd, fs, role, _ROW)
    col_d, col_w = _offsets(ext, fd, fw, role, _COL)
    red_s, red_w = _offsets(ext, fs, fw, role, _RED)
    nb, nj, nk = inp.shape[1], wgt.shape[1], inp.shape[2]
    if _INT8_DOTS and nj == 16 and nk == 16:
        _int8_product(inp.reshape(inp.size), wgt.reshape(wgt.size), acc.reshape(acc.size), d0, s0, w0, row_d, row_s,
                      col_d, col_w, red_s, red_w, nb, mult, mats)
        return 2
    chunk = max(1, 1024 // nk)  # reduction steps per product: chunk * nk * 2^14 <= 2^24
    n_rows, n_cols, n_red = row_d.shape[0], col_d.shape[0], red_s.shape[0]
    block_r = max(1, _BLOCK_ROWS // nb)
    block_c = max(1, _BLOCK_ROWS // nj)
    sub = max(1, _CALL_LANES // nk)  # reduction steps per BLAS call
    lanes = min(n_red, chunk, sub) * nk
    most_r, most_c = min(n_rows, block_r) * nb, min(n_cols, block_c) * nj
    need = (most_r + most_c) * lanes + most_r * most_c
    if mats.shape[0] < need:
        mats = np.empty(need, dtype=np.float32)
    x_buf = mats[:most_r * lanes]  # operands that must be gathered, and the product
    w_buf = mats[most_r * lanes:(most_r + most_c) * lanes]
    prod = mats[(most_r + most_c) * lanes:need]
    inp_f, wgt_f = inp.reshape(inp.size), wgt.reshape(wgt.size)
    acc_f = acc.reshape(acc.size)
    for r0 in range(0, n_rows, block_r):
        r1 = min(n_rows, r0 + block_r)
        nm = (r1 - r0) * nb
        for c0 in range(0, n_cols, block_c):
            c1 = min(n_cols, c0 + block_c)
            nn = (c1 - c0) * nj
            by_rows = nm >= nn  # prod as [row][column], else [column][row]: BLAS runs faster so
            for k0 in range(0, n_red, chunk):
                k1 = min(n_red, k0 + chunk)
                for h0 in range(k0, k1, sub):  # one exact chunk in calls of at most sub steps
                    h1 = min(k1, h0 + sub)
                    x, xo, ldx = _operand(inp_f, s0, row_s, r0, r1, nb, red_s, h0, h1, nk, x_buf)
                    w, wo, ldw = _operand(wgt_f, w0, col_w, c0, c1, nj, red_w, h0, h1, nk, w_buf)
                    if by_rows:
                        status = _mm(w, wo, ldw, x, xo, ldx, nn, nm, (h1 - h0) * nk, h0 > k0, prod)
                    else:
                        status = _mm(x, xo, ldx, w, wo, ldw, nm, nn, (h1 - h0) * nk, h0 > k0, prod)
                    if status != 0:
                        raise RuntimeError("fsim: the BLAS matrix product (SGEMM) of a run of GEMMs failed")
                for m in range(r0, r1):
                    for c in range(c0, c1):
                        d = (d0 + row_d[m] + col_d[c]) * nb * nj
                        for b in range(nb):
                            if by_rows:
                                p = ((m - r0) * nb + b) * nn + (c - c0) * nj
                                _add_wrapped(acc_f, d + b * nj, prod, p, 1, nj, mult)
                            else:
                                p = (c - c0) * nj * nm + (m - r0) * nb + b
                                _add_wrapped(acc_f, d + b * nj, prod, p, nm, nj, mult)
    return 1


#: Whether :func:`_gemm_batch` multiplies with the int8 dot products of :func:`_int8_product` (set
#: in the compiled namespace by :func:`compile_all` when the CPU has them; the plain Python
#: functions of this module always take the float32 path).
_INT8_DOTS = False
#: Rows and 16-column groups of one tile of :func:`_int8_tile` (8 x 2 vector accumulators).
_TILE_ROWS, _TILE_GROUPS = 8, 2
#: Reduction lanes of one pass of :func:`_int8_product` at most (bounds its packed operands).
_INT8_LANES = 4096


def _int8_product(inp_f, wgt_f, acc_f, d0, s0, w0, row_d, row_s, col_d, col_w, red_s, red_w, nb, mult, mats):
    """The product of a lined-up run of GEMMs (:func:`_gemm_batch`'s rows, columns and reduction
    steps) by int8 dot products, for BLOCK_IN = BLOCK_OUT = 16; added to the accumulator
    modulo 2^32 (times ``mult``).

    Every operand is an integer of at most 8 bits (the scratchpads hold them as float32). The
    inputs are packed as signed bytes, row by row (:func:`_pack_inputs`, which also sums each
    row), the weights as unsigned bytes ``w + 128`` in the order the dot products read them
    (:func:`_pack_weights`); :func:`_int8_tile` sums ``x * (w + 128)`` in int32 lanes, so the
    product is that minus ``128 * sum(x)`` of the row. Integer sums wrap modulo 2^32 like the
    accumulator, so the result is exact for any reduction length, with no chunks. Rows and
    column groups are padded to whole tiles (zero inputs, zero weights); the operands and the
    product live in ``mats`` (float32 scratch, viewed as bytes and int32; a larger array is
    allocated when it is too small).
    """
    n_rows, n_cols, n_red = row_d.shape[0], col_d.shape[0], red_s.shape[0]
    block_r = max(1, _BLOCK_ROWS // nb)
    block_c = max(1, _BLOCK_ROWS // 16)
    steps = _INT8_LANES // 16
    most_r = ((min(n_rows, block_r) * nb + _TILE_ROWS - 1) // _TILE_ROWS) * _TILE_ROWS
    most_g = ((min(n_cols, block_c) + _TILE_GROUPS - 1) // _TILE_GROUPS) * _TILE_GROUPS
    lanes = min(n_red, steps) * 16
    # bytes: the packed inputs, then the packed weights; then int32: the product, the row sums
    x_bytes, w_bytes = most_r * lanes, most_g * 16 * lanes
    at_prod = (x_bytes + w_bytes + 3) // 4
    need = at_prod + most_r * most_g * 16 + most_r
    if mats.shape[0] < need:
        mats = np.empty(need, dtype=np.float32)
    m8, m32 = mats.view(np.uint8), mats.view(np.int32)
    for r0 in range(0, n_rows, block_r):
        r1 = min(n_rows, r0 + block_r)
        mp = (((r1 - r0) * nb + _TILE_ROWS - 1) // _TILE_ROWS) * _TILE_ROWS
        for c0 in range(0, n_cols, block_c):
            c1 = min(n_cols, c0 + block_c)
            gp = ((c1 - c0 + _TILE_GROUPS - 1) // _TILE_GROUPS) * _TILE_GROUPS
            npad = gp * 16
            prod = m32[at_prod:at_prod + mp * npad]
            sums = m32[at_prod + mp * npad:at_prod + mp * npad + mp]
            prod[:] = 0
            sums[:] = 0
            for k0 in range(0, n_red, steps):
                k1 = min(n_red, k0 + steps)
                kl = (k1 - k0) * 16
                _pack_inputs(inp_f, s0, row_s, r0, r1, nb, red_s, k0, k1, m8, 0, mp, sums)
                _pack_weights(wgt_f, w0, col_w, c0, c1, red_w, k0, k1, m8, x_bytes, gp)
                for t0 in range(0, mp, _TILE_ROWS):
                    for g0 in range(0, gp, _TILE_GROUPS):
                        _int8_tile(m8, x_bytes + g0 * 16 * kl, 16 * kl, m8, t0 * kl, kl, kl // 4, prod,
                                   t0 * npad + g0 * 16, npad)
            for m in range(r0, r1):
                for c in range(c0, c1):
                    d = (d0 + row_d[m] + col_d[c]) * nb * 16
                    for b in range(nb):
                        row = (m - r0) * nb + b
                        fix = np.int64(sums[row]) * 128
                        at, p = d + b * 16, row * npad + (c - c0) * 16
                        for j in range(16):  # (the difference wrapped to int32 first: times mult it fits int64)
                            v = np.int64(np.int32((np.int64(prod[p + j]) - fix) & 0xFFFFFFFF)) * mult
                            acc_f[at + j] = np.int32((np.int64(acc_f[at + j]) + v) & 0xFFFFFFFF)


def _pack_inputs(inp_f, s0, row_s, r0, r1, nb, red_s, k0, k1, m8, at, mp, sums):
    """Rows ``r0..r1`` (each ``nb`` sub-rows) by reduction steps ``k0..k1`` of the inputs as signed
    bytes (two's complement) in ``m8`` from ``at``, ``16 * (k1 - k0)`` bytes a row, ``mp`` rows (the
    rows past the last are zeros); ``sums[row] +=`` the sum of the row's values (modulo 2^32)."""
    kl = (k1 - k0) * 16
    for m in range(r0, r1):
        for b in range(nb):
            row = (m - r0) * nb + b
            tot = _pack_row(inp_f, (s0 + row_s[m]) * nb + b, nb, red_s, k0, k1, m8, at + row * kl)
            sums[row] = np.int32((np.int64(sums[row]) + tot) & 0xFFFFFFFF)
    m8[at + (r1 - r0) * nb * kl:at + mp * kl] = 0


def _pack_row(inp_f, base, nb, red_s, k0, k1, m8, to):
    """One row of :func:`_pack_inputs`: for each reduction step ``q`` of ``k0..k1``, the 16 lanes
    ``inp_f[(base + red_s[q] * nb) * 16:][:16]`` as signed bytes at ``m8[to + (q - k0) * 16:]``;
    returns the sum of the values.

    Plain Python here; :func:`compile_all` puts :func:`_pack_row_intrinsic` in its place.
    """
    tot = 0
    for q in range(k0, k1):
        frm = (base + red_s[q] * nb) * 16
        for t in range(16):
            v = np.int64(inp_f[frm + t])
            tot += v
            m8[to + (q - k0) * 16 + t] = np.uint8(v & 0xFF)
    return tot


def _pack_row_intrinsic():
    """A numba intrinsic ``pack_row(inp_f, base, nb, red_s, k0, k1, m8, to)``: :func:`_pack_row` with
    one vector conversion of 16 floats to int32 lanes per step, summed in a vector and stored
    truncated to bytes."""
    from llvmlite import ir
    from numba.core import cgutils
    from numba.core import types as nbtypes
    from numba.extending import intrinsic

    @intrinsic
    def pack_row(typingctx, inp_f, base, nb, red_s, k0, k1, m8, to):
        sig = nbtypes.int64(inp_f, base, nb, red_s, k0, k1, m8, to)

        def codegen(context, builder, sig, args):
            f32, i8, i32, i64 = ir.FloatType(), ir.IntType(8), ir.IntType(32), ir.IntType(64)
            vf, vi, vb = ir.VectorType(f32, 16), ir.VectorType(i32, 16), ir.VectorType(i8, 16)

            def wide(k):
                return context.cast(builder, args[k], sig.args[k], nbtypes.int64)

            def data(k):
                return context.make_array(sig.args[k])(context, builder, args[k]).data

            src, reds = data(0), builder.bitcast(data(3), i64.as_pointer())
            dst = builder.gep(data(6), [wide(7)])
            base_, nb_, k0_ = wide(1), wide(2), wide(4)
            total = cgutils.alloca_once_value(builder, ir.Constant(vi, None))
            with cgutils.for_range(builder, builder.sub(wide(5), k0_)) as loop:
                q = loop.index
                red = builder.load(builder.gep(reds, [builder.add(k0_, q)]))
                frm = builder.mul(builder.add(base_, builder.mul(red, nb_)), ir.Constant(i64, 16))
                lanes = builder.fptosi(builder.load(builder.bitcast(builder.gep(src, [frm]), vf.as_pointer()), align=4),
                                       vi)
                builder.store(builder.add(builder.load(total), lanes), total)
                to = builder.gep(dst, [builder.mul(q, ir.Constant(i64, 16))])
                builder.store(builder.trunc(lanes, vb), builder.bitcast(to, vb.as_pointer()), align=1)
            reduce = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i32, [vi]),
                                                    "llvm.vector.reduce.add.v16i32")
            return builder.sext(builder.call(reduce, [builder.load(total)]), i64)

        return sig, codegen

    return pack_row


def _pack_weights(wgt_f, w0, col_w, c0, c1, red_w, k0, k1, m8, at, gp):
    """Columns ``c0..c1`` (one 16 x 16 weight block per column and reduction step ``k0..k1``) as
    unsigned bytes ``w + 128`` in ``m8`` from ``at``, in the order :func:`_int8_tile` reads them:
    per column, per group of four reduction lanes, the 16 output lanes' four bytes. ``gp``
    columns in all (those past ``c1 - c0`` hold weights 0: bytes 128)."""
    kl = (k1 - k0) * 16
    for c in range(c0, c1):
        to = at + (c - c0) * 16 * kl
        for q in range(k0, k1):
            _pack_block(wgt_f, (w0 + col_w[c] + red_w[q]) * 256, m8, to)
            to += 256
    m8[at + (c1 - c0) * 16 * kl:at + gp * 16 * kl] = 128


def _pack_block(wgt_f, frm, m8, to):
    """One 16 x 16 weight block ``wgt_f[frm:frm + 256]`` (output lane ``j``, input lane ``k``) as
    256 bytes ``w + 128`` at ``m8[to]``: byte ``(k // 4) * 64 + j * 4 + k % 4``.

    Plain Python here; :func:`compile_all` puts :func:`_pack_block_intrinsic` in its place.
    """
    for j in range(16):
        for k in range(16):
            m8[to + (k >> 2) * 64 + j * 4 + (k & 3)] = np.uint8(np.int64(wgt_f[frm + j * 16 + k]) + 128)


def _int8_tile(wq, wo, ldw, xq, xo, ldx, nk4, out, oo, ldo):
    """``out[oo + r * ldo + g * 16 + j] += sum_k x[r, k] * w[g, j, k]`` (int32, wrapping) for 8 rows
    ``r`` and two groups ``g`` of 16 columns ``j``, over ``4 * nk4`` reduction lanes ``k``: ``x``
    the signed bytes ``xq[xo + r * ldx + k]``, ``w`` the unsigned bytes packed by
    :func:`_pack_weights` from ``wq[wo + g * ldw]``.

    Plain Python here; :func:`compile_all` puts :func:`_int8_tile_intrinsic` in its place.
    """
    for r in range(_TILE_ROWS):
        for g in range(_TILE_GROUPS):
            for j in range(16):
                tot = np.int64(out[oo + r * ldo + g * 16 + j])
                for k in range(4 * nk4):
                    x = np.int64(xq[xo + r * ldx + k])
                    x = x - 256 if x >= 128 else x
                    tot += x * np.int64(wq[wo + g * ldw + (k >> 2) * 64 + j * 4 + (k & 3)])
                out[oo + r * ldo + g * 16 + j] = np.int32(((tot + (1 << 31)) & 0xFFFFFFFF) - (1 << 31))


def _int8_tile_intrinsic():
    """A numba intrinsic ``int8_tile(wq, wo, ldw, xq, xo, ldx, nk4, out, oo, ldo)``: :func:`_int8_tile`
    with AVX-512 VNNI dot products (``vpdpbusd``: per int32 lane, four unsigned-by-signed byte
    products added, wrapping).

    Per step of four reduction lanes: the two groups' 64 weight bytes are loaded once, each
    row's four input bytes broadcast, and 16 dot products go to 16 vector accumulators (kept in
    registers), which are added to ``out`` at the end. Made only when the CPU has AVX-512 VNNI
    (:func:`int8_dots_available`).
    """
    from llvmlite import ir
    from numba.core import cgutils
    from numba.core import types as nbtypes
    from numba.extending import intrinsic

    rows, groups = _TILE_ROWS, _TILE_GROUPS

    @intrinsic
    def int8_tile(typingctx, wq, wo, ldw, xq, xo, ldx, nk4, out, oo, ldo):
        sig = nbtypes.void(wq, wo, ldw, xq, xo, ldx, nk4, out, oo, ldo)

        def codegen(context, builder, sig, args):
            i8, i32 = ir.IntType(8), ir.IntType(32)
            vec = ir.VectorType(i32, 16)
            dot = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [vec, vec, vec]),
                                                 "llvm.x86.avx512.vpdpbusd.512")

            def wide(k):
                return context.cast(builder, args[k], sig.args[k], nbtypes.intp)

            def base(k):
                data = context.make_array(sig.args[k])(context, builder, args[k]).data
                return builder.gep(data, [wide(k + 1)])

            def const(v):
                return ir.Constant(ldw_.type, v)

            pw, px, po = builder.bitcast(base(0), i8.as_pointer()), builder.bitcast(base(3), i8.as_pointer()), base(7)
            ldw_, ldx_, ldo_ = wide(2), wide(5), wide(9)
            outs = [builder.bitcast(builder.gep(po, [builder.add(builder.mul(const(r), ldo_), const(16 * g))]),
                                    vec.as_pointer()) for r in range(rows) for g in range(groups)]
            total = [cgutils.alloca_once_value(builder, builder.load(p, align=4)) for p in outs]
            with cgutils.for_range(builder, wide(6)) as loop:
                k = loop.index
                ws = [builder.load(builder.bitcast(builder.gep(pw, [builder.add(builder.mul(const(g), ldw_),
                                                                                builder.mul(k, const(64)))]),
                                                   vec.as_pointer()), align=1) for g in range(groups)]
                for r in range(rows):
                    p = builder.gep(px, [builder.add(builder.mul(const(r), ldx_), builder.mul(k, const(4)))])
                    x = builder.load(builder.bitcast(p, i32.as_pointer()), align=1)
                    splat = builder.shuffle_vector(builder.insert_element(ir.Constant(vec, ir.Undefined), x,
                                                                          ir.Constant(i32, 0)),
                                                   ir.Constant(vec, ir.Undefined), ir.Constant(vec, None))
                    for g in range(groups):
                        slot = total[r * groups + g]
                        builder.store(builder.call(dot, [builder.load(slot), ws[g], splat]), slot)
            for p, slot in zip(outs, total, strict=True):
                builder.store(builder.load(slot), p, align=4)
            return context.get_dummy_value()

        return sig, codegen

    return int8_tile


def _pack_block_intrinsic():
    """A numba intrinsic ``pack_block(wgt_f, frm, m8, to)``: :func:`_pack_block` as one vector
    conversion of the 256 floats to bytes, a flip of the top bit (``+ 128``) and one byte
    shuffle."""
    from llvmlite import ir
    from numba.core import types as nbtypes
    from numba.extending import intrinsic

    # output byte (k // 4) * 64 + j * 4 + k % 4 comes from input lane j * 16 + k
    order = [j * 16 + k4 * 4 + t for k4 in range(4) for j in range(16) for t in range(4)]

    @intrinsic
    def pack_block(typingctx, wgt_f, frm, m8, to):
        sig = nbtypes.void(wgt_f, frm, m8, to)

        def codegen(context, builder, sig, args):
            f32, i8, i32 = ir.FloatType(), ir.IntType(8), ir.IntType(32)

            def at(k):
                data = context.make_array(sig.args[k])(context, builder, args[k]).data
                return builder.gep(data, [context.cast(builder, args[k + 1], sig.args[k + 1], nbtypes.intp)])

            floats = builder.load(builder.bitcast(at(0), ir.VectorType(f32, 256).as_pointer()), align=4)
            as_bytes = builder.xor(builder.fptosi(floats, ir.VectorType(i8, 256)),
                                   ir.Constant(ir.VectorType(i8, 256), [ir.Constant(i8, 0x80)] * 256))
            packed = builder.shuffle_vector(as_bytes, ir.Constant(ir.VectorType(i8, 256), ir.Undefined),
                                            ir.Constant(ir.VectorType(i32, 256), [ir.Constant(i32, q) for q in order]))
            builder.store(packed, builder.bitcast(at(2), ir.VectorType(i8, 256).as_pointer()), align=1)
            return context.get_dummy_value()

        return sig, codegen

    return pack_block


def int8_dots_available() -> bool:
    """Whether numba compiles for a CPU with AVX-512 VNNI and BW (the int8 dot products of
    :func:`_int8_product`): the host CPU, unless ``NUMBA_CPU_NAME`` or ``NUMBA_CPU_FEATURES``
    name another."""
    import numba
    from llvmlite import binding

    if numba.config.CPU_NAME is not None or numba.config.CPU_FEATURES is not None:
        return False
    features = binding.get_host_cpu_features()
    return bool(features.get("avx512vnni")) and bool(features.get("avx512bw"))


def _add_wrapped(acc_f, at, prod, p, step, n, mult):
    """``acc_f[at + j] += prod[p + j*step] * mult`` modulo 2^32 for ``j < n`` (``prod`` holds
    exact integers)."""
    at, p = np.uint64(at), np.uint64(p)  # (unsigned indices: no wrap-around test, plain vector code)
    if step == 1 and mult == 1:
        for j in range(np.uint64(n)):
            acc_f[at + j] = np.int32((np.int64(acc_f[at + j]) + np.int64(prod[p + j])) & 0xFFFFFFFF)
    else:
        for j in range(np.uint64(n)):
            v = np.int64(prod[p + j * np.uint64(step)]) * mult
            acc_f[at + j] = np.int32((np.int64(acc_f[at + j]) + v) & 0xFFFFFFFF)


def _copy(to, frm):
    """``to[:] = frm`` element by element (casting), for two views of equal length."""
    for q in range(to.shape[0]):
        to[q] = frm[q]


def _zero(mt, inp_f, wgt_f, acc_f, lo, hi):
    """Zero lanes ``lo..hi`` of the flat buffer a LOAD of memory type ``mt`` writes."""
    if mt == 1:
        wgt_f[lo:hi] = 0.0
    elif mt == 2:
        inp_f[lo:hi] = 0.0
    else:
        acc_f[lo:hi] = 0


def _same_gemm(words, table, i, k):
    """Whether instruction ``k`` is a non-reset one-micro-op GEMM with the loops of GEMM ``i``."""
    if _field(words, table, k, _OP) != 2 or _field(words, table, k, _G) != 0:
        return False
    if _field(words, table, k, _G + 2) - _field(words, table, k, _G + 1) != 1:
        return False
    for c in range(_G + 3, _G + 11):
        if _field(words, table, k, c) != _field(words, table, i, c):
            return False
    return True


def _token_step(words, table, i, alu_ok, l2g, g2l, s2g, g2s):
    """Instruction ``i`` of the in-order check of :func:`_prepass` (:func:`vta.sim.rules.token_step`
    on its fields): the token counts after it and whether it is valid there."""
    w = words[i, 0]
    return token_step(w & 7, (w >> 3) & 1, (w >> 4) & 1, (w >> 5) & 1, (w >> 6) & 1, _field(words, table, i, _M),
                      _field(words, table, i, _A + 8), alu_ok, l2g, g2l, s2g, g2s)


def _decode(words, table, i, lo, hi, f):
    """Fields ``lo..hi-1`` of instruction ``i`` into ``f[lo:hi]`` (see :func:`_field`)."""
    for c in range(lo, hi):
        f[c] = _field(words, table, i, c)


def _prepass(words, table, depths, elems, allocs, tokens, out):
    """The checks made before a run, in one pass over the stream.

    * Whether the stream is valid (codes, flags, a FINISH) and its tokens let it run in
      stream order without a channel passing 255 tokens: ``tokens`` holds (l2g, g2l, s2g,
      g2s), the mask of the ALU opcodes the configuration accepts (:func:`vta.sim.rules.alu_mask`)
      and a sixth slot; on return the sixth slot is 1 and the first four are the counts
      after the run if so, else it is 0 (and the counts mean nothing).
    * The LOAD and STORE rows (``x_size > 0``) whose fields alone put them out of range: the
      compiled form of the whole-column checks of :func:`vta.sim.stream.check_fields`
      (:func:`vta.sim.rules.suspect`: memory types, padding, the SRAM rectangle -- ``depths``
      per memory type -- and the DRAM rows -- ``elems``: bytes per element per memory type, the
      OUT slot for stores -- inside one live allocation of ``allocs``, k x 2 start and end).
      Writes their indices, in stream order, to ``out``; returns how many.
    """
    l2g, g2l, s2g, g2s = tokens[0], tokens[1], tokens[2], tokens[3]
    alu_ok = tokens[4]
    valid, finish = True, False
    found = 0
    hit = 0  # the allocation the last transfer was in
    for i in range(words.shape[0]):
        if valid:
            l2g, g2l, s2g, g2s, valid = _token_step(words, table, i, alu_ok, l2g, g2l, s2g, g2s)
            finish = finish or (words[i, 0] & 7) == 3
        bad, hit = _suspect(words, table, i, depths, elems, allocs, hit)
        if bad:
            out[found] = i
            found += 1
    tokens[0], tokens[1], tokens[2], tokens[3] = l2g, g2l, s2g, g2s
    tokens[5] = 1 if valid and finish else 0
    return found


def _suspect(words, table, i, depths, elems, allocs, hit):
    """Whether instruction ``i`` is a LOAD or STORE with ``x_size > 0`` and a valid memory type
    whose fields alone fail a check (:func:`vta.sim.rules.suspect`), and the allocation to try
    first next time."""
    op = _field(words, table, i, _OP)
    if op > 1 or _field(words, table, i, _M + 4) == 0:
        return False, hit
    mt = _field(words, table, i, _M)
    if mt > 5:  # an invalid memory type: rejected by the stream validation
        return False, hit
    return suspect(op, mt, _field(words, table, i, _M + 1), _field(words, table, i, _M + 2),
                   _field(words, table, i, _M + 3), _field(words, table, i, _M + 4), _field(words, table, i, _M + 5),
                   _field(words, table, i, _M + 6), _field(words, table, i, _M + 7), _field(words, table, i, _M + 8),
                   _field(words, table, i, _M + 9), depths, elems, allocs, hit)


def _run_stretch(order, pos, words, table, uop_dst, uop_src, uop_wgt, inp, wgt, acc, dram, dram_s8, dram_s32,
                 starts, ends, cfg, counts, mats, wt, wver):
    """Execute ``order[pos:]`` until an instruction must be deferred; return its position.

    ``dram``, ``dram_s8`` and ``dram_s32`` are the arena as uint8, int8 and int32. ``counts``
    accumulates the statistics of the executed instructions in the order of :data:`COUNT_KEYS`.
    ``counts`` has two more slots: the runs of GEMMs executed as matrix products, and those of them
    done by int8 dot products. ``mats`` is float32 scratch for the products (:func:`_gemm_batch`;
    kept by the caller between runs, so its pages are not faulted in again every run). ``wt`` (float32, ``(WGT depth,
    BLOCK_IN, BLOCK_OUT)``) and ``wver`` (int64, WGT depth) are the caller's scratch for the
    transposed weight blocks (:func:`_wt`), likewise kept between runs.
    """
    if cfg[15] == 0:  # accumulators narrower than 32 bits: all through the NumPy path
        return pos
    f = np.zeros(table.shape[0], dtype=np.int64)  # the decoded fields of the current instruction
    batch, blk_in, blk_out = cfg[0], cfg[1], cfg[2]
    xsum = np.zeros((batch, blk_in), dtype=np.float32)
    run = np.zeros(3, dtype=np.int64)  # [GEMMs before this position run one by one, length of a run to
    # batch, weight version]
    sums = np.zeros((_SUM_SLOTS, blk_in, blk_out), dtype=np.float32)
    sum_keys = np.full((_SUM_SLOTS, 4), -1, dtype=np.int64)
    wver[:] = -1  # no weight block transposed yet (the versions count from 0 in this call)
    scratch = (np.zeros((batch, blk_out), dtype=np.float32), xsum, xsum.reshape(xsum.size), wt,
               wt.reshape(wt.size), wver, sums, sums.reshape(sums.size), sum_keys, run)
    bgns = np.empty(order.shape[0], dtype=np.int64)  # micro-ops of a run of GEMMs
    # flat views of the buffers (made once: a reshape per instruction costs more than a small one)
    inp_f, wgt_f, acc_f = inp.reshape(inp.size), wgt.reshape(wgt.size), acc.reshape(acc.size)
    acc2 = acc.reshape(acc.shape[0], batch * blk_out)  # one row of lanes per accumulator element
    while True:
        pos = _stretch(order, pos, words, table, uop_dst, uop_src, uop_wgt, inp, wgt, acc, inp_f, wgt_f, acc_f, acc2,
                       dram, dram_s8, dram_s32, starts, ends, cfg, counts, f, scratch, run)
        if run[1] == 0:
            return pos
        if _batch(order, pos, run[1], words, table, uop_dst, uop_src, uop_wgt, inp, wgt, acc, counts, bgns, mats):
            pos += run[1]
        else:
            run[0] = pos + run[1]  # run them one by one (each may still raise its error)
        run[1] = 0


def _stretch(order, pos, words, table, uop_dst, uop_src, uop_wgt, inp, wgt, acc, inp_f, wgt_f, acc_f, acc2, dram,
                dram_s8, dram_s32, starts, ends, cfg, counts, f, scratch, run):
    """The loop of :func:`_run_stretch`, given its flat views and scratch arrays.

    Also stops at a run of GEMMs worth trying as BLAS products (setting ``run[1]`` to its
    length), unless it starts before ``run[0]``.

    Compiled without numba's reference counting (it allocates nothing): otherwise every array
    view and every array argument of a call costs an atomic update, more than the work of a
    small instruction.
    """
    n = order.shape[0]
    while pos < n:
        i = order[pos]
        op = _field(words, table, i, _OP)
        if op == 2:
            _decode(words, table, i, _G, _G + 11, f)
            if f[_G] == 0 and f[_G + 2] - f[_G + 1] == 1 and cfg[17] >= 0 and pos >= run[0]:
                length = _gemm_run(order, pos, words, table, f, cfg)
                if length > 0:
                    run[1] = length
                    return pos
                run[0] = pos - length
            if not _gemm(uop_dst, uop_src, uop_wgt, inp, wgt, acc, inp_f, wgt_f, acc2, f, cfg, counts, scratch):
                return pos
        elif op == 4:
            _decode(words, table, i, _A, _A + 11, f)
            if not _alu(uop_dst, uop_src, acc2, acc_f, f, cfg[20], counts):
                return pos
        elif op == 0 or op == 1:
            _decode(words, table, i, _M, _M + 10, f)
            if f[_M + 4] == 0:  # x_size 0: a no-op (of a valid memory type)
                if f[_M] > 5:
                    return pos
                counts[12] += 1
            elif op == 0:
                if not _load(uop_dst, uop_src, uop_wgt, inp_f, wgt_f, acc_f, dram, dram_s8, dram_s32, starts, ends, f,
                             cfg, counts):
                    return pos
                if f[_M] == 1:
                    run[2] += 1  # new weights: no weight sum kept so far is valid
            elif not _store(acc_f, dram, starts, ends, f, cfg, counts):
                return pos
        elif op == 3:
            counts[11] += 1
        else:
            return pos
        pos += 1
    return pos


def _gemm_run(order, pos, words, table, f, cfg):
    """How many GEMMs from ``order[pos]`` on (fields of the first decoded in ``f``) form a run that
    differs only in its micro-op, and whether it is big enough to try as BLAS products.

    Returns the run's length, negated when it is too small.
    """
    i = order[pos]
    n = order.shape[0]
    n_run = 1
    while pos + n_run < n and order[pos + n_run] == i + n_run and _same_gemm(words, table, i, i + n_run):
        n_run += 1
    if n_run * f[_G + 3] * f[_G + 4] * cfg[0] * cfg[1] * cfg[2] >= cfg[17]:
        return n_run
    return -n_run


def _batch(order, pos, n_run, words, table, uop_dst, uop_src, uop_wgt, inp, wgt, acc, counts, bgns, mats):
    """Execute the run of ``n_run`` GEMMs at ``order[pos]`` as BLAS products if their micro-ops
    line up (:func:`_gemm_batch`, with the float32 scratch ``mats``); ``bgns`` is int64 scratch
    at least ``n_run`` long."""
    i = order[pos]
    for q in range(n_run):
        bgns[q] = _field(words, table, i + q, _G + 1)
    io, ii = _field(words, table, i, _G + 3), _field(words, table, i, _G + 4)
    g = [_field(words, table, i, _G + c) for c in range(5, 11)]  # the six factors
    done = _gemm_batch(uop_dst, uop_src, uop_wgt, inp, wgt, acc, bgns[:n_run], io, ii, g[0], g[1], g[2], g[3], g[4],
                       g[5], mats)
    if done == 0:
        return False
    counts[9] += n_run
    counts[5] += n_run * io * ii
    counts[13] += 1
    if done == 2:
        counts[14] += 1
    return True


def _gemm(uop_dst, uop_src, uop_wgt, inp, wgt, acc, inp_f, wgt_f, acc2, f, cfg, counts, scratch):
    """One GEMM (fields decoded in ``f``); False (nothing done) to defer it. ``inp_f``, ``wgt_f``
    and ``acc2`` are flat views of the buffers (``acc2``: one row of lanes per element)."""
    reset = f[_G] != 0
    bgn, end, io, ii = f[_G + 1], f[_G + 2], f[_G + 3], f[_G + 4]
    dfo, dfi, sfo, sfi, wfo, wfi = f[_G + 5], f[_G + 6], f[_G + 7], f[_G + 8], f[_G + 9], f[_G + 10]
    if end > uop_dst.shape[0]:
        return False
    end = max(bgn, end)
    n_it = io * ii * (end - bgn)
    if not reset and n_it * cfg[0] * cfg[1] * cfg[2] >= cfg[16]:
        return False  # enormous: the NumPy path splits it into bounded BLAS products
    if n_it > 0:
        for u in range(bgn, end):  # bounds of every role over the whole nest
            if uop_dst[u] + (io - 1) * dfo + (ii - 1) * dfi >= acc.shape[0]:
                return False
            if not reset and (uop_src[u] + (io - 1) * sfo + (ii - 1) * sfi >= inp.shape[0]
                              or uop_wgt[u] + (io - 1) * wfo + (ii - 1) * wfi >= wgt.shape[0]):
                return False
        if reset:
            for o in range(io):
                for t in range(ii):
                    for u in range(bgn, end):
                        row = acc2[uop_dst[u] + o * dfo + t * dfi]
                        for q in range(row.shape[0]):
                            row[q] = 0
        else:
            _gemm_nest(uop_dst, uop_src, uop_wgt, inp, wgt, acc, inp_f, wgt_f, scratch, bgn, end, io, ii, dfo, dfi,
                       sfo, sfi, wfo, wfi)
            counts[5] += n_it
    counts[9] += 1
    return True


def _alu(uop_dst, uop_src, rows, lanes, f, out_bits, counts):
    """One ALU instruction (fields decoded in ``f``) on the accumulator as ``rows`` of lanes
    (``lanes``: the same as one flat array); False (nothing done) to defer it.

    Runs the nest in the order of the ISA loop, one accumulator row at a time, so a micro-op
    sees what earlier ones wrote. With an immediate, one micro-op and ``dst_factor_in == 1``,
    the rows of one ``i_out`` are consecutive and distinct (each lane is updated once, from
    its own value): they run as one stretch of lanes. ``out_bits``: OUT_WIDTH, the range REQ
    saturates to (an ALU opcode 5 reaches this only when the stream check let it through, that
    is, when the configuration has ``ALU_REQUANT``; 6, MOV, likewise only with ``ALU_MOV``).
    """
    bgn, end, io, ii = f[_A], f[_A + 1], f[_A + 2], f[_A + 3]
    dfo, dfi, sfo, sfi = f[_A + 4], f[_A + 5], f[_A + 6], f[_A + 7]
    aop, use_imm, imm = f[_A + 8], f[_A + 9], f[_A + 10]
    if end > uop_dst.shape[0] or aop > 6:
        return False
    end = max(bgn, end)
    n_it = io * ii * (end - bgn)
    depth = rows.shape[0]
    if n_it > 0:
        for u in range(bgn, end):
            if uop_dst[u] + (io - 1) * dfo + (ii - 1) * dfi >= depth:
                return False
            if use_imm == 0 and uop_src[u] + (io - 1) * sfo + (ii - 1) * sfi >= depth:
                return False
        if use_imm and end - bgn == 1 and dfi == 1:
            width = rows.shape[1]
            for o in range(io):
                lo = (uop_dst[bgn] + o * dfo) * width
                _alu_imm(aop, lanes[lo:lo + ii * width], imm, out_bits)
            counts[10] += 1
            counts[6] += n_it
            return True
        for o in range(io):
            for t in range(ii):
                for u in range(bgn, end):
                    d = uop_dst[u] + o * dfo + t * dfi
                    if use_imm:
                        _alu_imm(aop, rows[d], imm, out_bits)
                    else:
                        _alu_rows(aop, rows[d], rows[uop_src[u] + o * sfo + t * sfi], out_bits)
    counts[10] += 1
    counts[6] += n_it
    return True


def _req(x, b, out_bits):
    """REQ of one lane: ``clip((x * m + 2**(s-1)) >> s)`` to ``out_bits`` signed bits, with
    ``m = b & 0xFFFF`` and ``s = (b >> 16) & 63`` (the product is exact in int64)."""
    m = b & 0xFFFF
    sh = (b >> 16) & 63
    r = x * m
    if sh > 0:
        r = (r + (np.int64(1) << (sh - 1))) >> sh
    hi = (np.int64(1) << (out_bits - 1)) - 1
    lo = -hi - 1
    return min(max(r, lo), hi)


def _alu_imm(aop, a, imm, out_bits):
    """``a = aop(a, imm)`` lane by lane on an int32 row (each opcode its own loop, so it vectorises)."""
    if aop == 5:
        for q in range(a.shape[0]):
            a[q] = np.int32(_req(np.int64(a[q]), np.int64(imm), out_bits))
    elif aop == 6:  # MOV: the sign-extended immediate in every lane
        for q in range(a.shape[0]):
            a[q] = np.int32(imm)
    elif aop == 0:
        for q in range(a.shape[0]):
            a[q] = min(np.int64(a[q]), imm)
    elif aop == 1:
        for q in range(a.shape[0]):
            a[q] = max(np.int64(a[q]), imm)
    elif aop == 2:
        for q in range(a.shape[0]):
            a[q] = np.int32((np.int64(a[q]) + imm) & 0xFFFFFFFF)
    elif aop == 4:
        for q in range(a.shape[0]):
            a[q] = np.int32((np.int64(a[q]) * imm) & 0xFFFFFFFF)
    elif imm >= 0:
        sh = imm & 31
        for q in range(a.shape[0]):
            a[q] = np.int32(np.int64(a[q]) >> sh)
    else:
        sh = (-imm) & 31
        for q in range(a.shape[0]):
            a[q] = np.int32((np.int64(a[q]) << sh) & 0xFFFFFFFF)


def _alu_rows(aop, a, b, out_bits):
    """``a = aop(a, b)`` lane by lane on two int32 rows (``b`` may be ``a`` itself)."""
    for q in range(a.shape[0]):
        x, v = np.int64(a[q]), np.int64(b[q])
        if aop == 5:
            r = _req(x, v, out_bits)
        elif aop == 6:  # MOV
            r = v
        elif aop == 0:
            r = min(x, v)
        elif aop == 1:
            r = max(x, v)
        elif aop == 2:
            r = x + v
        elif aop == 4:
            r = x * v
        elif v >= 0:
            r = x >> (v & 31)
        else:
            r = x << ((-v) & 31)
        a[q] = np.int32(r & 0xFFFFFFFF)


def _store(acc_f, dram, starts, ends, f, cfg, counts):
    """One STORE with ``x_size > 0`` (fields decoded in ``f``; ``acc_f``: the accumulator as one
    flat array of lanes); False (nothing done) to defer it.

    Keeps the low ``OUT_WIDTH`` bits of each lane; below 8 bits, lanes are packed several to a
    byte (:func:`_pack`), as :func:`vta.sim.fsim.units.pack_low_bits` does.
    """
    mt, sram, dbase, ys, xs, stride = f[_M], f[_M + 1], f[_M + 2], f[_M + 3], f[_M + 4], f[_M + 5]
    e_out, width = cfg[6], cfg[20]
    lanes = cfg[0] * cfg[2]
    if mt != 4 or f[_M + 6] != 0 or f[_M + 7] != 0 or f[_M + 8] != 0 or f[_M + 9] != 0 or cfg[14] == 0:
        return False
    if (sram + xs * ys) * lanes > acc_f.shape[0] or e_out * 8 != lanes * width:
        return False
    if ys > 0 and not _in_dram(dbase * e_out, (dbase + (ys - 1) * stride + xs) * e_out, starts, ends):
        return False
    cnt, nbytes = xs * lanes, xs * e_out
    for y in range(ys):  # each row: xs accumulator rows, contiguous in SRAM and DRAM
        src = (sram + y * xs) * lanes
        addr = (dbase + y * stride) * e_out
        to, frm = dram[addr:addr + nbytes], acc_f[src:src + cnt]
        if width == 8:
            for q in range(cnt):
                to[q] = np.uint8(frm[q] & 0xFF)
        else:
            _pack(to, frm, width)
    counts[4] += xs * ys * e_out
    counts[8] += 1
    return True


def _pack(to, frm, width):
    """The low ``width`` bits (1, 2 or 4) of the int32 lanes ``frm`` packed into the bytes ``to``,
    ``8 // width`` lanes a byte, the first in the lowest bits."""
    per = 8 // width
    mask = (1 << width) - 1
    for q in range(to.shape[0]):
        byte = np.int64(0)
        for k in range(per):
            byte |= (np.int64(frm[q * per + k]) & mask) << (k * width)
        to[q] = np.uint8(byte)


def _unpack(to, frm, width):
    """The bytes ``frm`` split into signed ``width``-bit values (1, 2 or 4 bits; ``8 // width`` a
    byte, the first in the lowest bits) written to the float32 lanes ``to``: the inverse of
    :func:`_pack`, as :func:`vta.sim.fsim.units.unpack_signed` does."""
    per = 8 // width
    top = 64 - width
    for q in range(frm.shape[0]):
        byte = np.int64(frm[q])
        for k in range(per):
            # the value's top bit moved to bit 63, then an arithmetic shift back: sign extension
            to[q * per + k] = (byte << (top - k * width)) >> top


def _load(uop_dst, uop_src, uop_wgt, inp_f, wgt_f, acc_f, dram, dram_s8, dram_s32, starts, ends, f, cfg, counts):
    """One LOAD with ``x_size > 0`` (fields decoded in ``f``; the buffers as flat arrays of
    lanes); False (nothing done) to defer it.

    INP and WGT elements narrower than 8 bits are unpacked and sign-extended (:func:`_unpack`),
    as :func:`vta.sim.fsim.units.unpack_signed` does.
    """
    mt, sram, dbase, ys, xs, stride = f[_M], f[_M + 1], f[_M + 2], f[_M + 3], f[_M + 4], f[_M + 5]
    yp0, yp1, xp0, xp1 = f[_M + 6], f[_M + 7], f[_M + 8], f[_M + 9]
    batch, blk_in, blk_out = cfg[0], cfg[1], cfg[2]
    if mt == 4 or mt > 5 or ((mt == 1 or mt == 2) and cfg[14] == 0):
        return False
    if mt == 0:
        elem, depth, per = 4, uop_dst.shape[0], 1
    elif mt == 1:
        per = blk_out * blk_in
        elem, depth = cfg[4], wgt_f.shape[0] // per
    elif mt == 2:
        per = batch * blk_in
        elem, depth = cfg[3], inp_f.shape[0] // per
    else:  # ACC (32-bit lanes) or ACC_8BIT (one byte per lane)
        per = batch * blk_out
        elem, depth = (cfg[5] if mt == 3 else cfg[7]), acc_f.shape[0] // per
    w_ = xp0 + xs + xp1
    h_ = yp0 + ys + yp1
    if sram + w_ * h_ > depth:
        return False
    if ys > 0 and not _in_dram(dbase * elem, (dbase + (ys - 1) * stride + xs) * elem, starts, ends):
        return False
    counts[7] += 1
    if mt == 0:
        counts[3] += 4 * xs * ys
    elif mt == 1:
        counts[1] += elem * xs * ys
    elif mt == 2:
        counts[0] += elem * xs * ys
    else:  # ACC and ACC_8BIT both count the 32-bit footprint, like upstream
        counts[2] += cfg[5] * xs * ys
    if mt == 0:
        for yy in range(h_):
            for xx in range(w_):
                idx = sram + yy * w_ + xx
                y = yy - yp0
                x = xx - xp0
                word = np.int64(0)
                if y >= 0 and y < ys and x >= 0 and x < xs:
                    addr = (dbase + y * stride + x) * elem
                    word = (np.int64(dram[addr]) | (np.int64(dram[addr + 1]) << 8)
                            | (np.int64(dram[addr + 2]) << 16) | (np.int64(dram[addr + 3]) << 24))
                uop_dst[idx] = (word >> cfg[8]) & ((1 << cfg[9]) - 1)
                uop_src[idx] = (word >> cfg[10]) & ((1 << cfg[11]) - 1)
                uop_wgt[idx] = (word >> cfg[12]) & ((1 << cfg[13]) - 1)
        return True
    # one row of the padded rectangle at a time: pads zeroed, data copied as a contiguous run
    # of x_size elements (one SRAM element = ``per`` lanes)
    cnt, nbytes = xs * per, xs * elem
    width = cfg[19] if mt == 1 else cfg[18]  # element bits of WGT / INP (ACC: unused)
    for yy in range(h_):
        row = (sram + yy * w_) * per
        y = yy - yp0
        if y < 0 or y >= ys:
            _zero(mt, inp_f, wgt_f, acc_f, row, row + w_ * per)
            continue
        if xp0:
            _zero(mt, inp_f, wgt_f, acc_f, row, row + xp0 * per)
        if xp1:
            _zero(mt, inp_f, wgt_f, acc_f, row + (xp0 + xs) * per, row + w_ * per)
        # (copies between slice views with a range index: LLVM vectorises these)
        dst = row + xp0 * per
        addr = (dbase + y * stride) * elem
        if mt == 1 or mt == 2:
            to = wgt_f[dst:dst + cnt] if mt == 1 else inp_f[dst:dst + cnt]
            if width == 8:
                _copy(to, dram_s8[addr:addr + cnt])
            else:  # sub-byte elements: ``nbytes`` packed bytes hold the row's ``cnt`` lanes
                _unpack(to, dram[addr:addr + nbytes], width)
        elif mt == 3:
            _copy(acc_f[dst:dst + cnt], dram_s32[addr >> 2:(addr >> 2) + cnt])
        else:
            _copy(acc_f[dst:dst + cnt], dram_s8[addr:addr + cnt])
    return True


#: Every function of this module that numba compiles (into :data:`_COMPILED_NS`, see
#: :func:`compile_all`), and those allowed to reorder float32 sums (every partial sum is an
#: integer of at most 2^24 in magnitude, so any order gives the exact result).
_COMPILED = ("_stretch", "_batch", "_field", "_decode", "_in_dram", "_prepass", "_token_step", "_suspect",
             "_same_gemm", "_zero", "_copy", "_offsets", "_add_rows", "_dot_sum", "_wrap_add", "_dot_add", "_gemm_nest",
             "_wt", "_dot_row", "_same_words", "_gemm_batch", "_operand", "_add_wrapped", "_int8_product",
             "_pack_inputs", "_pack_weights", "_gemm_run", "_gemm", "_alu", "_req", "_alu_imm", "_alu_rows", "_store",
             "_load", "_pack", "_unpack", "token_step", "suspect", "_run_stretch")
#: The int8 dot products' innermost functions: compiled from their plain Python when the CPU
#: lacks AVX-512 VNNI (then never called: :data:`_INT8_DOTS` is off), else intrinsics.
_INT8_INNER = ("_int8_tile", "_pack_block", "_pack_row")
#: (Those also in :data:`_INLINED` are compiled with the options of the loop they are inlined
#: into, which has no fastmath: their loops are sums with no reduction variable, which LLVM
#: vectorises without reordering, and :func:`_dot_vec` is explicit vector code.)
_FASTMATH = ("_add_rows", "_dot_row", "_dot_sum", "_dot_add", "_gemm_nest")
#: Those that allocate (the others run without reference counting: see :func:`_stretch`).
_ALLOCATING = ("_offsets", "_gemm_batch", "_operand", "_batch", "_run_stretch", "_int8_product")
#: Per-instruction helpers inlined into their callers by numba (a call boundary costs a
#: reference-count update per array argument, more than a small instruction's work).
_INLINED = ("_field", "_decode", "_token_step", "_suspect", "_gemm", "_alu", "_req", "_alu_imm", "_alu_rows", "_store",
            "_load", "_wrap_add", "_dot_sum", "_dot_add", "_dot_row", "_wt", "_zero", "_copy", "_in_dram",
            "_add_rows", "_pack", "_unpack", "token_step", "suspect", "_operand", "_add_wrapped", "_gemm_nest")
#: The compiled functions by name, each calling the others' compiled versions (after :func:`compile_all`).
_COMPILED_NS: dict = {}


def _accepts_nrt_option(njit) -> bool:
    """Whether this numba knows its (private) ``_nrt`` option, which turns off reference counting.

    numba checks options when a function is first compiled, so a release without the option
    would fail there; probe it on a trivial function and compile with reference counting if not.
    """
    try:
        njit(_nrt=False)(_probe)(1)
    except KeyError:
        return False
    return True


def _probe(x):
    """A trivial function for :func:`_accepts_nrt_option`."""
    return x + 1


def compile_all(njit, blas: bool):
    """Compile every loop of this module with ``njit`` (numba's decorator), once; return the run
    loop (the compiled :func:`_run_stretch`).

    The functions are compiled into :data:`_COMPILED_NS`, a copy of this module's names in which
    each calls the compiled versions of the others (the module's own names stay plain Python);
    ``_mm`` there is :func:`_mm_blas` when ``blas`` (numba calls BLAS through SciPy), else
    :func:`_mm_loops`.
    """
    if _COMPILED_NS:
        return _COMPILED_NS["_run_stretch"]
    no_refcount = _accepts_nrt_option(njit)

    def options(name):
        opts = {"fastmath": name in _FASTMATH or name == "_mm_loops"}
        if name in _INLINED:
            opts["inline"] = "always"
        if name == "_run_stretch":
            opts["nogil"] = True
        elif no_refcount and name not in _ALLOCATING and not name.startswith("_mm_"):
            opts["_nrt"] = False
        return opts

    ns = dict(globals())
    if blas:
        ns["_sgemm"] = _sgemm_intrinsic()
    ns["_dot_vec"] = _dot_vec_intrinsic()
    names = _COMPILED + ("_mm_blas" if blas else "_mm_loops",)
    ns["_INT8_DOTS"] = int8_dots_available()
    if ns["_INT8_DOTS"]:
        ns["_int8_tile"], ns["_pack_block"], ns["_pack_row"] = (_int8_tile_intrinsic(), _pack_block_intrinsic(),
                                                                 _pack_row_intrinsic())
    else:
        names += _INT8_INNER
    compile_into(ns, names, njit, options)
    ns["_mm"] = ns["_mm_blas" if blas else "_mm_loops"]
    _COMPILED_NS.update(ns)
    return ns["_run_stretch"]


def _same_words(a, b):
    """Whether two int64 arrays of instruction words are equal (shapes and every word); stops
    at the first difference."""
    if a.shape[0] != b.shape[0] or a.shape[1] != b.shape[1]:
        return False
    for i in range(a.shape[0]):
        for c in range(a.shape[1]):
            if a[i, c] != b[i, c]:
                return False
    return True


def same_words(a, b) -> bool:
    """The compiled :func:`_same_words` (after :func:`compile_all`)."""
    return bool(_COMPILED_NS["_same_words"](a, b))


def prepass(words, table, depths, elems, allocs, tokens, out):
    """The compiled :func:`_prepass` (after :func:`compile_all`)."""
    return _COMPILED_NS["_prepass"](words, table, depths, elems, allocs, tokens, out)
