"""The cycle model's first timing-only run of a small stream, warm and cold.

Run from the repository root::

    python benchmarks/model_first_run.py [--quick] [--rounds N] [--evict MB] [--dram ideal ddr4]

A first run is ``CycleModel(env, dram, functional=False).run`` on a stream new to the device
(just built: a new DRAM generation, a new stream to check and decode). In a user's session it
follows other work (a tsim run, the compiler), which leaves the CPU caches holding other code and
data; this benchmark reproduces that by reading and writing an ``--evict`` MB buffer (default 32,
more than this machine's L2 and L3 together on most hosts) before the run. Per memory it prints,
over ``--rounds`` rounds of random programs (about 50 instructions each), the median time of::

    built  the first run right after the stream was built (the program generator's Python work in between)
    warm   the first run right after a run of another stream (the model's code and data in the caches)
    cold   the first run after the eviction
    call   the compiled call alone (``replay._timing_run_at``'s entry, its scan forced) after the
           eviction; ``rest`` is ``cold - call``: the Python path of a cold first run (with the
           live allocations of the new DRAM generation, :meth:`vta.dram.DRAM.bounds`)
    repeat a repeat of the stream (the compiled call alone, warm)

Times are wall times (``time.perf_counter_ns``, the garbage collector paused), medians over the
rounds, so the figures of a noisy machine stay comparable; the cycles of the warm and cold runs
are compared (they must be equal).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

import numpy as np

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))
sys.path.insert(0, str(_REPO / "benchmarks"))

from _configs import env_for  # noqa: E402
from vta.dram import DRAM  # noqa: E402
from vta.sim.model import CycleModel  # noqa: E402
from vta.sim.model import replay as rp  # noqa: E402
from vta.testing.programs import random_program  # noqa: E402


class Evictor:
    """Reads and writes a large buffer: afterwards the CPU caches hold it, not the model's code and data."""

    def __init__(self, megabytes: int):
        self.buf = np.ones(max(megabytes, 1) << 17, np.int64)

    def __call__(self) -> None:
        self.buf += 1


def _timed(fn, *args) -> int:
    """Nanoseconds of ``fn(*args)`` (garbage collector paused)."""
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        fn(*args)
        return time.perf_counter_ns() - t0
    finally:
        gc.enable()


def _compiled_call(dev: CycleModel):
    """The compiled call of ``dev``'s last run, made again with its scan forced (a new stream to the
    compiled code), or None when the last run did not take it."""
    rep = dev._repeat
    if rep is None or rep[2][0].ndim != 1:
        return None
    args = rep[2][:-1] + (0,)  # (IO_REUSE 0: scan the stream)
    entry = rp.timing_entry(args, at=True)

    def call():
        entry(*args)
    return call


def measure(memory: str, rounds: int, evict: Evictor) -> dict:
    """The figures of one memory (see the module docstring): medians in microseconds."""
    env = env_for("vta_config", memory)
    times: dict[str, list[int]] = {"built": [], "warm": [], "cold": [], "call": [], "repeat": []}
    cycles = set()
    with env, DRAM(1 << 26) as dram, CycleModel(env, dram, functional=False) as dev:
        other = random_program(env, dram, 1000, length=8)  # (run before a warm first run)
        dev.run(other.insn_addr, other.insn_count)  # (loads the compiled code)
        for r in range(rounds):
            for mode in ("built", "warm", "cold"):
                prog = random_program(env, dram, r, length=32, allow_mul=False, imm_in_place=True)
                try:
                    if mode == "warm":
                        dev.run(other.insn_addr, other.insn_count)
                    elif mode == "cold":
                        evict()
                    times[mode].append(_timed(dev.run, prog.insn_addr, prog.insn_count))
                    cycles.add((r, dev.last_run["cycle_count"]))
                    if mode == "cold":
                        times["repeat"].append(_timed(dev.run, prog.insn_addr, prog.insn_count))
                        call = _compiled_call(dev)
                        if call is not None:
                            evict()
                            times["call"].append(_timed(call))
                finally:
                    prog.close()
        other.close()
    per_round: dict = {}
    for r, c in cycles:
        per_round.setdefault(r, set()).add(c)
    if any(len(v) != 1 for v in per_round.values()):
        raise SystemExit(f"{memory}: the first runs of a stream gave different cycles: {per_round}")
    return {k: statistics.median(v) / 1e3 if v else float("nan") for k, v in times.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few rounds (the test suite's smoke run)")
    ap.add_argument("--rounds", type=int, default=40, help="random programs per memory (default 40)")
    ap.add_argument("--evict", type=int, default=32, help="megabytes read and written between runs (default 32)")
    ap.add_argument("--dram", nargs="*", default=["ideal", "ddr4"], help="memories: ideal, ddr4 (default both)")
    args = ap.parse_args(argv)
    rounds = 3 if args.quick else args.rounds
    evict = Evictor(args.evict)
    print(f"first timing-only runs of random programs (~50 insns), medians of {rounds} rounds; "
          f"eviction: {args.evict} MB", flush=True)
    for memory in args.dram:
        f = measure(memory, rounds, evict)
        print(f"{memory:<6} built {f['built']:7.2f} us  warm {f['warm']:7.2f} us  cold {f['cold']:7.2f} us  "
              f"call (cold) {f['call']:7.2f} us  rest (cold) {f['cold'] - f['call']:7.2f} us  "
              f"repeat {f['repeat']:6.2f} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
