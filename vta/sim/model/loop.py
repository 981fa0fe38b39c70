"""The cycle model's event loop: one stream's per-instruction integer arrays in, cycles out.

:func:`core` is the loop :mod:`vta.sim.model.replay` runs (its module docstring gives the timing
rules: fetch, the three units, the memory channel, the pad writer). It is plain Python that
numba compiles (:func:`vta.sim.model.replay.compiled`); every helper here is inlined into it,
so the split into functions costs nothing at run time. The loop keeps, between events:

* fetch's state, as scalars in :func:`core` (the next instruction to dispatch, the burst it is
  in, the buffered fetch's next request);
* each unit's queue (``queue``, ``qpos``, ``heads``), the cycle it is free, and its candidate:
  the cycle its queue head can start, recomputed only for the units an event changed
  (``dirty``, a bit mask);
* the token channels (cycles of every push, pops made);
* the memory channel (:func:`_serve`) and the loads in flight in the load and compute units.

Each turn of the loop finds the earliest event (a fetch request or dispatch, a unit's start, a
load's next read request) and handles it; a start of a fixed-cost instruction or the last read of
a load leads to its retirement, which frees the unit and pushes its tokens.
"""

from __future__ import annotations

import numpy as np

__all__ = ["HELPERS", "QUEUE_DEPTH", "core", "work_size"]

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
#: Entries of :func:`core`'s small state in its work space: those set at the start of a run, then
#: the pad writers' intervals and the memory channel's ring of the last bursts (at most 1024).
_STATE_SET = 64
_STATE = _STATE_SET + 4 * PAD_INTERVALS + 1024
#: The LOAD's timing rules: its first request ``LOAD_REQUEST`` cycles after its start, its pad
#: writer from ``start + PAD_START``, its retirement ``LOAD_RETIRE`` cycles after its last write.
LOAD_REQUEST = 2
PAD_START = 1
LOAD_RETIRE = 1


#: The helpers numba inlines into :func:`core` (with :func:`work_size`).
HELPERS = ("work_size", "_pad_end", "_fetch_burst", "_serve", "_setup", "_queue_free_at", "_dispatch",
           "_dispatch_arrived", "_fetch_event", "_fetch_key", "_tokens_ready", "_candidates", "_earliest_start",
           "_earliest_request",
           "_request_buffered", "_request_burst", "_load_requests", "_start", "_retire", "_meets", "_conflict",
           "_lanes_candidate", "_lanes_retire")

#: Columns of the footprint table of the option COMPUTE_OVERLAP (:mod:`vta.sim.model.lanes`): the
#: lane (0 GEMM, 1 the other), the acc rows written and read (valid, lowest, highest), the acc rows
#: only read, the uop entries (0 none, 1 read, 2 written; lowest, highest) and the cycles the
#: footprint scanner needs (0: none).
F_LANE, F_DV, F_DLO, F_DHI, F_SV, F_SLO, F_SHI, F_UF, F_ULO, F_UHI, F_SCAN = range(11)
#: Entries of the compute unit's retirement buffer with COMPUTE_OVERLAP (hw/vta_compute_ov.sv).
ROB_DEPTH = 32


def work_size(n: int) -> int:
    """Integers of scratch space :func:`core` needs for a stream of ``n`` instructions."""
    return 9 * n + 4 + _STATE


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


def _serve(ch, ring, r, beats, latency, bytes_per_cycle, max_outstanding):
    """Serve one read burst requested at cycle ``r``: ``ch`` is the channel state (next free request
    cycle, next free beat cycle, bursts issued, credit, cycle of the credit), ``ring`` the last-beat
    cycles of the recent bursts. Returns (request cycle, first beat cycle, last beat cycle)."""
    a = r if r > ch[0] else ch[0]
    ch[0] = a + 1
    issue = a
    if max_outstanding > 0 and ch[2] >= max_outstanding:
        prev = ring[ch[2] % max_outstanding] + 1
        if prev > issue:
            issue = prev
    p = issue + latency - 1
    if ch[1] > p:
        p = ch[1]
    if bytes_per_cycle >= 8:
        first = p
        last = p + beats - 1
    else:
        first = -1
        credit = ch[3]
        credit_t = ch[4]
        for _b in range(beats):
            cr = credit + (p - credit_t) * bytes_per_cycle
            if cr > CREDIT_CAP:
                cr = CREDIT_CAP
            if cr < 8:
                p += (8 - cr + bytes_per_cycle - 1) // bytes_per_cycle
                cr = credit + (p - credit_t) * bytes_per_cycle
                if cr > CREDIT_CAP:
                    cr = CREDIT_CAP
            credit = cr - 8
            credit_t = p
            if first < 0:
                first = p
            p += 1
        last = p - 1
        ch[3] = credit
        ch[4] = credit_t
    ch[1] = last + 1
    if max_outstanding > 0:
        ring[ch[2] % max_outstanding] = last
    ch[2] += 1
    return a, first, last


def _setup(n, unit, pops, pushes, start, end, dispatch, work):
    """Reset the per-instruction outputs and the loop's state in ``work`` for a run, and fill the
    three queues; return the net tokens the stream pushes on each channel (pushes minus pops)."""
    # (the set-up passes count in scalars: an array entry updated at every instruction waits for
    # its previous store when compiled)
    q0 = 0
    q1 = 0
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
        start[i] = -1
        end[i] = -1
        dispatch[i] = -1
        pu = pushes[i]
        po = pops[i]
        net0 += (pu & 1) - (po & 1)
        net1 += ((pu >> 1) & 1) - ((po >> 1) & 1)
        net2 += ((pu >> 2) & 1) - ((po >> 2) & 1)
        net3 += (pu >> 3) - (po >> 3)
    # every entry of the small state but the intervals and the ring is set here (those are read
    # only below what has been written)
    st = work[7 * n + 4:7 * n + 4 + _STATE]
    st[:_STATE_SET] = 0
    st[0] = q0  # queue lengths
    st[1] = q1
    st[2] = n - q0 - q1
    st[4] = q0  # queue bases
    st[5] = q0 + q1
    queue = work[:n]
    qpos = work[n:2 * n]
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
    st[32] = 1  # the unit that pops each channel (fsim's order): compute, load, compute, store
    st[33] = 0
    st[34] = 1
    st[35] = 2
    st[36:39] = -1  # no candidate yet
    st[42] = -(1 << 40)  # memory channel: (fetch's first request is made before cycle 0)
    st[43] = -(1 << 40)
    st[45] = CREDIT_CAP
    st[46] = -(1 << 40)
    st[47:49] = -1  # no load in flight
    return net0, net1, net2, net3


def _queue_free_at(i, t, unit, qpos, queue, qbase, end, queue_depth, qfree):
    """The first cycle from ``t`` at which instruction ``i`` finds room in its unit's queue: the
    older instruction whose entry it takes must have retired (-1: not known yet)."""
    if qpos[i] < queue_depth:
        return t
    older = queue[_U(qbase[unit[_U(i)]] + qpos[_U(i)] - queue_depth)]
    e = end[_U(older)]
    if e < 0:
        return -1
    return t if e + qfree <= t else e + qfree


def _dispatch(i, d, unit, qpos, queue, qbase, end, heads, queue_depth, qfree, dispatch, blocked_from, stall,
              retired, dirty):
    """Dispatch instruction ``i`` from cycle ``d`` (later when its queue is full: fetch stalls);
    return the dispatch cycle and the units whose candidate changes."""
    blocked_from[_U(i)] = d
    free_at = _queue_free_at(i, d, unit, qpos, queue, qbase, end, queue_depth, qfree)
    if free_at > d:
        stall[0] += free_at - d
        d = free_at
    dispatch[_U(i)] = d
    u = unit[_U(i)]
    if qpos[_U(i)] == heads[u]:  # its unit's head: the unit can start it
        dirty |= 1 << u
    retired[0] += 1
    return d, dirty


def _dispatch_arrived(n, f_next, fr, fm, fetch_buffer, next_dispatch, fready, unit, qpos, queue, qbase, end, heads,
                      queue_depth, qfree, dispatch, blocked_from, stall, retired, busy, dirty):
    """Buffered fetch: dispatch each fetched instruction as soon as its cycle is known (its beats
    have arrived and its queue entry's older instruction has an end), unless a request is
    pending (fetch makes the request first). A dispatch changes nothing but fetch and the
    candidate of a queue head's unit, which starts after the dispatch, so handling it early
    keeps the events' order (a request it enables comes after it as well). Returns fetch's next
    instruction, its next dispatch cycle and ``dirty``."""
    while f_next < fr:
        if fr < n and fr + fm - fetch_buffer - 1 < f_next:
            break  # fetch's next event is a request
        i = f_next
        fi = fready[_U(i)]
        d = next_dispatch if next_dispatch > fi else fi
        blocked_from[_U(i)] = d
        if _queue_free_at(i, d, unit, qpos, queue, qbase, end, queue_depth, qfree) < 0:
            break
        d, dirty = _dispatch(i, d, unit, qpos, queue, qbase, end, heads, queue_depth, qfree, dispatch, blocked_from,
                             stall, retired, dirty)
        next_dispatch = d + 1
        f_next += 1
        if f_next == n:  # fetch is busy from launch to its last dispatch, unless blocked
            busy[0] = d + 1 - stall[0]
    return f_next, next_dispatch, dirty


def _fetch_event(n, f_next, fr, fm, fetch_buffer, last_req, fetch_free, burst_left, next_dispatch, dispatch, unit,
                 qpos, queue, qbase, end, queue_depth, qfree):
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
        f_time = _queue_free_at(f_next, f_time, unit, qpos, queue, qbase, end, queue_depth, qfree)
    return f_time, f_req


def _fetch_key(f_time, f_req, fetch_buffer, ch):
    """The cycle fetch's event competes at: the drain-then-fetch RTL requests a burst two cycles
    before the model's ``fetch_free``, the buffered fetch at its request cycle (both measured on
    tsim), and a request waits for a free request cycle of the channel."""
    if not f_req:
        return f_time
    key = f_time if fetch_buffer > 0 else f_time - 2
    return ch[0] if ch[0] > key else key


def _tokens_ready(t, mask, popped, tokens, push_cnt, push_t):
    """The cycle from ``t`` on at which every token in ``mask`` (a bit per channel) has been pushed,
    or -1 when one of them is not pushed yet."""
    c = 0
    while mask != 0:
        if mask & 1:
            k = popped[c]
            if k >= tokens[c]:
                j = k - tokens[c]
                if j >= push_cnt[c]:
                    return -1
                p = push_t[c, _U(j)]
                if p > t:
                    t = p
        mask >>= 1
        c += 1
    return t


def _candidates(dirty, ld_insn, heads, qlen, queue, qbase, dispatch, free, pops, popped, tokens, push_cnt, push_t,
                cand_t, cand_w):
    """Recompute the candidate of each unit in ``dirty``: the cycle its queue head can start
    (``cand_t``, -1 when it cannot yet: a load in flight, an empty queue, a head not dispatched
    or a pop without its push) and the cycles it waits for tokens (``cand_w``)."""
    for u in range(3):
        if (dirty >> u) & 1 == 0:
            continue
        cand_t[u] = -1
        if u < 2 and ld_insn[u] >= 0:
            continue
        if heads[u] >= qlen[u]:
            continue
        i = queue[_U(qbase[u] + heads[u])]
        if dispatch[_U(i)] < 0:
            continue
        t0 = dispatch[_U(i)] + 1
        if free[u] > t0:
            t0 = free[u]
        t = _tokens_ready(t0, pops[i], popped, tokens, push_cnt, push_t)
        if t >= 0:
            cand_t[u] = t
            cand_w[u] = t - t0


def _earliest_start(cand_t):
    """The unit whose candidate is earliest (-1: none) and its cycle."""
    best = -1
    best_t = 0
    for u in range(3):
        if cand_t[u] >= 0 and (best < 0 or cand_t[u] < best_t):
            best = u
            best_t = cand_t[u]
    return best, best_t


def _earliest_request(ld_insn, ld_req, ch, client):
    """The load in flight whose next read request comes first (-1: none) and its cycle: a request
    waits for a free request cycle, and in one cycle the lowest client wins (fixed priority)."""
    lu = -1
    lt = 0
    for u in range(2):
        if ld_insn[u] >= 0:
            t = ld_req[u] if ld_req[u] > ch[0] else ch[0]
            if lu < 0 or t < lt or (t == lt and client[ld_insn[u]] < client[ld_insn[lu]]):
                lu = u
                lt = t
    return lu, lt


def _request_buffered(n, fr, fm, f_time, insn_addr, fetch_latency, ch, ring, latency, bytes_per_cycle,
                      max_outstanding, fready, bursts, nbursts):
    """Buffered fetch: request the burst of instructions ``fr .. fr+fm-1`` at ``f_time`` and note
    when each can be dispatched (its second beat, then the dispatch latency). Returns the next
    burst's first instruction and size, and the bursts made."""
    m = fm
    _a, first, last = _serve(ch, ring, f_time, 2 * m, latency, bytes_per_cycle, max_outstanding)
    for j in range(m):
        beat = 2 * j + 1
        fready[fr + j] = first + 1 + (beat * (last - first)) // (2 * m - 1) + fetch_latency
    bursts[nbursts, 0] = fr
    bursts[nbursts, 1] = f_time
    bursts[nbursts, 2] = fready[fr + m - 1]
    fr += m
    if fr < n:
        fm = _fetch_burst(insn_addr, fr, n)
    return fr, fm, nbursts + 1


def _request_burst(n, i, fetch_free, insn_addr, fetch_latency, ch, ring, latency, bytes_per_cycle, max_outstanding,
                   busy, bursts, nbursts):
    """Drain-then-fetch: read the burst starting at instruction ``i`` (requested two cycles before
    ``fetch_free``). Returns the cycle of its first dispatch and its size."""
    m = _fetch_burst(insn_addr, i, n)
    _a, first, last = _serve(ch, ring, fetch_free - 2, 2 * m, latency, bytes_per_cycle, max_outstanding)
    next_dispatch = last + 4 + fetch_latency - 1  # its beats arrive at last + 4
    busy[0] += next_dispatch - fetch_free
    bursts[nbursts, 0] = i
    bursts[nbursts, 1] = fetch_free
    bursts[nbursts, 2] = next_dispatch
    return next_dispatch, m


def _load_requests(u, best, best_t, f_time, f_req, fetch_buffer, ld_insn, ld_req, ld_row, ld_off, ld_first, ld_last,
                   ld_iv, ld_niv, addr, stride, row_bytes, rows, client, ch, ring, latency, bytes_per_cycle,
                   max_outstanding):
    """The read requests of the load in flight in unit ``u``, burst after burst while its next
    request stays the earliest event (a request changes nothing but the channel, so the other
    candidates stand). A burst is at most 16 beats, within one row and one 128-byte block; the
    cycles its beats reach the unit are kept as intervals for the pad writer. Returns whether
    the load's last burst was requested."""
    i = ld_insn[u]
    u2 = 1 - u
    while True:
        r = ld_req[u]
        row_addr = addr[i] + ld_row[u] * stride[i]
        lo = row_addr - row_addr % 8
        nbeat_row = (row_addr % 8 + row_bytes[i] + 7) // 8
        at = lo + ld_off[u]
        left = nbeat_row - ld_off[u] // 8
        beats = 16 - (at % 128) // 8
        if beats > left:
            beats = left
        a, first, last = _serve(ch, ring, r, beats, latency, bytes_per_cycle, max_outstanding)
        if ld_first[u] < 0:
            ld_first[u] = first
        ld_last[u] = last
        k = ld_niv[u]
        if k > 0 and (ld_iv[u, k - 1, 1] + 1 >= first + 2 or k == PAD_INTERVALS):
            ld_iv[u, k - 1, 1] = last + 2  # contiguous with the previous beats (or no room)
        else:
            ld_iv[u, k, 0] = first + 2
            ld_iv[u, k, 1] = last + 2
            ld_niv[u] = k + 1
        if beats < left:
            ld_off[u] += 8 * beats
            ld_req[u] = a + 1
        else:
            ld_row[u] += 1
            ld_off[u] = 0
            if ld_row[u] >= rows[i]:
                return True
            ld_req[u] = a + 2  # one cycle to set up the next row
        # the pick of the main loop for the next event, with this load's next request
        t = ld_req[u] if ld_req[u] > ch[0] else ch[0]
        if best >= 0 and t >= best_t:
            return False
        if ld_insn[u2] >= 0:
            t2 = ld_req[u2] if ld_req[u2] > ch[0] else ch[0]
            c2 = client[ld_insn[u2]]
            if t2 < t or (t2 == t and (c2 < client[i] or (c2 == client[i] and u2 == 0))):
                return False
        if f_time >= 0:
            f_key = _fetch_key(f_time, f_req, fetch_buffer, ch)
            if f_key < t or (f_key == t and f_req):
                return False


def _start(u, s, heads, queue, qbase, cand_w, start, ready, stall, pops, popped):
    """Unit ``u`` starts its queue head at cycle ``s`` (it pops its tokens); return it."""
    i = queue[_U(qbase[u] + heads[u])]
    heads[u] += 1
    start[_U(i)] = s
    ready[i] = s - cand_w[u]
    stall[u + 1] += cand_w[u]
    m = pops[i]
    c = 0
    while m != 0:
        if m & 1:
            popped[c] += 1
        m >>= 1
        c += 1
    return i


def _retire(i, u, e, start, end, busy, retired, free, pushes, push_t, push_cnt, consumer, dirty):
    """Instruction ``i`` retires from unit ``u`` at cycle ``e``: the unit is free and the
    consumers of its pushes see the tokens. Returns ``dirty`` with the units this changes."""
    end[_U(i)] = e
    busy[u + 1] += e - start[_U(i)]
    retired[u + 1] += 1
    free[u] = e
    dirty |= 1 << u
    m = pushes[_U(i)]
    c = 0
    while m != 0:
        if m & 1:
            push_t[c, _U(push_cnt[c])] = e
            push_cnt[c] += 1
            dirty |= 1 << consumer[c]
        m >>= 1
        c += 1
    return dirty


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


def _lanes_candidate(i, t0, take_free, foot, last_lane, dcyc, qpos, queue, qbase, end):
    """COMPUTE_OVERLAP: the first cycle from ``t0`` the compute unit can take its head ``i`` but for
    tokens (-1: not known yet). Its lane must be free (the lane's last instruction done), it must
    not conflict with the instruction in flight in the other lane, the retirement buffer must have
    room (the instruction ROB_DEPTH older retired) and the footprint scanner must be done: it
    starts once ``i`` is the queue head (``take_free``: the cycle after the previous take) and no
    LOAD UOP into its uop range is in flight, and takes ``foot[i, F_SCAN]`` cycles."""
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
        old = queue[qbase[1] + k - ROB_DEPTH]
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


def _lanes_retire(rp, last_r, heads, queue, qbase, dcyc, start, end, busy, retired, free, pushes, push_t, push_cnt,
                  consumer, dirty, finish, finish_end, done):
    """COMPUTE_OVERLAP: retire, in program order and one per cycle, the compute unit's taken
    instructions whose done cycle is known (from its ``rp``-th, after a retirement at ``last_r``).
    Returns the new ``rp``, ``last_r``, ``dirty``, ``finish_end`` and ``done``."""
    while rp < heads[1]:
        i = queue[qbase[1] + rp]
        if dcyc[i] < 0:
            break
        r = dcyc[i]
        if last_r + 1 > r:
            r = last_r + 1
        keep = free[1]
        dirty = _retire(i, 1, r + 1, start, end, busy, retired, free, pushes, push_t, push_cnt, consumer, dirty)
        free[1] = keep
        if finish[i] and finish_end < 0:
            finish_end = r + 1
        done += 1
        last_r = r
        rp += 1
    return rp, last_r, dirty, finish_end, done


def core(n, unit, pops, pushes, cost, finish, client, addr, row_bytes, stride, rows, xp0, xp1, yp0, yp1, xs,
         tokens, insn_addr, queue_depth, fetch_latency, fetch_buffer, latency, bytes_per_cycle, max_outstanding,
         start, end, ready, dispatch, blocked_from, bursts, counters, work, lanes, foot):
    """The replay loop (see the module docstrings); fills the output arrays, returns 0, or -1 - k
    when no unit can make progress after k instructions (an inconsistent stream).

    ``lanes`` (0 or 1): the compute unit of the option COMPUTE_OVERLAP, with ``foot`` the
    footprint table (:mod:`vta.sim.model.lanes`; unread without the option). It takes its queue
    head (pops its tokens, frees its queue entry) in program order, at most one per cycle, into
    the GEMM lane or the other one (:func:`_lanes_candidate`); an instruction is done ``cost - 1``
    cycles after it is taken (a LOAD when its data and pads are written) and retires, pushing its
    tokens, in program order, one per cycle, from the cycle it is done.

    ``bursts`` (n x 3): per fetch burst its first instruction, request cycle and first dispatch
    cycle; ``counters``: cycle_count, then busy, stall, retired (4 each, fetch load compute store),
    then the number of fetch bursts, then the net tokens the stream pushes on each channel (4);
    ``work``: at least :func:`work_size` integers of scratch space.
    """
    net0, net1, net2, net3 = _setup(n, unit, pops, pushes, start, end, dispatch, work)
    # views of the state (see _setup); fready: the buffered fetch's cycle each instruction can be
    # dispatched; push_t: the cycle of every push per channel (entries below push_cnt are read)
    queue = work[:n]
    qpos = work[n:2 * n]
    fready = work[2 * n:3 * n]
    push_t = work[3 * n:7 * n + 4].reshape(4, n + 1)
    st = work[7 * n + 4:7 * n + 4 + _STATE]
    qlen = st[0:3]
    qbase = st[3:6]
    heads = st[6:9]
    free = st[9:12]
    push_cnt = st[12:16]
    popped = st[16:20]
    busy = st[20:24]
    stall = st[24:28]
    retired = st[28:32]
    consumer = st[32:36]
    cand_t = st[36:39]
    cand_w = st[39:42]
    # the memory channel: next free request cycle, next free beat cycle, bursts issued, credit,
    # cycle of the credit; and the last-beat cycle of the recent bursts
    ch = st[42:47]
    ring = st[_STATE_SET + 4 * PAD_INTERVALS:_STATE]
    # the loads in flight in the load (0) and compute (1) units: the instruction, the cycle of its
    # next request, the row and byte offset of its next burst, its first and last beat (memory
    # cycles), and the cycles its beats reach the unit as intervals (merged when full)
    ld_insn = st[47:49]
    ld_req = st[49:51]
    ld_row = st[51:53]
    ld_off = st[53:55]
    ld_first = st[55:57]
    ld_last = st[57:59]
    ld_niv = st[59:61]
    ld_iv = st[_STATE_SET:_STATE_SET + 4 * PAD_INTERVALS].reshape((2, PAD_INTERVALS, 2))
    # the queue entry of each instruction is free again from qend[i] - 1 + qfree (its retirement;
    # with COMPUTE_OVERLAP a compute instruction's take); dcyc: a compute instruction's done cycle
    # (COMPUTE_OVERLAP; -1 unknown); last_lane: the last instruction each lane took
    dcyc = work[7 * n + 4 + _STATE:8 * n + 4 + _STATE]
    qend = work[8 * n + 4 + _STATE:9 * n + 4 + _STATE]
    for i in range(n):
        dcyc[i] = -1
        qend[i] = -1
    last_lane = st[61:63]
    last_lane[0] = -1
    last_lane[1] = -1
    rp = 0
    last_r = -(1 << 40)
    dirty = 7  # the units whose candidate is to be recomputed (bit mask)
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
    finish_end = -1
    done = 0
    while done < n:
        if fetch_buffer > 0:
            f_next, next_dispatch, dirty = _dispatch_arrived(
                n, f_next, fr, fm, fetch_buffer, next_dispatch, fready, unit, qpos, queue, qbase, qend, heads,
                queue_depth, qfree, dispatch, blocked_from, stall, retired, busy, dirty)
        f_time, f_req = _fetch_event(n, f_next, fr, fm, fetch_buffer, last_req, fetch_free, burst_left,
                                     next_dispatch, dispatch, unit, qpos, queue, qbase, qend, queue_depth, qfree)
        if dirty != 0:
            lanes_dirty = lanes != 0 and (dirty & 2) != 0
            if lanes != 0:
                dirty &= 5
            _candidates(dirty, ld_insn, heads, qlen, queue, qbase, dispatch, free, pops, popped, tokens, push_cnt,
                        push_t, cand_t, cand_w)
            dirty = 0
            if lanes_dirty:  # the compute unit of COMPUTE_OVERLAP
                cand_t[1] = -1
                if heads[1] < qlen[1]:
                    i = queue[qbase[1] + heads[1]]
                    if dispatch[i] >= 0:
                        t0 = dispatch[i] + 1
                        if free[1] > t0:
                            t0 = free[1]
                        t = _lanes_candidate(i, t0, t0, foot, last_lane, dcyc, qpos, queue, qbase, end)
                        t1 = t
                        t = _tokens_ready(t1, pops[i], popped, tokens, push_cnt, push_t)
                        if t >= 0:
                            cand_t[1] = t
                            cand_w[1] = t - t1
        best, best_t = _earliest_start(cand_t)
        lu, lt = _earliest_request(ld_insn, ld_req, ch, client)
        f_key = _fetch_key(f_time, f_req, fetch_buffer, ch)
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
                fr, fm, nbursts = _request_buffered(n, fr, fm, f_time, insn_addr, fetch_latency, ch, ring, latency,
                                                    bytes_per_cycle, max_outstanding, fready, bursts, nbursts)
                last_req = f_time
            elif burst_left == 0 and fetch_buffer == 0:
                next_dispatch, burst_left = _request_burst(n, f_next, fetch_free, insn_addr, fetch_latency, ch, ring,
                                                           latency, bytes_per_cycle, max_outstanding, busy, bursts,
                                                           nbursts)
                nbursts += 1
            else:
                i = f_next
                d = next_dispatch
                if fetch_buffer > 0 and fready[i] > d:
                    d = fready[i]
                d, dirty = _dispatch(i, d, unit, qpos, queue, qbase, qend, heads, queue_depth, qfree, dispatch,
                                     blocked_from, stall, retired, dirty)
                next_dispatch = d + 1
                f_next += 1
                if fetch_buffer > 0:
                    if f_next == n:  # fetch is busy from launch to its last dispatch, unless blocked
                        busy[0] = d + 1 - stall[0]
                else:
                    busy[0] += 1
                    burst_left -= 1
                    if burst_left == 0:
                        fetch_free = next_dispatch
            continue
        if pick == 3:
            u = lu
            if not _load_requests(u, best, best_t, f_time, f_req, fetch_buffer, ld_insn, ld_req, ld_row, ld_off,
                                  ld_first, ld_last, ld_iv, ld_niv, addr, stride, row_bytes, rows, client, ch, ring,
                                  latency, bytes_per_cycle, max_outstanding):
                continue
            # the load's last burst: it retires once its data and pads are written
            i = ld_insn[u]
            x_data = ld_last[u] + 3
            x_pad = _pad_end(start[i] + PAD_START, ld_iv[u], ld_niv[u], rows[i], xs[i], xp0[i], xp1[i], yp0[i],
                             yp1[i])
            e = (x_data if x_data > x_pad else x_pad) + LOAD_RETIRE
            ld_insn[u] = -1
            if lanes != 0 and u == 1:  # done now; retires in program order
                dcyc[i] = e - 1
                dirty |= 2
                rp, last_r, dirty, finish_end, done = _lanes_retire(
                    rp, last_r, heads, queue, qbase, dcyc, start, end, busy, retired, free, pushes, push_t, push_cnt,
                    consumer, dirty, finish, finish_end, done)
                continue
        else:
            u = best
            s = best_t
            i = _start(u, s, heads, queue, qbase, cand_w, start, ready, stall, pops, popped)
            dirty |= 1 << u
            if lanes != 0 and u == 1:  # taken into its lane: the queue entry is free, one take a cycle
                free[1] = s + 1
                qend[i] = s + 1
                last_lane[foot[i, F_LANE]] = i
                if cost[i] >= 0:
                    dcyc[i] = s + cost[i] - 1
                elif rows[i] == 0:
                    dcyc[i] = _pad_end(s + PAD_START, ld_iv[u], 0, rows[i], xs[i], xp0[i], xp1[i], yp0[i],
                                       yp1[i]) + LOAD_RETIRE - 1
                else:
                    ld_insn[u] = i
                    ld_req[u] = s + LOAD_REQUEST
                    ld_row[u] = 0
                    ld_off[u] = 0
                    ld_first[u] = -1
                    ld_niv[u] = 0
                rp, last_r, dirty, finish_end, done = _lanes_retire(
                    rp, last_r, heads, queue, qbase, dcyc, start, end, busy, retired, free, pushes, push_t, push_cnt,
                    consumer, dirty, finish, finish_end, done)
                continue
            if cost[i] >= 0:
                e = s + cost[i]
            elif rows[i] == 0:  # a LOAD of pads only
                e = _pad_end(s + PAD_START, ld_iv[u], 0, rows[i], xs[i], xp0[i], xp1[i], yp0[i], yp1[i]) + LOAD_RETIRE
            else:  # a LOAD with data: its read requests start
                ld_insn[u] = i
                ld_req[u] = s + LOAD_REQUEST
                ld_row[u] = 0
                ld_off[u] = 0
                ld_first[u] = -1
                ld_niv[u] = 0
                continue
        dirty = _retire(i, u, e, start, end, busy, retired, free, pushes, push_t, push_cnt, consumer, dirty)
        qend[i] = e
        if finish[i] and finish_end < 0:
            finish_end = e
        done += 1
    if finish_end < 0:  # no FINISH: the last retirement
        finish_end = free[0]
        if lanes != 0:
            if last_r + 1 > finish_end:
                finish_end = last_r + 1
        elif free[1] > finish_end:
            finish_end = free[1]
        if free[2] > finish_end:
            finish_end = free[2]
    counters[0] = finish_end
    for k in range(4):
        counters[1 + k] = busy[k]
        counters[5 + k] = stall[k]
        counters[9 + k] = retired[k]
    counters[13] = nbursts
    counters[14] = net0
    counters[15] = net1
    counters[16] = net2
    counters[17] = net3
    return 0
