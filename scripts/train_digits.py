"""Train the bundled digits CNN with NumPy, export it to ONNX and quantize it with onnxruntime.

The network (input ``(N, 1, 8, 8)``, pixel values scaled to [0, 1]):

    Conv 3x3 1->16 pad 1, Relu, Conv 3x3 16->32 pad 1, Relu, MaxPool 2x2, Flatten, Gemm 512->10

It is small enough to train on the CPU with plain NumPy (im2col convolutions, Adam, softmax
cross-entropy) in a few seconds, so neither torch nor any other training framework is needed.
The float model is exported with ``onnx.helper``, quantized by ``vta.models.quantize``
(onnxruntime's ``quantize_static``: QDQ, per-channel int8 weights, uint8 activations, MinMax
calibration on training images), and both are evaluated with onnxruntime on the test split.

Writes ``vta/models/digits_int8.onnx`` and ``vta/models/digits_test.npz`` (or into ``--out``)::

    PYTHONPATH=. python scripts/train_digits.py [--seed 0] [--epochs 40] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- NumPy layers (training only)

def _cols(x: np.ndarray) -> np.ndarray:
    """im2col of a 3x3, stride 1, pad 1 convolution: (N, C, H, W) -> (N, H, W, C*9)."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    patches = [xp[:, :, i:i + h, j:j + w] for i in range(3) for j in range(3)]
    return np.stack(patches, axis=2).reshape(n, c * 9, h, w).transpose(0, 2, 3, 1)


def _uncols(g: np.ndarray, c: int) -> np.ndarray:
    """Adjoint of ``_cols``: (N, H, W, C*9) -> (N, C, H, W)."""
    n, h, w, _ = g.shape
    g = g.transpose(0, 3, 1, 2).reshape(n, c, 9, h, w)
    out = np.zeros((n, c, h + 2, w + 2), g.dtype)
    for k in range(9):
        i, j = divmod(k, 3)
        out[:, :, i:i + h, j:j + w] += g[:, :, k]
    return out[:, :, 1:-1, 1:-1]


class Conv3x3:
    def __init__(self, rng, cin, cout):
        self.w = (rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2.0 / (cin * 9))).astype(np.float32)
        self.b = np.zeros(cout, np.float32)

    def forward(self, x):
        self.x_shape = x.shape
        self.cols = _cols(x)
        y = self.cols @ self.w.reshape(self.w.shape[0], -1).T + self.b
        return y.transpose(0, 3, 1, 2)

    def backward(self, gy):
        g = gy.transpose(0, 2, 3, 1)
        self.gw = (g.reshape(-1, g.shape[-1]).T @ self.cols.reshape(-1, self.cols.shape[-1])).reshape(self.w.shape)
        self.gb = g.sum(axis=(0, 1, 2))
        return _uncols(g @ self.w.reshape(self.w.shape[0], -1), self.x_shape[1])

    def params(self):
        return [(self.w, "gw"), (self.b, "gb")]


class Dense:
    def __init__(self, rng, fin, fout):
        self.w = (rng.standard_normal((fout, fin)) * np.sqrt(1.0 / fin)).astype(np.float32)
        self.b = np.zeros(fout, np.float32)

    def forward(self, x):
        self.x = x
        return x @ self.w.T + self.b

    def backward(self, gy):
        self.gw = gy.T @ self.x
        self.gb = gy.sum(axis=0)
        return gy @ self.w

    def params(self):
        return [(self.w, "gw"), (self.b, "gb")]


class Net:
    def __init__(self, seed: int):
        rng = np.random.default_rng(seed)
        self.conv1 = Conv3x3(rng, 1, 16)
        self.conv2 = Conv3x3(rng, 16, 32)
        self.fc = Dense(rng, 32 * 4 * 4, 10)
        self.layers = [self.conv1, self.conv2, self.fc]

    def forward(self, x):
        a1 = np.maximum(self.conv1.forward(x), 0)
        self.m1 = a1 > 0
        a2 = np.maximum(self.conv2.forward(a1), 0)
        self.m2 = a2 > 0
        n = a2.shape[0]
        blocks = a2.reshape(n, 32, 4, 2, 4, 2)
        p = blocks.max(axis=(3, 5))
        self.argmax = blocks == p[:, :, :, None, :, None]
        return self.fc.forward(p.reshape(n, -1))

    def backward(self, g):
        n = g.shape[0]
        gp = self.fc.backward(g).reshape(n, 32, 4, 1, 4, 1)
        ga2 = (self.argmax * gp).reshape(n, 32, 8, 8)  # ties share the gradient (rare on floats)
        ga1 = self.conv2.backward(ga2 * self.m2)
        self.conv1.backward(ga1 * self.m1)


def train(x, y, seed: int, epochs: int, batch: int = 32, lr: float = 2e-3) -> Net:
    """Adam on softmax cross-entropy; returns the trained network."""
    net = Net(seed)
    rng = np.random.default_rng(seed + 1)
    state = {id(p): (np.zeros_like(p), np.zeros_like(p)) for layer in net.layers for p, _ in layer.params()}
    b1, b2, eps, t = 0.9, 0.999, 1e-8, 0
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        for start in range(0, len(x), batch):
            idx = order[start:start + batch]
            logits = net.forward(x[idx])
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(len(idx)), y[idx]] -= 1.0
            net.backward((p / len(idx)).astype(np.float32))
            t += 1
            step = lr * (0.1 if epoch >= int(0.75 * epochs) else 1.0)
            for layer in net.layers:
                for param, gname in layer.params():
                    grad = getattr(layer, gname)
                    m, v = state[id(param)]
                    m *= b1
                    m += (1 - b1) * grad
                    v *= b2
                    v += (1 - b2) * grad * grad
                    param -= (step * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)).astype(np.float32)
    return net


# ---------------------------------------------------------------- export and quantization

def export(net: Net, opset: int = 13):
    """The trained network as a float ONNX model (input ``input``, output ``logits``)."""
    from onnx import TensorProto, checker, helper, numpy_helper

    def init(name, a):
        return numpy_helper.from_array(np.ascontiguousarray(a, dtype=np.float32), name)

    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    nodes = [
        helper.make_node("Conv", ["input", "conv1.weight", "conv1.bias"], ["c1"], name="conv1", **conv),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "conv2.weight", "conv2.bias"], ["c2"], name="conv2", **conv),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p2"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1),
    ]
    inits = [init("conv1.weight", net.conv1.w), init("conv1.bias", net.conv1.b),
             init("conv2.weight", net.conv2.w), init("conv2.bias", net.conv2.b),
             init("fc.weight", net.fc.w), init("fc.bias", net.fc.b)]
    graph = helper.make_graph(nodes, "digits_cnn",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 8, 8])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="vta.scripts")
    model.ir_version = 8
    checker.check_model(model)
    return model


def ort_accuracy(model, x, y) -> float:
    """Top-1 accuracy of ``model`` under onnxruntime, one image at a time (batch 1 model)."""
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    pred = [int(np.argmax(sess.run(None, {name: x[i:i + 1]})[0])) for i in range(len(x))]
    return float(np.mean(np.asarray(pred) == y))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--calibration", type=int, default=200, help="training images used to calibrate")
    ap.add_argument("--out", type=Path, default=ROOT / "vta" / "models")
    args = ap.parse_args(argv)

    import onnx
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    sys.path.insert(0, str(ROOT))
    from vta.models import quantize

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=args.seed, stratify=y)
    net = train(x_tr, y_tr, args.seed, args.epochs)
    model = export(net)
    float_acc = ort_accuracy(model, x_te, y_te)
    calib = x_tr[np.random.default_rng(args.seed).permutation(len(x_tr))[:args.calibration]]
    qmodel = quantize(model, calib, per_channel=True, quant_format="QDQ")
    int8_acc = ort_accuracy(qmodel, x_te, y_te)
    args.out.mkdir(parents=True, exist_ok=True)
    onnx.save(qmodel, str(args.out / "digits_int8.onnx"))
    np.savez_compressed(args.out / "digits_test.npz", x=x_te, y=y_te,
                        float_accuracy=np.float64(float_acc), int8_accuracy=np.float64(int8_acc))
    size = (args.out / "digits_int8.onnx").stat().st_size
    print(f"train {len(x_tr)} / test {len(x_te)} images; onnxruntime top-1: float {float_acc:.4f}, "
          f"int8 {int8_acc:.4f}; wrote {args.out / 'digits_int8.onnx'} ({size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
