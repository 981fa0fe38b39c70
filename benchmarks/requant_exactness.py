"""Per-layer bit-exactness of the integer requantisations against onnxruntime, on a zoo model.

Run: ``python benchmarks/requant_exactness.py [NAME ...] [--calibration 2] [--layers] [--quick]
[--exceptions] [--ort-levels]``
(default: every model of :data:`vta.models.zoo.ZOO`; ``--quick``: the text-direction classifier).

Every QDQ ``Conv``, ``Add`` and ``Mul`` of the quantized model (a ``DequantizeLinear`` on each
input, one ``QuantizeLinear`` after) is checked in isolation: its quantized inputs are
onnxruntime's own (every QuantizeLinear output of the model is made a graph output, and the
model outputs are checked unchanged by that), its outputs are computed here from them

* ``ours``: the integer arithmetic of the accelerator and of the host kernels that mirror it, as
  the graph compiles them with ``requant_mode="wide"`` (:func:`vta.topi.qnn.requantize_np` of
  the exact int32 accumulator with the ``wide`` multiplier of the layer's accumulator bound, the
  host's ``qnn.add`` kernel, :func:`vta.topi.qnn_mul.mul_np` with a ``wide`` multiplier);
* ``fixed``: the same with the 15-bit ``fixed`` multipliers of the default ``requant_mode`` (and
  :func:`vta.topi.qnn.add_np` for every add, the host's form before its sums with a single
  value were fitted to onnxruntime's);
* ``float``: onnxruntime's kernels as read in its source, in float32 (QLinearConv:
  ``float(acc) * (s_x * s_w / s_y)``, clamped to the zero-point-shifted range, round half to even,
  ``+ z_y``; QLinearMul: ``float(acc) * ratio + z_y`` then round half to even; QLinearAdd:
  ``z_c - (r_a z_a + r_b z_b) + a r_a + b r_b`` on the raw values with fused multiply-adds,
  then round half to even);
* ``exact24`` (convolutions, dense layers): the integer form of the same float rounding, the
  multiplier the 24-bit mantissa of the float32 multiplier: ``floor((acc * m24 + 2**(s-1)) /
  2**s)`` (round half up) — what a requantisation with the whole float32 multiplier gives
  (``ours`` since the four-product form, wherever every multiplier is below 1/2);
* ``even24``: the same exact product rounded half to even (the tie rule alone), and ``f32up``:
  onnxruntime's float32 product rounded half up (the product's float32 rounding alone): which
  of onnxruntime's two roundings the integer form misses,

and compared with onnxruntime's QuantizeLinear output: the share of equal elements per layer
(``--layers``) and over all layers of a kind, and the largest difference. ``float`` at 100%
confirms what onnxruntime computes; the gap between ``fixed`` and ``exact24`` is what a 15-bit
multiplier costs.

``--exceptions``: per convolution, the accumulator values inside the layer's worst-case bound
(:func:`~vta.graph.passes.accumulator_bits.worst_accumulator_bits`) on which onnxruntime's
``rint(float32(float32(acc) * M))`` differs from ``exact24`` (what an ALU correction table of
"exceptional" values per channel would have to hold): only accumulators next to ``(k + 1/2) / M``
can differ, so those are enumerated.

``--ort-levels``: onnxruntime against itself, the whole model run with ``ORT_DISABLE_ALL`` and
``ORT_ENABLE_BASIC`` graph optimisation against the default ``ORT_ENABLE_ALL`` (cosine and share
of equal elements per output).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vta.errors import ModelFetchError  # noqa: E402
from vta.graph.host import run_kernel  # noqa: E402
from vta.graph.passes.accumulator_bits import worst_accumulator_bits  # noqa: E402
from vta.models import zoo  # noqa: E402
from vta.topi.qnn import Requant, add_np, requantize_np  # noqa: E402
from vta.topi.qnn_mul import mul_np, mul_requant  # noqa: E402

F32 = np.float32


def _producers(graph):
    return {o: n for n in graph.node for o in n.output}


def _consumers(graph):
    out: dict = {}
    for n in graph.node:
        for i in n.input:
            out.setdefault(i, []).append(n)
    return out


def _attrs(node):
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def patterns(model):
    """``(kind, node, [dq input nodes], q node)`` of every QDQ Conv/Gemm/Add/Mul."""
    g = model.graph
    prod, cons = _producers(g), _consumers(g)
    found = []
    for node in g.node:
        if node.op_type not in ("Conv", "Gemm", "Add", "Mul"):
            continue
        dqs = [prod.get(i) for i in node.input if i]
        if not dqs or any(d is None or d.op_type != "DequantizeLinear" for d in dqs):
            continue
        after = cons.get(node.output[0], [])
        if len(after) != 1 or after[0].op_type != "QuantizeLinear":
            continue
        found.append((node.op_type, node, dqs, after[0]))
    return found


def ort_values(model, feeds, names):
    """onnxruntime's values of tensors ``names`` (made graph outputs) and a check that the model
    outputs did not change by it."""
    import onnx
    import onnxruntime as ort

    m = onnx.ModelProto()
    m.CopyFrom(model)
    outs = [o.name for o in m.graph.output]
    for nm in names:
        if nm not in outs:
            m.graph.output.append(onnx.helper.make_empty_tensor_value_info(nm))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    vals = sess.run(None, feeds)
    got = dict(zip([o.name for o in m.graph.output], vals, strict=True))
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    same = all(np.array_equal(got[o], r) for o, r in zip(outs, ref, strict=True))
    return got, same


def _const(inits, got, name):
    if name in inits:
        return inits[name]
    return got[name]


def _qparams(dq, inits, got):
    x = _const(inits, got, dq.input[0])
    s = np.asarray(inits[dq.input[1]], F32)
    z = np.asarray(inits[dq.input[2]]).astype(np.int64) if len(dq.input) > 2 and dq.input[2] else np.zeros(s.shape,
                                                                                                            np.int64)
    return x, s, z


def conv_acc(x, zx, w, bias, attrs):
    """The exact int32 accumulator of a grouped 2-D convolution (int64 result; float64 matmuls of
    integers below 2**53 are exact)."""
    n, c, h, wd = x.shape
    co, cg, kh, kw = w.shape
    group = int(attrs.get("group", 1))
    sh, sw_ = attrs.get("strides", [1, 1])
    dh, dw = attrs.get("dilations", [1, 1])
    pads = attrs.get("pads", [0, 0, 0, 0])
    xc = x.astype(np.float64) - zx
    xp = np.pad(xc, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pads[1] + pads[3] - dw * (kw - 1) - 1) // sw_ + 1
    out = np.zeros((n, co, oh, ow), np.float64)
    og = co // group
    wf = w.astype(np.float64)
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw_ * (ow - 1) + 1:sw_]
                wg = wf[g * og:(g + 1) * og, :, i, j]
                if cg == 1:
                    out[:, g * og:(g + 1) * og] += patch * wg.reshape(1, og, 1, 1)
                else:
                    out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, wg, optimize=True)
    acc = out.astype(np.int64)
    if bias is not None:
        acc += bias.astype(np.int64).reshape(1, -1, 1, 1)
    return acc


def _rne_clip(v, z, dtype):
    info = np.iinfo(dtype)
    v = np.clip(v, F32(info.min - z), F32(info.max - z))
    return np.rint(v).astype(np.int64) + z


def mantissa_requant(acc, M32, axis_shape, even=False):
    """``floor((acc * m24 + 2**(s-1)) / 2**s)`` with ``M32 = m24 * 2**-s`` exactly (int64: the
    product of an int32 and a 24-bit integer stays below 2**55); ``even``: ties to even."""
    frac, exp = np.frexp(M32.astype(np.float64))          # M = frac * 2**exp, frac in [0.5, 1)
    m = (frac * (1 << 24)).astype(np.int64)                # exact: 24 significant bits
    s = (24 - exp).astype(np.int64)
    tiny = (m == 0) | (s > 62)                             # |acc * M| < 1/2 for every int32 acc
    m, s = np.where(tiny, 0, m).reshape(axis_shape), np.where(tiny, 1, s).reshape(axis_shape)
    p = acc.astype(np.int64) * m
    q = (p + np.left_shift(np.int64(1), s - 1)) >> s
    if even:
        tie = (p & (np.left_shift(np.int64(1), s) - 1)) == np.left_shift(np.int64(1), s - 1)
        q = np.where(tie & (q % 2 == 1), q - 1, q)
    return q


def check_conv(node, dqs, q, inits, got):
    x, sx, zx = _qparams(dqs[0], inits, got)
    w, sw, zw = _qparams(dqs[1], inits, got)
    if np.any(zw != 0):
        return None
    bias = _const(inits, got, dqs[2].input[0]) if len(dqs) > 2 else None
    y = got[q.output[0]].astype(np.int64)
    sy = np.asarray(inits[q.input[1]], F32).reshape(())
    zy = int(np.asarray(inits[q.input[2]]).reshape(()))
    dt = got[q.output[0]].dtype
    acc = conv_acc(x, int(zx.reshape(-1)[0]), w, bias, _attrs(node))
    sxs = F32(sx.reshape(-1)[0])
    M32 = ((sxs * sw.reshape(-1).astype(F32)) / sy).astype(F32)          # onnxruntime's output_scales
    shape = (1, -1, 1, 1)
    flt = _rne_clip(acc.astype(F32) * M32.reshape(shape), zy, dt)
    # ours: the importer's multiplier (float64 s_x * s_w, then / s_y, float32 in from_scale)
    # the importer's multiplier: float32 s_x * s_w (as onnxruntime), divided by s_y (float32 in from_scale)
    scale = (sxs * sw.reshape(-1).astype(F32)).astype(np.float64) / np.float64(sy)
    off = 128 if dt == np.uint8 else 0
    fixed = requantize_np(acc, Requant.from_scale(scale), 1, zy - off) + off
    # the graph's requant_mode="wide": the float32 multiplier's bits the layer's accumulator bound leaves
    bits = worst_accumulator_bits(w, 0, bias)
    ours = requantize_np(acc, Requant.from_scale(scale, mode="wide", acc_bits=bits), 1, zy - off) + off
    return y, {"ours": ours, "fixed": fixed, "float": flt, **_causes(acc, M32, shape, zy, dt)}


def _causes(acc, M32, shape, zy, dt):
    """``exact24``, ``even24`` and ``f32up`` of the module docstring."""
    info = np.iinfo(dt)
    f32 = (acc.astype(F32) * M32.reshape(shape)).astype(np.float64)
    return {"exact24": np.clip(mantissa_requant(acc, M32, shape) + zy, info.min, info.max),
            "even24": np.clip(mantissa_requant(acc, M32, shape, even=True) + zy, info.min, info.max),
            "f32up": np.clip(np.floor(f32 + 0.5).astype(np.int64) + zy, info.min, info.max)}


def check_gemm(node, dqs, q, inits, got):
    """A QDQ ``Gemm`` (a dense layer: constant symmetric weights, optional int32 bias)."""
    x, sx, zx = _qparams(dqs[0], inits, got)
    w, sw, zw = _qparams(dqs[1], inits, got)
    if np.any(zw != 0) or dqs[1].input[0] not in inits:
        return None
    attrs = _attrs(node)
    bias = _const(inits, got, dqs[2].input[0]) if len(dqs) > 2 else None
    xc = x.astype(np.int64) - int(zx.reshape(-1)[0])
    xc = xc.T if attrs.get("transA", 0) else xc
    wk = w.astype(np.int64).T if attrs.get("transB", 0) else w.astype(np.int64)   # (K, N)
    acc = (xc.astype(np.float64) @ wk.astype(np.float64)).astype(np.int64)        # exact below 2**53
    if bias is not None:
        acc = acc + bias.astype(np.int64).reshape(1, -1)
    y = got[q.output[0]].astype(np.int64)
    sy = np.asarray(inits[q.input[1]], F32).reshape(())
    zy = int(np.asarray(inits[q.input[2]]).reshape(()))
    dt = got[q.output[0]].dtype
    M32 = ((F32(sx.reshape(-1)[0]) * sw.reshape(-1).astype(F32)) / sy).astype(F32)
    flt = _rne_clip(acc.astype(F32) * M32.reshape(1, -1), zy, dt)
    scale = (F32(sx.reshape(-1)[0]) * sw.reshape(-1).astype(F32)).astype(np.float64) / np.float64(sy)
    off = 128 if dt == np.uint8 else 0
    bits = worst_accumulator_bits(wk.T, 0, bias)
    fixed = requantize_np(acc, Requant.from_scale(scale), 1, zy - off) + off
    ours = requantize_np(acc, Requant.from_scale(scale, mode="wide", acc_bits=bits), 1, zy - off) + off
    return y, {"ours": ours, "fixed": fixed, "float": flt, **_causes(acc, M32, (1, -1), zy, dt)}


def check_add(node, dqs, q, inits, got):
    (a, sa, za), (b, sb, zb) = (_qparams(d, inits, got) for d in dqs)
    if sa.size != 1 or sb.size != 1:
        return None
    y = got[q.output[0]].astype(np.int64)
    sc = F32(np.asarray(inits[q.input[1]]).reshape(()))
    zc = int(np.asarray(inits[q.input[2]]).reshape(()))
    dt = got[q.output[0]].dtype
    za, zb = int(za.reshape(-1)[0]), int(zb.reshape(-1)[0])
    sa, sb = F32(sa.reshape(-1)[0]), F32(sb.reshape(-1)[0])
    rac, rbc = F32(sa / sc), F32(sb / sc)
    # the kernel's float32 arithmetic, compiled with fused multiply-adds: fma(x, r, c) is the exact
    # x * r + c rounded once (float64 holds it exactly: 8-bit x times a 24-bit r plus a float32 c)
    inner = F32(np.float64(rac) * za + np.float64(F32(rbc * F32(zb))))
    fixed = np.float64(F32(F32(zc) - inner))
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if b64.size == 1:
        fx = np.float64(F32(b64.reshape(()) * np.float64(rbc) + fixed))
        v = (a64 * np.float64(rac) + fx).astype(F32)
    else:
        t = (a64 * np.float64(rac) + fixed).astype(F32).astype(np.float64)
        v = (b64 * np.float64(rbc) + t).astype(F32)
    af = np.broadcast_arrays(a64, b64)[0]
    info = np.iinfo(dt)
    flt = np.clip(np.rint(v.astype(F32)).astype(np.int64), info.min, info.max)
    off = 128 if dt == np.uint8 else 0
    ops = [(np.asarray(t).astype(np.int64) - off, z - off, Requant.from_scale(float(s) / float(sc)))
           for t, z, s in ((a, za, sa), (b, zb, sb))]
    ops[0] = (np.broadcast_to(ops[0][0], af.shape), *ops[0][1:])
    fixed_pt = add_np(ops, zc - off) + off
    attrs = dict(lhs_scale=float(sa), lhs_zero_point=za, rhs_scale=float(sb), rhs_zero_point=zb,
                 output_scale=float(sc), output_zero_point=zc, out_dtype=str(dt))
    ours = run_kernel("qnn.add", attrs, [np.asarray(a), np.asarray(b)]).astype(np.int64)
    return y, {"ours": ours, "fixed": fixed_pt, "float": flt}


def check_mul(node, dqs, q, inits, got):
    (a, sa, za), (b, sb, zb) = (_qparams(d, inits, got) for d in dqs)
    if sa.size != 1 or sb.size != 1:
        return None
    y = got[q.output[0]].astype(np.int64)
    sc = F32(np.asarray(inits[q.input[1]]).reshape(()))
    zc = int(np.asarray(inits[q.input[2]]).reshape(()))
    dt = got[q.output[0]].dtype
    za, zb = int(za.reshape(-1)[0]), int(zb.reshape(-1)[0])
    sa, sb = F32(sa.reshape(-1)[0]), F32(sb.reshape(-1)[0])
    acc = (np.asarray(a).astype(np.int64) - za) * (np.asarray(b).astype(np.int64) - zb)
    ratio = F32(F32(sa * sb) / sc)
    info = np.iinfo(dt)
    flt = np.clip(np.rint(acc.astype(F32) * ratio + F32(zc)).astype(np.int64), info.min, info.max)
    off = 128 if dt == np.uint8 else 0
    cands = {}
    for key, mode in (("ours", "wide"), ("fixed", "fixed")):
        cands[key] = mul_np(np.asarray(a).astype(np.int64) - off, za - off, np.asarray(b).astype(np.int64) - off,
                            zb - off, mul_requant(float(sa) * float(sb) / float(sc), mode), zc - off) + off
    return y, {**cands, "float": flt}


CHECKS = {"Conv": check_conv, "Gemm": check_gemm, "Add": check_add, "Mul": check_mul}


def _channel_exceptions(M, zy, info, bound):
    """How many ``|acc| < bound`` give ``rint(float32(float32(acc) * M))`` (clamped as
    onnxruntime clamps) other than the exact product with the 24-bit mantissa rounded half up."""
    if M == 0:
        return 0
    hs = np.arange(info.min - zy - 1, info.max - zy + 1) + 0.5       # the halves of the output range
    hs = hs[np.abs(hs) <= (bound + 2) * float(M)]
    if hs.size == 0:
        return 0
    # float32 rounds acc (above 2**24) and the product by at most |h| 2**-23 output steps
    r = int(np.ceil(np.abs(hs).max() * 2.0 ** -22 / float(M))) + 2
    acc = np.unique((np.round(hs / float(M)).astype(np.int64)[:, None] + np.arange(-r, r + 1)[None, :]).ravel())
    acc = acc[np.abs(acc) < bound]
    theirs = np.rint(np.clip(acc.astype(F32) * M, F32(info.min - zy), F32(info.max - zy))).astype(np.int64)
    frac, exp = np.frexp(np.float64(M))
    m, sh = int(frac * (1 << 24)), int(24 - exp)
    exact = np.clip((acc * m + (1 << (sh - 1))) >> sh, info.min - zy, info.max - zy)
    return int(np.count_nonzero(theirs != exact))


def exceptions(name: str, calibration: int, out=sys.stdout) -> list:
    """Per QDQ convolution: ``(name, channels, exceptional values, channels with one, most in a
    channel, accumulator bits)`` (module docstring, ``--exceptions``)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(zoo.quantized_model(name, calibration=calibration)))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    rows = []
    for kind, node, dqs, q in patterns(model):
        if kind != "Conv" or dqs[1].input[0] not in inits:
            continue
        w = inits[dqs[1].input[0]]
        sw = np.asarray(inits[dqs[1].input[1]], F32).reshape(-1)
        sx = F32(np.asarray(inits[dqs[0].input[1]]).reshape(-1)[0])
        bias = inits.get(dqs[2].input[0]) if len(dqs) > 2 else None
        sy = F32(np.asarray(inits[q.input[1]]).reshape(()))
        zy = int(np.asarray(inits[q.input[2]]).reshape(()))
        info = np.iinfo(inits[q.input[2]].dtype)
        bits = worst_accumulator_bits(w, 0, bias)
        per = np.array([_channel_exceptions(F32(M), zy, info, 1 << bits) for M in ((sx * sw) / sy).astype(F32)])
        rows.append((node.name, per.size, int(per.sum()), int((per > 0).sum()), int(per.max()), bits))
        print(f"  {node.name[:40]:40s} {per.size:4d} channels: {per.sum():6d} exceptional accumulators in "
              f"{(per > 0).sum():4d} channels, at most {per.max():5d} in one; bound {bits} bits", file=out)
    most = sorted(r[4] for r in rows)
    print(f"== {name}: {len(rows)} convolutions, {sum(r[2] for r in rows)} exceptional accumulator values; the most "
          f"in one channel per layer: median {most[len(most) // 2]}, largest {most[-1]}", file=out)
    return rows


def ort_levels(name: str, calibration: int, out=sys.stdout) -> dict:
    """onnxruntime's outputs with less graph optimisation against its default (``--ort-levels``)."""
    import onnxruntime as ort

    from vta.models import runner

    path = zoo.quantized_model(name, calibration=calibration)
    feeds = zoo.sample_feeds(name, 1, seed=21)[0]
    outs = {}
    for level in ("ORT_ENABLE_ALL", "ORT_ENABLE_BASIC", "ORT_DISABLE_ALL"):
        opts = ort.SessionOptions()
        opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
        outs[level] = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"]).run(None, feeds)
    result = {}
    for level in ("ORT_ENABLE_BASIC", "ORT_DISABLE_ALL"):
        rows = runner.compare_outputs(outs[level], outs["ORT_ENABLE_ALL"])
        result[level] = rows
        cells = ", ".join(f"{r['index']}: cosine {r['cosine']:.4f} ({100 * r['equal']:.1f}% equal)" for r in rows)
        print(f"== {name}: {level} against ORT_ENABLE_ALL: {cells}", file=out)
    return result


def measure(name: str, calibration: int, show_layers: bool, out=sys.stdout) -> dict:
    import onnx
    from onnx import numpy_helper

    path = zoo.quantized_model(name, calibration=calibration)
    model = onnx.load(str(path))
    feeds = zoo.sample_feeds(name, 1, seed=21)[0]
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    pats = patterns(model)
    need = set()
    for _, _, dqs, q in pats:
        need.update(d.input[0] for d in dqs if d.input[0] not in inits)
        need.add(q.output[0])
    got, same = ort_values(model, feeds, sorted(need))
    totals: dict = {}
    print(f"== {name} ({len(pats)} QDQ Conv/Gemm/Add/Mul; model outputs unchanged by the extra outputs: {same})",
          file=out)
    for kind, node, dqs, q in pats:
        r = CHECKS[kind](node, dqs, q, inits, got)
        if r is None:
            continue
        y, cands = r
        row = []
        for key, v in cands.items():
            d = np.abs(np.asarray(v, np.int64) - y)
            t = totals.setdefault((kind, key), [0, 0, 0])
            t[0] += int((d == 0).sum())
            t[1] += d.size
            t[2] = max(t[2], int(d.max()))
            row.append(f"{key} {100 * (d == 0).mean():7.3f}% (max {int(d.max())})")
        if show_layers:
            print(f"  {kind:4s} {node.name[:48]:48s} " + "  ".join(row), file=out)
    for (kind, key), (eq, size, mx) in sorted(totals.items()):
        print(f"  all {kind:4s} {key:8s}: {100 * eq / size:8.4f}% of {size} outputs equal to onnxruntime's "
              f"({size - eq} differ), "
              f"largest difference {mx}", file=out)
    return {f"{k}/{c}": v for (k, c), v in totals.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=None)
    ap.add_argument("--calibration", type=int, default=2, help="calibration pages of the quantized model (2)")
    ap.add_argument("--layers", action="store_true", help="print every layer")
    ap.add_argument("--quick", action="store_true", help="the text-direction classifier only")
    ap.add_argument("--exceptions", action="store_true", help="count the exceptional accumulators per convolution")
    ap.add_argument("--ort-levels", action="store_true", help="onnxruntime's graph optimisation levels against "
                                                              "each other")
    args = ap.parse_args(argv)
    names = ["ch_ppocr_cls"] if args.quick else (args.names or list(zoo.ZOO))
    for name in names:
        try:
            if args.exceptions or args.ort_levels:
                if args.exceptions:
                    exceptions(name, args.calibration)
                if args.ort_levels:
                    ort_levels(name, args.calibration)
                continue
            measure(name, args.calibration, args.layers)
        except ModelFetchError as exc:
            print(f"{name}: skipped ({exc})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
