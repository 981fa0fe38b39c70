"""Properties every timed trace must have, checked the same way for tsim and the model."""

from __future__ import annotations

from itertools import pairwise

from vta.profile import UNITS
from vta.profile.events import CHANNEL_UNITS


def assert_no_overlap(tl) -> None:
    """Slices of one unit never overlap (each starts at or after the previous one's end)."""
    for unit in UNITS:
        spans = sorted((e.start, e.end) for e in tl.events if e.unit == unit)
        for (a0, a1), (b0, b1) in pairwise(spans):
            assert b0 >= a1, f"{unit}: [{a0}, {a1}) overlaps [{b0}, {b1})"
        # waits sit before their instruction and after the previous one
        evs = sorted((e for e in tl.events if e.unit == unit), key=lambda e: e.start)
        for prev, cur in pairwise(evs):
            assert cur.start - cur.token_wait >= prev.end, f"{unit}: the wait of #{cur.index} overlaps #{prev.index}"


def assert_waits_after_push(tl) -> None:
    """Each token hand-off: the pop comes after the push; a waiting consumer starts after it."""
    starts = {(e.layer, e.unit, e.index): e for e in tl.events if e.unit != "fetch"}
    for f in tl.flows:
        assert f.pop_time > f.push_time, f
        consumer = starts[(f.layer, CHANNEL_UNITS[f.channel][1], f.consumer)]
        assert consumer.start > f.push_time
        if consumer.token_wait:
            # the wait ended (the instruction started) only after the push that fed it
            assert consumer.start - consumer.token_wait <= f.push_time < consumer.start


def busy_by_unit(tl) -> dict:
    return {u: sum(e.busy for e in tl.events if e.unit == u) for u in UNITS}


def token_stall_by_unit(tl) -> dict:
    out = {u: sum(e.token_wait for e in tl.events if e.unit == u) for u in UNITS if u != "fetch"}
    out["fetch"] = sum(e.queue_wait for e in tl.events if e.unit == "fetch")
    return out
