"""The event-driven timing replay of the cycle model, as one loop over integer arrays.

:func:`replay` decodes a stream into per-instruction arrays and runs the event loop on them
(:func:`vta.sim.model.loop.core`, split into small helpers numba inlines). With numba, one
compiled call (:func:`_drive`) decodes the raw words (:func:`_decode`, the same arrays as
:func:`prepare`) and runs the loop (the same function, unchanged), with a device's work arrays
reused from run to run (:class:`Scratch`); without numba (or with ``engine="python"``),
:func:`prepare` decodes with NumPy and the loop runs as plain Python. Both paths give the same
cycles. A timing-only run of :class:`~vta.sim.model.CycleModel` is one compiled call as well
(:func:`_timing_run`): a pass over the raw words makes fsim's checks before execution, counts
fsim's statistics and decodes (:func:`_scan`), then the loop runs. The loop processes events in
time order:

* fetch: bursts of up to 8 instructions read over the memory channel, then one dispatch per
  cycle into the load, compute and store queues (a full queue blocks dispatch);
* a unit starts its queue head once it has been dispatched, the unit is free and every token it
  pops has been pushed; GEMM, ALU, STORE, no-ops and FINISH take a fixed number of cycles
  (:mod:`vta.sim.model.costs`);
* a LOAD with data requests its bursts one per cycle (one more cycle per row, at most 16 beats,
  never across 128 bytes) from the cycle ``start + LOAD_REQUEST``; the read channel accepts one request
  per cycle and returns the bursts' beats in request order, one per cycle, as the tsim memory
  shim does, timed by the DRAM model (``DRAM_LATENCY``, ``DRAM_BYTES_PER_CYCLE``,
  ``DRAM_MAX_OUTSTANDING``; see ``sim/vta_tsim.h``). Fetch bursts and the loads of the load and
  compute units therefore interleave on the channel in the order the hardware asks;
* a padded LOAD writes its pad elements in the cycles without a data beat (one per cycle, plus
  one cycle per row and one per data row), as the RTL's read engine does.

Times: a read beat returned by the memory at cycle ``p`` reaches the unit at ``p + 2``; a LOAD
retires ``LOAD_RETIRE`` cycles after its last beat or pad element has been written (the sequencer
takes, decodes and starts an instruction in one cycle and retires it in the cycle the unit is
done: ``hw/vta_insn_seq.sv``).

The loop keeps each unit's next start between events and recomputes it only after an event that
can change it (a start or retirement in the unit, a push on a channel it pops, the dispatch of its
queue head), and requests a load's bursts in a run while its next request stays the earliest event;
the events and their order are those of a loop that recomputes everything at every event. With the
buffered fetch, an instruction is dispatched as soon as its cycle is known (its beats have arrived,
the older instruction whose queue entry it takes has an end) unless a fetch request is pending,
rather than as an event at that cycle: a dispatch changes only fetch and the candidate of the unit
whose queue head it is, which starts after it, so the other events keep their order.

Fetch follows the RTL named by :mod:`vta.sim.model.costs`: without ``FETCH_BUFFER_INSNS`` it reads
a burst, dispatches it and only then requests the next one; with it (a buffered fetch) a burst is
requested as soon as the buffer has room and each instruction is dispatched once its beats have
arrived.

The compiled loop is cached on disk (:mod:`vta.sim.numba_cache`; the first use after an edit
compiles for some seconds); ``VTA_MODEL_ENGINE=python`` forces the plain loop.
"""

from __future__ import annotations

import mmap
import os

import numpy as np

from ... import isa
from ...env import Environment
from ...errors import DeadlockError, InvalidInstructionError
from ..numba_cache import array_head, compile_into
from ..rules import alu_mask, suspect, token_step
from ..stream import Columns, Program
from ..fsim.kernels import _accepts_nrt_option
from . import costs as mc
from . import loop
from .loop import QUEUE_DEPTH, burst_rows, core, work_size

__all__ = ["prepare", "replay", "compiled"]

_UNKNOWN = -1
#: The footprint table of a configuration without COMPUTE_OVERLAP (never read).
_NO_FOOT = np.zeros((1, 11), np.int64)
#: Read clients (the arbiter's fixed priority, lowest first): fetch, uop, inp, wgt, acc.
_CLIENT = {isa.MEM_UOP: 1, isa.MEM_INP: 2, isa.MEM_WGT: 3, isa.MEM_ACC: 4, isa.MEM_ACC_8BIT: 4}
_STAGE_UNIT = {isa.STAGE_LOAD: 0, isa.STAGE_COMPUTE: 1, isa.STAGE_STORE: 2}
def prepare(env: Environment, words: np.ndarray, timing: mc.Timing) -> dict:
    """Per-instruction integer arrays of a stream for :func:`~vta.sim.model.loop.core`.

    Returns
    -------
    dict of ndarray
        ``unit`` (0 load, 1 compute, 2 store), ``pops``/``pushes`` (4-bit masks, fsim's channel
        order), ``cost`` (fixed cycles; -1 for a LOAD with data), ``finish``, and for LOADs with
        data ``client``, ``addr`` (byte address of row 0), ``row_bytes``, ``stride`` (bytes),
        ``rows``, and the pads ``xp0``, ``xp1``, ``yp0``, ``yp1`` with ``xs`` (x_size).

    Raises
    ------
    InvalidInstructionError
        If a token flag names a channel its stage does not have.
    """
    n = words.shape[0]
    prog = Program(words, env)
    flow = prog.flow  # stages and token flags (raises for a flag on a missing channel)
    stage = np.asarray(flow.stage, dtype=np.int64)
    unit = np.zeros(n, np.int64)
    for s, u in _STAGE_UNIT.items():
        unit[stage == s] = u
    pop = np.asarray(flow.pop, dtype=np.int64).reshape(n, 4) != 0
    push = np.asarray(flow.push, dtype=np.int64).reshape(n, 4) != 0
    out = {"unit": unit,
           "pops": pop[:, 0] | pop[:, 1] << 1 | pop[:, 2] << 2 | pop[:, 3] << 3,
           "pushes": push[:, 0] | push[:, 1] << 1 | push[:, 2] << 2 | push[:, 3] << 3}
    out["pops"] = out["pops"].astype(np.int64)
    out["pushes"] = out["pushes"].astype(np.int64)
    opcode = np.asarray(prog.cols.header["opcode"], dtype=np.int64)
    cost = np.full(n, timing.overhead, np.int64)
    # GEMM and ALU: one cost per distinct (opcode, micro-ops, immediate) (the formulas of costs.py)
    for op, kind in ((isa.OPCODE_GEMM, "gemm"), (isa.OPCODE_ALU, "alu")):
        sel = np.nonzero(opcode == op)[0]
        if sel.size == 0:
            continue
        c = getattr(Columns(words[sel], env), kind)  # the rows of this format only
        uops = (c["iter_out"].astype(np.int64) * c["iter_in"].astype(np.int64)
                * np.maximum(c["uop_end"].astype(np.int64) - c["uop_bgn"].astype(np.int64), 0))
        imm = c["use_imm"].astype(np.int64) if op == isa.OPCODE_ALU else np.ones(sel.size, np.int64)
        keys, inverse = np.unique(uops * 2 + (imm != 0), return_inverse=True)
        table = np.array([mc.compute_cycles(op, {"iter_out": 1, "iter_in": k >> 1, "uop_bgn": 0, "uop_end": 1,
                                                 "use_imm": k & 1}, timing)
                          for k in keys.tolist()], np.int64)
        cost[sel] = table[inverse.reshape(-1)]
    z = np.zeros(n, np.int64)
    client, addr, row_bytes, stride, rows = z.copy(), z.copy(), z.copy(), z.copy(), z.copy()
    xp0, xp1, yp0, yp1, xs = z.copy(), z.copy(), z.copy(), z.copy(), z
    sel = np.nonzero((opcode == isa.OPCODE_LOAD) | (opcode == isa.OPCODE_STORE))[0]
    if sel.size:
        mem = Columns(words[sel], env).mem
        x_size = mem["x_size"].astype(np.int64)
        mtype = mem["memory_type"].astype(np.int64)
        elem = np.zeros(sel.size, np.int64)
        for mt in range(8):
            try:
                elem[mtype == mt] = env.elem_bytes(mt)
            except (ValueError, KeyError):
                pass
        base = (mem["dram_base"].astype(np.int64) * elem) & 0xFFFFFFFF
        stride_b = mem["x_stride"].astype(np.int64) * elem
        y_size = mem["y_size"].astype(np.int64)
        is_store = opcode[sel] == isa.OPCODE_STORE
        # STORE: one cost per distinct geometry (bursts depend on the addresses modulo 128 only)
        st = np.nonzero(is_store & (x_size > 0))[0]
        if st.size:
            ob = env.OUT_ELEM_BYTES
            packed = ((x_size[st] << 16 | y_size[st]) << 7 | base[st] % 128) << 7 | stride_b[st] % 128
            keys, inverse = np.unique(packed, return_inverse=True)
            table = []
            for k in keys.tolist():
                x, y, b, sb = k >> 30, (k >> 14) & 0xFFFF, (k >> 7) & 127, k & 127
                # a representative with the same residues modulo 128 (whole OUT elements: the
                # residues of multiples of a power-of-two element size are multiples of it, or 0)
                f = {"x_size": x, "y_size": y, "dram_base": (b + 128 * ob) // ob, "x_stride": (sb + 128 * ob) // ob}
                table.append(mc.store_cycles(env, f, timing))
            cost[sel[st]] = np.asarray(table, np.int64)[inverse.reshape(-1)]
        ld = np.nonzero(~is_store & (x_size > 0))[0]
        if ld.size:
            li = sel[ld]
            cost[li] = -1
            cl = np.full(ld.size, 4, np.int64)
            for mt, c_id in _CLIENT.items():
                cl[mtype[ld] == mt] = c_id
            client[li] = cl
            addr[li] = base[ld]
            row_bytes[li] = x_size[ld] * elem[ld]
            stride[li] = stride_b[ld]
            rows[li] = y_size[ld]
            xs = z.copy()
            xs[li] = x_size[ld]
            for name, arr in (("x_pad_0", xp0), ("x_pad_1", xp1), ("y_pad_0", yp0), ("y_pad_1", yp1)):
                arr[li] = mem[name][ld].astype(np.int64)
    out.update(cost=cost, finish=(opcode == isa.OPCODE_FINISH).astype(np.int64), client=client, addr=addr,
               row_bytes=row_bytes, stride=stride, rows=rows, xp0=xp0, xp1=xp1, yp0=yp0, yp1=yp1, xs=xs)
    return out


# ----------------------------------------------------------------------------- the fast driver
# With numba, a stream reaches :func:`~vta.sim.model.loop.core` through one compiled call, :func:`_drive`: it decodes
# the raw instruction words into the arrays :func:`prepare` makes (:func:`_decode`) and runs the
# loop, with no per-instruction Python and one allocation per output. The decoder evaluates the
# costs of GEMM, ALU and STORE with closed forms whose constants are taken from
# :mod:`vta.sim.model.costs` and checked against its functions on sample fields (:func:`_cost_params`);
# when they do not match (the rules changed shape), the stream is decoded by :func:`prepare`.

#: The fields :func:`_decode` reads, as (format, name), in its column order.
_FIELDS = (("header", "opcode"), ("header", "pop_prev_dep"), ("header", "pop_next_dep"),
           ("header", "push_prev_dep"), ("header", "push_next_dep"),
           ("mem", "memory_type"), ("mem", "dram_base"), ("mem", "y_size"), ("mem", "x_size"), ("mem", "x_stride"),
           ("mem", "y_pad_0"), ("mem", "y_pad_1"), ("mem", "x_pad_0"), ("mem", "x_pad_1"),
           ("gemm", "uop_bgn"), ("gemm", "uop_end"), ("gemm", "iter_out"), ("gemm", "iter_in"),
           ("alu", "uop_bgn"), ("alu", "uop_end"), ("alu", "iter_out"), ("alu", "iter_in"), ("alu", "use_imm"),
           # read by the checks and counters of the timing-only pass (:func:`_scan`) only
           ("mem", "sram_base"), ("alu", "alu_opcode"), ("gemm", "reset_reg"))
#: The arrays of :func:`prepare`, as the rows of :func:`_decode`'s output, in :func:`~vta.sim.model.loop.core`'s order.
_ROWS = ("unit", "pops", "pushes", "cost", "finish", "client", "addr", "row_bytes", "stride", "rows",
         "xp0", "xp1", "yp0", "yp1", "xs")
#: Per-instruction outputs of :func:`~vta.sim.model.loop.core`, as the rows of one array.
_OUTS = ("start", "end", "ready", "dispatch", "blocked_from")
#: Extra counters after :func:`~vta.sim.model.loop.core`'s 14: the net tokens the stream pushes on each channel.
_NCOUNTERS = 18
#: Sample (iter_out, iter_in, uop_bgn, uop_end) of the cost check (:func:`_cost_params`).
_COMPUTE_SAMPLES = ((1, 1, 0, 1), (1, 2, 0, 1), (0, 5, 0, 3), (4, 0, 1, 2), (3, 2, 5, 5), (2, 3, 6, 1),
                    (3, 5, 2, 9), (7, 1, 0, 16), (1, 9, 4, 5), (100, 30, 0, 7), (16383, 16383, 0, 4095))
#: Sample (x_size, y_size, dram_base, x_stride) of the STORE cost check.
_STORE_SAMPLES = ((1, 1, 0, 1), (4, 1, 3, 4), (16, 3, 5, 40), (1, 7, 1, 1), (9, 2, 7, 100), (300, 2, 11, 301),
                  (65535, 1, 0, 65535), (2, 4000, 1, 3))


def _field_table(env: Environment) -> np.ndarray:
    """Per field of :data:`_FIELDS`: (word, shift, mask) in the instruction layout of ``env``."""
    lay = isa.layout(env)
    return np.array([(f.lo // 64, f.lo % 64, (1 << f.width) - 1)
                     for f in (lay.field("mem" if kind == "header" else kind, name) for kind, name in _FIELDS)],
                    np.int64)


def _elem_table(env: Environment) -> np.ndarray:
    """Bytes of one element per memory type code 0..7 (0 for a code without elements)."""
    elem = np.zeros(8, np.int64)
    for mt in range(8):
        try:
            elem[mt] = env.elem_bytes(mt)
        except (ValueError, KeyError):
            pass
    return elem


_PARAMS: dict = {}


def _cost_params(env: Environment, timing: mc.Timing) -> np.ndarray:
    """The constants of :func:`_decode`'s cost formulas, or None when they do not reproduce
    :mod:`vta.sim.model.costs` on the samples (then :func:`prepare` decodes, whatever the rules).

    Row: overhead; per kind (GEMM, tensor ALU, immediate ALU) the cost of no micro-op, the cycles
    per micro-op and the constant; STORE's fixed cycles, cycles per row, per element, per burst
    (``store_ack``) and the OUT element bytes. A kind's formula: ``empty`` for n = 0 micro-ops,
    else ``slope * n + constant``; a STORE with x > 0: ``fixed + y * (per_row + x * per_elem)`` plus
    ``store_ack`` per 128-byte block its rows touch.
    """
    key = (timing, env.OUT_ELEM_BYTES, mc.compute_cycles, mc.store_cycles)
    if key not in _PARAMS:
        try:
            _PARAMS[key] = _fit_params(env, timing)
        except KeyError:  # the rules read a field the closed forms do not have
            _PARAMS[key] = None
    return _PARAMS[key]


def _fit_params(env: Environment, timing: mc.Timing) -> np.ndarray | None:
    """:func:`_cost_params` without the cache.

    Raises
    ------
    KeyError
        If a rule of :mod:`vta.sim.model.costs` reads a field the samples do not give.
    """
    p = [timing.overhead]
    ok = True
    for op, imm in ((isa.OPCODE_GEMM, 1), (isa.OPCODE_ALU, 0), (isa.OPCODE_ALU, 1)):
        def cost(io, ii, ub, ue, op=op, imm=imm):
            return mc.compute_cycles(op, {"iter_out": io, "iter_in": ii, "uop_bgn": ub, "uop_end": ue,
                                          "use_imm": imm}, timing)
        empty, c1, c2 = cost(1, 0, 0, 1), cost(1, 1, 0, 1), cost(1, 2, 0, 1)
        slope, const = c2 - c1, 2 * c1 - c2
        for io, ii, ub, ue in _COMPUTE_SAMPLES:
            n = io * ii * max(ue - ub, 0)
            ok &= cost(io, ii, ub, ue) == (empty if n == 0 else slope * n + const)
        p += [empty, slope, const]
    ob = env.OUT_ELEM_BYTES
    per_elem = max(ob // mc.BEAT_BYTES, 1)
    p += [timing.store_fixed, timing.store_per_row, per_elem, timing.store_ack, ob]
    for x, y, base, stride in _STORE_SAMPLES:
        want = mc.store_cycles(env, {"x_size": x, "y_size": y, "dram_base": base, "x_stride": stride}, timing)
        blocks = sum((base * ob + r * stride * ob + x * ob - 1) // 128 - (base * ob + r * stride * ob) // 128 + 1
                     for r in range(y)) if timing.store_ack else 0
        ok &= want == timing.store_fixed + y * (timing.store_per_row + x * per_elem) + timing.store_ack * blocks
    return np.array(p, np.int64) if ok else None


def _field(words, i, fields, k):
    """Field ``k`` of :data:`_FIELDS` of instruction ``i`` (``fields``: :func:`_tables`' flat tuple)."""
    return (words[i, fields[3 * k]] >> fields[3 * k + 1]) & fields[3 * k + 2]


def _decode(words, fields, elem, params, cols):
    """Fill ``cols`` (rows :data:`_ROWS`) from the raw words, as :func:`prepare` does; return 0, or
    1 + i if instruction i sets a token flag of a channel its stage does not have. The rows of a
    LOAD's transfer (``client`` .. ``xs``) are written for the LOADs with data only (the loop
    reads them for those only; the other entries keep what they held). (:func:`_scan` without
    its checks.)"""
    io = np.zeros(IO_SIZE, np.int64)
    if _scan(words, fields, elem, params, cols, np.zeros(13, np.int64), np.zeros((1, 2), np.int64),
             np.zeros(0, np.int64), io, False, False) == 2:
        return io[IO_BAD]
    return 0


def _drive(words, fields, elem, params, cols, tokens, insn_addr, queue_depth, fetch_latency, fetch_buffer, latency,
           bytes_per_cycle, max_outstanding, outs, bursts, counters, work):
    """Decode (unless ``params`` is empty: ``cols`` is filled already) and replay one stream in one
    compiled call; returns :func:`~vta.sim.model.loop.core`'s code, or ``1 << 40`` plus :func:`_decode`'s."""
    n = words.shape[0]
    if params.shape[0] > 0:
        bad = _decode(words, fields, elem, params, cols)
        if bad != 0:
            return (1 << 40) + bad
    return core(n, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8], cols[9],
                 cols[10], cols[11], cols[12], cols[13], cols[14], tokens, insn_addr, queue_depth, fetch_latency,
                 fetch_buffer, latency, bytes_per_cycle, max_outstanding, outs[0], outs[1], outs[2], outs[3], outs[4],
                 bursts, counters, work, 0, _NO_FOOT)


# ----------------------------------------------------------------------------- the timing-only run
# A timing-only run (``CycleModel(..., functional=False)``) goes through one compiled call,
# :func:`_timing_run`: a pass over the raw words (:func:`_scan`) makes fsim's checks before
# execution, counts fsim's statistics and decodes the stream, then :func:`~vta.sim.model.loop.core` replays it. The
# checks are the rules fsim's compiled pre-pass applies too (:mod:`vta.sim.rules`: the stream is
# valid and runs in stream order; the LOAD and STORE rows whose fields alone fail a check); the
# caller confirms suspects and checks an invalid stream the slow way, with fsim's errors.

#: Offsets in the constants array of :func:`_timing_run` (:meth:`Scratch.packed`): the field table
#: (word, shift, mask per field of :data:`_FIELDS`), the element bytes per memory type code (8),
#: the cost constants (:func:`_cost_params`), the checks' SRAM depth and element bytes per memory
#: type code 0..5 (6 each; code 4 is OUT: the accumulator a STORE reads and the bytes it writes)
#: and the mask of the ALU opcodes accepted (:func:`vta.sim.rules.alu_mask`), then queue depth, fetch
#: latency, fetch buffer, DRAM latency, bytes per cycle, outstanding reads.
_C_ELEM = 3 * len(_FIELDS)
_C_PARAMS = _C_ELEM + 8
_C_CHECK = _C_PARAMS + 15
_C_TIMING = _C_CHECK + 13
_C_SIZE = _C_TIMING + 6
#: Slots of the in/out array of :func:`_timing_run`: in: the tokens lent (4), whether to check the
#: stream's validity and token flow in stream order, the stream's address; out: the status (0
#: timed; 1 invalid or not runnable in stream order: check the slow way; 2 a token flag on a missing
#: channel, instruction ``[IO_BAD] - 1``), the number of suspects, :func:`~vta.sim.model.loop.core`'s code, whether the
#: counters were added to the accumulators, :func:`~vta.sim.model.loop.core`'s 18 counters and fsim's 13 counters.
#: ``IO_REUSE`` (in): the work space holds the scan of an earlier run made with the same inputs but
#: the words (same length, tokens, check, constants and allocations), so if the words are those of
#: that run too (compared with the copy kept in the work space) the scan is not made again;
#: ``IO_REUSED`` (out): whether it was reused.
IO_TOKENS, IO_CHECK, IO_ADDR, IO_STATUS, IO_BAD, IO_SUSPECTS, IO_RC, IO_COMMITTED = 0, 4, 5, 6, 7, 8, 9, 10
#: ``IO_REUSE`` 2 (in): a repeat of that run (:meth:`vta.sim.model.CycleModel.run`): when the words
#: differ, return at once, having done nothing. ``IO_LAST`` (out): the 13 hardware counters of the
#: last committed run (a run that fails later never writes them).
IO_REUSE, IO_REUSED = 11, 12
#: ``IO_HW_ONLY`` (in): a clean run adds its hardware counters to ``acc`` but not fsim's (a
#: functional run: fsim counts its own).
IO_HW_ONLY = 13
#: ``IO_COUNT`` (in, written by :func:`_timing_run_at` itself): the number of instructions of the stream at ``IO_ADDR``.
IO_COUNT = 14
IO_COUNTERS = 16
IO_COUNTS = IO_COUNTERS + _NCOUNTERS
IO_LAST = IO_COUNTS + 13
IO_SIZE = IO_LAST + 13
#: The status of :func:`_timing_run_at` for a stream whose range is not inside one live allocation.
STATUS_RANGE = 3
#: fsim's counters of :func:`_scan`, in its order (``STAT_KEYS`` then ``INSN_KEYS``).
COUNT_KEYS = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes",
              "gemm_counter", "alu_counter", "insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish",
              "insn_nop")


def _scan(words, fields, elem, params, cols, chk, allocs, sus, io, check, suspects):
    """One pass over the raw words before the replay: fsim's checks (with ``check``: the stream is
    valid and its tokens ``io[IO_TOKENS:+4]`` let it run in stream order; with ``suspects``: the
    suspects, written to ``sus``); always the decode into ``cols`` (see :func:`_decode`) and fsim's counters (to
    ``io[IO_COUNTS:]``). Returns the status of :func:`_timing_run` (it stops at the first
    instruction that makes it non-zero).

    (Every field is read in this loop: numba keeps the field table in registers when a constant
    field number reaches :func:`_field` directly, not through another inlined function.)"""
    l2g = io[IO_TOKENS]
    g2l = io[IO_TOKENS + 1]
    s2g = io[IO_TOKENS + 2]
    g2s = io[IO_TOKENS + 3]
    found = 0
    hit = 0  # the allocation the last transfer was in
    depths = chk[0:6]
    elems = chk[6:12]
    b_inp = 0  # elements moved (bytes after the loop)
    b_wgt = 0
    b_acc = 0
    b_uop = 0
    b_out = 0
    n_gemm_it = 0
    n_alu_it = 0
    n_load = 0
    n_store = 0
    n_gemm = 0
    n_alu = 0
    n_finish = 0
    n_nop = 0
    for i in range(words.shape[0]):
        op = _field(words, i, fields, 0)
        pp = _field(words, i, fields, 1)
        pn = _field(words, i, fields, 2)
        up = _field(words, i, fields, 3)
        un = _field(words, i, fields, 4)
        mt = _field(words, i, fields, 5)
        if check:
            l2g, g2l, s2g, g2s, ok = token_step(op, pp, pn, up, un, mt, _field(words, i, fields, 24), chk[12], l2g,
                                                g2l, s2g, g2s)
            if not ok:
                return 1
        # the decode
        if op == 1:
            u = 2
        elif op == 0 and (mt == 1 or mt == 2):
            u = 0
        else:
            u = 1
        if (u == 0 and (pp != 0 or up != 0)) or (u == 2 and (pn != 0 or un != 0)):
            io[IO_BAD] = 1 + i
            return 2
        comp = 1 if u == 1 else 0
        load = 1 if u == 0 else 0
        store = 1 if u == 2 else 0
        cols[0, i] = u
        cols[1, i] = (comp * pp) | (load * pn) << 1 | (comp * pn) << 2 | (store * pp) << 3
        cols[2, i] = (load * un) | (comp * up) << 1 | (store * up) << 2 | (comp * un) << 3
        cols[4, i] = 1 if op == 3 else 0
        c = params[0]
        if op == 2 or op == 4:
            # constant field numbers (a variable index into the field tuple is slow when compiled)
            if op == 2:
                nu = _field(words, i, fields, 15) - _field(words, i, fields, 14)
                loops = _field(words, i, fields, 16) * _field(words, i, fields, 17)
                k = 1
            else:
                nu = _field(words, i, fields, 19) - _field(words, i, fields, 18)
                loops = _field(words, i, fields, 20) * _field(words, i, fields, 21)
                k = 7 if _field(words, i, fields, 22) != 0 else 4
            if nu < 0:
                nu = 0
            nu = loops * nu
            c = params[k] if nu == 0 else params[k + 1] * nu + params[k + 2]
            if op == 2:  # fsim's counters: micro-op iterations (of non-reset GEMMs)
                n_gemm += 1
                if _field(words, i, fields, 25) == 0:
                    n_gemm_it += nu
            else:
                n_alu += 1
                n_alu_it += nu
        elif op == 0 or op == 1:
            x = _field(words, i, fields, 8)
            if x > 0:
                y = _field(words, i, fields, 7)
                base = _field(words, i, fields, 6)
                xstride = _field(words, i, fields, 9)
                if suspects and mt <= 5:
                    bad, hit = suspect(op, mt, _field(words, i, fields, 23), base, y, x, xstride,
                                       _field(words, i, fields, 10), _field(words, i, fields, 11),
                                       _field(words, i, fields, 12), _field(words, i, fields, 13), depths, elems,
                                       allocs, hit)
                    if bad:
                        sus[found] = i
                        found += 1
                if op == 1:
                    n_store += 1
                    b_out += x * y
                    c = params[10] + y * (params[11] + x * params[12])
                    if params[13] != 0:
                        ob = params[14]
                        blocks = 0
                        for r in range(y):
                            lo = (base + r * xstride) * ob
                            blocks += (lo + x * ob - 1) // 128 - lo // 128 + 1
                        c += params[13] * blocks
                else:
                    n_load += 1
                    e = elem[mt]
                    c = -1
                    if mt == 0:
                        cols[5, i] = 1
                        b_uop += x * y
                    elif mt == 2:
                        cols[5, i] = 2
                        b_inp += x * y
                    elif mt == 1:
                        cols[5, i] = 3
                        b_wgt += x * y
                    else:
                        cols[5, i] = 4
                        if mt == 3 or mt == 5:  # ACC_8BIT counts the 32-bit footprint, like upstream
                            b_acc += x * y
                    cols[6, i] = (base * e) & 0xFFFFFFFF
                    cols[7, i] = x * e
                    cols[8, i] = xstride * e
                    cols[9, i] = y
                    cols[10, i] = _field(words, i, fields, 12)
                    cols[11, i] = _field(words, i, fields, 13)
                    cols[12, i] = _field(words, i, fields, 10)
                    cols[13, i] = _field(words, i, fields, 11)
                    cols[14, i] = x
            else:
                n_nop += 1
        elif op == 3:
            n_finish += 1
        cols[3, i] = c
    if check and n_finish == 0:
        return 1
    c = IO_COUNTS
    io[c] = b_inp * chk[8]
    io[c + 1] = b_wgt * chk[7]
    io[c + 2] = b_acc * chk[9]
    io[c + 3] = b_uop * chk[6]
    io[c + 4] = b_out * chk[10]
    io[c + 5] = n_gemm_it
    io[c + 6] = n_alu_it
    io[c + 7] = n_load
    io[c + 8] = n_store
    io[c + 9] = n_gemm
    io[c + 10] = n_alu
    io[c + 11] = n_finish
    io[c + 12] = n_nop
    io[IO_SUSPECTS] = found
    return 0


def _timing_run_at(arena, consts, bounds, abuf, flat, io, acc, addr, count, reuse):
    """:func:`_timing_run` of the ``count`` instructions at the byte address ``addr`` (a multiple of 8)
    of ``arena``, the whole DRAM arena as int64, run from no outstanding token with the checks on:
    the instruction words are a view of it, made here, once the range is found inside one live
    allocation; else the status is :data:`STATUS_RANGE` (the caller raises DRAM's error) and
    nothing else is done. ``bounds``: the live allocations, flat (:attr:`vta.dram.DRAM.live_bounds`),
    copied here into ``abuf`` (at least ``max(len(bounds), 2)`` entries) as the k x 2 ``allocs``
    of :func:`_timing_run` (one empty range when there is none), so that the caller makes no NumPy
    array per allocation generation. ``reuse``: the value of ``io[IO_REUSE]``. The in slots of
    ``io`` are written here (``IO_TOKENS`` none, ``IO_CHECK`` on, ``IO_ADDR``, ``IO_REUSE``,
    ``IO_HW_ONLY`` off, ``IO_COUNT``), so that the caller writes none (a NumPy slice assignment costs
    a first run more than the slots' stores here).
    Returns 0 (not clean), 1 (clean, and the stream pushes as many tokens as it pops on each
    channel) or 2 (clean, tokens left). (A first run of a small stream: no view to make in
    Python, one check fewer, the net tokens read only when some are left.)"""
    n = count
    lo = addr
    na = len(bounds) >> 1
    if na == 0:
        abuf[0] = 0
        abuf[1] = 0
        na = 1
    else:
        for k in range(2 * na):
            abuf[k] = bounds[k]
    allocs = abuf[:2 * na].reshape((na, 2))
    for k in range(4):
        io[IO_TOKENS + k] = 0
    io[IO_CHECK] = 1
    io[IO_ADDR] = addr
    io[IO_REUSE] = reuse
    io[IO_HW_ONLY] = 0
    io[IO_COUNT] = count
    if reuse != 2:  # (a repeat: the range of a run with the same address, count and allocations)
        hi = lo + 16 * n
        # the last allocation starting at or below the stream (allocs: sorted, disjoint)
        k = 0
        top = allocs.shape[0]
        while k < top:
            mid = (k + top) >> 1
            if allocs[mid, 0] <= lo:
                k = mid + 1
            else:
                top = mid
        if n <= 0 or k == 0 or hi > allocs[k - 1, 1] or hi > 8 * arena.shape[0]:
            io[IO_STATUS] = STATUS_RANGE
            io[IO_COMMITTED] = 0
            return 0
    rc = _timing_run(arena[lo >> 3:(lo >> 3) + 2 * n].reshape((n, 2)), consts, allocs, flat, io, acc)
    c = IO_COUNTERS + 14  # (the net tokens the stream pushes)
    if rc != 0 and (io[c] != 0 or io[c + 1] != 0 or io[c + 2] != 0 or io[c + 3] != 0):
        return 2
    return rc


def _timing_run(words, consts, allocs, flat, io, acc):
    """Check, count, decode and replay one stream (see the comment above :data:`_C_ELEM`).

    ``consts``: :meth:`Scratch.packed`; ``allocs``: the live allocations (k x 2, start and end);
    ``flat``: the work space of :meth:`Scratch.flat_for` (the per-instruction arrays at the places
    :meth:`Scratch.take` gives them, a copy of the words last scanned in two of its rows, then the suspects);
    ``io``: the slots ``IO_*``; ``acc``: the
    counters of clean runs (timed, no suspect) are added to it, the 13 hardware counters of
    :data:`_COUNTER_KEYS` then fsim's of :data:`COUNT_KEYS`. Returns 1 for a clean run (its
    counters committed), else 0.
    """
    n = words.shape[0]
    nr = len(_ROWS)
    no = len(_OUTS)
    a = nr * n
    b = a + no * n
    nb = burst_rows(n)
    c = b + 3 * nb
    need = c + work_size(n)
    cols = flat[:a].reshape((nr, n))
    outs = flat[a:b].reshape((no, n))
    bursts = flat[b:c].reshape((nb, 3))
    work = flat[c:need]
    io[IO_COMMITTED] = 0
    # the words of the last completed scan: in the rows of ``end`` and ``blocked_from``, which this
    # run's loop does not write (see below); a replay that does (:func:`replay`) makes the owner
    # forget the scan
    kept0 = outs[1]
    kept1 = outs[4]
    reuse = io[IO_REUSE] != 0
    if reuse:
        for i in range(n):
            if words[i, 0] != kept0[i] or words[i, 1] != kept1[i]:
                reuse = False
                break
    io[IO_REUSED] = 1 if reuse else 0
    if not reuse:
        if io[IO_REUSE] == 2:
            return 0
        fields = _fixed_tuple(consts[:_C_ELEM], _C_ELEM)
        status = _scan(words, fields, consts[_C_ELEM:_C_PARAMS], consts[_C_PARAMS:_C_CHECK], cols,
                       consts[_C_CHECK:_C_TIMING], allocs, flat[need:need + n], io, io[IO_CHECK] != 0, True)
        io[IO_STATUS] = status
        if status != 0:
            return 0
        for i in range(n):
            kept0[i] = words[i, 0]
            kept1[i] = words[i, 1]
    t = _C_TIMING
    again = 2 if reuse else 0
    # (the per-instruction ``end``, ``ready`` and ``blocked_from``, which the loop only writes without
    # COMPUTE_OVERLAP, are written to the row of ``ready``: a timing-only run reads none of them, and
    # the other two rows keep the words; ``start`` is kept, for the debug dump); when the scan is
    # reused, so are the queues the loop's set-up made from it in the last run
    rc = core(n, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8], cols[9],
               cols[10], cols[11], cols[12], cols[13], cols[14], io[IO_TOKENS:IO_TOKENS + 4], io[IO_ADDR], consts[t],
               consts[t + 1], consts[t + 2], consts[t + 3], consts[t + 4], consts[t + 5], outs[0], outs[2], outs[2],
               outs[3], outs[2], bursts, io[IO_COUNTERS:IO_COUNTS], work, again, _NO_FOOT)
    io[IO_RC] = rc
    if rc == 0 and io[IO_SUSPECTS] == 0:
        counts = io[IO_HW_ONLY] == 0
        for k in range(13):
            acc[k] += io[IO_COUNTERS + k]
            if counts:
                acc[13 + k] += io[IO_COUNTS + k]
            io[IO_LAST + k] = io[IO_COUNTERS + k]
        io[IO_COMMITTED] = 1
        return 1
    return 0


_ENTRIES: dict = {}


def timing_entry(args: tuple, at: bool = False):
    """The compiled entry point of :func:`_timing_run` (with ``at``: :func:`_timing_run_at`) for
    ``args`` (its arguments), or None.

    Calling it skips the dispatcher's type resolution (about a microsecond, most of the cost of a
    repeated small stream); it must only be called with arguments of the same types (the entry
    does not check them), so the caller keeps ``args`` themselves.
    """
    fn = _TIMING_RUN_AT if at else _TIMING_RUN
    overloads = getattr(fn, "overloads", None)  # (None: not a numba dispatcher)
    if overloads is None:
        return None
    key = (at,) + tuple((a.dtype.num, a.ndim, a.flags.c_contiguous, a.flags.aligned, a.flags.writeable)
                        if isinstance(a, np.ndarray) else type(a) for a in args)
    if key not in _ENTRIES:
        from numba import typeof
        from numba.core.typing.typeof import Purpose

        cres = overloads.get(tuple(typeof(a, Purpose.argument) for a in args))
        _ENTRIES[key] = None if cres is None else cres.entry_point
    return _ENTRIES[key]


def suspects_at(n: int) -> int:
    """Where :func:`_timing_run` writes the suspects of a stream of ``n`` instructions in its work space."""
    return (len(_ROWS) + len(_OUTS)) * n + 3 * burst_rows(n) + work_size(n)


def _fixed_tuple(a, n):
    """The first ``n`` entries of ``a`` as a tuple (:func:`vta.sim.numba_cache.array_head` when compiled)."""
    return tuple(a[:n].tolist())


_TABLES: dict = {}


_COMPILED = None
_DRIVE = None
_DECODE = None  # the compiled _decode (for tests)
_TIMING_RUN = None
_TIMING_RUN_AT = None
_ENGINE_FAILED = False
#: Helpers numba inlines into their callers (IR inlining: about 1.5 times faster for the loop).
_INLINED = ("_field", "token_step", "suspect")
#: The compiled functions that allocate nothing, compiled without numba's reference counting: the
#: timing-only run's entries take their arguments without making a meminfo (a heap allocation and
#: its free) for each array, and their views without counting references: a first run after other
#: work (a tsim run) finds that code of numba's runtime out of the caches, several microseconds.
_NO_NRT = ("_scan", "_timing_run", "_timing_run_at") + _INLINED


def compiled():
    """The numba-compiled :func:`~vta.sim.model.loop.core` (and the other compiled entries), or None without numba."""
    global _COMPILED, _DRIVE, _DECODE, _TIMING_RUN, _TIMING_RUN_AT, _ENGINE_FAILED
    if _COMPILED is not None or _ENGINE_FAILED:
        return _COMPILED
    if os.environ.get("VTA_MODEL_ENGINE", "") == "python":
        return None
    try:
        import numba
    except ImportError:
        _ENGINE_FAILED = True
        return None
    # every function is remade with one namespace holding the compiled helpers; integer division
    # skips the zero check (no divisor of these functions can be zero)
    g = dict(globals())
    g["_fixed_tuple"] = array_head()

    no_refcount = _accepts_nrt_option(numba.njit)

    def options(name):
        opts = {"error_model": "numpy"}
        if name in _INLINED or name in loop.HELPERS or name == "_timing_run":
            # (_timing_run: inlined into _timing_run_at, whose repeats of small streams a call costs)
            opts["inline"] = "always"
        if no_refcount and (name == "core" or name in loop.HELPERS or name in _NO_NRT):
            # the loop allocates nothing; reference counts of the arrays its inlined helpers
            # take would cost more than the events themselves (and the timing-only run's: no
            # meminfo made for each argument, no count for each view)
            opts["_nrt"] = False
        return opts

    lg = dict(vars(loop))  # the event loop, its helpers inlined
    compile_into(lg, loop.HELPERS + ("core",), numba.njit, options)
    g["core"] = lg["core"]
    g["work_size"] = lg["work_size"]
    g["burst_rows"] = lg["burst_rows"]
    compile_into(g, _INLINED + ("_scan", "_decode", "_drive", "_timing_run", "_timing_run_at"), numba.njit, options)
    _COMPILED, _DECODE, _DRIVE, _TIMING_RUN = g["core"], g["_decode"], g["_drive"], g["_timing_run"]
    _TIMING_RUN_AT = g["_timing_run_at"]
    return _COMPILED


UNITS = ("fetch", "load", "compute", "store")
#: The hardware counters in :func:`~vta.sim.model.loop.core`'s order.
_COUNTER_KEYS = (("cycle_count",) + tuple(f"{u}_busy_cycles" for u in UNITS) + tuple(f"{u}_stall_cycles" for u in UNITS)
                 + tuple(f"{u}_retired" for u in UNITS))


def _tables(env: Environment) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_field_table` and :func:`_elem_table` of ``env`` (made once per bitstream)."""
    t = _TABLES.get(env.BITSTREAM)
    if t is None:
        # the field table as a flat tuple: the compiled decoder keeps its entries in registers
        t = _TABLES[env.BITSTREAM] = (tuple(_field_table(env).reshape(-1).tolist()), _elem_table(env))
    return t


#: Work spaces of at least this many bytes are mapped apart, in small pages (see :func:`_work_space`).
_MAPPED_BYTES = 1 << 22


def _work_space(count: int) -> np.ndarray:
    """An uninitialised int64 array of ``count`` entries for :class:`Scratch`.

    A large one (a stream of some ten thousand instructions and more) is an anonymous mapping of
    its own, in small pages, populated at once where the system can: NumPy asks for huge pages for
    large arrays, and on a loaded machine the kernel then compacts memory on the first touch of
    each, which cost a first run of a long stream several times its replay (the first use is
    always a first touch: the replay writes every per-instruction array).
    """
    nbytes = 8 * count
    if nbytes < _MAPPED_BYTES:
        return np.empty(count, np.int64)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)
    return np.frombuffer(mmap.mmap(-1, nbytes, flags=flags), np.int64)


class Scratch:
    """Work arrays and constants reused by the replays of one owner (a device): a replay's
    per-instruction arrays are only valid until the owner's next replay."""

    def __init__(self):
        self.flat = np.empty(0, np.int64)
        self.counters = np.empty(_NCOUNTERS, np.int64)
        #: The longest stream :attr:`flat` holds the work space of :func:`_timing_run` for (:meth:`flat_for`).
        self.fits = -1
        self._views: tuple = (-1, None)
        self._constants: tuple = (None,)
        self._packed: tuple | None = None

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``cols``, ``outs``, ``bursts`` and the loop's ``work`` space for a stream of ``n`` instructions
        (C-contiguous views)."""
        if self._views[0] == n:
            return self._views[1]
        a, b = len(_ROWS) * n, len(_OUTS) * n
        c = a + b + 3 * burst_rows(n)
        need = c + work_size(n)
        if self.flat.size < need:
            self.flat = _work_space(max(need, 2 * self.flat.size))
        f = self.flat
        views = (f[:a].reshape(len(_ROWS), n), f[a:a + b].reshape(len(_OUTS), n), f[a + b:c].reshape(burst_rows(n), 3),
                 f[c:need])
        self._views = (n, views)
        return views

    def constants(self, env: Environment, timing: mc.Timing) -> tuple:
        """``(fields, elem, params)`` of :func:`_drive` for ``env`` and ``timing`` (``params`` None:
        decode with :func:`prepare`); kept while the owner's configuration and timing stay."""
        key = (env, timing, mc.compute_cycles, mc.store_cycles)
        c = self._constants
        if len(c) == 5 and all(x is y for x, y in zip(c[:4], key, strict=True)):
            return c[4]
        value = _tables(env) + (_cost_params(env, timing),)
        self._constants = key + (value,)
        return value

    def flat_for(self, n: int) -> np.ndarray:
        """The work space of :func:`_timing_run` for a stream of ``n`` instructions: the arrays of
        :meth:`take` (at the same places; the words last scanned in the rows of ``end`` and
        ``blocked_from``), then ``n`` slots for the suspects."""
        need = suspects_at(n) + n
        if self.flat.size < need:
            self.flat = _work_space(max(need, 2 * self.flat.size))
            self._views = (-1, None)
        if n > self.fits:
            self.fits = n
        return self.flat

    def packed(self, env: Environment, timing: mc.Timing) -> np.ndarray | None:
        """The constants of :func:`_timing_run` for ``env`` and ``timing`` (offsets ``_C_*``), or None
        when the cost rules have no closed form (:func:`_cost_params`); kept while the owner's
        configuration, timing and fetch stay."""
        c = self._packed
        fetch_buffer = getattr(mc, "FETCH_BUFFER_INSNS", 0)
        if (c is not None and c[0] is env and c[1] is timing and c[2] is mc.compute_cycles
                and c[3] is mc.store_cycles and c[4] == fetch_buffer):
            return c[5]
        key = (env, timing, mc.compute_cycles, mc.store_cycles, int(fetch_buffer))
        fields, elem, params = self.constants(env, timing)
        value = None
        if params is not None:
            # depths and element bytes per memory type code 0..5 (4: a STORE's OUT)
            depths = (env.UOP_BUFF_DEPTH, env.WGT_BUFF_DEPTH, env.INP_BUFF_DEPTH, env.ACC_BUFF_DEPTH,
                      env.ACC_BUFF_DEPTH, env.ACC_BUFF_DEPTH)
            elems = tuple(env.elem_bytes(code) for code in (isa.MEM_UOP, isa.MEM_WGT, isa.MEM_INP, isa.MEM_ACC))
            elems += (env.OUT_ELEM_BYTES, env.elem_bytes(isa.MEM_ACC_8BIT))
            lat, bpc, outst = env.dram_timing
            value = np.array(fields + tuple(elem.tolist()) + tuple(params.tolist()) + depths + elems
                             + (alu_mask(env), QUEUE_DEPTH, int(timing.fetch_latency), key[4], int(lat), int(bpc),
                                int(outst)), np.int64)
            assert value.size == _C_SIZE
        self._packed = key + (value,)
        return value


def replay(env: Environment, words: np.ndarray, tokens, insn_addr: int, timing: mc.Timing,
           engine: str = "auto", scratch: Scratch | None = None, foot: np.ndarray | None = None) -> tuple[dict, dict]:
    """Time one stream; return its counters and the per-instruction arrays.

    With numba (``engine`` ``auto`` or ``numba``) the stream is decoded and replayed in one
    compiled call (:func:`_drive`); with ``python`` it is decoded by :func:`prepare` and replayed
    by the plain loop. Both give the same results.

    Parameters
    ----------
    env : Environment
        The configuration (its ``DRAM_*`` figures time the memory).
    words : ndarray of shape (n, 2)
        The stream.
    tokens : sequence of 4 int
        Tokens outstanding at the start (fsim's channel order).
    insn_addr : int
        Byte address of the stream.
    timing : Timing
        Cost constants.
    engine : {"auto", "numba", "python"}
        The compiled loop when available (``auto``), or the plain Python one.
    scratch : Scratch, optional
        Work arrays to reuse (the returned arrays are then views of them, valid until the next
        replay with the same scratch); default: fresh arrays.
    foot : ndarray, optional
        With the option COMPUTE_OVERLAP, the stream's footprint table
        (:func:`vta.sim.model.lanes.footprints`; required then, ignored otherwise).

    Returns
    -------
    counters : dict
        The hardware counters (``cycle_count``, ``<unit>_busy_cycles`` ...).
    arrays : dict
        ``start``, ``end``, ``ready``, ``dispatch``, ``blocked_from`` per instruction,
        ``bursts`` (first instruction, request cycle, first dispatch cycle per fetch burst),
        ``unit``, ``pops``, ``pushes`` (see :func:`prepare`) and ``tokens`` (the net tokens the
        stream pushes on each channel, a list of 4 int).

    Raises
    ------
    DeadlockError
        If no unit can make progress (the stream is inconsistent with fsim's acceptance).
    InvalidInstructionError
        If a token flag names a channel its stage does not have.
    ValueError
        For an unknown engine, ``numba`` without numba, or COMPUTE_OVERLAP without ``foot``.
    """
    lanes = bool(getattr(env, "COMPUTE_OVERLAP", False))
    if lanes and (foot is None or foot.shape != (words.shape[0], _NO_FOOT.shape[1])):
        raise ValueError("a configuration with COMPUTE_OVERLAP is timed with the stream's footprint table "
                         f"(vta.sim.model.lanes.footprints: {words.shape[0]} x {_NO_FOOT.shape[1]}), got "
                         f"{None if foot is None else foot.shape}")
    if engine not in ("auto", "numba", "python"):
        raise ValueError(f"engine {engine!r} is not one of 'auto', 'numba', 'python'")
    fast = compiled() if engine != "python" else None
    if fast is None and engine == "numba":
        raise ValueError("engine 'numba' asked for, but numba is not installed")
    words = np.ascontiguousarray(words, dtype=np.int64)
    n = int(words.shape[0])
    scratch = scratch or Scratch()
    cols, outs, bursts, work = scratch.take(n)
    counters = scratch.counters
    toks = np.array(tokens, np.int64)
    fetch_buffer = int(getattr(mc, "FETCH_BUFFER_INSNS", 0))
    lat, bpc, outst = env.dram_timing
    fields, elem, params = scratch.constants(env, timing) if fast is not None and not lanes else (None, None, None)
    if params is None:  # the reference decode
        a = prepare(env, words, timing)
        for r, name in enumerate(_ROWS):
            cols[r] = a[name]
    if lanes:  # the two-lane compute unit: the loop with the footprints (compiled when it can be)
        run = fast if fast is not None else core
        rc = run(n, *cols, toks, int(insn_addr), QUEUE_DEPTH, int(timing.fetch_latency), fetch_buffer, int(lat),
                 int(bpc), int(outst), *outs, bursts, counters, work, 1, np.ascontiguousarray(foot, np.int64))
    elif fast is not None:
        rc = _DRIVE(words, fields, elem, np.empty(0, np.int64) if params is None else params, cols, toks,
                    int(insn_addr), QUEUE_DEPTH, int(timing.fetch_latency), fetch_buffer, int(lat), int(bpc),
                    int(outst), outs, bursts, counters, work)
        if rc >= 1 << 40:
            i = rc - (1 << 40) - 1
            prepare(env, words, timing)  # raises the precise InvalidInstructionError of the flag
            raise InvalidInstructionError(f"instruction {i}: a token flag names a channel its stage does not have", i)
    else:
        rc = core(n, *cols, toks, int(insn_addr), QUEUE_DEPTH, int(timing.fetch_latency), fetch_buffer, int(lat),
                   int(bpc), int(outst), *outs, bursts, counters, work, 0, _NO_FOOT)
    if rc < 0:
        k = -1 - rc
        raise DeadlockError(f"timing model: no unit can start after {k} of {n} instructions; the stream was "
                            "accepted by fsim", None)
    c = counters.tolist()
    res = dict(zip(_COUNTER_KEYS, c[:len(_COUNTER_KEYS)], strict=True))  # then bursts and tokens
    out = dict(zip(_OUTS, outs, strict=True))
    out["bursts"] = bursts[:c[13]]
    out["unit"], out["pops"], out["pushes"] = cols[0], cols[1], cols[2]
    out["tokens"] = c[14:18]
    return res, out
