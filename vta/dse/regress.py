"""The hardware designer's regression: one command, one table, one exit code.

Stages, in order (``stages`` selects a subset):

``lint``          ``verilator --lint-only -Wall`` on the core for every configuration
``cocotb``        the cocotb unit tests of ``tests/hw`` (one pytest run, on the RTL under test
                  through ``VTA_HW_DIR``; skipped with a reason outside a source checkout)
``differential``  N random programs (:func:`vta.testing.programs.random_program`) per
                  configuration on fsim and on tsim: output bytes and statistics must be identical
``workloads``     the fixed workload set on tsim and on the cycle model: outputs must agree,
                  tsim cycles are compared with the committed baseline of the configuration
                  (a change above ``threshold`` is a named regression) and the model's cycles
                  with tsim's (an error above ``model_tolerance`` fails)

The RTL under test is ``hw_dir`` (the project's ``hw/`` by default), so a designer's modified
copy is tested without touching the tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np

from ..env import Environment, load_config
from . import baseline as bl
from .evaluate import Point, evaluate, release_devices
from .report import Check, WorkloadRow

__all__ = ["DEFAULT_WORKLOADS", "REPO", "STAGES", "Options", "Outcome", "default_configs", "run"]

REPO = Path(__file__).resolve().parents[2]
STAGES = ("lint", "cocotb", "differential", "workloads")
#: The fixed workload set (a whole network joins it once the graph layer provides one).
DEFAULT_WORKLOADS = ("resnet18", "gemm.blocked", "alu.chain")
#: Random programs on the default configuration and on each other one.
DEFAULT_PROGRAMS, OTHER_PROGRAMS = 1000, 200
#: Statistics that fsim and tsim must agree on, besides the output bytes.
_COMPARED = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes",
             "gemm_counter", "alu_counter", "insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish",
             "insn_nop", "tokens_l2g", "tokens_g2l", "tokens_g2s", "tokens_s2g")


def default_configs() -> list[Path]:
    """The shipped configurations, the default one first."""
    found = sorted((REPO / "configs").glob("*.json"))
    return sorted(found, key=lambda p: (p.name != "vta_config.json", p.name))


@dataclass
class Options:
    """What :func:`run` checks and against what.

    Attributes
    ----------
    configs : list of Path
        Configuration files (default: every shipped one, the default first).
    hw_dir : Path
        The RTL under test.
    baselines : Path
        A directory of ``<config file name>`` baselines, or one file (with one configuration).
    update_baseline : bool
        Write the new tsim and model cycles as the baselines (the comparison still runs first).
    programs : int, optional
        Random programs per configuration (default 1,000 on the default one, 200 on others).
    threshold : float
        Relative cycle change counted as a regression (0.01 = 1%).
    model_tolerance : float
        Largest accepted relative error of the model against tsim.
    stages : tuple of str
    workloads : tuple of str
        Workload or group names (:mod:`vta.dse.workloads`).
    tests_dir : Path
        Where the cocotb unit tests live.
    """

    configs: list = field(default_factory=default_configs)
    hw_dir: Path = REPO / "hw"
    baselines: Path = REPO / "baselines"
    update_baseline: bool = False
    programs: int | None = None
    threshold: float = 0.01
    model_tolerance: float = 0.01
    stages: tuple = STAGES
    workloads: tuple = DEFAULT_WORKLOADS
    tests_dir: Path = REPO / "tests" / "hw"

    def __post_init__(self):
        unknown = [s for s in self.stages if s not in STAGES]
        if unknown:
            raise ValueError(f"unknown stage(s) {unknown!r}; accepted: {', '.join(STAGES)}")
        if self.programs is not None and self.programs < 0:
            raise ValueError(f"programs must be non-negative, got {self.programs!r}")
        for name in ("threshold", "model_tolerance"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be non-negative, got {getattr(self, name)!r}")
        self.configs = [Path(c) for c in self.configs]
        self.hw_dir, self.baselines = Path(self.hw_dir), Path(self.baselines)
        if self.baselines.suffix == ".json" and len(self.configs) != 1:
            raise ValueError(f"baseline file {str(self.baselines)!r} names one configuration but "
                             f"{len(self.configs)} are checked; pass a directory or one --config")


@dataclass
class Outcome:
    """The checks, the workload table, and the baseline files written."""

    checks: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    written: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether nothing failed."""
        return not any(c.status in ("fail", "error") for c in self.checks)


def _log(out: TextIO | None, text: str) -> None:
    if out is not None:
        out.write(text + "\n")
        out.flush()


def _timed(stage: str, name: str, fn: Callable[[], tuple[str, str]]) -> Check:
    start = time.perf_counter()
    try:
        status, message = fn()
    except Exception as exc:  # one broken stage must not hide the others; the check says what broke
        status, message = "error", f"{type(exc).__name__}: {exc}"
    return Check(stage, name, status, message, time.perf_counter() - start)


def run(opts: Options, log: TextIO | None = None) -> Outcome:
    """Run the selected stages; return every check and the workload rows.

    Raises
    ------
    vta.errors.ConfigError
        If a configuration file is invalid.
    """
    outcome = Outcome()
    envs = [(path, Environment({**load_config(path), "TARGET": "sim"})) for path in opts.configs]
    try:
        if "lint" in opts.stages:
            for path, env in envs:
                _log(log, f"lint {path.name} ...")
                outcome.checks.append(_timed("lint", path.name, lambda env=env: _lint(env, opts)))
        if "cocotb" in opts.stages:
            _log(log, "cocotb unit tests ...")
            outcome.checks.extend(_cocotb(opts))
        if "differential" in opts.stages:
            for k, (path, env) in enumerate(envs):
                n = opts.programs if opts.programs is not None else (
                    DEFAULT_PROGRAMS if path.name == "vta_config.json" else OTHER_PROGRAMS)
                _log(log, f"differential {path.name}: {n} random programs, fsim against tsim ...")
                outcome.checks.append(_timed("differential", path.name, lambda env=env, n=n: _differential(env, n, opts)))
        if "workloads" in opts.stages:
            for path, env in envs:
                _log(log, f"workloads {path.name} on tsim and the model ...")
                _workloads(path, env, opts, outcome)
    finally:
        release_devices()
    return outcome


# ----------------------------------------------------------------------------- lint
def _lint(env: Environment, opts: Options) -> tuple[str, str]:
    from .rtl import lint

    text = lint(env, opts.hw_dir)
    return ("fail", text[-4000:]) if text else ("pass", "")


# ----------------------------------------------------------------------------- cocotb
def _cocotb(opts: Options) -> list[Check]:
    if not opts.tests_dir.is_dir():
        return [Check("cocotb", "tests/hw", "skip", f"no cocotb tests at {str(opts.tests_dir)!r} "
                                                     "(run from a source checkout)")]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "cocotb.xml"
        env = dict(os.environ, VTA_HW_DIR=str(opts.hw_dir.resolve()))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(opts.tests_dir.parents[1]), env.get("PYTHONPATH")]))
        cmd = [sys.executable, "-m", "pytest", str(opts.tests_dir), "-m", "verilator", "-k", "not lint", "-q",
               "-p", "no:cacheprovider", f"--junitxml={xml}", "-o", "addopts="]
        proc = subprocess.run(cmd, cwd=opts.tests_dir.parents[1], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, check=False)
        if not xml.exists():
            return [Check("cocotb", "tests/hw", "error", f"pytest exited with {proc.returncode} and wrote no "
                                                         f"results:\n{proc.stdout[-3000:]}", time.perf_counter() - start)]
        checks = _junit_checks(xml)
    if not checks:
        return [Check("cocotb", "tests/hw", "error", f"pytest ran no cocotb test:\n{proc.stdout[-2000:]}")]
    return checks


def _junit_checks(path: Path) -> list[Check]:
    """One check per testcase of a pytest JUnit file."""
    checks = []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        status, message = "pass", ""
        for tag, st in (("failure", "fail"), ("error", "error"), ("skipped", "skip")):
            node = case.find(tag)
            if node is not None:
                status, message = st, (node.get("message") or "") + "\n" + (node.text or "")
                break
        checks.append(Check("cocotb", name, status, message.strip(), float(case.get("time", 0) or 0)))
    return checks


# ----------------------------------------------------------------------------- differential
def _differential(env: Environment, n: int, opts: Options) -> tuple[str, str]:
    from ..dram import DRAM
    from ..sim.fsim import FunctionalSimulator
    from ..sim.tsim import TSim
    from ..testing.programs import random_program
    from .rtl import build_library

    if n == 0:
        return "skip", "0 programs asked for"
    lib = build_library(env, opts.hw_dir)
    failures = []
    with DRAM(1 << 28) as dram, FunctionalSimulator(env, dram) as fsim, TSim(env, dram, library=lib) as tsim:
        for seed in range(n):
            prog = random_program(env, dram, seed, length=int(8 + seed % 24))
            try:
                msg = _compare(fsim, tsim, prog, dram)
            except Exception as exc:  # a run that raises on one level only is a difference too
                msg = f"{type(exc).__name__}: {exc}"
                fsim.reset()
                tsim.reset()
            finally:
                prog.close()
            if msg:
                failures.append(f"seed {seed} ({prog.insn_count} instructions): {msg}")
    if failures:
        return "fail", f"{len(failures)} of {n} programs differ between fsim and tsim\n" + "\n".join(failures[:10])
    return "pass", f"{n} programs identical"


def _compare(fsim, tsim, prog, dram) -> str:
    fsim.clear_stats()
    tsim.clear_stats()
    fsim.run(prog.insn_addr, prog.insn_count)
    want = prog.read_outputs()
    prog.clear_outputs()
    tsim.run(prog.insn_addr, prog.insn_count)
    got = prog.read_outputs()
    for k, (w, g) in enumerate(zip(want, got, strict=True)):
        if w != g:
            diff = np.flatnonzero(np.frombuffer(w, np.uint8) != np.frombuffer(g, np.uint8))
            return f"output {k} differs in {diff.size} bytes, first at byte {diff[0]}"
    fs, ts = fsim.stats(), tsim.stats()
    bad = {key: (fs.get(key), ts.get(key)) for key in _COMPARED if fs.get(key) != ts.get(key)}
    return f"statistics (fsim, tsim) differ: {bad!r}" if bad else ""


# ----------------------------------------------------------------------------- workloads
def _baseline_path(path: Path, opts: Options) -> Path:
    return opts.baselines if opts.baselines.suffix == ".json" else opts.baselines / path.name


def _workloads(path: Path, env: Environment, opts: Options, outcome: Outcome) -> None:
    from . import workloads as wl

    config = load_config(path)
    bpath = _baseline_path(path, opts)
    try:
        base = bl.load(bpath, config)
    except bl.BaselineError as exc:
        outcome.checks.append(Check("workloads", path.name, "error", str(exc)))
        return
    new_tsim, new_model = {}, {}
    for workload in wl.resolve(opts.workloads):
        name = f"{path.name} {workload.name}"
        start = time.perf_counter()
        model = evaluate(Point.make(config, workload.name, "model"))
        tsim = evaluate(Point.make(config, workload.name, "tsim", opts.hw_dir))
        seconds = time.perf_counter() - start
        row = WorkloadRow(path.name, workload.name)
        outcome.rows.append(row)
        if "infeasible" in (model["status"], tsim["status"]):
            reason = (model if model["status"] == "infeasible" else tsim)["reason"]
            row.verdict = "skipped"
            outcome.checks.append(Check("workloads", name, "skip", reason, seconds))
            continue
        failed = [r for r in (tsim, model) if r["status"] != "ok"]
        if failed:
            row.verdict = "error"
            outcome.checks.append(Check("workloads", name, "error",
                                        f"{failed[0]['level']}: {failed[0]['reason']}", seconds))
            continue
        row.tsim_cycles, row.model_cycles = tsim["cycles"], model["cycles"]
        new_tsim[workload.name], new_model[workload.name] = tsim["cycles"], model["cycles"]
        row.model_error = (model["cycles"] - tsim["cycles"]) / tsim["cycles"] if tsim["cycles"] else None
        verdict = bl.compare(base.tsim_cycles.get(workload.name) if base else None, tsim["cycles"], opts.threshold)
        row.baseline, row.change = verdict.baseline, verdict.percent
        functional = tsim["output_digest"] == model["output_digest"]
        if not functional:
            outcome.checks.append(Check("workloads", f"{name} outputs", "fail",
                                        "tsim's output differs from the model's (fsim's) output", seconds))
        if verdict.status == "regression":
            msg = (f"cycle regression: {workload.name} on {path.name} takes {tsim['cycles']:,} cycles on tsim, "
                   f"{verdict.percent} against the baseline {verdict.baseline:,} (threshold {100 * opts.threshold:g}%)")
            outcome.checks.append(Check("workloads", f"{name} cycles", "fail", msg, seconds))
        elif verdict.status == "new":
            status = "pass" if opts.update_baseline else "fail"
            outcome.checks.append(Check("workloads", f"{name} cycles", status,
                                        f"no baseline in {str(bpath)!r}; record one with --update-baseline", seconds))
        else:
            note = "" if verdict.status == "same" else f"faster by {verdict.percent}: update the baseline"
            outcome.checks.append(Check("workloads", f"{name} cycles", "pass", note, seconds))
        waiver = (base.model_waivers if base else {}).get(workload.name)
        tolerance = max(opts.model_tolerance, float(waiver["tolerance"])) if waiver else opts.model_tolerance
        model_ok = row.model_error is not None and abs(row.model_error) <= tolerance
        if model_ok and abs(row.model_error) > opts.model_tolerance:
            row.notes.append("waived")
            message = f"waived up to {100 * tolerance:g}%: {waiver['reason']}"
        elif model_ok:
            message = ""
        else:
            message = (f"the model is off by {100 * row.model_error:+.2f}% ({model['cycles']:,} against tsim's "
                       f"{tsim['cycles']:,}; tolerance {100 * tolerance:g}%)")
        outcome.checks.append(Check("model", name, "pass" if model_ok else "fail", message))
        row.verdict = ("REGRESSION" if verdict.status == "regression" else "OUTPUT MISMATCH" if not functional
                       else verdict.status)
    if opts.update_baseline and new_tsim:
        merged = bl.Baseline({k: v for k, v in config.items() if k != "TARGET"},
                             {**(base.tsim_cycles if base else {}), **new_tsim},
                             {**(base.model_cycles if base else {}), **new_model},
                             base.model_waivers if base else {})
        outcome.written.append(bl.save(bpath, merged))
