"""Crash tests: kill a process that builds, exports, sweeps or uploads, then check nothing was lost.

A *scenario* is a small job that writes what the project publishes:

``build``   the native runtime and a vector-add module built into a fresh cache
``export``  the same module exported with ``export_library`` (``out/vadd.so`` and ``out/vadd.tar``)
``sweep``   a four-point design-space sweep (rows in a result store, then ``points.csv``/``.jsonl``)
``upload``  a file uploaded twice over RPC (the second time with new contents) to an in-process
            server

``python -m vta.crash SCENARIO DIR`` runs one in ``DIR`` (its cache is ``DIR/cache``) and
writes ``DIR/result.json``, a digest of what the job computed (outputs of the built module, the
sweep rows, the downloaded file). :func:`trial` runs a scenario once killed (by a crash point,
see :mod:`vta.atomic`, or by ``SIGKILL`` from outside after a delay), checks what the killed
run left behind against a clean run of the same scenario, then runs it again in the same
directory and checks that the digest equals the clean run's.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["SCENARIOS", "POINTS", "Outcome", "run_scenario", "clean_run", "trial", "published_files"]

SCENARIOS = ("build", "export", "sweep", "upload")
#: The crash points of :mod:`vta.atomic` with the hit counts a trial picks from.
POINTS = ("atomic.partial", "atomic.before_replace", "atomic.after_replace")
_RESULT = "result.json"
_VOLATILE = {"seconds"}


# ----------------------------------------------------------------------------- the jobs
def _vadd(env):
    from . import build, te

    shape = (1, 4, env.BATCH, env.BLOCK_OUT)
    a = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    b = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    a_buf = te.compute(shape, lambda *i: a(*i), "A_buf")
    b_buf = te.compute(shape, lambda *i: b(*i), "B_buf")
    c_buf = te.compute(shape, lambda *i: a_buf(*i) + b_buf(*i), name="C_buf")
    c = te.compute(shape, lambda *i: c_buf(*i).astype(env.inp_dtype), name="C")
    s = te.create_schedule(c.op)
    for stage in (a_buf, b_buf, c_buf):
        s[stage].set_scope(env.acc_scope)
    s[a_buf].pragma(s[a_buf].op.axis[0], env.dma_copy)
    s[b_buf].pragma(s[b_buf].op.axis[0], env.dma_copy)
    s[c_buf].pragma(s[c_buf].op.axis[0], env.alu)
    s[c].pragma(s[c].op.axis[0], env.dma_copy)
    return build(s, [a, b, c], "ext_dev", name="vadd"), shape


def _run_vadd(mod, env, shape) -> str:
    from . import runtime

    rng = np.random.default_rng(7)
    x = rng.integers(-50, 50, size=shape).astype(env.acc_dtype)
    y = rng.integers(-50, 50, size=shape).astype(env.acc_dtype)
    dev = runtime.ext_dev(0)
    out = runtime.empty(shape, env.inp_dtype, dev)
    mod(runtime.array(x, dev), runtime.array(y, dev), out)
    return hashlib.sha256(out.numpy().tobytes()).hexdigest()


def _job_build(d: Path) -> dict:
    from .env import get_env
    from .runtime.native_lib import runtime_library

    env = get_env()
    runtime_library(env)
    mod, shape = _vadd(env)
    return {"vadd": _run_vadd(mod, env, shape)}


def _job_export(d: Path) -> dict:
    from .env import get_env
    from .runtime import load_module

    env = get_env()
    mod, shape = _vadd(env)
    out = d / "out"
    out.mkdir(exist_ok=True)
    mod.export_library(out / "vadd.so")
    mod.export_library(out / "vadd.tar")
    return {name: _run_vadd(load_module(out / name), env, shape) for name in ("vadd.so", "vadd.tar")}


_SWEEP_SPEC = {"parameters": {"LOG_BLOCK": [4, 5], "LOG_ACC_BUFF_SIZE": [16, 17]}, "workloads": ["alu.chain"]}


def _job_sweep(d: Path) -> dict:
    from .dse.evaluate import release_devices
    from .dse.results import read_jsonl
    from .dse.space import load_spec
    from .dse.store import ResultStore
    from .dse.sweep import run_sweep

    try:
        run_sweep(load_spec(_SWEEP_SPEC), d / "out", store=ResultStore(d / "store"), workers=0, plot=False)
    finally:
        release_devices()
    rows = [{k: v for k, v in r.items() if k not in _VOLATILE} for r in read_jsonl(d / "out" / "points.jsonl")]
    return {"rows": rows, "points.csv": hashlib.sha256((d / "out" / "points.csv").read_bytes()).hexdigest()}


def _job_upload(d: Path) -> dict:
    from . import rpc
    from .rpc.server import Server

    sessions = d / "sessions"
    sessions.mkdir(exist_ok=True)
    first, second = _upload_data(1), _upload_data(2)
    with Server("127.0.0.1", 0, workdir=sessions).start() as srv, rpc.connect(srv.host, srv.port, timeout=120) as c:
        c.upload(first, target="net.bin")
        c.upload(second, target="net.bin")
        got = c.download("net.bin")
    return {"download": hashlib.sha256(got).hexdigest(), "second": hashlib.sha256(second).hexdigest()}


_JOBS = {"build": _job_build, "export": _job_export, "sweep": _job_sweep, "upload": _job_upload}


def run_scenario(name: str, directory: str | os.PathLike) -> dict:
    """Run scenario ``name`` in ``directory`` and write its digest to ``directory/result.json``.

    Raises
    ------
    KeyError
        If ``name`` is not one of :data:`SCENARIOS`.
    """
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    digest = _JOBS[name](d)
    (d / _RESULT).write_text(json.dumps(digest, sort_keys=True))
    return digest


# ----------------------------------------------------------------------------- the trials
def _child(name: str, d: Path, crash_at: str | None) -> subprocess.Popen:
    from .cache import cache_dir

    numba = d / "cache" / "numba"  # numba's own cache (written by numba) is shared: compiling it is slow
    if not numba.exists():
        numba.parent.mkdir(parents=True, exist_ok=True)
        numba.symlink_to(cache_dir("numba"), target_is_directory=True)
    env = dict(os.environ, VTA_CACHE_DIR=str(d / "cache"))
    env.pop("VTA_CRASH_AT", None)
    if crash_at:
        env["VTA_CRASH_AT"] = crash_at
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen([sys.executable, "-m", "vta.crash", name, str(d)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen, timeout: float) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return -signal.SIGKILL, f"timed out after {timeout} s\n{err}"
    return proc.returncode, err


def _tar_members(path: Path) -> str:
    try:
        with tarfile.open(path) as tar:
            parts = [(m.name, hashlib.sha256(tar.extractfile(m).read()).hexdigest()) for m in tar.getmembers()
                     if m.isfile()]
    except (tarfile.TarError, OSError) as exc:
        return f"unreadable: {exc}"
    return json.dumps(parts)


def _rows(path: Path) -> str:
    try:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
    except (OSError, ValueError) as exc:
        return f"unreadable: {exc}"
    return json.dumps([{k: v for k, v in r.items() if k not in _VOLATILE} for r in rows], sort_keys=True)


def published_files(d: Path) -> dict[str, str]:
    """A fingerprint of every file under ``d`` that is published (not hidden, not a temporary).

    Files are compared by their bytes, except sweep rows (JSON without the run time), tar files
    (their members, not their time stamps) and the by-products of loading a ``.tar`` (a directory
    of a random name).
    """
    out = {}
    for p in sorted(d.rglob("*")):
        rel = p.relative_to(d)
        if not p.is_file() or p.name == _RESULT or any(part.startswith(".") for part in rel.parts):
            continue
        if rel.parts[:2] == ("cache", "numba"):
            continue  # numba's cache: numba writes it (through a rename) and its files vary per run
        if rel.parts[0] == "cache" and len(rel.parts) > 2 and rel.parts[2].startswith("gen_"):
            continue  # the runtime build's scratch directory (a temporary directory)
        if any(".tar." in part for part in rel.parts[:-1]):
            continue  # a .tar unpacked by load_module
        if rel.parts[0] == "sessions":
            rel = Path("sessions", *rel.parts[2:])  # session directories have random names
        if p.suffix in (".json", ".jsonl"):
            out[str(rel)] = _rows(p)
        elif p.suffix == ".tar":
            out[str(rel)] = _tar_members(p)
        else:
            out[str(rel)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def clean_run(name: str, d: Path, timeout: float = 600.0) -> tuple[dict, dict[str, str], float]:
    """Run a scenario without a crash in ``d``, then move ``d`` aside (``d`` stays free).

    Trials must run in the same directory (built libraries name their runtime's directory).

    Returns
    -------
    (dict, dict, float)
        The digest, the published files and the seconds the run took.

    Raises
    ------
    RuntimeError
        If the scenario fails.
    """
    start = time.monotonic()
    rc, err = _finish(_child(name, d, None), timeout)
    if rc != 0:
        raise RuntimeError(f"the clean run of {name!r} failed (exit {rc}):\n{err}")
    seconds = time.monotonic() - start
    digest, files = json.loads((d / _RESULT).read_text()), published_files(d)
    shutil.rmtree(d)
    return digest, files, seconds


@dataclass
class Outcome:
    """What one trial found."""

    killed: bool          # the crashed run died of SIGKILL (else it finished before the crash)
    recovered: bool       # the next run succeeded and gave the clean run's digest
    damaged: list         # published files of the killed run that differ from the clean run's
    detail: str = ""

    @property
    def lost(self) -> bool:
        return bool(self.damaged) or not self.recovered


def _damaged(after_crash: dict[str, str], clean: dict[str, str], name: str) -> list[str]:
    bad = []
    uploads = {hashlib.sha256(_upload_data(seed)).hexdigest() for seed in (1, 2)} if name == "upload" else set()
    for rel, digest in after_crash.items():
        if rel.startswith("sessions/"):
            # the killed server could not remove its session directory: what it holds under the
            # upload's name must be the first or the second upload, whole
            if digest not in uploads:
                bad.append(rel)
        elif clean.get(rel) != digest:
            bad.append(rel)
    return bad


def _upload_data(seed: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, size=1 << 20, dtype=np.uint8).tobytes()


def trial(name: str, d: Path, clean: tuple[dict, dict[str, str], float], *, crash_at: str | None = None,
          kill_after: float | None = None, timeout: float = 600.0) -> Outcome:
    """Kill scenario ``name`` once in ``d`` (where its clean run was made), check the debris, run again.

    Parameters
    ----------
    clean
        What :func:`clean_run` returned for the scenario (in another directory).
    crash_at : str, optional
        A crash point of :mod:`vta.atomic` (``name`` or ``name@N``).
    kill_after : float, optional
        Seconds after which the parent sends ``SIGKILL`` (a random point in time).
    """
    digest, clean_files, _ = clean
    proc = _child(name, d, crash_at)
    if kill_after is not None:
        try:
            proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
    rc, err = _finish(proc, timeout)
    killed = rc == -signal.SIGKILL
    if not killed and rc != 0:
        return Outcome(False, False, [], f"the crashed run failed instead of dying (exit {rc}):\n{err}")
    (d / _RESULT).unlink(missing_ok=True)
    damaged = _damaged(published_files(d), clean_files, name)
    rc, err = _finish(_child(name, d, None), timeout)
    if rc != 0:
        return Outcome(killed, False, damaged, f"the run after the crash failed (exit {rc}):\n{err}")
    again = json.loads((d / _RESULT).read_text())
    return Outcome(killed, again == digest, damaged, "" if again == digest else f"digest {again} != {digest}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in SCENARIOS:
        sys.exit(f"usage: python -m vta.crash {{{','.join(SCENARIOS)}}} DIR")
    run_scenario(sys.argv[1], sys.argv[2])
