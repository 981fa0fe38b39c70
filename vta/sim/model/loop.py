"""The cycle model's event loop: one stream's per-instruction integer arrays in, cycles out.

:func:`core` is the loop :mod:`vta.sim.model.replay` runs (its module docstring gives the timing
rules: fetch, the three units, the memory channel, the pad writer). It is plain Python that
numba compiles (:func:`vta.sim.model.replay.compiled`); every helper here is inlined into it,
so the split into functions costs nothing at run time. The loop keeps, between events, its hot
state in local scalars (numba keeps them in registers; an array entry would wait for the stores
to every other array, which may alias it), per unit and per token channel where the code is per
unit:

* fetch's state (the next instruction to dispatch, the burst it is in, the buffered fetch's next
  request, and the older instruction whose queue entry it waits for: nothing is tried until that
  one leaves its queue);
* each unit's queue head (the queues themselves, ``queue`` and ``qpos``, are arrays), the cycle
  it is free, and its candidate: the cycle its queue head can start, recomputed only for the
  units an event changed (``dirty``, a bit mask);
* the token channels (pops and pushes made; the cycle of every push in an array);
* the memory channel (:func:`_serve`) and the loads in flight in the load and compute units.

Each turn of the loop finds the earliest event (a fetch request or dispatch, a unit's start, a
load's next read request) and handles it; a start of a fixed-cost instruction or the last read of
a load leads to its retirement, which frees the unit and pushes its tokens. After a retirement, a
queue head of fixed cost whose start is known (its unit free, it dispatched, its tokens pushed)
starts in the next turn without a search for the earliest event: its start depends on nothing the
other events change, and what it changes (its end, pushes, queue entry) comes after it (on the
conv-like stream of ``benchmarks/model_loop.py``, 8 of 9 instructions start so).
"""

from __future__ import annotations

import numpy as np

__all__ = ["HELPERS", "QUEUE_DEPTH", "burst_rows", "core", "work_size"]

#: Index cast of the hot lookups (their indices are never negative: an unsigned one spares the
#: compiled loop the wraparound of negative indices in chains of dependent loads).
_U = np.uint64
#: Entries of each instruction queue.
QUEUE_DEPTH = 512
#: Credit the channel banks at most while idle (bytes; two beats), as the shim does.
CREDIT_CAP = 16
#: A queue entry is freed when its instruction retires (the sequencer pops the queue then);
#: fetch can dispatch into it this many cycles after the retirement cycle ``end``.
QUEUE_FREE = 2
#: The same for the buffered fetch (it dispatches in the cycle the entry is freed).
QUEUE_FREE_BUFFERED = 0
#: Beat intervals kept per load for its pad writer (more are merged into the last one).
PAD_INTERVALS = 256
#: Entries of :func:`core`'s small state in its work space: the loads in flight (:data:`LD_ROW`
#: ...) and the last instruction of each COMPUTE_OVERLAP lane (each set before it is read), the
#: counts of the set-up pass (kept for a run on the same stream), then
#: the pad writers' intervals and the memory channel's ring of the last bursts (at most 1024).
_STATE_SET = 64
_STATE = _STATE_SET + 4 * PAD_INTERVALS + 1024
#: The LOAD's timing rules: its first request ``LOAD_REQUEST`` cycles after its start, its pad
#: writer from ``start + PAD_START``, its retirement ``LOAD_RETIRE`` cycles after its last write.
LOAD_REQUEST = 2
PAD_START = 1
LOAD_RETIRE = 1
#: The unit that pops each token channel (fsim's order): compute, load, compute, store.
CONSUMER = (1, 0, 1, 2)
#: :func:`_token_at`'s answer for a token not pushed yet.
_NOT_PUSHED = -(1 << 62)
#: Rows of the state of the loads in flight (a column per unit): the row and byte offset of the
#: next burst, the first and last beat (memory cycles), the beat intervals kept.
LD_ROW, LD_OFF, LD_FIRST, LD_LAST, LD_NIV = range(5)


#: The helpers numba inlines into :func:`core` (with :func:`work_size`).
HELPERS = ("work_size", "burst_rows", "_pad_end", "_fetch_burst", "_serve", "_setup", "_queue_older", "_queue_free_at",
           "_dispatch", "_dispatch_arrived", "_fetch_event", "_fetch_key", "_token_at", "_tokens_ready", "_candidate",
           "_push", "_request_buffered", "_request_burst", "_load_begins", "_load_requests", "_meets", "_conflict",
           "_lanes_candidate", "_lanes_retire")

#: Columns of the footprint table of the option COMPUTE_OVERLAP (:mod:`vta.sim.model.lanes`): the
#: lane (0 GEMM, 1 the other), the acc rows written and read (valid, lowest, highest), the acc rows
#: only read, the uop entries (0 none, 1 read, 2 written; lowest, highest) and the cycles the
#: footprint scanner needs (0: none).
F_LANE, F_DV, F_DLO, F_DHI, F_SV, F_SLO, F_SHI, F_UF, F_ULO, F_UHI, F_SCAN = range(11)
#: Entries of the compute unit's retirement buffer with COMPUTE_OVERLAP (hw/vta_compute_ov.sv).
ROB_DEPTH = 32


def burst_rows(n: int) -> int:
    """Rows of :func:`core`'s ``bursts`` for a stream of ``n`` instructions: a fetch burst never
    crosses a 128-byte block and at most two start in one (the second one instruction long, when
    the stream is not 16-byte aligned), and ``n`` instructions span at most ``n / 8 + 2`` blocks."""
    return n // 4 + 5


def work_size(n: int) -> int:
    """Integers of scratch space :func:`core` needs for a stream of ``n`` instructions."""
    return 7 * n + _STATE


def _pad_end(t0, iv, niv, rows, xs, xp0, xp1, yp0, yp1):
    """First cycle the read engine's pad writer is idle, started at ``t0``: it writes one pad element
    per cycle in the cycles without a data beat of its load (the ``niv`` sorted, disjoint intervals
    ``iv[k, 0]..iv[k, 1]``, inclusive), and spends one cycle per row and one per data row."""
    width = xp0 + xs + xp1
    height = yp0 + rows + yp1
    if height == 0 or (yp0 + yp1 == 0 and xp0 + xp1 == 0):
        return t0
    t = t0
    k_iv = 0
    for r in range(height):
        data_row = yp0 <= r < yp0 + rows
        for seg in range(2):
            k = (xp0 if seg == 0 else xp1) if data_row else (width if seg == 0 else 0)
            while k > 0:  # k pad writes, each in a cycle without a data beat
                while k_iv < niv and iv[k_iv, 1] < t:
                    k_iv += 1
                if k_iv >= niv:
                    t += k
                    k = 0
                elif iv[k_iv, 0] <= t:
                    t = iv[k_iv, 1] + 1
                else:
                    free = iv[k_iv, 0] - t
                    use = k if k < free else free
                    t += use
                    k -= use
            if seg == 0 and data_row:
                t += 1  # the cycle that skips the data
        t += 1  # end of the row
    return t


def _fetch_burst(insn_addr, first, n):
    """Instructions in fetch's burst starting at instruction ``first`` of ``n``: at most 8 (a
    burst of 16 beats), not across a 128-byte boundary, at least 1."""
    m = (128 - (insn_addr + 16 * first) % 128) // 16
    if m > 8:
        m = 8
    if m > n - first:
        m = n - first
    if m < 1:
        m = 1
    return m


def _serve(c_req, c_beat, c_n, c_cr, c_crt, ring, r, beats, latency, bytes_per_cycle, max_outstanding):
    """Serve one read burst requested at cycle ``r``. The channel's state: its next free request
    cycle, next free beat cycle, bursts issued, credit and cycle of the credit; ``ring`` holds the
    last-beat cycles of the recent bursts. Returns (request cycle, first beat cycle, last beat
    cycle) and the channel's new state."""
    a = r if r > c_req else c_req
    issue = a
    if max_outstanding > 0 and c_n >= max_outstanding:
        prev = ring[_U(c_n % max_outstanding)] + 1
        if prev > issue:
            issue = prev
    p = issue + latency - 1
    if c_beat > p:
        p = c_beat
    if bytes_per_cycle >= 8:
        first = p
        last = p + beats - 1
    else:
        first = -1
        for _b in range(beats):
            cr = c_cr + (p - c_crt) * bytes_per_cycle
            if cr > CREDIT_CAP:
                cr = CREDIT_CAP
            if cr < 8:
                p += (8 - cr + bytes_per_cycle - 1) // bytes_per_cycle
                cr = c_cr + (p - c_crt) * bytes_per_cycle
                if cr > CREDIT_CAP:
                    cr = CREDIT_CAP
            c_cr = cr - 8
            c_crt = p
            if first < 0:
                first = p
            p += 1
        last = p - 1
    if max_outstanding > 0:
        ring[_U(c_n % max_outstanding)] = last
    return a, first, last, a + 1, last + 1, c_n + 1, c_cr, c_crt


def _setup(n, unit, pops, pushes, start, end, dispatch, queue, qpos, dcyc, qend, lanes, kept, saved):
    """Reset the per-instruction state the loop reads before it writes it (``start``, ``end`` and
    ``dcyc`` only with COMPUTE_OVERLAP, ``lanes``) and fill the three queues; return the net tokens
    the stream pushes on each channel (pushes minus pops), the lengths of the load and compute
    queues and where each channel's push cycles start in the loop's flat array of them (channel
    after channel: at most two pushes per instruction, so ``2 n`` entries). The counts are kept in
    ``saved``; with ``kept``, the queues and ``saved`` are those of an earlier run on the same
    stream and are used as they are."""
    # (the set-up passes count in scalars: an array entry updated at every instruction waits for
    # its previous store when compiled)
    if lanes != 0:
        for i in range(n):
            start[i] = -1
            end[i] = -1
            dcyc[i] = -1
    if kept != 0:
        for i in range(n):
            dispatch[i] = -1
            qend[i] = -1
    else:
        q0 = 0
        q1 = 0
        p0 = 0
        p1 = 0
        p2 = 0
        p3 = 0
        net0 = 0
        net1 = 0
        net2 = 0
        net3 = 0
        for i in range(n):
            u = unit[i]
            if u == 0:
                q0 += 1
            elif u == 1:
                q1 += 1
            dispatch[i] = -1
            qend[i] = -1
            pu = pushes[i]
            po = pops[i]
            p0 += pu & 1
            p1 += (pu >> 1) & 1
            p2 += (pu >> 2) & 1
            p3 += pu >> 3
            net0 -= po & 1
            net1 -= (po >> 1) & 1
            net2 -= (po >> 2) & 1
            net3 -= po >> 3
        f0 = 0
        f1 = q0
        f2 = q0 + q1
        for i in range(n):
            u = unit[i]
            if u == 0:
                qpos[i] = f0
                queue[f0] = i
                f0 += 1
            elif u == 1:
                qpos[i] = f1 - q0
                queue[f1] = i
                f1 += 1
            else:
                qpos[i] = f2 - q0 - q1
                queue[f2] = i
                f2 += 1
        saved[0] = net0 + p0
        saved[1] = net1 + p1
        saved[2] = net2 + p2
        saved[3] = net3 + p3
        saved[4] = q0
        saved[5] = q1
        saved[6] = p0
        saved[7] = p1
        saved[8] = p2
    p0 = saved[6]
    p1 = saved[7]
    p2 = saved[8]
    return saved[0], saved[1], saved[2], saved[3], saved[4], saved[5], (0, p0, p0 + p1, p0 + p1 + p2)


def _queue_older(i, unit, qpos, queue, q0, q1, queue_depth):
    """The older instruction whose entry in its unit's queue instruction ``i`` takes (the queues
    of the load and compute units hold ``q0`` and ``q1`` instructions), -1 for none."""
    k = qpos[_U(i)]
    if k < queue_depth:
        return -1
    u = unit[_U(i)]
    base = 0 if u == 0 else (q0 if u == 1 else q0 + q1)
    return queue[_U(base + k - queue_depth)]


def _queue_free_at(i, t, unit, qpos, queue, q0, q1, qend, queue_depth, qfree):
    """The first cycle from ``t`` at which instruction ``i`` finds room in its unit's queue: the
    older instruction whose entry it takes must have left it (-1: not known yet)."""
    older = _queue_older(i, unit, qpos, queue, q0, q1, queue_depth)
    if older < 0:
        return t
    e = qend[_U(older)]
    if e < 0:
        return -1
    return t if e + qfree <= t else e + qfree


def _dispatch(i, d, free_at, unit, qpos, h0, h1, h2, dispatch, blocked_from, stall0, dirty):
    """Dispatch instruction ``i`` from cycle ``d``, or from ``free_at`` when its queue is full until
    then (fetch stalls); return the dispatch cycle, fetch's stall cycles and the units whose
    candidate changes (its unit's, when it is the queue head: ``h0``, ``h1``, ``h2``)."""
    blocked_from[_U(i)] = d
    if free_at > d:
        stall0 += free_at - d
        d = free_at
    dispatch[_U(i)] = d
    u = unit[_U(i)]
    k = qpos[_U(i)]
    if u == 0:
        if k == h0:
            dirty |= 1
    elif u == 1:
        if k == h1:
            dirty |= 2
    elif k == h2:
        dirty |= 4
    return d, stall0, dirty


def _dispatch_arrived(n, f_next, fr, fm, fetch_buffer, next_dispatch, fready, unit, qpos, queue, q0, q1, qend, h0,
                      h1, h2, queue_depth, qfree, dispatch, blocked_from, stall0, ret0, busy0, dirty):
    """Buffered fetch: dispatch each fetched instruction as soon as its cycle is known (its beats
    have arrived and its queue entry's older instruction has left), unless a request is pending
    (fetch makes the request first). A dispatch changes nothing but fetch and the candidate of a
    queue head's unit, which starts after the dispatch, so handling it early keeps the events'
    order (a request it enables comes after it as well). Returns fetch's next instruction, its
    next dispatch cycle, its stall, retired and busy counts, ``dirty``, and the older instruction
    whose queue entry fetch waits for (-1: none; nothing is dispatched until it leaves)."""
    wait = -1
    while f_next < fr:
        if fr < n and fr + fm - fetch_buffer - 1 < f_next:
            break  # fetch's next event is a request
        i = f_next
        fi = fready[_U(i)]
        d = next_dispatch if next_dispatch > fi else fi
        free_at = d
        older = _queue_older(i, unit, qpos, queue, q0, q1, queue_depth)
        if older >= 0:
            e = qend[_U(older)]
            if e < 0:
                blocked_from[_U(i)] = d
                wait = older
                break
            if e + qfree > d:
                free_at = e + qfree
        d, stall0, dirty = _dispatch(i, d, free_at, unit, qpos, h0, h1, h2, dispatch, blocked_from, stall0, dirty)
        ret0 += 1
        next_dispatch = d + 1
        f_next += 1
        if f_next == n:  # fetch is busy from launch to its last dispatch, unless blocked
            busy0 = d + 1 - stall0
    return f_next, next_dispatch, stall0, ret0, busy0, dirty, wait


def _fetch_event(n, f_next, fr, fm, fetch_buffer, last_req, fetch_free, burst_left, next_dispatch, dispatch, unit,
                 qpos, queue, q0, q1, qend, queue_depth, qfree):
    """Fetch's next event: its cycle (-1: none yet) and whether it is a burst request (else a
    dispatch)."""
    f_time = -1
    f_req = False
    if fetch_buffer > 0:
        if fr < n:  # request the next burst once the buffer has room for it
            frees = fr + fm - fetch_buffer - 1  # the dispatch that makes room
            if frees < f_next:
                f_time = last_req + 1
                if frees >= 0 and dispatch[frees] + 1 > f_time:
                    f_time = dispatch[frees] + 1
                if f_time < 0:
                    f_time = 0
                f_req = True
    elif f_next < n:
        f_time = fetch_free if burst_left == 0 else next_dispatch
        f_req = burst_left == 0
    if f_time >= 0 and f_next < n and not f_req:  # a full queue blocks dispatch, not reading
        f_time = _queue_free_at(f_next, f_time, unit, qpos, queue, q0, q1, qend, queue_depth, qfree)
    return f_time, f_req


def _fetch_key(f_time, f_req, fetch_buffer, c_req):
    """The cycle fetch's event competes at: the drain-then-fetch RTL requests a burst two cycles
    before the model's ``fetch_free``, the buffered fetch at its request cycle (both measured on
    tsim), and a request waits for a free request cycle of the channel (``c_req``)."""
    if not f_req:
        return f_time
    key = f_time if fetch_buffer > 0 else f_time - 2
    return c_req if c_req > key else key


def _token_at(t, k, tok, cnt, push_t, off):
    """The cycle from ``t`` on at which a channel (``k`` pops made, ``tok`` tokens at the start,
    ``cnt`` pushes made, their cycles in ``push_t`` from ``off``) has the token of its next pop, or
    :data:`_NOT_PUSHED`."""
    if k < tok:
        return t
    j = k - tok
    if j >= cnt:
        return _NOT_PUSHED
    p = push_t[_U(off + j)]
    return p if p > t else t


def _tokens_ready(t, mask, pp0, pp1, pp2, pp3, tk0, tk1, tk2, tk3, pc0, pc1, pc2, pc3, push_t, po):
    """The cycle from ``t`` on at which every token in ``mask`` (a bit per channel) has been pushed,
    or -1 when one of them is not pushed yet (``pp*``: pops made, ``tk*``: tokens at the start,
    ``pc*``: pushes made, per channel; ``po``: where each channel's push cycles start in ``push_t``)."""
    if mask & 1:
        t = _token_at(t, pp0, tk0, pc0, push_t, po[0])
    if mask & 2 and t != _NOT_PUSHED:
        t = _token_at(t, pp1, tk1, pc1, push_t, po[1])
    if mask & 4 and t != _NOT_PUSHED:
        t = _token_at(t, pp2, tk2, pc2, push_t, po[2])
    if mask & 8 and t != _NOT_PUSHED:
        t = _token_at(t, pp3, tk3, pc3, push_t, po[3])
    return -1 if t == _NOT_PUSHED else t


def _candidate(head, qlen, base, free_u, queue, dispatch, pops, pp0, pp1, pp2, pp3, tk0, tk1, tk2, tk3, pc0, pc1,
               pc2, pc3, push_t, po):
    """A unit's candidate: the cycle its queue head (entry ``head`` of ``qlen`` from ``base``) can
    start, -1 when it cannot yet (an empty queue, a head not dispatched or a pop without its push),
    and the cycles it waits for tokens."""
    if head >= qlen:
        return -1, 0
    i = queue[_U(base + head)]
    d = dispatch[_U(i)]
    if d < 0:
        return -1, 0
    t0 = d + 1 if d + 1 > free_u else free_u
    t = _tokens_ready(t0, pops[_U(i)], pp0, pp1, pp2, pp3, tk0, tk1, tk2, tk3, pc0, pc1, pc2, pc3, push_t, po)
    if t < 0:
        return -1, 0
    return t, t - t0


def _push(m, e, push_t, po, pc0, pc1, pc2, pc3, dirty):
    """Push the tokens of ``m`` (a bit per channel) at cycle ``e``; their consumers (:data:`CONSUMER`)
    become ``dirty``. Returns the pushes made per channel and ``dirty``."""
    if m & 1:
        push_t[_U(po[0] + pc0)] = e
        pc0 += 1
        dirty |= 1 << CONSUMER[0]
    if m & 2:
        push_t[_U(po[1] + pc1)] = e
        pc1 += 1
        dirty |= 1 << CONSUMER[1]
    if m & 4:
        push_t[_U(po[2] + pc2)] = e
        pc2 += 1
        dirty |= 1 << CONSUMER[2]
    if m & 8:
        push_t[_U(po[3] + pc3)] = e
        pc3 += 1
        dirty |= 1 << CONSUMER[3]
    return pc0, pc1, pc2, pc3, dirty


def _request_buffered(n, fr, fm, f_time, insn_addr, fetch_latency, c_req, c_beat, c_n, c_cr, c_crt, ring, latency,
                      bytes_per_cycle, max_outstanding, fready, bursts, nbursts):
    """Buffered fetch: request the burst of instructions ``fr .. fr+fm-1`` at ``f_time`` and note
    when each can be dispatched (its second beat, then the dispatch latency). Returns the next
    burst's first instruction and size, the bursts made and the channel's state."""
    m = fm
    _a, first, last, c_req, c_beat, c_n, c_cr, c_crt = _serve(c_req, c_beat, c_n, c_cr, c_crt, ring, f_time, 2 * m,
                                                              latency, bytes_per_cycle, max_outstanding)
    for j in range(m):
        beat = 2 * j + 1
        fready[fr + j] = first + 1 + (beat * (last - first)) // (2 * m - 1) + fetch_latency
    bursts[nbursts, 0] = fr
    bursts[nbursts, 1] = f_time
    bursts[nbursts, 2] = fready[fr + m - 1]
    fr += m
    if fr < n:
        fm = _fetch_burst(insn_addr, fr, n)
    return fr, fm, nbursts + 1, c_req, c_beat, c_n, c_cr, c_crt


def _request_burst(n, i, fetch_free, insn_addr, fetch_latency, c_req, c_beat, c_n, c_cr, c_crt, ring, latency,
                   bytes_per_cycle, max_outstanding, bursts, nbursts):
    """Drain-then-fetch: read the burst starting at instruction ``i`` (requested two cycles before
    ``fetch_free``). Returns the cycle of its first dispatch, its size and the channel's state."""
    m = _fetch_burst(insn_addr, i, n)
    _a, first, last, c_req, c_beat, c_n, c_cr, c_crt = _serve(c_req, c_beat, c_n, c_cr, c_crt, ring, fetch_free - 2,
                                                              2 * m, latency, bytes_per_cycle, max_outstanding)
    next_dispatch = last + 4 + fetch_latency - 1  # its beats arrive at last + 4
    bursts[nbursts, 0] = i
    bursts[nbursts, 1] = fetch_free
    bursts[nbursts, 2] = next_dispatch
    return next_dispatch, m, c_req, c_beat, c_n, c_cr, c_crt


def _load_begins(ld, u):
    """A LOAD with data starts in unit ``u``: its first burst is at row 0, offset 0."""
    ld[LD_ROW, u] = 0
    ld[LD_OFF, u] = 0
    ld[LD_FIRST, u] = -1
    ld[LD_NIV, u] = 0


def _load_requests(u, i, r, i2, r2, best, best_t, f_time, f_req, fetch_buffer, ld, ld_iv, addr, stride, row_bytes,
                   rows, client, c_req, c_beat, c_n, c_cr, c_crt, ring, latency, bytes_per_cycle, max_outstanding):
    """The read requests of load ``i`` in flight in unit ``u`` (next request at ``r``; the other
    unit's load ``i2``, -1 for none, requests next at ``r2``), burst after burst while its next
    request stays the earliest event (a request changes nothing but the channel, so the other
    candidates stand). A burst is at most 16 beats, within one row and one 128-byte block; the
    cycles its beats reach the unit are kept as intervals for the pad writer (``ld``: the row and
    byte offset of the next burst, the first and last beat, the intervals kept, per unit).
    Returns whether the load's last burst was requested, its next request cycle and the
    channel's state."""
    u2 = 1 - u
    while True:
        row_addr = addr[i] + ld[LD_ROW, u] * stride[i]
        lo = row_addr - row_addr % 8
        nbeat_row = (row_addr % 8 + row_bytes[i] + 7) // 8
        at = lo + ld[LD_OFF, u]
        left = nbeat_row - ld[LD_OFF, u] // 8
        beats = 16 - (at % 128) // 8
        if beats > left:
            beats = left
        a, first, last, c_req, c_beat, c_n, c_cr, c_crt = _serve(c_req, c_beat, c_n, c_cr, c_crt, ring, r, beats,
                                                                 latency, bytes_per_cycle, max_outstanding)
        if ld[LD_FIRST, u] < 0:
            ld[LD_FIRST, u] = first
        ld[LD_LAST, u] = last
        k = ld[LD_NIV, u]
        if k > 0 and (ld_iv[u, k - 1, 1] + 1 >= first + 2 or k == PAD_INTERVALS):
            ld_iv[u, k - 1, 1] = last + 2  # contiguous with the previous beats (or no room)
        else:
            ld_iv[u, k, 0] = first + 2
            ld_iv[u, k, 1] = last + 2
            ld[LD_NIV, u] = k + 1
        if beats < left:
            ld[LD_OFF, u] += 8 * beats
            r = a + 1
        else:
            ld[LD_ROW, u] += 1
            ld[LD_OFF, u] = 0
            if ld[LD_ROW, u] >= rows[i]:
                return True, r, c_req, c_beat, c_n, c_cr, c_crt
            r = a + 2  # one cycle to set up the next row
        # the pick of the main loop for the next event, with this load's next request
        t = r if r > c_req else c_req
        if best >= 0 and t >= best_t:
            return False, r, c_req, c_beat, c_n, c_cr, c_crt
        if i2 >= 0:
            t2 = r2 if r2 > c_req else c_req
            c2 = client[i2]
            if t2 < t or (t2 == t and (c2 < client[i] or (c2 == client[i] and u2 == 0))):
                return False, r, c_req, c_beat, c_n, c_cr, c_crt
        if f_time >= 0:
            f_key = _fetch_key(f_time, f_req, fetch_buffer, c_req)
            if f_key < t or (f_key == t and f_req):
                return False, r, c_req, c_beat, c_n, c_cr, c_crt


def _meets(alo, ahi, blo, bhi):
    return alo <= bhi and blo <= ahi


def _conflict(foot, i, j):
    """Whether the footprints of instructions ``i`` and ``j`` conflict (hw/vta_compute_ov.sv)."""
    if foot[i, F_DV] and foot[j, F_DV] and _meets(foot[i, F_DLO], foot[i, F_DHI], foot[j, F_DLO], foot[j, F_DHI]):
        return True
    if foot[i, F_DV] and foot[j, F_SV] and _meets(foot[i, F_DLO], foot[i, F_DHI], foot[j, F_SLO], foot[j, F_SHI]):
        return True
    if foot[i, F_SV] and foot[j, F_DV] and _meets(foot[i, F_SLO], foot[i, F_SHI], foot[j, F_DLO], foot[j, F_DHI]):
        return True
    return (foot[i, F_UF] > 0 and foot[j, F_UF] > 0 and (foot[i, F_UF] == 2 or foot[j, F_UF] == 2)
            and _meets(foot[i, F_ULO], foot[i, F_UHI], foot[j, F_ULO], foot[j, F_UHI]))


def _lanes_candidate(i, t0, take_free, foot, last_lane, dcyc, qpos, queue, q0, end):
    """COMPUTE_OVERLAP: the first cycle from ``t0`` the compute unit can take its head ``i`` but for
    tokens (-1: not known yet). Its lane must be free (the lane's last instruction done), it must
    not conflict with the instruction in flight in the other lane, the retirement buffer must have
    room (the instruction ROB_DEPTH older retired) and the footprint scanner must be done: it
    starts once ``i`` is the queue head (``take_free``: the cycle after the previous take) and no
    LOAD UOP into its uop range is in flight, and takes ``foot[i, F_SCAN]`` cycles (the compute
    queue starts at ``q0``)."""
    lane = foot[i, F_LANE]
    t = t0
    j = last_lane[lane]
    if j >= 0:
        if dcyc[j] < 0:
            return -1
        if dcyc[j] + 1 > t:
            t = dcyc[j] + 1
    o = last_lane[1 - lane]
    if o >= 0 and _conflict(foot, i, o):
        if dcyc[o] < 0:
            return -1
        if dcyc[o] + 1 > t:
            t = dcyc[o] + 1
    k = qpos[i]
    if k >= ROB_DEPTH:
        old = queue[q0 + k - ROB_DEPTH]
        if end[old] < 0:
            return -1
        if end[old] > t:
            t = end[old]
    if foot[i, F_SCAN] > 0:
        sc = take_free
        m = last_lane[1]
        if m >= 0 and foot[m, F_UF] == 2 and _meets(foot[m, F_ULO], foot[m, F_UHI], foot[i, F_ULO], foot[i, F_UHI]):
            if dcyc[m] < 0:
                return -1
            if dcyc[m] + 1 > sc:
                sc = dcyc[m] + 1
        if sc + foot[i, F_SCAN] > t:
            t = sc + foot[i, F_SCAN]
    return t


def _lanes_retire(rp, last_r, h1, q0, queue, dcyc, start, end, busy2, ret2, pushes, push_t, po, pc0, pc1, pc2, pc3,
                  dirty, finish, finish_end, done):
    """COMPUTE_OVERLAP: retire, in program order and one per cycle, the compute unit's taken
    instructions (``h1`` of them; its queue starts at ``q0``) whose done cycle is known (from its
    ``rp``-th, after a retirement at ``last_r``). Returns the new ``rp``, ``last_r``, the unit's
    busy cycles and retirements, the pushes per channel, ``dirty``, ``finish_end`` and ``done``."""
    while rp < h1:
        i = queue[_U(q0 + rp)]
        if dcyc[i] < 0:
            break
        r = dcyc[i]
        if last_r + 1 > r:
            r = last_r + 1
        e = r + 1
        end[i] = e
        busy2 += e - start[i]
        ret2 += 1
        pc0, pc1, pc2, pc3, dirty = _push(pushes[i], e, push_t, po, pc0, pc1, pc2, pc3, dirty | 2)
        if finish[i] and finish_end < 0:
            finish_end = e
        done += 1
        last_r = r
        rp += 1
    return rp, last_r, busy2, ret2, pc0, pc1, pc2, pc3, dirty, finish_end, done


def core(n, unit, pops, pushes, cost, finish, client, addr, row_bytes, stride, rows, xp0, xp1, yp0, yp1, xs,
         tokens, insn_addr, queue_depth, fetch_latency, fetch_buffer, latency, bytes_per_cycle, max_outstanding,
         start, end, ready, dispatch, blocked_from, bursts, counters, work, lanes, foot):
    """The replay loop (see the module docstrings); fills the output arrays, returns 0, or -1 - k
    when no unit can make progress after k instructions (an inconsistent stream).

    ``lanes`` (0 or 1, plus 2 when ``work`` holds the set-up of an earlier run on the same
    per-instruction arrays, whose queues are then not made again): the compute unit of the option
    COMPUTE_OVERLAP, with ``foot`` the
    footprint table (:mod:`vta.sim.model.lanes`; unread without the option). It takes its queue
    head (pops its tokens, frees its queue entry) in program order, at most one per cycle, into
    the GEMM lane or the other one (:func:`_lanes_candidate`); an instruction is done ``cost - 1``
    cycles after it is taken (a LOAD when its data and pads are written) and retires, pushing its
    tokens, in program order, one per cycle, from the cycle it is done.

    ``bursts`` (:func:`burst_rows` x 3): per fetch burst its first instruction, request cycle and first dispatch
    cycle; ``counters``: cycle_count, then busy, stall, retired (4 each, fetch load compute store),
    then the number of fetch bursts, then the net tokens the stream pushes on each channel (4);
    ``work``: at least :func:`work_size` integers of scratch space.
    """
    # the per-instruction state in ``work``: the queues (load, compute, store instructions in
    # program order), each instruction's entry in its queue, the buffered fetch's cycle it can be
    # dispatched, the cycle of every push per channel (entries below the push count are read),
    # then the small state, a compute instruction's done cycle with COMPUTE_OVERLAP (dcyc, -1
    # unknown) and the cycle after the one the queue entry of each instruction is freed in
    # (qend: its retirement; with COMPUTE_OVERLAP a compute instruction's take)
    queue = work[:n]
    qpos = work[n:2 * n]
    fready = work[2 * n:3 * n]
    push_t = work[3 * n:5 * n]
    st = work[5 * n:5 * n + _STATE]
    dcyc = work[5 * n + _STATE:6 * n + _STATE]
    qend = work[6 * n + _STATE:7 * n + _STATE]
    kept = lanes >> 1
    lanes = lanes & 1
    net0, net1, net2, net3, q0, q1, po = _setup(n, unit, pops, pushes, start, end, dispatch, queue, qpos, dcyc, qend,
                                                lanes, kept, st[16:25])
    q2 = n - q0 - q1
    # per unit (0 load, 1 compute, 2 store; fetch's counters are the 0th): the queue head, the cycle
    # it is free, its candidate (the cycle its queue head can start, -1 when it cannot yet, and the
    # cycles it waits for tokens), recomputed only for the units an event changed (``dirty``, a
    # bit mask), its busy and stall cycles and retirements; per channel: pops made, tokens at the
    # start, pushes made
    h0 = h1 = h2 = 0
    free0 = free1 = free2 = 0
    c0t = c1t = c2t = -1
    c0w = c1w = c2w = 0
    busy0 = busy1 = busy2 = busy3 = 0
    stall0 = stall1 = stall2 = stall3 = 0
    ret0 = ret1 = ret2 = ret3 = 0
    pp0 = pp1 = pp2 = pp3 = 0
    pc0 = pc1 = pc2 = pc3 = 0
    tk0 = tokens[0]
    tk1 = tokens[1]
    tk2 = tokens[2]
    tk3 = tokens[3]
    dirty = 7
    # the memory channel: next free request cycle, next free beat cycle, bursts issued, credit,
    # cycle of the credit (fetch's first request is made before cycle 0); and the last-beat cycle
    # of the recent bursts
    c_req = -(1 << 40)
    c_beat = -(1 << 40)
    c_n = 0
    c_cr = CREDIT_CAP
    c_crt = -(1 << 40)
    ring = st[_STATE_SET + 4 * PAD_INTERVALS:_STATE]
    # the loads in flight in the load (0) and compute (1) units: the instruction (-1 none) and the
    # cycle of its next request; in ``ld`` the row and byte offset of its next burst, its first and
    # last beat (memory cycles), and in ``ld_iv`` the cycles its beats reach the unit as intervals
    # (merged when full)
    ld_insn0 = ld_insn1 = -1
    ld_req0 = ld_req1 = 0
    ld = st[0:10].reshape((5, 2))
    ld_iv = st[_STATE_SET:_STATE_SET + 4 * PAD_INTERVALS].reshape((2, PAD_INTERVALS, 2))
    # COMPUTE_OVERLAP: the last instruction each lane took, the compute instructions retired, the
    # cycle of the last retirement
    last_lane = st[10:12]
    last_lane[0] = -1
    last_lane[1] = -1
    rp = 0
    last_r = -(1 << 40)
    # fetch: the next instruction to dispatch, those left in its burst, the next dispatch cycle,
    # the cycle fetch is free to request; buffered (fetch_buffer > 0): the next instruction to
    # request, its burst's size, the last request cycle
    f_next = 0
    burst_left = 0
    next_dispatch = 0
    fetch_free = 0
    nbursts = 0
    fr = 0
    fm = _fetch_burst(insn_addr, 0, n) if n > 0 else 0
    last_req = -1
    qfree = QUEUE_FREE if fetch_buffer == 0 else QUEUE_FREE_BUFFERED
    wait = -1  # the buffered fetch waits for this instruction to leave its queue (-1: none)
    finish_end = -1
    done = 0
    run_u = -1  # a unit whose queue head starts in the next turn, at run_t (-1: none)
    run_t = 0
    while done < n:
        if run_u >= 0:  # the start found at the last retirement (see there)
            pick = 2
            best = run_u
            best_t = run_t
            run_u = -1
        else:
            if fetch_buffer > 0 and (wait < 0 or qend[_U(wait)] >= 0):
                f_next, next_dispatch, stall0, ret0, busy0, dirty, wait = _dispatch_arrived(
                    n, f_next, fr, fm, fetch_buffer, next_dispatch, fready, unit, qpos, queue, q0, q1, qend, h0, h1, h2,
                    queue_depth, qfree, dispatch, blocked_from, stall0, ret0, busy0, dirty)
            f_time, f_req = _fetch_event(n, f_next, fr, fm, fetch_buffer, last_req, fetch_free, burst_left,
                                         next_dispatch, dispatch, unit, qpos, queue, q0, q1, qend, queue_depth, qfree)
            if dirty != 0:
                if dirty & 1:
                    c0t = -1
                    if ld_insn0 < 0:
                        c0t, c0w = _candidate(h0, q0, 0, free0, queue, dispatch, pops, pp0, pp1, pp2, pp3, tk0, tk1,
                                              tk2, tk3, pc0, pc1, pc2, pc3, push_t, po)
                if dirty & 2:
                    c1t = -1
                    if lanes != 0:  # the compute unit of COMPUTE_OVERLAP
                        if h1 < q1:
                            i = queue[q0 + h1]
                            if dispatch[i] >= 0:
                                t0 = dispatch[i] + 1
                                if free1 > t0:
                                    t0 = free1
                                t1 = _lanes_candidate(i, t0, t0, foot, last_lane, dcyc, qpos, queue, q0, end)
                                t = -1 if t1 < 0 else _tokens_ready(t1, pops[i], pp0, pp1, pp2, pp3, tk0, tk1, tk2,
                                                                    tk3, pc0, pc1, pc2, pc3, push_t, po)
                                if t >= 0:
                                    c1t = t
                                    c1w = t - t1
                    elif ld_insn1 < 0:
                        c1t, c1w = _candidate(h1, q1, q0, free1, queue, dispatch, pops, pp0, pp1, pp2, pp3, tk0, tk1,
                                              tk2, tk3, pc0, pc1, pc2, pc3, push_t, po)
                if dirty & 4:
                    c2t, c2w = _candidate(h2, q2, q0 + q1, free2, queue, dispatch, pops, pp0, pp1, pp2, pp3, tk0, tk1,
                                          tk2, tk3, pc0, pc1, pc2, pc3, push_t, po)
                dirty = 0
            # the earliest start (the lowest unit of a tie)
            best = -1
            best_t = 0
            if c0t >= 0:
                best = 0
                best_t = c0t
            if c1t >= 0 and (best < 0 or c1t < best_t):
                best = 1
                best_t = c1t
            if c2t >= 0 and (best < 0 or c2t < best_t):
                best = 2
                best_t = c2t
            # the load in flight whose next read request comes first: a request waits for a free
            # request cycle, and in one cycle the lowest client wins (fixed priority)
            lu = -1
            lt = 0
            if ld_insn0 >= 0:
                lu = 0
                lt = ld_req0 if ld_req0 > c_req else c_req
            if ld_insn1 >= 0:
                t = ld_req1 if ld_req1 > c_req else c_req
                if lu < 0 or t < lt or (t == lt and client[ld_insn1] < client[ld_insn0]):
                    lu = 1
                    lt = t
            f_key = _fetch_key(f_time, f_req, fetch_buffer, c_req)
            # the earliest event: 1 fetch, 2 a unit's start, 3 a load's request
            pick = 0
            pt = 0
            if best >= 0:
                pick, pt = 2, best_t
            if lu >= 0 and (pick == 0 or lt < pt):
                pick, pt = 3, lt
            if f_time >= 0 and (pick == 0 or f_key < pt or (f_key == pt and (pick != 3 or f_req))):
                pick, pt = 1, f_key
        if pick == 0:
            return -1 - done
        if pick == 1:
            if fetch_buffer > 0 and f_req:
                fr, fm, nbursts, c_req, c_beat, c_n, c_cr, c_crt = _request_buffered(
                    n, fr, fm, f_time, insn_addr, fetch_latency, c_req, c_beat, c_n, c_cr, c_crt, ring, latency,
                    bytes_per_cycle, max_outstanding, fready, bursts, nbursts)
                last_req = f_time
            elif burst_left == 0 and fetch_buffer == 0:
                next_dispatch, burst_left, c_req, c_beat, c_n, c_cr, c_crt = _request_burst(
                    n, f_next, fetch_free, insn_addr, fetch_latency, c_req, c_beat, c_n, c_cr, c_crt, ring, latency,
                    bytes_per_cycle, max_outstanding, bursts, nbursts)
                busy0 += next_dispatch - fetch_free
                nbursts += 1
            else:
                i = f_next
                d = next_dispatch
                if fetch_buffer > 0 and fready[i] > d:
                    d = fready[i]
                free_at = _queue_free_at(i, d, unit, qpos, queue, q0, q1, qend, queue_depth, qfree)
                d, stall0, dirty = _dispatch(i, d, free_at, unit, qpos, h0, h1, h2, dispatch, blocked_from, stall0,
                                             dirty)
                ret0 += 1
                next_dispatch = d + 1
                f_next += 1
                if fetch_buffer > 0:
                    if f_next == n:  # fetch is busy from launch to its last dispatch, unless blocked
                        busy0 = d + 1 - stall0
                else:
                    busy0 += 1
                    burst_left -= 1
                    if burst_left == 0:
                        fetch_free = next_dispatch
            continue
        if pick == 3:
            u = lu
            if u == 0:
                i = ld_insn0
                last, ld_req0, c_req, c_beat, c_n, c_cr, c_crt = _load_requests(
                    0, i, ld_req0, ld_insn1, ld_req1, best, best_t, f_time, f_req, fetch_buffer, ld, ld_iv, addr,
                    stride, row_bytes, rows, client, c_req, c_beat, c_n, c_cr, c_crt, ring, latency, bytes_per_cycle,
                    max_outstanding)
            else:
                i = ld_insn1
                last, ld_req1, c_req, c_beat, c_n, c_cr, c_crt = _load_requests(
                    1, i, ld_req1, ld_insn0, ld_req0, best, best_t, f_time, f_req, fetch_buffer, ld, ld_iv, addr,
                    stride, row_bytes, rows, client, c_req, c_beat, c_n, c_cr, c_crt, ring, latency, bytes_per_cycle,
                    max_outstanding)
            if not last:
                continue
            # the load's last burst: it retires once its data and pads are written
            x_data = ld[LD_LAST, u] + 3
            x_pad = _pad_end(start[i] + PAD_START, ld_iv[u], ld[LD_NIV, u], rows[i], xs[i], xp0[i], xp1[i], yp0[i],
                             yp1[i])
            e = (x_data if x_data > x_pad else x_pad) + LOAD_RETIRE
            if u == 0:
                ld_insn0 = -1
            else:
                ld_insn1 = -1
                if lanes != 0:  # done now; retires in program order
                    dcyc[i] = e - 1
                    rp, last_r, busy2, ret2, pc0, pc1, pc2, pc3, dirty, finish_end, done = _lanes_retire(
                        rp, last_r, h1, q0, queue, dcyc, start, end, busy2, ret2, pushes, push_t, po, pc0, pc1, pc2,
                        pc3, dirty | 2, finish, finish_end, done)
                    continue
        else:  # unit ``best`` starts its queue head at ``best_t`` (it pops its tokens)
            u = best
            s = best_t
            if u == 0:
                i = queue[_U(h0)]
                h0 += 1
                w = c0w
                stall1 += w
            elif u == 1:
                i = queue[_U(q0 + h1)]
                h1 += 1
                w = c1w
                stall2 += w
            else:
                i = queue[_U(q0 + q1 + h2)]
                h2 += 1
                w = c2w
                stall3 += w
            start[_U(i)] = s
            ready[_U(i)] = s - w
            m = pops[_U(i)]
            pp0 += m & 1
            pp1 += (m >> 1) & 1
            pp2 += (m >> 2) & 1
            pp3 += (m >> 3) & 1
            dirty |= 1 << u
            c = cost[_U(i)]
            if lanes != 0 and u == 1:  # taken into its lane: the queue entry is free, one take a cycle
                free1 = s + 1
                qend[i] = s + 1
                last_lane[foot[i, F_LANE]] = i
                if c >= 0:
                    dcyc[i] = s + c - 1
                elif rows[i] == 0:
                    dcyc[i] = _pad_end(s + PAD_START, ld_iv[u], 0, rows[i], xs[i], xp0[i], xp1[i], yp0[i],
                                       yp1[i]) + LOAD_RETIRE - 1
                else:
                    ld_insn1 = i
                    ld_req1 = s + LOAD_REQUEST
                    _load_begins(ld, 1)
                rp, last_r, busy2, ret2, pc0, pc1, pc2, pc3, dirty, finish_end, done = _lanes_retire(
                    rp, last_r, h1, q0, queue, dcyc, start, end, busy2, ret2, pushes, push_t, po, pc0, pc1, pc2,
                    pc3, dirty, finish, finish_end, done)
                continue
            if c >= 0:
                e = s + c
            elif rows[i] == 0:  # a LOAD of pads only
                e = _pad_end(s + PAD_START, ld_iv[u], 0, rows[i], xs[i], xp0[i], xp1[i], yp0[i], yp1[i]) + LOAD_RETIRE
            else:  # a LOAD with data: its read requests start
                if u == 0:
                    ld_insn0 = i
                    ld_req0 = s + LOAD_REQUEST
                else:
                    ld_insn1 = i
                    ld_req1 = s + LOAD_REQUEST
                _load_begins(ld, u)
                continue
        # instruction i retires from unit u at cycle e: the unit is free and the consumers of its
        # pushes see the tokens
        end[_U(i)] = e
        b = e - start[_U(i)]
        if u == 0:
            busy1 += b
            ret1 += 1
            free0 = e
        elif u == 1:
            busy2 += b
            ret2 += 1
            free1 = e
        else:
            busy3 += b
            ret3 += 1
            free2 = e
        pc0, pc1, pc2, pc3, dirty = _push(pushes[_U(i)], e, push_t, po, pc0, pc1, pc2, pc3, dirty | (1 << u))
        qend[_U(i)] = e
        if finish[_U(i)] and finish_end < 0:
            finish_end = e
        done += 1
        # the candidates of the units this changed (the unit, its pushes' consumers) now: the earliest
        # queue head of fixed cost that can start starts in the next turn, before the other events:
        # nothing they do changes its start (its unit's end, its dispatch and the pushes it pops are
        # known), and it changes nothing they read before it (its pushes and the queue entry it
        # frees come at its end, after its start). (A LOAD with data starts as an event: it uses the
        # memory channel, whose requests are served in time order; so does the compute unit of
        # COMPUTE_OVERLAP, whose takes depend on its lanes.)
        if dirty & 1 and ld_insn0 < 0:
            c0t, c0w = _candidate(h0, q0, 0, free0, queue, dispatch, pops, pp0, pp1, pp2, pp3, tk0, tk1, tk2, tk3,
                                  pc0, pc1, pc2, pc3, push_t, po)
            dirty &= ~1
        if dirty & 2 and ld_insn1 < 0 and lanes == 0:
            c1t, c1w = _candidate(h1, q1, q0, free1, queue, dispatch, pops, pp0, pp1, pp2, pp3, tk0, tk1, tk2, tk3,
                                  pc0, pc1, pc2, pc3, push_t, po)
            dirty &= ~2
        if dirty & 4:
            c2t, c2w = _candidate(h2, q2, q0 + q1, free2, queue, dispatch, pops, pp0, pp1, pp2, pp3, tk0, tk1, tk2,
                                  tk3, pc0, pc1, pc2, pc3, push_t, po)
            dirty &= ~4
        if c0t >= 0 and (dirty & 1) == 0 and cost[_U(queue[_U(h0)])] >= 0:
            run_u = 0
            run_t = c0t
        if (c1t >= 0 and (dirty & 2) == 0 and lanes == 0 and (run_u < 0 or c1t < run_t)
                and cost[_U(queue[_U(q0 + h1)])] >= 0):
            run_u = 1
            run_t = c1t
        if c2t >= 0 and (dirty & 4) == 0 and (run_u < 0 or c2t < run_t) and cost[_U(queue[_U(q0 + q1 + h2)])] >= 0:
            run_u = 2
            run_t = c2t
    if finish_end < 0:  # no FINISH: the last retirement
        finish_end = free0
        if lanes != 0:
            if last_r + 1 > finish_end:
                finish_end = last_r + 1
        elif free1 > finish_end:
            finish_end = free1
        if free2 > finish_end:
            finish_end = free2
    counters[0] = finish_end
    counters[1] = busy0
    counters[2] = busy1
    counters[3] = busy2
    counters[4] = busy3
    counters[5] = stall0
    counters[6] = stall1
    counters[7] = stall2
    counters[8] = stall3
    counters[9] = ret0
    counters[10] = ret1
    counters[11] = ret2
    counters[12] = ret3
    counters[13] = nbursts
    counters[14] = net0
    counters[15] = net1
    counters[16] = net2
    counters[17] = net3
    return 0
