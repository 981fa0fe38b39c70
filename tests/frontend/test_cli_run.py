"""``python -m vta run`` with ONNX models (packs keep their own tests)."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

pytest.importorskip("onnx")

from vta.__main__ import main  # noqa: E402
from vta.models import digits_model_path, load_digits_test  # noqa: E402


def _run(*argv):
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_default_runs_the_digits_model_and_prints_accuracy():
    rc, text = _run("run", "--limit", "30")
    assert rc == 0
    assert re.search(r"top-1 accuracy: [01]\.\d{4} \(30 images; onnxruntime int8: 0\.9889\)", text)
    assert "conv1" in text and "vta.conv2d" in text and "total:" in text


def test_model_file_with_input_prints_top5_and_cycles_on_the_cycle_model(tmp_path):
    x, y, _ = load_digits_test()
    np.save(tmp_path / "x.npy", x[0])  # (1, 8, 8): the batch axis is added
    rc, text = _run("run", str(digits_model_path()), "--input", str(tmp_path / "x.npy"), "--target", "model")
    assert rc == 0
    top = re.search(r"image 0: top-5 classes (\d+) ", text)
    assert top and int(top.group(1)) == y[0]
    assert re.search(r"total: \d+ cycles on the accelerator per run \(model\)", text)


def test_bad_model_invocations_exit_2(tmp_path, capsys):
    assert _run("run", str(tmp_path / "missing.onnx"))[0] == 2
    assert "does not exist" in capsys.readouterr().err
    assert _run("run", "digits", "--input", str(tmp_path / "x.npy"))[0] == 2
    np.save(tmp_path / "bad.npy", np.zeros((3, 3), np.float32))
    assert _run("run", str(digits_model_path()), "--input", str(tmp_path / "bad.npy"))[0] == 2
    assert "must have shape" in capsys.readouterr().err
    assert _run("run", "--batch", "0")[0] == 2
