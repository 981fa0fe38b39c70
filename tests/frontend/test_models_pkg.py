"""vta.models: the ResNet-18 builder and the quantize helper's argument checks."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from vta.models import ArrayCalibrationReader, quantize, resnet18  # noqa: E402


def test_resnet18_is_deterministic_and_has_the_architecture():
    a, b = resnet18(seed=3, image_size=64, num_classes=10), resnet18(seed=3, image_size=64, num_classes=10)
    assert a.SerializeToString() == b.SerializeToString()
    assert a.SerializeToString() != resnet18(seed=4, image_size=64, num_classes=10).SerializeToString()
    ops = Counter(n.op_type for n in a.graph.node)
    assert ops == {"Conv": 20, "Relu": 17, "Add": 8, "MaxPool": 1, "GlobalAveragePool": 1, "Flatten": 1, "Gemm": 1}
    assert a.opset_import[0].version >= 13


@pytest.mark.parametrize("kwargs", [dict(image_size=100), dict(batch=0), dict(opset=12)])
def test_resnet18_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        resnet18(**kwargs)


@pytest.mark.parametrize("kwargs,match", [
    (dict(quant_format="QInt"), "quant_format"),
    (dict(activation_type="int4"), "activation_type"),
    (dict(activation_type="int8", weight_type="uint8"), "int8 activations"),
    (dict(calibrate_method="Best"), "calibrate_method"),
])
def test_quantize_rejects_bad_arguments(kwargs, match):
    m = resnet18(image_size=32, num_classes=4)
    with pytest.raises(ValueError, match=match):
        quantize(m, np.zeros((1, 3, 32, 32), np.float32), **kwargs)


def test_quantize_accepts_feeds_and_readers():
    m = resnet18(image_size=32, num_classes=4)
    rng = np.random.default_rng(0)
    feeds = [{"data": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)} for _ in range(2)]
    q1 = quantize(m, feeds)
    q2 = quantize(m, ArrayCalibrationReader(feeds))
    assert q1.SerializeToString() == q2.SerializeToString()
    with pytest.raises(ValueError, match="model inputs"):
        quantize(m, [{"nope": feeds[0]["data"]}])
    with pytest.raises(ValueError, match="no samples"):
        quantize(m, [])
