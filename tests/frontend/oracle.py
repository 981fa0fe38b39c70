"""An independent NumPy interpreter of imported graphs with onnxruntime's integer semantics.

Requantisation is onnxruntime's (a float32 multiplier, ``rint`` half to even), not the
accelerator's fixed point, so comparing this interpreter with onnxruntime checks the importer
alone: every difference beyond one unit in the last place is an import error.
"""

from __future__ import annotations

import numpy as np

_RANGE = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-(2 ** 31), 2 ** 31 - 1)}


def _per(v, ndim, axis=1):
    a = np.asarray(v, np.float64)
    if a.size <= 1:
        return a.reshape(())
    shape = [1] * ndim
    shape[axis % ndim] = a.size
    return a.reshape(shape)


def _conv(x, w, strides, padding, dilation, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    pt, pl, pb, pr = padding
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    sh, sw = strides
    dh, dw = dilation
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (wd + pl + pr - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j], optimize=True)
    return out


def _windows(x, a, fill):
    kh, kw = a["pool_size"]
    sh, sw = a["strides"]
    pt, pl, pb, pr = a["padding"]
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    valid = np.pad(np.ones((h, w)), ((pt, pb), (pl, pr)))
    oh, ow = (h + pt + pb - kh) // sh + 1, (w + pl + pr - kw) // sw + 1
    for i in range(kh):
        for j in range(kw):
            yield (xp[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw],
                   valid[i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw])


def _quant(real, scale, zp, dtype):
    lo, hi = _RANGE[dtype]
    return np.clip(np.rint(real / np.float32(scale)) + zp, lo, hi).astype(dtype)


def run_graph(graph, feeds: dict) -> list[np.ndarray]:
    """Evaluate ``graph`` on ``feeds`` (input name -> array); returns the outputs."""
    vals = {k: np.asarray(v) for k, v in graph.params.items()}
    vals.update({k: np.asarray(v) for k, v in feeds.items()})
    for node in graph.nodes:
        a = dict(node.attrs)
        ins = [vals[v.name] for v in node.inputs]
        t = node.output_type
        op = node.op
        if op == "qnn.quantize":
            x = ins[0].astype(np.float32)
            y = _quant(x, _per(a["scale"], x.ndim, a.get("axis") or 1).astype(np.float32),
                       _per(a["zero_point"], x.ndim, a.get("axis") or 1), t.dtype)
        elif op == "qnn.dequantize":
            x = ins[0]
            ax = a.get("axis") or 1
            y = (
                (x.astype(np.float64) - _per(a["zero_point"], x.ndim, ax))
                * _per(a["scale"], x.ndim, ax).astype(np.float32)
            ).astype(np.float32)
        elif op == "qnn.conv2d":
            x = ins[0].astype(np.float64) - a["input_zero_point"]
            w = ins[1].astype(np.float64) - a["kernel_zero_point"]
            y = _conv(x, w, a["strides"], a["padding"], a["dilation"], a["groups"]).astype(np.int64)
        elif op == "nn.conv2d":
            y = _conv(ins[0], ins[1], a["strides"], a["padding"], a["dilation"], a["groups"]).astype(t.dtype)
        elif op == "qnn.dense":
            y = (
                (ins[0].astype(np.float64) - a["input_zero_point"])
                @ (ins[1].astype(np.float64) - a["kernel_zero_point"]).T
            ).astype(np.int64)
        elif op == "nn.bias_add":
            y = ins[0] + _per(ins[1], ins[0].ndim, a["axis"]).astype(ins[0].dtype)
        elif op == "qnn.requantize":
            x = ins[0].astype(np.float64) - a["input_zero_point"]
            m = (_per(a["input_scale"], x.ndim, a["axis"]) / _per(a["output_scale"], x.ndim, a["axis"])).astype(
                np.float32
            )
            lo, hi = _RANGE[t.dtype]
            y = np.clip(np.rint(x.astype(np.float32) * m) + a["output_zero_point"], lo, hi).astype(t.dtype)
        elif op == "qnn.add":
            real = ((ins[0].astype(np.float32) - a["lhs_zero_point"]) * np.float32(a["lhs_scale"])
                    + (ins[1].astype(np.float32) - a["rhs_zero_point"]) * np.float32(a["rhs_scale"]))
            y = _quant(real, a["output_scale"], a["output_zero_point"], t.dtype)
        elif op == "clip":
            y = np.clip(ins[0], a["a_min"], a["a_max"]).astype(ins[0].dtype)
        elif op == "nn.relu":
            y = np.maximum(ins[0], 0).astype(ins[0].dtype)
        elif op == "nn.max_pool2d":
            x = ins[0]
            fill = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.inf
            y = np.max(np.stack([p for p, _ in _windows(x, a, fill)]), axis=0).astype(x.dtype)
        elif op in ("nn.avg_pool2d", "qnn.avg_pool2d"):
            x = ins[0]
            real = x.astype(np.float64) if op == "nn.avg_pool2d" else x.astype(np.float64) - a["input_zero_point"]
            wins = list(_windows(real, a, 0.0))
            total = sum(p for p, _ in wins)
            count = sum(v for _, v in wins) if not a.get("count_include_pad") else len(wins)
            if op == "nn.avg_pool2d":
                y = (total / count).astype(np.float32)
            else:  # onnxruntime: float32 window means of the dequantized values, then quantized
                real = (x.astype(np.float32) - np.float32(a["input_zero_point"])) * np.float32(a["input_scale"])
                wins = list(_windows(real.astype(np.float32), a, np.float32(0)))
                total = np.zeros_like(wins[0][0], dtype=np.float32)
                for p, _ in wins:
                    total = (total + p).astype(np.float32)
                mean = (total / np.asarray(count, np.float32)).astype(np.float32)
                y = _quant(mean, a["output_scale"], a["output_zero_point"], t.dtype)
        elif op == "nn.global_avg_pool2d":
            y = ins[0].mean(axis=(2, 3), keepdims=True).astype(ins[0].dtype)
        elif op == "qnn.global_avg_pool2d":
            real = (ins[0].astype(np.float64) - a["input_zero_point"]) * a["input_scale"]
            y = _quant(real.mean(axis=(2, 3), keepdims=True), a["output_scale"], a["output_zero_point"], t.dtype)
        elif op in ("reshape", "nn.batch_flatten"):
            y = ins[0].reshape(t.shape)
        elif op == "transpose":
            y = np.transpose(ins[0], a["axes"])
        elif op == "concatenate":
            y = np.concatenate(ins, axis=a["axis"])
        elif op == "nn.softmax":
            e = np.exp(ins[0] - ins[0].max(axis=a["axis"], keepdims=True))
            y = (e / e.sum(axis=a["axis"], keepdims=True)).astype(np.float32)
        elif op == "cast":
            y = ins[0].astype(a["dtype"])
        elif op in ("add", "subtract", "multiply"):
            y = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}[op](ins[0], ins[1]).astype(t.dtype)
        else:
            raise NotImplementedError(op)
        assert tuple(y.shape) == t.shape, (node.name, y.shape, t.shape)
        vals[node.name] = y
    return [vals[v.name] for v in graph.outputs]
