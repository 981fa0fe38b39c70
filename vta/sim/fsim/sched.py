"""Which instruction runs when: the three stage queues and the four token channels.

``reference/vta-isa.md`` section 5: fetch sends each instruction, in stream order, to the queue
of its stage (load: LOAD INP/WGT; store: STORE; compute: everything else). Each stage runs its
queue in order; an instruction first takes one token from every channel it pops, then executes,
then gives one token to every channel it pushes. Any order of the three queues that respects
the tokens is a legal execution.

:func:`schedule` picks one such order:

* deterministic (``rng is None``): among the stage heads whose pops can be satisfied, the one
  earliest in the stream runs next. When the stream is valid in stream order (every pop finds a
  token if the instructions run one after another as written) this *is* stream order, and it is
  computed with a cumulative sum instead of a loop;
* seeded random (``rng`` given): a uniformly random ready stage head runs next.

Tokens are counted per channel, in the order l2g, g2l, s2g, g2s.
"""

from __future__ import annotations

import numpy as np

from ... import isa
from ...errors import DeadlockError, InvalidInstructionError, TokenOverflowError

__all__ = ["CHANNELS", "MAX_TOKENS", "Flow", "schedule", "stages_of"]

CHANNELS = ("l2g", "g2l", "s2g", "g2s")
L2G, G2L, S2G, G2S = range(4)
#: Most tokens a channel may hold (8-bit counters in the RTL).
MAX_TOKENS = 255
_STAGE_NAMES = {isa.STAGE_LOAD: "load", isa.STAGE_COMPUTE: "compute", isa.STAGE_STORE: "store"}


def stages_of(opcode: np.ndarray, memory_type: np.ndarray) -> np.ndarray:
    """Stage of every instruction (1 load, 2 compute, 3 store), as :func:`vta.isa.stage_of`."""
    stage = np.full(opcode.shape, isa.STAGE_COMPUTE, dtype=np.int8)
    stage[opcode == isa.OPCODE_STORE] = isa.STAGE_STORE
    is_load = (opcode == isa.OPCODE_LOAD) & ((memory_type == isa.MEM_INP) | (memory_type == isa.MEM_WGT))
    stage[is_load] = isa.STAGE_LOAD
    return stage


class Flow:
    """Stage, pops and pushes of every instruction of a stream (arrays indexed by instruction).

    Raises
    ------
    InvalidInstructionError
        If a load-stage instruction sets pop_prev/push_prev or a store sets pop_next/push_next
        (those channels do not exist).
    """

    def __init__(self, header: dict, memory_type: np.ndarray, describe):
        opcode = header["opcode"]
        self.stage = stages_of(opcode, memory_type)
        self.describe = describe
        pp, pn = header["pop_prev_dep"], header["pop_next_dep"]
        up, un = header["push_prev_dep"], header["push_next_dep"]
        for stage, flags, what in ((isa.STAGE_LOAD, (pp, up), ("pop_prev_dep", "push_prev_dep")),
                                   (isa.STAGE_STORE, (pn, un), ("pop_next_dep", "push_next_dep"))):
            for flag, name in zip(flags, what, strict=True):
                bad = np.flatnonzero((self.stage == stage) & (flag != 0))
                if bad.size:
                    i = int(bad[0])
                    raise InvalidInstructionError(
                        f"instruction {i} ({describe(i)}): {name}=1 on a {_STAGE_NAMES[stage]}-stage "
                        f"instruction; the {_STAGE_NAMES[stage]} stage has no such channel (accepted 0)", i)
        load, comp, store = (self.stage == s for s in (isa.STAGE_LOAD, isa.STAGE_COMPUTE, isa.STAGE_STORE))
        # columns in channel order l2g, g2l, s2g, g2s (flags on a missing channel were rejected)
        self.pop = np.stack([comp * pp, load * pn, comp * pn, store * pp], axis=1).astype(np.int32)
        self.push = np.stack([load * un, comp * up, store * up, comp * un], axis=1).astype(np.int32)


def schedule(flow: Flow, tokens: list[int], rng: np.random.Generator | None = None) -> np.ndarray:
    """Return the execution order of the whole stream.

    Parameters
    ----------
    flow : Flow
        Stages and token flags.
    tokens : list of 4 int
        Tokens outstanding at the start; updated in place to the counts at the end (callers
        pass a copy and keep it only if the run succeeds).
    rng : numpy Generator, optional
        Pick a random ready stage at each step instead of the earliest instruction.

    Raises
    ------
    DeadlockError
        If some instruction can never run; names each stage's blocked instruction and the counts.
    TokenOverflowError
        If a push would leave more than 255 tokens on a channel.
    """
    n = flow.stage.size
    if rng is None and n:
        delta = np.ascontiguousarray((flow.push - flow.pop).T)  # one contiguous row per channel
        after = np.cumsum(delta, axis=1, dtype=np.int64) + np.asarray(tokens, dtype=np.int64)[:, None]
        if after.min() >= 0:
            if after.max() > MAX_TOKENS:
                i = int(np.flatnonzero((after > MAX_TOKENS).any(axis=0))[0])
                _overflow(flow, i, after[:, i])
            tokens[:] = after[:, -1].tolist()
            return np.arange(n)
    return _step(flow, tokens, rng)


def _step(flow: Flow, tokens: list[int], rng) -> np.ndarray:
    queues = [np.flatnonzero(flow.stage == s).tolist() for s in (isa.STAGE_LOAD, isa.STAGE_COMPUTE, isa.STAGE_STORE)]
    heads = [0, 0, 0]
    pops = flow.pop.tolist()
    pushes = flow.push.tolist()
    order: list[int] = []
    n = flow.stage.size
    while len(order) < n:
        ready = []
        for q in range(3):
            if heads[q] < len(queues[q]):
                i = queues[q][heads[q]]
                p = pops[i]
                if all(tokens[c] >= p[c] for c in range(4)):
                    ready.append(q)
        if not ready:
            raise _deadlock(flow, queues, heads, tokens, len(order))
        if rng is None:
            q = min(ready, key=lambda k: queues[k][heads[k]])
        else:
            q = ready[int(rng.integers(len(ready)))]
        i = queues[q][heads[q]]
        heads[q] += 1
        for c in range(4):
            tokens[c] += pushes[i][c] - pops[i][c]
        if max(tokens) > MAX_TOKENS:
            _overflow(flow, i, tokens)
        order.append(i)
    return np.asarray(order, dtype=np.int64)


def _overflow(flow: Flow, i: int, counts) -> None:
    c = int(np.argmax(np.asarray(counts) > MAX_TOKENS))
    raise TokenOverflowError(
        f"instruction {i} ({flow.describe(i)}) pushes a token onto channel {CHANNELS[c]}, which would then "
        f"hold {int(counts[c])} tokens; accepted at most {MAX_TOKENS} outstanding", i)


def _deadlock(flow: Flow, queues, heads, tokens, done: int) -> DeadlockError:
    parts = []
    first = None
    for q, name in enumerate(("load", "compute", "store")):
        if heads[q] < len(queues[q]):
            i = queues[q][heads[q]]
            first = i if first is None else min(first, i)
            waits = [CHANNELS[c] for c in range(4) if flow.pop[i, c] > tokens[c]]
            parts.append(f"{name} stage blocked at instruction {i} ({flow.describe(i)}) waiting for a token "
                         f"on {', '.join(waits)}")
        else:
            parts.append(f"{name} stage done")
    counts = ", ".join(f"{name}={tokens[c]}" for c, name in enumerate(CHANNELS))
    return DeadlockError(
        f"deadlock after {done} of {flow.stage.size} instructions: {'; '.join(parts)}; tokens {counts}", first)
