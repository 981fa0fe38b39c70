"""tsim libraries for a configuration are never built twice at the same time (a file lock)."""

from __future__ import annotations

import threading
import time

import pytest

from vta.dse import rtl
from vta.env import Environment, load_config
from vta.errors import BuildError
from vta.sim.tsim import library


def test_concurrent_requests_for_one_configuration_build_once(tmp_path, monkeypatch):
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path / "cache"))
    made = tmp_path / "lib.so"
    state = {"running": 0, "most": 0, "builds": 0}
    guard = threading.Lock()

    def fake_build(files, package, trace=None):
        with guard:
            state["running"] += 1
            state["most"] = max(state["most"], state["running"])
        try:
            if not made.exists():  # what the real cache lookup does
                time.sleep(0.3)
                state["builds"] += 1
                made.write_text("built")
            return made
        finally:
            with guard:
                state["running"] -= 1

    monkeypatch.setattr(library, "build_sources", fake_build)
    env = Environment(load_config())
    results = []
    threads = [threading.Thread(target=lambda: results.append(rtl.build_library(env))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [made] * 4
    assert state == {"running": 0, "most": 1, "builds": 1}


def test_sources_of_an_rtl_directory(tmp_path):
    (tmp_path / "sim").mkdir()
    for name in ("b.sv", "a.sv", "sim/top.sv", "notes.txt"):
        (tmp_path / name).write_text("")
    assert [p.relative_to(tmp_path).as_posix() for p in rtl.sources(tmp_path)] == ["a.sv", "b.sv", "sim/top.sv"]
    with pytest.raises(BuildError, match="no SystemVerilog"):
        rtl.sources(tmp_path / "sim" / "nothing")
