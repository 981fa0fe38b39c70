"""Imported models compiled by the graph layer and run on the simulated accelerator, checked
against onnxruntime: operator patterns, the digits model on its whole test split, ResNet-18
(fsim and the cycle model; tsim is slow-marked)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402

from vta.env import Environment, load_config  # noqa: E402
from vta.frontend import from_onnx  # noqa: E402
from vta.models import digits_model_path, load_digits_test, quantize, resnet18  # noqa: E402
from vta.models import runner  # noqa: E402

from .helpers import calib, make_model, ort_run, output_scale, rand_w  # noqa: E402

X = (1, 16, 8, 8)


def _env(target="sim", config=None):
    return Environment({**load_config(config), "TARGET": target})


def _accel_vs_ort(qmodel, x, env=None):
    built = runner.build(qmodel, env or _env())
    try:
        ours = runner.run(built, x)[0]
    finally:
        built.close()
    theirs = ort_run(qmodel, {built.input_name: x})[0]
    graph, _ = from_onnx(qmodel)
    s = output_scale(graph)
    lsb = np.abs(ours.astype(np.float64) - theirs.astype(np.float64)) / s
    return lsb, built


@pytest.mark.parametrize("pattern", ["conv_relu", "residual", "maxpool_gemm"])
def test_operator_patterns_on_fsim(pattern):
    rng = np.random.default_rng(20)
    conv = dict(kernel_shape=[3, 3], pads=[1] * 4)
    inits = {"w1": rand_w(rng, 16, 16, 3, 3), "b1": rand_w(rng, 16, scale=0.1)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", **conv),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1")]
    out, shape = "r1", X
    if pattern == "residual":
        inits.update({"w2": rand_w(rng, 16, 16, 3, 3), "b2": rand_w(rng, 16, scale=0.1)})
        nodes += [helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", **conv),
                  helper.make_node("Add", ["c2", "r1"], ["s"], name="add"),
                  helper.make_node("Relu", ["s"], ["y"], name="relu2")]
        out = "y"
    elif pattern == "maxpool_gemm":
        inits.update({"wf": rand_w(rng, 10, 256), "bf": rand_w(rng, 10, scale=0.1)})
        nodes += [helper.make_node("MaxPool", ["r1"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
                  helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
                  helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1)]
        out, shape = "y", (1, 10)
    m = make_model(nodes, [("x", X)], [(out, shape)], inits)
    q = quantize(m, calib(rng, X))
    lsb, _ = _accel_vs_ort(q, rng.standard_normal(X).astype(np.float32))
    # The accelerator requantizes in fixed point (Requant, "fixed" mode: a 15-bit multiplier taken
    # from onnxruntime's float32 M, an exact product, one rounding half up), onnxruntime in float32
    # with rint (half to even): an output moves by one unit only where acc*M lies within ~2^-15 of
    # a rounding boundary. Every pattern stays within one unit. One operator meets the issue's bar
    # of 99.9% equal; the residual block chains two requantizations (conv2, then the add, whose
    # rescaled inputs carry conv2's rare one-unit moves), measured 99.8-100% equal over seeds 20-22.
    assert lsb.max() <= 1 + 1e-3, f"{lsb.max():.2f} units apart"
    floor = 0.995 if pattern == "residual" else 0.999
    assert np.mean(lsb < 1e-3) >= floor, f"only {np.mean(lsb < 1e-3):.4%} equal"


def test_conv_matches_onnxruntime_to_the_issue_bar():
    rng = np.random.default_rng(20)
    m = make_model([helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1] * 4)],
                   [("x", X)], [("y", X)], {"w": rand_w(rng, 16, 16, 3, 3), "b": rand_w(rng, 16, scale=0.1)})
    q = quantize(m, calib(rng, X))
    lsb, _ = _accel_vs_ort(q, rng.standard_normal(X).astype(np.float32))
    assert lsb.max() <= 1.0 + 1e-3 and np.mean(lsb < 1e-3) >= 0.999


def test_digits_whole_test_split_on_fsim():
    import onnx

    model = onnx.load(str(digits_model_path()))
    x, y, meta = load_digits_test()
    built = runner.build(model, _env())
    try:
        ours = np.array([int(np.argmax(runner.run(built, x[i:i + 1])[0])) for i in range(len(x))])
    finally:
        built.close()
    theirs = np.array([int(np.argmax(ort_run(model, {"input": x[i:i + 1]})[0])) for i in range(len(x))])
    assert np.mean(ours == theirs) >= 0.99
    assert abs(np.mean(ours == y) - meta["int8_accuracy"]) <= 0.01


def test_digits_batch2_configuration():
    from pathlib import Path

    config = Path(__file__).resolve().parents[2] / "configs" / "batch2.json"
    res = runner.run_digits(_env(config=config), out=None, batch=2, limit=40)
    x, y, meta = load_digits_test()
    assert res["images"] == 40 and res["accuracy"] >= 0.95
    res["built"].close()


@pytest.fixture(scope="module")
def resnet_int8():
    rng = np.random.default_rng(0)
    return quantize(resnet18(seed=0), rng.standard_normal((2, 3, 224, 224)).astype(np.float32))


@pytest.mark.parametrize("target", [pytest.param("sim", marks=pytest.mark.slow), "model"])  # (sim: 10 s more)
def test_resnet18_on_accelerator(resnet_int8, target):
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    built = runner.build(resnet_int8, _env(target))
    try:
        ours = runner.run(built, x)[0]
        table = runner.format_layers(built)
    finally:
        built.close()
    theirs = ort_run(resnet_int8, {"data": x})[0]
    assert np.argmax(ours) == np.argmax(theirs)
    assert "conv1" in table and "total:" in table
    if target == "model":
        assert sum(r.cycles for r in built.layers.values()) > 0


@pytest.mark.slow
@pytest.mark.verilator
def test_resnet18_on_tsim(resnet_int8):
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    built = runner.build(resnet_int8, _env("tsim"))
    try:
        ours = runner.run(built, x)[0]
    finally:
        built.close()
    theirs = ort_run(resnet_int8, {"data": x})[0]
    assert np.argmax(ours) == np.argmax(theirs)
    assert sum(r.cycles for r in built.layers.values()) > 0


def test_resnet18_batch2_configuration_two_images(resnet_int8):
    from pathlib import Path

    config = Path(__file__).resolve().parents[2] / "configs" / "batch2.json"
    env = _env(config=config)
    assert env.BATCH == 2
    x = np.random.default_rng(3).standard_normal((2, 3, 224, 224)).astype(np.float32)
    built = runner.build(resnet_int8, env, batch=2)
    try:
        ours = runner.run(built, x)[0]
    finally:
        built.close()
    for i in range(2):
        theirs = ort_run(resnet_int8, {"data": x[i:i + 1]})[0]
        assert np.argmax(ours[i]) == np.argmax(theirs)
