"""Cycle-level model against tsim: per-program cycle error, and the model's speed.

Run from the repository root (needs Verilator for tsim; the library is built once and cached)::

    python benchmarks/model_accuracy.py [--random 20] [--no-examples] [--quick]

``--quick`` (the test suite's smoke run): the demo, two small GEMMs, two random programs and the
get_started tutorial.

Programs, on the current configuration or the one named by ``--config``:

* the demo program (:func:`vta.demo.build_demo_pack`);
* the blocked GEMM of ``tests/e2e/gemm_program.py`` at a few sizes;
* random programs of :func:`vta.testing.programs.random_program` (the RTL-compatible options);
* the compiled tutorials of ``examples/`` (get_started, matrix_multiply, matrix_multiply_opt,
  convolution_opt): every stream the runtime sends to the device runs on tsim and then on the
  model (a "tee" device attached with :func:`vta.runtime.vta_bridge.attach_device`), and the
  cycles of one tutorial are summed over its streams.

Printed: one line per program with tsim cycles, model cycles and the signed error, the median and
largest |error| per group and overall, and the model's speed (simulated cycles and instructions
per second of wall time, and the ratio to tsim's wall time on the same streams) on two levels: the
whole ``run`` of :class:`CycleModel`, which includes fsim's functional execution, and the
timing-only model (``CycleModel(..., functional=False)``: fsim's checks and the timing replay,
nothing executed; its cycles must equal the model's).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import statistics
import sys
import time
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))

from tests.e2e import gemm_program
from vta.demo import build_demo_pack
from vta.dram import DRAM, global_dram
from vta.env import Environment, get_env, load_config
from vta.sim.tsim import library
from vta.sim.device import Device
from vta.sim.model import CycleModel
from vta.sim.tsim import TSim
from vta.testing.programs import random_program

EXAMPLES = ("get_started", "matrix_multiply", "matrix_multiply_opt", "convolution_opt")


class Speed:
    """Wall times, simulated cycles and instructions of the runs on tsim, the model and the
    timing-only model."""

    def __init__(self):
        self.wall = self.timing_wall = self.tsim_wall = 0.0
        self.cycles = self.insns = 0
        self.timing_mismatches = 0

    def run(self, model: CycleModel, timing: CycleModel, addr: int, count: int) -> int:
        t0 = time.perf_counter()
        model.run(addr, count)
        self.wall += time.perf_counter() - t0
        t0 = time.perf_counter()
        timing.run(addr, count)
        self.timing_wall += time.perf_counter() - t0
        self.timing_mismatches += timing.last_run != model.last_run
        self.cycles += model.last_run["cycle_count"]
        self.insns += count
        return model.last_run["cycle_count"]

    def tsim(self, tsim: TSim, addr: int, count: int, wait_cycles: int = 0) -> int:
        tsim.clear_stats()
        t0 = time.perf_counter()
        tsim.run(addr, count, wait_cycles)
        self.tsim_wall += time.perf_counter() - t0
        return tsim.stats()["cycle_count"]


class TeeBase(Device):
    """A device that hands every stream to tsim, the cycle model and the timing-only model
    (subclasses say how in ``run``); statistics are the model's, clearing and resetting reach all
    three. ``benchmarks/model_accuracy_tsim.py`` shares it."""

    name = "tee"

    def __init__(self, tsim: TSim, model: CycleModel, timing: CycleModel):
        super().__init__(tsim.env, tsim.dram)
        self.tsim, self.model, self.timing = tsim, model, timing

    def stats(self) -> dict:
        return self.model.stats()

    def clear_stats(self) -> None:
        for dev in (self.tsim, self.model, self.timing):
            dev.clear_stats()

    def reset(self) -> None:
        for dev in (self.tsim, self.model, self.timing):
            dev.reset()


class Tee(TeeBase):
    """Runs every stream on tsim, then on the model; records both cycle counts."""

    def __init__(self, tsim: TSim, model: CycleModel, timing: CycleModel, speed: Speed):
        super().__init__(tsim, model, timing)
        self.speed = speed
        self.pairs: list[tuple[int, int]] = []

    def run(self, insn_phys_addr: int, insn_count: int, wait_cycles: int = 0) -> int:
        t = self.speed.tsim(self.tsim, insn_phys_addr, insn_count, wait_cycles)
        m = self.speed.run(self.model, self.timing, insn_phys_addr, insn_count)
        self.pairs.append((t, m))
        return 0


def compare(tsim: TSim, model: CycleModel, timing: CycleModel, speed: Speed, addr: int, count: int) -> tuple[int, int]:
    return speed.tsim(tsim, addr, count), speed.run(model, timing, addr, count)


def report(name: str, t: int, m: int, errors: list) -> None:
    err = (m - t) / t
    errors.append(abs(err))
    print(f"  {name:<28} tsim {t:>10}  model {m:>10}  error {100 * err:+6.1f} %")


def summary(group: str, errors: list) -> None:
    if errors:
        print(f"  -> {group}: median |error| {100 * statistics.median(errors):.1f} %, "
              f"max {100 * max(errors):.1f} % over {len(errors)} programs")


def run_example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", _REPO / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with contextlib.redirect_stdout(io.StringIO()):
        return mod.main()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--random", type=int, default=20, help="random programs (default 20)")
    ap.add_argument("--no-examples", action="store_true", help="skip the compiled tutorials")
    ap.add_argument("--config", default=None,
                    help="a file of configs/ (default: the current configuration)")
    ap.add_argument("--quick", action="store_true", help="a few small programs and one tutorial (a smoke run)")
    args = ap.parse_args()
    if args.quick:
        args.random = min(args.random, 2)
    gemm_sizes = ((4, 4, 1), (16, 8, 4)) if args.quick else ((4, 4, 1), (16, 8, 4), (64, 16, 16))
    examples = EXAMPLES[:1] if args.quick else EXAMPLES

    env = Environment(load_config(_REPO / "configs" / args.config)) if args.config else get_env()
    print(f"configuration: {args.config or 'current'} (BATCH {env.BATCH}, BLOCK_IN {env.BLOCK_IN}, "
          f"BLOCK_OUT {env.BLOCK_OUT}, INP_WIDTH {env.INP_WIDTH})")
    # The quick run uses the library the test suite builds (with waveform support, which costs
    # no speed while no waveform is written), so a smoke run never triggers a second build.
    lib = library.build(env, trace="vcd" if args.quick else None)
    speed = Speed()
    everything: list = []
    with env, DRAM(1 << 28) as dram, TSim(env, dram, library=lib) as tsim, CycleModel(env, dram) as model, \
            CycleModel(env, dram, functional=False) as timing:
        print("hand-written programs")
        errors: list = []
        pack = build_demo_pack(env)
        pack.install(dram)
        try:
            for dev in (model, timing):  # warm-up: fsim's compiled engine and the replay load once
                dev.run(pack.insn_addr, pack.insn_count)
            report("demo", *compare(tsim, model, timing, speed, pack.insn_addr, pack.insn_count), errors)
        finally:
            pack.uninstall(dram)
        for m, k, reps in gemm_sizes:
            prog = gemm_program.build(env, dram, m=m, k=k, reps=reps, seed=1)
            try:
                report(f"gemm m={m} k={k} reps={reps}", *compare(tsim, model, timing, speed, prog.insn_addr,
                                                                 prog.insn_count), errors)
            finally:
                prog.free(dram)
        summary("hand-written", errors)
        everything += errors

        print("random programs")
        errors = []
        for seed in range(args.random):
            p = random_program(env, dram, seed, length=32, allow_mul=False, imm_in_place=True,
                               allow_tensor_shr=False)
            try:
                report(f"random seed={seed} ({p.insn_count} insns)",
                       *compare(tsim, model, timing, speed, p.insn_addr, p.insn_count), errors)
            finally:
                p.close()
        summary("random", errors)
        everything += errors

    if not args.no_examples:
        from vta.runtime import vta_bridge
        print("compiled tutorials (cycles summed over each tutorial's streams)")
        errors = []
        with env, TSim(env, global_dram(), library=lib) as tsim, CycleModel(env, global_dram()) as model, \
                CycleModel(env, global_dram(), functional=False) as timing:
            tee = Tee(tsim, model, timing, speed)
            old = vta_bridge.attach_device(env, tee)
            try:
                for name in examples:
                    tee.pairs = []
                    t0 = time.perf_counter()
                    try:
                        rc = run_example(name)
                    except AssertionError as exc:  # the tutorials assert the shapes they support
                        print(f"  {name}: skipped, it does not support this configuration ({exc!r})")
                        continue
                    if rc:
                        print(f"  {name}: exited with status {rc!r}")
                    if not tee.pairs:
                        continue
                    t = sum(p[0] for p in tee.pairs)
                    m = sum(p[1] for p in tee.pairs)
                    report(f"{name} ({len(tee.pairs)} runs, {time.perf_counter() - t0:.0f} s)", t, m, errors)
            finally:
                if old is not None:
                    vta_bridge.attach_device(env, old)
        summary("tutorials", errors)
        everything += errors

    summary("all programs", everything)
    print(f"tsim speed: {speed.cycles / speed.tsim_wall:,.0f} simulated cycles/s, "
          f"{speed.insns / speed.tsim_wall:,.0f} instructions/s")
    print(f"model speed (whole run, with fsim's execution): {speed.cycles / speed.wall:,.0f} simulated cycles/s, "
          f"{speed.insns / speed.wall:,.0f} instructions/s, x{speed.tsim_wall / speed.wall:.1f} tsim's")
    print(
        f"model speed (timing only, functional=False): {speed.cycles / speed.timing_wall:,.0f} simulated cycles/s, "
        f"{speed.insns / speed.timing_wall:,.0f} instructions/s, x{speed.tsim_wall / speed.timing_wall:.1f} tsim's"
        + (f"; CYCLES DIFFER from the model's on {speed.timing_mismatches} streams" if speed.timing_mismatches else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
