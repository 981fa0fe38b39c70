"""Random programs at scale on every simulation level, and malformed streams that must fail cleanly.

For every shipped configuration (``configs/*.json``), with one device per level kept for the
whole run (so the state one program leaves is what the next one finds):

* **valid**: random valid programs (:func:`vta.testing.programs.random_program`) run on fsim in
  stream order, on fsim with a seeded random interleaving and on the cycle model; outputs and
  statistics must be identical. Every ``--tsim-every``-th one also runs on tsim.
* **malformed**: streams damaged in each way of :data:`vta.testing.malformed.KINDS` run on fsim,
  the model and (a share of them) tsim. Each must run cleanly or raise a subclass of
  :class:`vta.errors.VTAError`; all levels must agree on which. Right after, a valid program
  runs on the same device and must give what a fresh fsim gives (the device contract's state
  after a run).

A generic Python exception, a disagreement or a wrong answer is counted and reported with its
seed; a program running longer than ``--timeout`` seconds counts as a hang (tsim additionally
runs with a cycle budget). A crash ends the process, so a completed run shows that none
happened. Malformed streams that pass :func:`vta.sim.fsim.check_stream` but would move more
than ``--max-work`` elements (a valid but very long computation) are skipped and counted.

Usage::

    python scripts/random_programs.py --valid 1000 --malformed 200 --tsim-every 50 --seed 1
    python scripts/random_programs.py --configs vta_config.json --no-tsim --valid 100000
"""

from __future__ import annotations

import argparse
import collections
import signal
import sys
import time
from pathlib import Path

import numpy as np

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))

from vta.dram import DRAM
from vta.env import Environment, load_config
from vta.errors import VTAError
from vta.sim.device import STAT_KEYS
from vta.sim.fsim import FunctionalSimulator, check_stream
from vta.sim.model import CycleModel
from vta.testing.malformed import KINDS, malformed_program, work_estimate
from vta.testing.programs import random_program

#: Statistics every level must agree on for a valid program.
COMPARED = STAT_KEYS + ("insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish", "insn_nop",
                        "tokens_l2g", "tokens_g2l", "tokens_s2g", "tokens_g2s")


class Hang(Exception):
    """Raised by the alarm when one program runs longer than the timeout."""


def _on_alarm(signum, frame):
    raise Hang()


def _on_term(signum, frame):
    raise KeyboardInterrupt  # report the counts so far, as for Ctrl-C


def outcome(dev, prog, timeout: float, wait_cycles: int = 0) -> str:
    """``"ran"``, the project exception's class name, ``"GENERIC <name>: ..."`` or ``"HANG"``."""
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        dev.run(prog.insn_addr, prog.insn_count, wait_cycles)
        return "ran"
    except Hang:
        return "HANG"
    except VTAError as exc:
        return type(exc).__name__
    except Exception as exc:  # noqa: BLE001 - the point is to count them
        return f"GENERIC {type(exc).__name__}: {str(exc)[:100]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


class Checker:
    """The devices of one configuration and the tallies of what they did."""

    def __init__(self, name: str, env: Environment, dram: DRAM, args):
        self.name, self.env, self.dram, self.args = name, env, dram, args
        self.fsim = FunctionalSimulator(env, dram)
        self.fsim_rnd = FunctionalSimulator(env, dram, seed=args.seed)
        self.model = CycleModel(env, dram)
        self.tsim = None
        if not args.no_tsim:
            from vta.sim.tsim import TSim, library
            # the default configuration's library is the one the tests build (with VCD support)
            trace = "vcd" if name == "vta_config.json" else None
            self.tsim = TSim(env, dram, library=library.build(env, trace=trace))
        self.counts = collections.Counter()
        self.problems: list[str] = []

    def levels(self, with_tsim: bool):
        out = [("fsim", self.fsim), ("fsim_rnd", self.fsim_rnd), ("model", self.model)]
        if with_tsim and self.tsim is not None:
            out.append(("tsim", self.tsim))
        return out

    def problem(self, what: str) -> None:
        self.problems.append(f"{self.name}: {what}")
        if len(self.problems) <= 20:
            print(f"  PROBLEM {self.problems[-1]}", flush=True)

    # ------------------------------------------------------------------ valid programs
    def valid(self, seed: int, with_tsim: bool) -> None:
        prog = random_program(self.env, self.dram, seed, length=int(8 + seed % 24))
        try:
            want = want_stats = None
            for level, dev in self.levels(with_tsim):
                prog.clear_outputs()
                dev.clear_stats()
                res = outcome(dev, prog, self.args.timeout, self.args.wait_cycles if level == "tsim" else 0)
                self.counts[("valid", level, "ran" if res == "ran" else "failed")] += 1
                if res != "ran":
                    self.problem(f"valid seed {seed} on {level}: {res}")
                    continue
                got, st = prog.read_outputs(), dev.stats()
                stats = {k: st[k] for k in COMPARED}
                if want is None:
                    want, want_stats = got, stats
                elif got != want or stats != want_stats:
                    self.counts[("valid", level, "differs")] += 1
                    diff = {k: (want_stats[k], stats[k]) for k in COMPARED if stats[k] != want_stats[k]}
                    self.problem(f"valid seed {seed} on {level} differs from fsim: outputs "
                                 f"{'equal' if got == want else 'differ'}, stats {diff}")
        finally:
            prog.close()

    # ------------------------------------------------------------------ malformed streams
    def malformed(self, seed: int, kind: str, with_tsim: bool) -> None:
        bad = malformed_program(self.env, self.dram, seed, kind)
        try:
            words = np.frombuffer(self.dram.read(bad.insn_addr, 16 * bad.insn_count), "<i8").reshape(-1, 2)
            try:
                check_stream(self.env, words)
                too_long = work_estimate(self.env, words) > self.args.max_work
            except VTAError:
                too_long = False  # rejected before anything executes, on every level
            if too_long:
                self.counts[(kind, "all", "skipped (too long)")] += 1
                return
            results = {}
            for level, dev in self.levels(with_tsim):
                res = outcome(dev, bad, self.args.timeout, self.args.wait_cycles if level == "tsim" else 0)
                results[level] = res
                self.counts[(kind, level, res if not res.startswith("GENERIC") else "GENERIC")] += 1
                if res.startswith("GENERIC") or res == "HANG":
                    self.problem(f"{kind} seed {seed} on {level}: {res}")
            if len(set(results.values())) > 1:
                self.counts[(kind, "all", "levels disagree")] += 1
                self.problem(f"{kind} seed {seed}: levels disagree {results}")
        finally:
            bad.close()
        self.good_after(seed, kind, with_tsim)

    def good_after(self, seed: int, kind: str, with_tsim: bool) -> None:
        """A valid program on every device right after the malformed one, against a fresh fsim."""
        good = random_program(self.env, self.dram, 1_000_000 + seed, length=12)
        try:
            with FunctionalSimulator(self.env, self.dram) as fresh:
                fresh.run(good.insn_addr, good.insn_count)
            want = good.read_outputs()
            for level, dev in self.levels(with_tsim):
                good.clear_outputs()
                res = outcome(dev, good, self.args.timeout, self.args.wait_cycles if level == "tsim" else 0)
                if res != "ran":
                    self.counts[(kind, level, "next valid program failed")] += 1
                    self.problem(f"{kind} seed {seed}: the next valid program on {level}: {res}")
                elif good.read_outputs() != want:
                    self.counts[(kind, level, "next valid program WRONG")] += 1
                    self.problem(f"{kind} seed {seed}: the next valid program on {level} is wrong")
                else:
                    self.counts[(kind, level, "next valid program correct")] += 1
        finally:
            good.close()

    def close(self) -> None:
        for dev in (self.fsim, self.fsim_rnd, self.model, self.tsim):
            if dev is not None:
                dev.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--valid", type=int, default=1000, help="valid random programs in all (split over configs)")
    ap.add_argument("--malformed", type=int, default=240, help="malformed streams in all (split over configs, kinds)")
    ap.add_argument("--tsim-every", type=int, default=20, help="run every N-th program on tsim too")
    ap.add_argument("--no-tsim", action="store_true", help="skip tsim (no Verilator needed)")
    ap.add_argument("--configs", nargs="*", help="configuration file names in configs/ (default: all)")
    ap.add_argument("--seed", type=int, default=0, help="first seed; also seeds fsim's random interleaving")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds after which one run counts as a hang")
    ap.add_argument("--wait-cycles", type=int, default=50_000_000, help="tsim's cycle budget per run")
    ap.add_argument("--max-work", type=int, default=5_000_000,
                    help="skip valid-looking malformed streams moving more elements than this")
    ap.add_argument("--time-budget", type=float, default=0.0,
                    help="stop after this many seconds (0: none) and report what was done")
    ap.add_argument("--progress", type=float, default=30.0, help="seconds between progress lines")
    args = ap.parse_args(argv)

    names = args.configs or sorted(p.name for p in (_REPO / "configs").glob("*.json"))
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.signal(signal.SIGTERM, _on_term)
    start = last = time.time()
    kinds = list(KINDS)
    checkers = []
    try:
        for name in names:
            env = Environment(load_config(_REPO / "configs" / name))
            checkers.append(Checker(name, env, DRAM(1 << 28), args))
        n_valid = -(-args.valid // len(names))
        n_bad = -(-args.malformed // len(names))
        print(f"{', '.join(names)}: up to {n_valid} valid programs and {n_bad} malformed streams each, "
              "configurations in turn", flush=True)
        done_valid = done_bad = 0
        for k in range(max(n_valid, n_bad)):
            seed = args.seed + k
            with_tsim = args.tsim_every > 0 and k % args.tsim_every == 0
            for chk in checkers:
                with chk.env:
                    if k < n_valid and done_valid < args.valid:
                        chk.valid(seed, with_tsim)
                        done_valid += 1
                    if k < n_bad and done_bad < args.malformed:
                        chk.malformed(seed, kinds[k % len(kinds)], with_tsim)
                        done_bad += 1
            now = time.time()
            if now - last >= args.progress:
                last = now
                print(f"  {done_valid} valid, {done_bad} malformed after {now - start:.0f} s, "
                      f"{sum(len(c.problems) for c in checkers)} problem(s)", flush=True)
            if args.time_budget and now - start >= args.time_budget:
                print(f"time budget of {args.time_budget:.0f} s reached", flush=True)
                break
    except KeyboardInterrupt:
        print("interrupted; the counts so far:", flush=True)
    finally:
        totals = collections.Counter()
        problems: list[str] = []
        for chk in checkers:
            totals.update(chk.counts)
            problems += chk.problems
            chk.close()
            chk.dram.close()
    _table(totals)
    print(f"\n{time.time() - start:.0f} s in all; {len(problems)} problem(s)")
    for p in problems[:50]:
        print(" ", p)
    return 1 if problems else 0


def _table(counts: collections.Counter) -> None:
    """Print the counts as category | level | outcome | count."""
    rows = sorted(counts.items(), key=lambda kv: (kv[0][0] != "valid", kv[0]))
    w = [max(len(str(k[i])) for k, _ in rows) if rows else 8 for i in range(3)]
    w = [max(w[0], 8), max(w[1], 5), max(w[2], 7)]
    print(f"\n{'category':<{w[0]}}  {'level':<{w[1]}}  {'outcome':<{w[2]}}  count")
    for (cat, level, what), n in rows:
        print(f"{cat:<{w[0]}}  {level:<{w[1]}}  {what:<{w[2]}}  {n}")


if __name__ == "__main__":
    sys.exit(main())
