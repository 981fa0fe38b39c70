"""What tracing costs: tsim and the cycle model with the profiler's probe off and on.

Run from the repository root::

    python benchmarks/trace_cost.py [--repeats 5] [--baseline REV]

Figures (medians over the repeats; the machine is shared, so expect noise):

* tsim, probe off and on (a :class:`vta.profile.Recorder` collecting every run into a
  timeline), wall (and CPU) seconds per run of a GEMM-heavy program and of a load/store-heavy random
  program, and the ratio on / off (the bar: at most 2x);
* the cycle model, the same (the bar: at most 3x);
* with ``--baseline REV`` (e.g. the commit before the probe), tsim built from that revision's
  ``hw/sim`` and ``sim/`` sources against the current library with the probe off: the cost of
  having a probe that is switched off (the bar: nothing measurable). Builds one extra library
  in a temporary cache.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))

from tests.e2e import gemm_program
from vta.dram import DRAM
from vta.env import Environment, default_config_path, load_config
from vta.profile import Recorder
from vta.sim.model import CycleModel
from vta.testing.programs import random_program


def _programs(env, dram):
    gemm = gemm_program.build(env, dram, m=64, k=16, reps=32, seed=1)
    rand = random_program(env, dram, seed=3, length=400)
    return {"gemm": (gemm.insn_addr, gemm.insn_count), "random": (rand.insn_addr, rand.insn_count)}


def _time_runs(dev, addr: int, count: int, repeats: int, traced: bool) -> tuple[float, float, int]:
    """Median wall and CPU seconds of one run (traced: including the collection into a timeline)."""
    times, cpu, cycles = [], [], 0
    for _ in range(repeats):
        dev.reset()
        dev.clear_stats()
        rec = Recorder(dev).start() if traced else None
        t0, c0 = time.perf_counter(), time.process_time()
        dev.run(addr, count)
        tl = rec.stop() if traced else None
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        cycles = dev.stats()["cycle_count"]
        if traced:
            assert tl.cycles == cycles, (tl.cycles, cycles)
        del rec, tl  # freeing the timeline is not part of the next run's time
    return statistics.median(times), statistics.median(cpu), cycles


def compare(name: str, dev, progs: dict, repeats: int, bar: float) -> None:
    for prog, (addr, count) in progs.items():
        off, off_cpu, cycles = _time_runs(dev, addr, count, repeats, traced=False)
        on, on_cpu, _ = _time_runs(dev, addr, count, repeats, traced=True)
        ratio, cpu_ratio = on / off, on_cpu / off_cpu
        verdict = "ok" if min(ratio, cpu_ratio) <= bar else "OVER THE BAR"
        print(f"  {name:<6} {prog:<7} {count:>5} insns {cycles:>9} cycles: off {1e3 * off:8.1f} ms, "
              f"on {1e3 * on:8.1f} ms, on/off {ratio:5.2f}x wall, {cpu_ratio:5.2f}x CPU (bar {bar}x: {verdict})")


def _baseline_library(env, rev: str) -> Path:
    """Build tsim from ``rev``'s hw/sim and sim/ sources (the current core RTL) in a temp cache."""
    from vta.sim.tsim import hwgen, library

    tmp = Path(tempfile.mkdtemp(prefix="vta-baseline-"))
    (tmp / "hw_sim").mkdir()
    (tmp / "sim").mkdir()
    names = subprocess.run(["git", "ls-tree", "--name-only", f"{rev}:hw/sim"], cwd=_REPO, check=True,
                           capture_output=True, text=True).stdout.split()
    sv = sorted((_REPO / "hw").glob("*.sv"))
    for name in names:
        if name.endswith(".sv"):
            text = subprocess.run(["git", "show", f"{rev}:hw/sim/{name}"], cwd=_REPO, check=True,
                                  capture_output=True).stdout
            (tmp / "hw_sim" / name).write_bytes(text)
            sv.append(tmp / "hw_sim" / name)
    for name in ("vta_tsim.cc", "vta_tsim.h"):
        text = subprocess.run(["git", "show", f"{rev}:sim/{name}"], cwd=_REPO, check=True, capture_output=True).stdout
        (tmp / "sim" / name).write_bytes(text)
    saved = library._SIM_DIR
    library._SIM_DIR = tmp / "sim"  # the shim of that revision
    try:
        return library.build_sources(sv, hwgen.sv_package(env), cache=tmp / "cache")
    finally:
        library._SIM_DIR = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smoke run: one repeat")
    ap.add_argument("--baseline", default=None, metavar="REV",
                    help="also time tsim built from REV's simulation sources (no probe)")
    args = ap.parse_args()
    if args.quick:
        args.repeats = 1
    env = Environment(load_config(default_config_path()))
    print(f"trace cost, {env.BITSTREAM}, median of {args.repeats} runs")
    with DRAM(1 << 26) as dram:
        progs = _programs(env, dram)
        with CycleModel(env, dram) as model:
            compare("model", model, progs, args.repeats, 3.0)
        from vta.sim.tsim import TSim, verilator

        if not verilator.available():
            print("  tsim: skipped (Verilator not available)")
            return
        with TSim(env, dram) as tsim:
            compare("tsim", tsim, progs, args.repeats, 2.0)
            if args.baseline:
                lib = _baseline_library(env, args.baseline)
                with TSim(env, dram, library=lib) as base:
                    for prog, (addr, count) in progs.items():
                        old, old_cpu, _ = _time_runs(base, addr, count, args.repeats, traced=False)
                        new, new_cpu, _ = _time_runs(tsim, addr, count, args.repeats, traced=False)
                        print(f"  tsim   {prog:<7} probe off {1e3 * new:8.1f} ms, without a probe "
                              f"({args.baseline}) {1e3 * old:8.1f} ms: {100 * (new / old - 1):+5.1f} % wall, "
                              f"{100 * (new_cpu / old_cpu - 1):+5.1f} % CPU")


if __name__ == "__main__":
    main()
