"""The cycle model against tsim, stream by stream: cycles, error and speed, per configuration and memory.

Run from the repository root (needs Verilator; each configuration's tsim library is built once
and cached)::

    python benchmarks/model_accuracy_tsim.py [--config NAME ...] [--dram ideal ddr4] [--quick]
        [--reference-tsim pinned|current|LIBRARY] [--clock wall|cpu]

For every shipped configuration (``configs/*.json``; ``--config`` picks some) and every memory
(``ideal``: the default one-cycle memory; ``ddr4``: the preset of :data:`vta.env.DRAM_PRESETS`),
each stream runs on tsim, on the cycle model and on the timing-only cycle model, and one line
is printed per stream::

    <stream> tsim <cycles> model <cycles> error <+x.xx> % tsim <ms> model <ms> speed x<ratio> timing-only <ms> x<ratio>

``model`` is the whole :meth:`CycleModel.run`: fsim's functional execution plus the timing
replay; ``timing-only`` is ``CycleModel(..., functional=False).run`` (fsim's checks and the
timing replay, nothing executed; its cycles must equal the model's, else the line ends in
``TIMING-ONLY DIFFERS``). A stream run several times is timed by its median run, which for the
timing-only model is a repeat (the compiled call alone, its replay made again); ``first run``
gives the ratio of its first run, the stream new to the device (decode and checks included).
The programs and instruction-heavy streams then run on fsim and on the
whole model in turn, and their lines end in ``fsim <ms>, model +x %``: what the whole model costs
over fsim's own run (medians of those runs).
Each ``x<ratio>`` is tsim's wall time over that model's (the median of
``--repeat`` runs of each stream, except the workloads, which run once; Python's garbage collector
is paused during each timed run; ``--clock cpu`` times the process's CPU time instead of wall time,
steadier on a loaded machine). The
streams:

* ``programs``: the demo program, blocked GEMMs of ``tests/e2e/gemm_program.py`` and random
  programs of :func:`vta.testing.programs.random_program` (the benchmark program set of
  ``benchmarks/model_accuracy.py``);
* ``resnet18.C2`` .. ``resnet18.C11``, ``gemm.blocked`` and ``alu.chain``: the workloads of
  :mod:`vta.dse.workloads` (compiled; the cycles of a workload are summed over its streams), and
  a line ``ResNet-18 C2-C11 x repeats``: the layers' cycles weighted by how often each occurs in
  ResNet-18 (:data:`RESNET18_REPEATS`), on both levels;
* ``insn-heavy``: the conv-like stream of small instructions and the upstream-shaped GEMM
  stream of ``benchmarks/fsim_throughput.py``.

Per configuration and memory, the median and largest |error| and the smallest speed ratios
(whole run, timing only) follow. ``--quick`` (the test suite's smoke run): the default configuration, a few small
programs, one ResNet layer and a short conv-like stream, on both memories.

The tsim of the speed ratios (``--reference-tsim``): by default ``pinned``, the tsim of the commit
the cycle model's speed goal was set against (issue 25: at least 100 times that tsim), built from
that commit's own RTL, shim and build recipe (:mod:`_reference_tsim`; needs the git history), so
the ratios do not shrink as tsim gets faster; ``current`` is this tree's tsim (the default of
``--quick``), and a path names a built library. The cycles compared are tsim's either way.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))
sys.path.insert(0, str(_REPO / "benchmarks"))


from _configs import cfg_for, env_for
from _reference_tsim import REFERENCE_COMMIT, reference_library
from fsim_throughput import conv_stream, gemm_stream_tiled
from model_accuracy import TeeBase
from tests.e2e import gemm_program
from vta.demo import build_demo_pack
from vta.dram import DRAM
from vta.env import Environment
from vta.errors import ScheduleError
from vta.sim.fsim import FunctionalSimulator
from vta.sim.model import CycleModel
from vta.sim.tsim import TSim, library
from vta.testing.programs import random_program

CONFIGS = ("vta_config", "batch2", "block32", "narrow")
MEMORIES = ("ideal", "ddr4")
WORKLOADS = tuple(f"resnet18.C{i}" for i in range(2, 12)) + ("gemm.blocked", "alu.chain")
#: How often each layer occurs in ResNet-18 (two basic blocks per stage, two 3x3 convolutions
#: each; the first block of stages 2-4 has the strided 3x3 and the 1x1 downsample instead).
RESNET18_REPEATS = {"C2": 4, "C3": 1, "C4": 1, "C5": 3, "C6": 1, "C7": 1, "C8": 3, "C9": 1, "C10": 1, "C11": 3}


#: The clock of the timed runs (``--clock``): wall time, or the process's CPU time.
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = CLOCKS["wall"]


def _timed_in_turn(devices, addr: int, count: int, repeat: int) -> list[list[float]]:
    """Run the stream ``repeat`` times on each device in turn; the times of each device's runs."""
    walls: list[list[float]] = [[] for _ in devices]
    for _ in range(repeat):
        for dev, runs in zip(devices, walls, strict=True):
            dev.clear_stats()
            gc.disable()  # a collection of the compiler's objects is no level's time
            try:
                t0 = _clock()
                dev.run(addr, count)
                runs.append(_clock() - t0)
            finally:
                gc.enable()
    return walls


class Pair:
    """Cycles and times of one stream (or of a workload's streams summed) on the three levels."""

    def __init__(self):
        self.tsim = self.model = self.timing = 0
        self.tsim_s = self.model_s = self.timing_s = 0.0
        self.first_s = 0.0  # the timing-only model's first run of each stream (a stream new to it)
        self.fsim_s = self.beside_fsim_s = 0.0  # fsim, and the whole model in turn with it
        self.runs = 0

    def add(self, tsim: TSim, model: CycleModel, timing: CycleModel, addr: int, count: int, repeat: int = 1,
            fsim: FunctionalSimulator | None = None) -> None:
        """Run the stream ``repeat`` times on each level, in turn; add the median times and the
        cycles. With ``fsim``, the stream then runs ``repeat`` times on fsim and on the whole model
        in turn (no tsim run between them to empty the caches for one of the two)."""
        walls = _timed_in_turn((tsim, model, timing), addr, count, repeat)
        self.tsim_s += statistics.median(walls[0])
        self.model_s += statistics.median(walls[1])
        self.timing_s += statistics.median(walls[2])
        self.first_s += walls[2][0]
        if fsim is not None:
            walls = _timed_in_turn((fsim, model), addr, count, repeat)
            self.fsim_s += statistics.median(walls[0])
            self.beside_fsim_s += statistics.median(walls[1])
        self.tsim += tsim.stats()["cycle_count"]
        self.model += model.last_run["cycle_count"]
        self.timing += timing.last_run["cycle_count"]
        self.runs += 1


class Tee(TeeBase):
    """Sends every stream to tsim, the model and the timing-only model, and adds them to :attr:`pair`."""

    def __init__(self, tsim: TSim, model: CycleModel, timing: CycleModel):
        super().__init__(tsim, model, timing)
        self.pair = Pair()

    def run(self, insn_phys_addr: int, insn_count: int, wait_cycles: int = 0) -> int:
        self.pair.add(self.tsim, self.model, self.timing, insn_phys_addr, insn_count)
        return 0


def line(name: str, p: Pair, rows: list) -> None:
    err = (p.model - p.tsim) / p.tsim
    speed = p.tsim_s / p.model_s if p.model_s else float("inf")
    timing = p.tsim_s / p.timing_s if p.timing_s else float("inf")
    first = p.tsim_s / p.first_s if p.first_s else float("inf")
    rows.append((abs(err), speed, timing, first))
    differs = "" if p.timing == p.model else f"  TIMING-ONLY DIFFERS ({p.timing} cycles)"
    print(
        f"  {name:<30} tsim {p.tsim:>10}  model {p.model:>10}  error {100 * err:+6.2f} %  "
        f"tsim {1e3 * p.tsim_s:9.3f} ms  "
        f"model {1e3 * p.model_s:8.3f} ms speed x{speed:<4.0f}  timing-only {1e3 * p.timing_s:7.3f} ms x{timing:.0f}"
        + (f" (first run x{first:.0f})" if p.runs and p.first_s != p.timing_s else "")
        + (f"  fsim {1e3 * p.fsim_s:.3f} ms, model {100 * (p.beside_fsim_s / p.fsim_s - 1):+.0f} %" if p.fsim_s else "")
        + differs,
        flush=True,
    )


def programs(env: Environment, dram: DRAM, tsim: TSim, model, quick: bool, rows: list, repeat: int) -> None:
    pack = build_demo_pack(env)
    pack.install(dram)
    try:
        p = Pair()
        p.add(tsim, *model[:2], pack.insn_addr, pack.insn_count, repeat, model[2])
        line("demo", p, rows)
    finally:
        pack.uninstall(dram)
    for m, k, reps in ((4, 4, 1), (16, 8, 4)) if quick else ((4, 4, 1), (16, 8, 4), (64, 16, 16)):
        prog = gemm_program.build(env, dram, m=m, k=k, reps=reps, seed=1)
        try:
            p = Pair()
            p.add(tsim, *model[:2], prog.insn_addr, prog.insn_count, repeat, model[2])
            line(f"gemm m={m} k={k} reps={reps}", p, rows)
        finally:
            prog.free(dram)
    for seed in range(2 if quick else 10):
        rp = random_program(env, dram, seed, length=32, allow_mul=False, imm_in_place=True, allow_tensor_shr=False)
        try:
            p = Pair()
            p.add(tsim, *model[:2], rp.insn_addr, rp.insn_count, repeat, model[2])
            line(f"random seed={seed} ({rp.insn_count} insns)", p, rows)
        finally:
            rp.close()


def insn_heavy(env: Environment, dram: DRAM, tsim: TSim, model, quick: bool, rows: list, repeat: int) -> None:
    makers = [("conv-like", lambda: conv_stream(env, dram, 2000 if quick else 29_000))]
    if env.BATCH == 1 and not quick:
        makers.append(("GEMM 256^3 upstream-shaped", lambda: gemm_stream_tiled(env, dram, 256)[0]))
    for label, make in makers:
        try:
            prog = make()
        except (AssertionError, ValueError) as exc:
            print(f"  {label}: skipped on this configuration ({exc!r})")
            continue
        addr, count = prog.build()
        p = Pair()
        p.add(tsim, *model[:2], addr, count, repeat, model[2])
        line(f"{label} ({count} insns)", p, rows)
        prog.close()


def workloads(env: Environment, tsim: TSim, model, names, rows: list, label: str) -> None:
    from vta.dse import workloads as wl

    resnet = Pair()
    layers = 0
    for name in names:
        tee = Tee(tsim, *model)
        try:
            wl.run(wl.get(name), env, tee)
        except ScheduleError as exc:
            print(f"  {name}: skipped on this configuration ({str(exc).splitlines()[0]})")
            continue
        line(f"{name} ({tee.pair.runs} runs)", tee.pair, rows)
        layer = name.split(".")[-1]
        if name.startswith("resnet18.") and layer in RESNET18_REPEATS:
            k = RESNET18_REPEATS[layer]
            resnet.tsim += k * tee.pair.tsim
            resnet.model += k * tee.pair.model
            layers += 1
    if layers == len(RESNET18_REPEATS):
        print(f"ResNet-18 C2-C11 x repeats ({label}): tsim {resnet.tsim} cycles, model {resnet.model} cycles, "
              f"error {100 * (resnet.model - resnet.tsim) / resnet.tsim:+.2f} %", flush=True)


def summary(label: str, rows: list) -> None:
    if rows:
        errs = [r[0] for r in rows]
        print(f"-> {label}: median |error| {100 * statistics.median(errs):.2f} %, max {100 * max(errs):.2f} %, "
              f"slowest speed ratio x{min(r[1] for r in rows):.0f} (whole run, with fsim), "
              f"x{min(r[2] for r in rows):.0f} (timing only), x{min(r[3] for r in rows):.0f} (timing only, first "
              f"runs; median x{statistics.median(r[3] for r in rows):.0f}) over {len(rows)} streams", flush=True)


def reference_label(reference: str) -> str:
    if reference == "pinned":
        return f"tsim of commit {REFERENCE_COMMIT} (the model's speed goal)"
    if reference == "current":
        return "this tree's tsim"
    return f"the library {reference}"


def reference_tsim(reference: str, env: Environment, config: str, memory: str) -> Path:
    """The tsim library the stream runs on (see ``--reference-tsim``)."""
    if reference == "pinned":
        return reference_library(cfg_for(config, memory), _REPO)
    if reference == "current":
        return library.build(env)
    return Path(reference)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", nargs="*", default=None, help=f"configurations (default: all of {CONFIGS})")
    ap.add_argument("--dram", nargs="*", default=list(MEMORIES), help="memories: ideal, ddr4 (default both)")
    ap.add_argument("--only", nargs="*", default=None, help="stream groups: programs, workloads, insn-heavy")
    ap.add_argument("--workloads", nargs="*", default=None, help="workload names (default: the ResNet-18 "
                    "layers C2-C11, gemm.blocked and alu.chain)")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each program and instruction-heavy stream "
                    "per level; the median wall time is reported (default 5)")
    ap.add_argument("--quick", action="store_true", help="default configuration, a few small streams")
    ap.add_argument("--reference-tsim", default=None, metavar="pinned|current|LIBRARY",
                    help=f"the tsim of the speed ratios: pinned (default; tsim of commit {REFERENCE_COMMIT}, the "
                    "reference of the model's speed goal), current (this tree's; the default of --quick) or "
                    "the path of a built tsim library")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="time wall seconds (default) or the process's CPU seconds (steadier under load)")
    args = ap.parse_args(argv)
    global _clock
    _clock = CLOCKS[args.clock]
    reference = args.reference_tsim or ("current" if args.quick else "pinned")
    print(f"reference tsim: {reference_label(reference)}; clock: {args.clock}", flush=True)
    configs = args.config or (("vta_config",) if args.quick else CONFIGS)
    groups = args.only or ("programs", "workloads", "insn-heavy")
    names = args.workloads or (("resnet18.C11",) if args.quick else WORKLOADS)
    everything = []
    for config in configs:
        for memory in args.dram:
            env = env_for(config, memory)
            print(f"configuration {config} ({env.BATCH}x{env.BLOCK_IN}x{env.BLOCK_OUT}, int{env.INP_WIDTH}), "
                  f"memory {memory}", flush=True)
            lib = reference_tsim(reference, env, config, memory)
            rows: list = []
            with env, DRAM(1 << 28) as dram, TSim(env, dram, library=lib) as tsim, CycleModel(env, dram) as full, \
                    CycleModel(env, dram, functional=False) as timing, FunctionalSimulator(env, dram) as fsim:
                model = (full, timing, fsim)
                warm = conv_stream(env, dram, 4)
                addr, count = warm.build()
                for dev in (tsim,) + model:  # fsim's compiled engine and the replay load once, the
                    for _ in range(2):  # repeat path's entry is looked up once, and tsim starts
                        dev.run(addr, count)
                warm.close()
                if "programs" in groups:
                    programs(env, dram, tsim, model, args.quick, rows, args.repeat)
                if "insn-heavy" in groups:
                    insn_heavy(env, dram, tsim, model, args.quick, rows, args.repeat)
            if "workloads" in groups:
                from vta.dram import global_dram

                with env, TSim(env, global_dram(), library=lib) as tsim, CycleModel(env, global_dram()) as full, \
                        CycleModel(env, global_dram(), functional=False) as timing:
                    workloads(env, tsim, (full, timing), names, rows, f"{config}, {memory}")
            summary(f"{config}, {memory}", rows)
            everything += rows
    summary("all", everything)
    return 0


if __name__ == "__main__":
    sys.exit(main())
