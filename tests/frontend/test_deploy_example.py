"""``examples/deploy_classification.py`` runs as a script (fresh interpreter) and passes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from vta.env import load_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("target", ["sim", "model"])
def test_deploy_classification_example(tmp_path, target):
    config = tmp_path / "vta_config.json"
    config.write_text(json.dumps({**load_config(), "TARGET": target}))
    env = dict(os.environ, PYTHONPATH=str(ROOT), VTA_CONFIG=str(config))
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "deploy_classification.py"), "--images", "2"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASSED: top-1 equals onnxruntime's on 2 of 2 images" in proc.stdout
    assert len(re.findall(r"image \d: top-5 classes \[\d+, \d+, \d+, \d+, \d+\]", proc.stdout)) == 2
    assert "inference wall time" in proc.stdout
    if target == "model":
        assert re.search(r"cycles: [1-9]\d*", proc.stdout)
