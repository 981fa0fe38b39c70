"""ResNet-18 (ImageNet layout, batch norm folded) written with ``onnx.helper``.

Weights cannot be downloaded here, so the network is built from deterministic random weights:
He-normal convolution kernels and random batch-norm statistics, folded into each convolution's
weight and bias exactly as an exporter's constant folding would (``w' = w * g / sqrt(v + eps)``,
``b' = beta - m * g / sqrt(v + eps)``). The same seed always gives the same model.
"""

from __future__ import annotations

import numpy as np

__all__ = ["resnet18", "RESNET18_STAGES"]

#: (output channels, stride of the first block) of the four stages; two basic blocks each.
RESNET18_STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))


class _Builder:
    """Collects nodes and initializers with generated, readable names."""

    def __init__(self, rng: np.random.Generator, bn_eps: float = 1e-5):
        self.rng = rng
        self.nodes: list = []
        self.inits: list = []
        self.eps = bn_eps

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def conv_bn(self, name: str, x: str, cin: int, cout: int, k: int, stride: int, relu: bool) -> str:
        from onnx import helper

        fan_in = cin * k * k
        w = self.rng.standard_normal((cout, cin, k, k)).astype(np.float32) * np.sqrt(2.0 / fan_in)
        gamma = self.rng.uniform(0.5, 1.5, cout).astype(np.float32)
        beta = self.rng.uniform(-0.2, 0.2, cout).astype(np.float32)
        mean = self.rng.uniform(-0.2, 0.2, cout).astype(np.float32)
        var = self.rng.uniform(0.5, 1.5, cout).astype(np.float32)
        g = gamma / np.sqrt(var + self.eps)
        wf = (w * g[:, None, None, None]).astype(np.float32)
        bf = (beta - mean * g).astype(np.float32)
        pad = k // 2
        out = f"{name}_out"
        self.nodes.append(helper.make_node(
            "Conv", [x, self.const(f"{name}.weight", wf), self.const(f"{name}.bias", bf)], [out],
            name=name, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4))
        if relu:
            self.nodes.append(helper.make_node("Relu", [out], [f"{name}_relu"], name=f"{name}_relu"))
            out = f"{name}_relu"
        return out

    def basic_block(self, name: str, x: str, cin: int, cout: int, stride: int) -> str:
        from onnx import helper

        y = self.conv_bn(f"{name}.conv1", x, cin, cout, 3, stride, relu=True)
        y = self.conv_bn(f"{name}.conv2", y, cout, cout, 3, 1, relu=False)
        short = x
        if stride != 1 or cin != cout:
            short = self.conv_bn(f"{name}.downsample", x, cin, cout, 1, stride, relu=False)
        self.nodes.append(helper.make_node("Add", [y, short], [f"{name}_add"], name=f"{name}.add"))
        self.nodes.append(helper.make_node("Relu", [f"{name}_add"], [f"{name}_out"], name=f"{name}.relu"))
        return f"{name}_out"


def resnet18(seed: int = 0, num_classes: int = 1000, image_size: int = 224, batch: int = 1,
             opset: int = 13):
    """Build a float ResNet-18 as an ONNX model (NCHW input ``data``, output ``logits``).

    Parameters
    ----------
    seed : int
        Seed of the random weights; the same seed gives a byte-identical model.
    num_classes : int
        Outputs of the final fully connected layer.
    image_size : int
        Height and width of the input image (224 for the ImageNet network; a multiple of 32).
    batch : int
        Batch dimension of the input.
    opset : int
        Default-domain opset the model declares (13 or newer).

    Returns
    -------
    onnx.ModelProto
        The checked float model.

    Raises
    ------
    ValueError
        If ``image_size`` is not a positive multiple of 32, ``batch`` or ``num_classes`` is not
        positive, or ``opset`` is below 13.
    """
    from onnx import TensorProto, checker, helper

    if image_size <= 0 or image_size % 32:
        raise ValueError(f"image_size must be a positive multiple of 32, got {image_size!r}")
    if batch < 1 or num_classes < 1:
        raise ValueError(f"batch and num_classes must be positive, got {batch!r} and {num_classes!r}")
    if opset < 13:
        raise ValueError(f"opset must be 13 or newer, got {opset!r}")
    b = _Builder(np.random.default_rng(seed))
    x = b.conv_bn("conv1", "data", 3, 64, 7, 2, relu=True)
    b.nodes.append(helper.make_node("MaxPool", [x], ["pool1_out"], name="maxpool",
                                    kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = "pool1_out", 64
    for stage, (cout, stride) in enumerate(RESNET18_STAGES, start=1):
        for block in range(2):
            x = b.basic_block(f"layer{stage}.{block}", x, cin, cout, stride if block == 0 else 1)
            cin = cout
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap_out"], name="avgpool"))
    b.nodes.append(helper.make_node("Flatten", ["gap_out"], ["flat_out"], name="flatten", axis=1))
    fc_w = (b.rng.standard_normal((num_classes, 512)) * np.sqrt(1.0 / 512)).astype(np.float32)
    fc_b = b.rng.uniform(-0.1, 0.1, num_classes).astype(np.float32)
    b.nodes.append(helper.make_node("Gemm", ["flat_out", b.const("fc.weight", fc_w), b.const("fc.bias", fc_b)],
                                    ["logits"], name="fc", transB=1))
    graph = helper.make_graph(
        b.nodes, "resnet18",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [batch, 3, image_size, image_size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, num_classes])],
        initializer=b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="vta.models")
    model.ir_version = 8
    checker.check_model(model)
    return model
