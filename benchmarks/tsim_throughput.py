"""tsim throughput: simulated cycles per second, GEMM cycles per uop, and the RTL build time.

Run from the repository root::

    python benchmarks/tsim_throughput.py [--repeats 5] [--build-repeats 1] [--skip-build] [--quick]

``--quick`` (the test suite's smoke run) measures small programs once and skips the clean build.

Figures (medians over the repeats; the machine is shared, so expect noise):

* simulated cycles/s on a GEMM-heavy program (default configuration), over the wall time and
  over the CPU time of ``TSim.run`` (the second is less disturbed by other load);
* cycles per uop of one long GEMM instruction: the cycle count difference between the same
  program with 2R and R repetitions of its GEMM, divided by the extra uops (the bar is within
  5% of one uop per cycle);
* the time to build the hardware library from a clean cache (a temporary cache directory).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))

from tests.conftest import make_env  # noqa: E402
from tests.e2e import gemm_program  # noqa: E402
from vta.dram import DRAM  # noqa: E402
from vta.sim.tsim import hwgen, library  # noqa: E402
from vta.sim.tsim import TSim  # noqa: E402


def cycles_per_second(dev: TSim, dram: DRAM, env, repeats: int, quick: bool = False) -> tuple[float, int]:
    m, k, reps = (8, 4, 4) if quick else (64, 16, 64)
    prog = gemm_program.build(env, dram, m=m, k=k, reps=reps, seed=1)
    rates, cpu_rates, cycles = [], [], 0
    try:
        for _ in range(repeats):
            dev.clear_stats()
            start_cycles = dev.cycles
            t0, c0 = time.perf_counter(), time.process_time()
            dev.run(prog.insn_addr, prog.insn_count)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            cycles = dev.cycles - start_cycles
            rates.append(cycles / wall)
            cpu_rates.append(cycles / cpu)
        if (prog.output(dram) != prog.expected).any():
            raise SystemExit("tsim computed a wrong result on the benchmark program")
    finally:
        prog.free(dram)
    return statistics.median(rates), statistics.median(cpu_rates), cycles


def gemm_cycles_per_uop(dev: TSim, dram: DRAM, env, repeats: int, quick: bool = False) -> tuple[float, int]:
    m, k, reps = (8, 4, 8) if quick else (32, 16, 32)
    ratios = []
    for _ in range(repeats):
        counts = []
        for r in (reps, 2 * reps):
            prog = gemm_program.build(env, dram, m=m, k=k, reps=r, seed=2)
            try:
                dev.clear_stats()
                dev.run(prog.insn_addr, prog.insn_count)
                counts.append(dev.stats()["cycle_count"])
            finally:
                prog.free(dram)
        ratios.append((counts[1] - counts[0]) / (m * k * reps))
    return statistics.median(ratios), m * k * reps


def build_seconds(env, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="vta-tsim-bench-") as tmp:
            t0 = time.perf_counter()
            library.build_sources(library.sources(), hwgen.sv_package(env), cache=Path(tmp))
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--build-repeats", type=int, default=1)
    parser.add_argument("--skip-build", action="store_true", help="do not time a clean build")
    parser.add_argument("--quick", action="store_true", help="small programs, one repeat, no clean build")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.skip_build = 1, True

    env = make_env()
    # The quick run uses the library the test suite builds (with waveform support, which costs
    # no speed while no waveform is written), so a smoke run never triggers a second build.
    lib = library.build(env, trace="vcd" if args.quick else None)
    with env, DRAM(1 << 28) as dram, TSim(env, dram, library=lib) as dev:
        rate, cpu_rate, cycles = cycles_per_second(dev, dram, env, args.repeats, args.quick)
        print(f"GEMM-heavy program: {cycles} cycles per run, median {rate / 1e6:.2f} M simulated cycles/s "
              f"of wall time, {cpu_rate / 1e6:.2f} M per CPU second ({args.repeats} runs)")
        per_uop, uops = gemm_cycles_per_uop(dev, dram, env, args.repeats, args.quick)
        print(f"long GEMM: median {per_uop:.4f} cycles per uop over {uops} extra uops "
              f"({'within' if abs(per_uop - 1) <= 0.05 else 'OUTSIDE'} 5% of one uop per cycle)")
    if not args.skip_build:
        print(f"clean RTL build: median {build_seconds(env, args.build_repeats):.1f} s "
              f"({args.build_repeats} build(s), temporary cache)")


if __name__ == "__main__":
    main()
