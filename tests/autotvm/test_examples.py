"""The ported tuning tutorials run in their quick mode (few trials) and say PASSED."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tune_relay_vta.py", "tune_alu_vta.py"])
def test_tuning_tutorial_quick(name, tmp_path):
    if not (ROOT / "examples" / name).is_file():
        pytest.skip(f"{name} is not in examples/")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / name), "--quick"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "PASSED" in proc.stdout
    assert "schedules from the log" in proc.stdout
