"""Which node diverges from onnxruntime: a quantized model compared tensor by tensor.

:func:`node_divergence` compiles a model, runs it once end to end and once *teacher-forced*, and
compares every integer tensor the graph computes with onnxruntime's value of the same tensor in
the whole quantized model:

* **end to end**: our run as it is; a tensor's difference is everything accumulated up to it;
* **isolated** (teacher-forced): after each node that computes a model tensor, its output is
  recorded and then replaced by onnxruntime's value, so every node reads onnxruntime's inputs and
  its difference is its own arithmetic's (a host kernel, a requantisation, an onnxruntime region
  whose cut differs from the whole model).

The integer tensors are named by :func:`vta.frontend.onnx.from_onnx_traced` (``QuantizeLinear``
outputs, integer outputs of onnxruntime regions); an accelerator value is compared in its plain
layout (channels cropped, the int8 domain moved back to uint8). The model's own float outputs
are compared end to end. ``benchmarks/node_divergence.py`` prints the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = ["TensorDivergence", "node_divergence", "format_divergence"]


@dataclass
class TensorDivergence:
    """One model tensor: where we compute it and how far it is from onnxruntime's.

    Attributes
    ----------
    tensor : str
        The ONNX tensor name.
    onnx_op : str
        The operator that computes it in the ONNX model (the float operator before its
        ``QuantizeLinear``, else the producer itself).
    node, op, device : str
        Our compiled node that holds it, its operator and device.
    size : int
        Elements.
    equal, max_diff, cosine : float
        End to end: the share of elements equal to onnxruntime's, the largest difference (in
        quantized units) and the cosine similarity of the values less their zero point.
    iso_equal, iso_max_diff, iso_cosine : float or None
        The same, teacher-forced (for the model's float outputs only when a subset is forced,
        ``force``; None otherwise).
    """

    tensor: str
    onnx_op: str
    node: str
    op: str
    device: str
    size: int
    equal: float
    max_diff: float
    cosine: float
    iso_equal: float | None = None
    iso_max_diff: float | None = None
    iso_cosine: float | None = None


def _compare(ours: np.ndarray, theirs: np.ndarray, zero_point: float) -> tuple[float, float, float]:
    a = np.asarray(ours, np.float64).ravel() - zero_point
    b = np.asarray(theirs, np.float64).ravel() - zero_point
    d = np.abs(a - b)
    norm = np.linalg.norm(a) * np.linalg.norm(b)
    cos = float(a @ b / norm) if norm > 0 else (1.0 if np.array_equal(a, b) else 0.0)
    return float(np.mean(d == 0)) if d.size else 1.0, float(d.max(initial=0.0)), cos


class _Form:
    """How one compiled entry holds a model tensor: ``plain`` turns the entry's value into the
    tensor's (NCHW, uint8/int8 as the model), ``entry`` the other way."""

    def __init__(self, shape: tuple, dtype: str, entry_shape: tuple, entry_dtype: str, layout: str | None):
        self.shape, self.dtype = tuple(shape), dtype
        self.entry_shape, self.entry_dtype, self.layout = tuple(entry_shape), entry_dtype, layout
        self.offset = 128 if (dtype == "uint8" and entry_dtype == "int8") else 0

    def plain(self, v: np.ndarray) -> np.ndarray:
        from ..graph.host import layout_unpack

        if self.layout is not None:
            v = layout_unpack(np.asarray(v), self.layout, self.shape[1], self.shape[0])
        return (np.asarray(v).astype(np.int64) + self.offset).astype(self.dtype).reshape(self.shape)

    def entry(self, v: np.ndarray) -> np.ndarray:
        from ..graph.host import layout_pack

        x = (np.asarray(v).astype(np.int64) - self.offset).astype(self.entry_dtype)
        if self.layout is not None:
            x = layout_pack(x, self.layout)
        return x.reshape(self.entry_shape)


def _entries(optimized, names: dict[str, str], pre_fuse, env) -> dict[str, tuple[str, _Form]]:
    """``{ONNX tensor: (compiled node name, form)}``: the first compiled node holding each tensor."""
    from ..graph.accel_ops import ACCEL_OPS
    from ..graph.passes.fuse import chain_plans

    plans, _ = chain_plans(pre_fuse, env)
    fused_last = {}   # the name of a fused node -> the graph value its chain ends in
    for last, chain in plans.items():
        for n in chain.nodes:
            fused_last.setdefault(n.name, last)
    by_value: dict[str, tuple[str, _Form]] = {}
    for node in optimized.nodes:
        t = node.output_type
        if node.op in ACCEL_OPS:
            value = fused_last.get(node.name)
        elif node.op == "vta.to_uint8" and node.name.endswith("_u8"):
            value = node.name[:-3]
        else:
            value = node.name
        ir = pre_fuse.values.get(value) if value else None
        if ir is None or value in by_value or ir.type.is_float:
            continue
        layout = node.attrs.get("layout") if node.op in ACCEL_OPS and t.ndim > ir.type.ndim else None
        if layout is None and t.shape != ir.type.shape:
            continue
        if t.dtype != ir.type.dtype and not (ir.type.dtype == "uint8" and t.dtype == "int8"):
            continue
        by_value[value] = (node.name, _Form(ir.type.shape, ir.type.dtype, t.shape, t.dtype, layout))
    return {tensor: by_value[v] for tensor, v in names.items() if v in by_value}


def _onnx_info(proto) -> tuple[dict[str, str], dict[str, float], list[str]]:
    """Per tensor: the operator computing it, its zero point; the tensors in topological order."""
    from onnx import numpy_helper

    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    producer = {o: n for n in proto.graph.node for o in n.output}
    op, zp, order = {}, {}, [i.name for i in proto.graph.input]
    for n in proto.graph.node:
        for o in n.output:
            order.append(o)
            src = producer.get(n.input[0]) if n.op_type == "QuantizeLinear" and n.input else None
            op[o] = src.op_type if src is not None else n.op_type
            if n.op_type == "QuantizeLinear" and len(n.input) > 2 and n.input[2] in inits:
                z = inits[n.input[2]]
                zp[o] = float(z.reshape(-1)[0]) if z.size == 1 else 0.0
    return op, zp, order


def _ort_values(proto, feeds: dict, names: list[str]) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    """onnxruntime's values of ``names`` in the whole model, and its outputs (checked unchanged by
    the extra outputs)."""
    import onnx
    import onnxruntime as ort

    from ..errors import FrontendError

    m = onnx.ModelProto()
    m.CopyFrom(proto)
    outs = [o.name for o in m.graph.output]
    for nm in names:
        if nm not in outs:
            m.graph.output.append(onnx.helper.make_empty_tensor_value_info(nm))
    opts = ["CPUExecutionProvider"]
    got = ort.InferenceSession(m.SerializeToString(), providers=opts).run(None, feeds)
    values = dict(zip([o.name for o in m.graph.output], got, strict=True))
    ref = ort.InferenceSession(proto.SerializeToString(), providers=opts).run(None, feeds)
    for o, r in zip(outs, ref, strict=True):
        if not np.array_equal(values[o], r):
            raise FrontendError(f"onnxruntime's output {o!r} changes when the model's inner tensors are made "
                                "outputs too; a per-tensor comparison would not be of the same computation")
    return values, ref


def node_divergence(model: Any, feeds: dict[str, np.ndarray], env=None, requant_mode: str = "fixed",
                    shape: dict | None = None, isolated: bool = True,
                    force: Callable[[str], bool] | None = None) -> list[TensorDivergence]:
    """Compare every integer tensor of ``model`` as we compute it with onnxruntime's.

    Parameters
    ----------
    model : str, Path or onnx.ModelProto
        A quantized ONNX model.
    feeds : dict of str to ndarray
        One input per model input.
    env : vta.Environment, optional
        The configuration (its TARGET picks the simulator); the current one by default.
    requant_mode : {"fixed", "wide", "pow2"}
        As :func:`vta.graph.compile`.
    shape : dict, optional
        Static input shapes, as :func:`vta.frontend.from_onnx`.
    isolated : bool
        Also run teacher-forced (the ``iso_*`` figures).
    force : callable, optional
        Which tensors (by ONNX name) the teacher-forced run replaces by onnxruntime's (default:
        every one). With a subset, the outputs' ``iso_*`` figures say how far the outputs are
        when only the other nodes' differences remain (e.g. everything before a detector's
        heads forced: what the heads alone contribute).

    Returns
    -------
    list of TensorDivergence
        In the model's topological order; the model's outputs last.

    Raises
    ------
    FrontendError
        If the model cannot be imported, or onnxruntime's outputs change when its inner tensors
        are read.
    GraphError, ScheduleError, BuildError
        If the graph cannot be compiled.
    """
    from ..env import get_env
    from ..frontend import load_model
    from ..frontend.onnx import from_onnx_traced
    from ..graph.executor import GraphModule
    from ..graph.lower import _bind, lower
    from ..graph.passes import AnnotateAccumulatorBits, FoldConstants

    env = env or get_env()
    proto = load_model(model)
    with env:
        graph, params, names = from_onnx_traced(proto, shape)
        low = lower(graph, params, env, requant_mode)
        pre_fuse = AnnotateAccumulatorBits(requant_mode)(FoldConstants()(_bind(graph, params)))
        where = _entries(low.graph, names, pre_fuse, env)
    onnx_op, zps, order = _onnx_info(proto)
    tensors = [t for t in order if t in where]
    theirs, ort_outputs = _ort_values(proto, feeds, tensors)
    info = {n.name: n for n in low.graph.nodes}
    node_of = {where[t][0]: t for t in tensors}

    def one_run(forcing: bool) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
        mod = GraphModule(low.graph_json, low.lib, keep_outputs=True)
        index = {n["name"]: i for i, n in enumerate(mod._nodes)}
        by_index = {index[name]: t for name, t in node_of.items()}
        seen: dict[str, np.ndarray] = {}

        def after(i: int) -> None:
            t = by_index.get(i)
            if t is None:
                return
            form = where[t][1]
            seen[t] = form.plain(mod.get_node_output(i))
            if forcing and (force is None or force(t)):
                mod.set_node_output(i, form.entry(theirs[t]))

        try:
            with env:
                mod.set_input(**low.params)
                mod.set_input(**{k: np.asarray(v) for k, v in feeds.items()})
                mod.after_node = after
                mod.run()
                outs = [mod.get_output(i) for i in range(mod.get_num_outputs())]
        finally:
            mod.close()
        return seen, outs

    e2e, outs = one_run(False)
    iso, iso_outs = one_run(True) if isolated else ({}, None)
    rows = []
    for t in tensors:
        name, _ = where[t]
        node = info[name]
        zp = zps.get(t, 0.0)
        eq, mx, cos = _compare(e2e[t], theirs[t], zp)
        row = TensorDivergence(t, onnx_op.get(t, "?"), name, node.op, node.attrs.get("device", "cpu"),
                               int(np.size(theirs[t])), eq, mx, cos)
        if t in iso:
            row.iso_equal, row.iso_max_diff, row.iso_cosine = _compare(iso[t], theirs[t], zp)
        rows.append(row)
    for k, (o, a, b) in enumerate(zip(proto.graph.output, outs, ort_outputs, strict=True)):
        eq, mx, cos = _compare(a, b, 0.0)
        row = TensorDivergence(o.name, "output", "", "", "", int(np.size(b)), eq, mx, cos)
        if iso_outs is not None and force is not None:
            row.iso_equal, row.iso_max_diff, row.iso_cosine = _compare(iso_outs[k], b, 0.0)
        rows.append(row)
    return rows


def format_divergence(rows: list[TensorDivergence], only_changed: bool = False) -> str:
    """The table of :func:`node_divergence` (``only_changed``: rows not wholly equal end to end or
    in isolation)."""
    head = (f"{'tensor':44s} {'onnx op':18s} {'our op':22s} {'dev':3s} {'elements':>9s}  "
            f"{'e2e equal':>9s} {'max':>5s} {'cosine':>8s}  {'iso equal':>9s} {'max':>5s} {'cosine':>8s}")
    lines = [head, "-" * len(head)]
    for r in rows:
        if only_changed and r.equal == 1.0 and (r.iso_equal is None or r.iso_equal == 1.0):
            continue
        iso = ("" if r.iso_equal is None else
               f"  {100 * r.iso_equal:8.4f}% {r.iso_max_diff:5.0f} {r.iso_cosine:8.5f}")
        lines.append(f"{r.tensor[-44:]:44s} {r.onnx_op[:18]:18s} {r.op[:22]:22s} {r.device[:3]:3s} {r.size:9d}  "
                     f"{100 * r.equal:8.4f}% {r.max_diff:5.4g} {r.cosine:8.5f}{iso}")
    return "\n".join(lines)
