"""ONNX models as sweep workloads (``digits``, ``onnx:PATH``, ``zoo:NAME``): names, MACs counted from
the model file, outputs against onnxruntime, and a sweep spec naming a model (no Dask here)."""

from __future__ import annotations

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import vta.models  # noqa: E402,F401  (registers the model workloads)
from vta.__main__ import main  # noqa: E402
from vta.dse import workloads as wl  # noqa: E402
from vta.dse.evaluate import Point, evaluate, release_devices  # noqa: E402
from vta.dse.space import shipped_config  # noqa: E402
from vta.env import Environment  # noqa: E402
from vta.models import digits_model_path  # noqa: E402
from vta.sim.model import CycleModel  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _release():
    yield
    release_devices()


def _onnx_macs(path) -> int:
    """Multiply-accumulates of every Conv and Gemm of the model, from its inferred shapes."""
    model = onnx.shape_inference.infer_shapes(onnx.load(str(path)))
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(model.graph.value_info) + list(model.graph.output) + list(model.graph.input)}
    shapes.update({t.name: list(t.dims) for t in model.graph.initializer})
    # a QDQ model feeds each weight through DequantizeLinear: follow it back to the initializer
    produced = {n.output[0]: n for n in model.graph.node}

    def shape(name):
        node = produced.get(name)
        return shapes[node.input[0]] if name not in shapes and node is not None else shapes[name]

    total = 0
    for node in model.graph.node:
        if node.op_type == "Conv":
            w = shape(node.input[1])
            total += int(np.prod(shape(node.output[0]))) * int(np.prod(w[1:]))
        elif node.op_type == "Gemm":
            total += int(np.prod(shape(node.output[0]))) * shape(node.input[1])[1]
    return total


def test_prefixed_names_are_checked_before_a_sweep_runs(tmp_path):
    assert wl.get("digits").kind == "onnx"
    assert wl.get(f"onnx:{digits_model_path()}").kind == "onnx"
    with pytest.raises(KeyError, match="no ONNX file"):
        wl.get(f"onnx:{tmp_path / 'missing.onnx'}")
    with pytest.raises(KeyError, match="the zoo has zoo:ch_ppocr_cls"):
        wl.get("zoo:resnet9000")
    with pytest.raises(KeyError, match=r"onnx:\.\.\."):
        wl.get("mobilenet")


def test_a_model_row_counts_the_model_macs_and_its_outputs_match_onnxruntime():
    cfg = shipped_config(None)
    row = evaluate(Point.make(cfg, "digits"))
    assert row["status"] == "ok", row
    # every Conv and Gemm of the digits model runs on the accelerator
    assert row["macs"] == _onnx_macs(digits_model_path()) > 0
    assert row["cycles"] > 0 and row["gemm_counter"] > 0
    assert row["macs_per_cycle"] == pytest.approx(row["macs"] / row["cycles"])

    env = Environment({**cfg, "TARGET": "model"})
    from vta.dram import global_dram
    from vta.models import workloads as model_workloads

    device = CycleModel(env, global_dram())
    try:
        stats = wl.run(wl.get("digits"), env, device)
        built = model_workloads._built(wl.get("digits"), env)
        feeds = built.random_inputs(0)
    finally:
        device.close()
    ours = np.frombuffer(stats["outputs"], dtype=np.float32)
    theirs = ort.InferenceSession(str(digits_model_path()), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert ours.shape == (theirs.size,)
    cosine = float(ours @ theirs.ravel() / (np.linalg.norm(ours) * np.linalg.norm(theirs)))
    assert cosine > 0.99, cosine
    assert stats["cycle_count"] == row["cycles"]


def test_a_sweep_spec_may_name_a_model_file(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"parameters": {"LOG_ACC_BUFF_SIZE": [16, 17]}, "sampling": "grid",
                                "workloads": [f"onnx:{digits_model_path()}"]}))
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "0", "--cache", str(tmp_path / "cache"),
                 "--no-plot", "--no-progress"]) == 0
    rows = [json.loads(line) for line in (out / "points.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and {r["status"] for r in rows} == {"ok"}
    assert {r["macs"] for r in rows} == {_onnx_macs(digits_model_path())}
    # the accumulator buffer size does not change this small model's schedule or its outputs
    assert len({r["output_digest"] for r in rows}) == 1
