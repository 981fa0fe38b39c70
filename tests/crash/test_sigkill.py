"""A process killed with SIGKILL while it writes loses nothing: files are old or new, never torn,
and the next run gives the results of a clean run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from vta import atomic
from vta import crash

ROOT = Path(__file__).resolve().parents[2]
OLD, NEW = b"old contents\n" * 1000, b"NEW CONTENTS\n" * 3000


def _write_in_child(path: Path, crash_at: str | None) -> int:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop(atomic.CRASH_ENV, None)
    if crash_at:
        env[atomic.CRASH_ENV] = crash_at
    code = f"from vta import atomic; atomic.write_bytes({str(path)!r}, {NEW!r})"
    return subprocess.run([sys.executable, "-c", code], env=env, timeout=120).returncode


@pytest.mark.parametrize("point, expected", [("atomic.partial", OLD), ("atomic.before_replace", OLD),
                                             ("atomic.after_replace", NEW)], ids=["partial", "before", "after"])
def test_a_file_is_old_or_new_after_sigkill(tmp_path, point, expected):
    target = tmp_path / "entry.bin"
    target.write_bytes(OLD)
    assert _write_in_child(target, point) == -signal.SIGKILL
    assert target.read_bytes() == expected
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["entry.bin"]
    assert _write_in_child(target, None) == 0  # the next run replaces it, whatever was left behind
    assert target.read_bytes() == NEW


def test_crash_points_are_inert_unless_armed(tmp_path, monkeypatch):
    monkeypatch.delenv(atomic.CRASH_ENV, raising=False)
    atomic.crash_point("atomic.partial")
    monkeypatch.setenv(atomic.CRASH_ENV, "some.other.point")
    atomic.write_bytes(tmp_path / "x", b"data")  # passes every point without dying
    assert (tmp_path / "x").read_bytes() == b"data"
    assert os.listdir(tmp_path) == ["x"]


def test_a_failed_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "t.csv"
    target.write_bytes(OLD)
    with pytest.raises(RuntimeError):
        with atomic.atomic_writer(target, "w") as f:
            f.write("half a table")
            raise RuntimeError("the writer failed")
    assert target.read_bytes() == OLD and os.listdir(tmp_path) == ["t.csv"]


@pytest.fixture(scope="module")
def clean_runs(tmp_path_factory):
    """Clean runs by scenario, made in the directory the trials of that scenario use."""
    return {}, tmp_path_factory.mktemp("crash")


FIXED = [("upload", "atomic.partial@2"), ("upload", "atomic.before_replace@2"),
         ("sweep", "atomic.before_replace@2"), ("sweep", "atomic.partial@5"),
         ("export", "atomic.before_replace@1"), ("export", "atomic.partial@1"),
         ("build", "atomic.before_replace@1"), ("build", "atomic.after_replace@2")]


@pytest.mark.slow
@pytest.mark.parametrize("name, point", FIXED, ids=[f"{n}-{p}" for n, p in FIXED])
def test_killed_job_loses_nothing(clean_runs, name, point):
    runs, base = clean_runs
    d = base / name
    if name not in runs:
        runs[name] = crash.clean_run(name, d)
    try:
        out = crash.trial(name, d, runs[name], crash_at=point)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert out.killed, f"the {name} job finished before reaching {point}"
    assert out.damaged == [], f"files torn or wrong after the crash: {out.damaged}"
    assert out.recovered, out.detail
