"""The replay loop's full-queue rule, checked on its per-instruction outputs.

When more compute instructions are fetched than the compute queue holds, fetch waits: the
instruction taking queue entry ``k >= QUEUE_DEPTH`` is dispatched only once the instruction
``QUEUE_DEPTH`` entries older in the same queue has left it (``QUEUE_FREE_BUFFERED`` cycles after
its retirement with the buffered fetch, ``QUEUE_FREE`` with drain-then-fetch). The loop keeps the
instruction fetch waits for and does not retry before it leaves; these tests restate the rule from
the outputs alone (a scalar pass over them, independent of the loop's own bookkeeping).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.model import streams as s
from vta import isa
from vta.sim.model import costs as mc
from vta.sim.model import loop
from vta.sim.model import replay as rp

#: Compute instructions of the stream: enough to fill the compute queue more than once.
N_ALU = 2 * loop.QUEUE_DEPTH


def _stream(env):
    """A long LOAD whose token the first of ``N_ALU`` ALU instructions waits for, the others
    queued behind it (fetch outruns the compute unit), then a STORE after the last."""
    insns = [s.mem(isa.OPCODE_LOAD, isa.MEM_INP, 64, 16, push_next_dep=1), s.alu(16, 1, pop_prev_dep=1)]
    insns += [s.alu(16, 1) for _ in range(N_ALU - 2)]
    insns += [s.alu(16, 1, push_next_dep=1), s.mem(isa.OPCODE_STORE, isa.MEM_OUT, 1, 16, pop_prev_dep=1)]
    return s.words(insns, env)


def _replay(env, words, engine):
    counters, arrays = rp.replay(env, words, [0] * 4, 4096, mc.DEFAULT_TIMING, engine=engine)
    return counters, {k: np.array(v) for k, v in arrays.items() if k != "tokens"}


def _expected_dispatch(unit, blocked_from, end, qfree):
    """Each instruction's dispatch cycle under the full-queue rule: from the cycle fetch could
    dispatch it (``blocked_from``), or the cycle its queue entry is free, whichever is later."""
    seen = {0: [], 1: [], 2: []}
    out = []
    for i in range(len(unit)):
        q = seen[int(unit[i])]
        d = int(blocked_from[i])
        if len(q) >= loop.QUEUE_DEPTH:
            d = max(d, int(end[q[len(q) - loop.QUEUE_DEPTH]]) + qfree)
        q.append(i)
        out.append(d)
    return out


@pytest.mark.parametrize("buffered", [True, False])
@pytest.mark.parametrize("engine", ["auto", "python"])
def test_dispatch_waits_for_the_queue_entry(env, monkeypatch, engine, buffered):
    monkeypatch.setattr(mc, "FETCH_BUFFER_INSNS", 16 if buffered else 0)
    qfree = loop.QUEUE_FREE_BUFFERED if buffered else loop.QUEUE_FREE
    counters, a = _replay(env, _stream(env), engine)
    unit, dispatch, blocked, end, start = a["unit"], a["dispatch"], a["blocked_from"], a["end"], a["start"]
    assert dispatch.tolist() == _expected_dispatch(unit, blocked, end, qfree)
    waited = dispatch > blocked
    assert waited.sum() > loop.QUEUE_DEPTH // 4  # the stream does fill the queue
    assert counters["fetch_stall_cycles"] == int((dispatch - blocked).sum())
    assert (np.diff(dispatch) >= 1).all()  # one dispatch a cycle, in program order
    assert (start > dispatch).all() and (end > start).all()
    assert counters["compute_retired"] == N_ALU


def test_occupancy_never_exceeds_the_queue(env):
    _counters, a = _replay(env, _stream(env), "auto")
    comp = np.nonzero(a["unit"] == 1)[0]
    d, e = a["dispatch"][comp], a["end"][comp]
    # at each dispatch, the compute instructions dispatched before it and not retired yet
    for j in range(len(comp)):
        waiting = int(((d[:j] <= d[j]) & (e[:j] > d[j])).sum())
        assert waiting < loop.QUEUE_DEPTH, (j, waiting)


def test_engines_agree_on_the_full_queue(env):
    fast = _replay(env, _stream(env), "auto")
    slow = _replay(env, _stream(env), "python")
    assert fast[0] == slow[0]
    for key in ("start", "end", "dispatch", "blocked_from", "ready"):
        assert fast[1][key].tolist() == slow[1][key].tolist(), key
