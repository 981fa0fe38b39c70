"""Regions of an ONNX model that onnxruntime runs: the operators the importer does not convert.

While the importer visits the nodes in order, every node it does not convert (no converter, or
its converter declines the pattern, or the result would only be a float computation) joins the
*open region*. A node that reads a float (or shape) tensor of the open region joins it too, so a
region grows to the largest run of such operators; a node that reads an int8/uint8 tensor of the
region (a DequantizeLinear, a QLinear* operator) closes it, and the integer path takes over again.

Closing a region cuts it out of the model as an ONNX sub-model: the region's nodes (copied from
the model as they are), its constant inputs as initializers, and as inputs and outputs exactly
the model's own tensors that cross its border, with the model's element types. A region reads an
integer activation through the model's own ``DequantizeLinear`` node, copied into the sub-model,
so that onnxruntime sees the QDQ patterns it sees in the whole model (it fuses ``DequantizeLinear
-> Softmax -> QuantizeLinear`` into QLinearSoftmax, whose lookup tables round differently from a
float Softmax: cut after the DequantizeLinear, 5% of a recogniser's attention weights differed).
Where a crossing tensor is otherwise still symbolic in the importer (a pending Conv/Gemm whose
float result is wanted) it is materialised (the integer accumulator dequantized); other pending
operators (a float Add, pooling, a fused activation) are copied into the sub-model with their
inputs, so onnxruntime computes them. Each output becomes one
``onnx.region`` node of the graph (:mod:`vta.graph.onnx_region`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import FrontendError, GraphError, UnsupportedOperatorError
from ..graph import Node
from ..graph.ir import DTYPES, TensorType
from ..graph.onnx_region import ATTRS, OP, encode_model, make_session
from .onnx_entries import Const, Dequant, Pending, Tensor

__all__ = ["RegionBuilder", "TypeOracle", "region_macs"]

#: Element types of an activation the accelerator path takes back from a region.
_INT8 = ("int8", "uint8")


class TypeOracle:
    """Element type and static shape of every tensor of a model with fixed input shapes.

    onnx's shape inference (with data propagation) gives most; the tensors it leaves without a
    static shape get theirs from one onnxruntime run of the whole model on zero inputs.
    """

    def __init__(self, proto, shapes: dict[str, tuple[int, ...]]):
        import onnx
        from onnx import helper

        self.proto = proto
        self.shapes = shapes
        self.types: dict[str, tuple[str | None, tuple[int, ...] | None]] = {}
        try:
            inferred = onnx.shape_inference.infer_shapes(proto, data_prop=True)
        except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as exc:
            raise FrontendError(f"onnx shape inference fails on the model: {str(exc).strip()[:400]}") from exc
        g = inferred.graph
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            tt = vi.type.tensor_type
            dtype = None
            if tt.elem_type:
                try:
                    dtype = str(np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type)))
                except (KeyError, TypeError):
                    dtype = None
            shape = None
            if tt.HasField("shape") and all(d.HasField("dim_value") and d.dim_value >= 0 for d in tt.shape.dim):
                shape = tuple(int(d.dim_value) for d in tt.shape.dim)
            self.types[vi.name] = (dtype, shape)
        for t in g.initializer:
            self.types[t.name] = (str(np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type))), tuple(t.dims))
        for name, shape in shapes.items():
            self.types[name] = (self.types.get(name, (None, None))[0], tuple(shape))
        self._ran = False

    def dtype(self, name: str) -> str | None:
        return self.types.get(name, (None, None))[0]

    def get(self, name: str) -> tuple[str, tuple[int, ...]]:
        """(dtype, shape) of tensor ``name``.

        Raises
        ------
        FrontendError
            If neither shape inference nor onnxruntime gives it.
        """
        dtype, shape = self.types.get(name, (None, None))
        if dtype is None or shape is None:
            self._run_for_shapes()
            dtype, shape = self.types.get(name, (None, None))
        if dtype is None or shape is None:
            raise FrontendError(f"the type of tensor {name!r} cannot be inferred")
        return dtype, shape

    def _run_for_shapes(self) -> None:
        """One onnxruntime run on zeros with every tensor of unknown type as an extra output."""
        if self._ran:
            return
        self._ran = True
        import onnx
        from onnx import helper

        model = onnx.ModelProto()
        model.CopyFrom(self.proto)
        known = {o.name for o in model.graph.output}
        for node in model.graph.node:
            for out in node.output:
                if out and out not in known and None in self.types.get(out, (None, None)):
                    model.graph.output.append(helper.ValueInfoProto(name=out))
                    known.add(out)
        feeds = {}
        inits = {t.name for t in model.graph.initializer}
        for inp in model.graph.input:
            if inp.name in inits:
                continue
            dtype = helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type)
            feeds[inp.name] = np.zeros(self.shapes[inp.name], dtype)
        try:
            session = make_session(model.SerializeToString())
            names = [o.name for o in session.get_outputs()]
            values = session.run(names, feeds)
        except (UnsupportedOperatorError, GraphError) as exc:
            raise FrontendError(f"cannot infer tensor shapes: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own unexported exception types
            raise FrontendError(f"onnxruntime fails to run the model on zero inputs to infer tensor shapes: "
                                f"{str(exc).strip()[:400]}") from exc
        for name, value in zip(names, values, strict=True):
            value = np.asarray(value)
            self.types[name] = (str(value.dtype), tuple(value.shape))


def region_macs(nodes, oracle: TypeOracle) -> int:
    """Multiply-accumulates of the Conv, ConvTranspose, Gemm and MatMul nodes of a region."""
    total = 0
    for node in nodes:
        try:
            if node.op_type == "Conv":
                w = oracle.get(node.input[1])[1]
                total += math.prod(oracle.get(node.output[0])[1]) * math.prod(w[1:])
            elif node.op_type == "ConvTranspose":
                w = oracle.get(node.input[1])[1]
                total += math.prod(oracle.get(node.input[0])[1]) * math.prod(w[1:])
            elif node.op_type in ("Gemm", "MatMul"):
                a = oracle.get(node.input[0])[1]
                total += math.prod(oracle.get(node.output[0])[1]) * (a[-1] if a else 1)
        except FrontendError:
            continue  # a tensor of unknown type: its MACs are not counted
    return int(total)


class RegionBuilder:
    """The open region of an :class:`~vta.frontend.onnx_importer.Importer` and how it is closed."""

    def __init__(self, importer):
        self.im = importer
        proto = importer.proto
        self.all = list(proto.graph.node)
        self.producer = {out: i for i, n in enumerate(self.all) for out in n.output if out}
        self.consumers: dict[str, list[int]] = {}
        for i, n in enumerate(self.all):
            for name in n.input:
                if name:
                    self.consumers.setdefault(name, []).append(i)
        self.graph_outputs = {o.name for o in proto.graph.output}
        self.oracle = TypeOracle(proto, importer.shapes)
        self.nodes: list[int] = []   # indices of the open region's nodes
        self.produced: set[str] = set()
        self.reasons: list[str] = []
        self.count = 0

    # ------------------------------------------------------------------ the open region
    def reads_open(self, node) -> list[str]:
        """The tensors of the open region that ``node`` reads."""
        return [i for i in node.input if i and i in self.produced]

    def takes_back(self, tensors: list[str]) -> bool:
        """True when every tensor is an int8/uint8 activation (the integer path takes it back)."""
        return all(self.oracle.dtype(t) in _INT8 for t in tensors)

    def add(self, index: int, reason: str) -> None:
        """Node ``index`` of the model joins the open region."""
        self.nodes.append(index)
        self.produced.update(o for o in self.all[index].output if o)
        if reason and len(self.reasons) < 4:
            self.reasons.append(reason)

    def _own_dequantize(self, name: str, entry: Dequant) -> bool:
        """True when tensor ``name`` is the output of a ``DequantizeLinear`` node of the model
        whose integer input is ``entry``'s source (the region can then run that node itself)."""
        index = self.producer.get(name)
        if index is None:
            return False
        node = self.all[index]
        if node.op_type != "DequantizeLinear" or (node.domain or "") not in ("", "ai.onnx") or not node.input:
            return False
        src = self.im.env.get(node.input[0])
        return isinstance(src, Tensor) and src.value is entry.src.value \
            and self.oracle.dtype(node.input[0]) == src.value.type.dtype

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        """Cut the open region out as a sub-model and add its ``onnx.region`` nodes.

        Raises
        ------
        FrontendError
            If onnxruntime cannot run the sub-model (naming the nodes and operators).
        """
        if not self.nodes:
            return
        from onnx import helper, numpy_helper

        im = self.im
        members = set(self.nodes)
        outputs = [o for i in self.nodes for o in self.all[i].output
                   if o and (o in self.graph_outputs or any(c not in members for c in self.consumers.get(o, ())))]
        sub_nodes = list(self.nodes)
        produced = set(self.produced)
        feeds: dict[str, Any] = {}
        consts: dict[str, np.ndarray] = {}

        def include(name: str) -> None:
            index = self.producer[name]
            if index in members:
                return
            members.add(index)
            sub_nodes.append(index)
            node = self.all[index]
            produced.update(o for o in node.output if o)
            for i in node.input:
                if i:
                    need(i)

        def need(name: str) -> None:
            if name in produced or name in feeds or name in consts:
                return
            entry = im.env.get(name)
            if isinstance(entry, Const):
                consts[name] = entry.data
            elif isinstance(entry, Tensor):
                feeds[name] = entry.value
            elif isinstance(entry, Dequant) and isinstance(entry.src, Tensor):
                if self._own_dequantize(name, entry):
                    # the region reads the integer tensor through the model's own DequantizeLinear,
                    # so onnxruntime sees (and fuses: QLinearSoftmax, QLinearSigmoid, ...) the same
                    # QDQ pattern as in the whole model and computes what it computes there
                    include(name)
                else:
                    feeds[name] = im.as_float(entry)
            elif isinstance(entry, Pending) and entry.kind in ("conv", "dense") and entry.lo is None \
                    and entry.hi is None and name in self.producer \
                    and list(self.all[self.producer[name]].output) == list(entry.node.output):
                try:
                    feeds[name] = im.finish_float(entry)
                except (FrontendError, GraphError):
                    include(name)
            elif name in self.producer:
                include(name)
            else:
                raise FrontendError(f"tensor {name!r} is read by a region but defined nowhere")

        for k in self.nodes:
            for i in self.all[k].input:
                if i:
                    need(i)
        sub_nodes.sort()
        region = [self.all[k] for k in self.nodes]
        ops = list(dict.fromkeys(n.op_type for n in region))
        first = region[0].name or f"{region[0].op_type}_{self.nodes[0]}"
        self.count += 1

        def info(name: str, dtype: str, shape) -> Any:
            elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
            return helper.make_tensor_value_info(name, elem, None if shape is None else list(shape))

        out_types = [self.oracle.get(o) for o in outputs]
        graph = helper.make_graph(
            [_copy(self.all[k]) for k in sub_nodes], f"region_{self.count}",
            [info(t, v.type.dtype, v.type.shape) for t, v in feeds.items()],
            [info(o, d, s) for o, (d, s) in zip(outputs, out_types, strict=True)],
            [numpy_helper.from_array(np.asarray(a), t) for t, a in consts.items()])
        model = helper.make_model(graph, opset_imports=list(im.proto.opset_import), ir_version=im.proto.ir_version)
        model.functions.extend(im.proto.functions)
        data = model.SerializeToString()
        where = ", ".join(f"{n.name or '?'!r} ({n.op_type})" for n in region[:6])
        try:
            session = make_session(data)
        except UnsupportedOperatorError as exc:
            raise FrontendError(f"neither the importer nor onnxruntime runs the region of nodes {where}"
                                f"{' ...' if len(self.nodes) > 6 else ''}: {exc}",
                                node=region[0].name, op_type=region[0].op_type) from exc
        if not feeds:  # a constant region: computed once, here
            values = session.run(outputs, {})
            for o, v in zip(outputs, values, strict=True):
                im.env[o] = _const(o, np.asarray(v))
        else:
            text = encode_model(data)
            macs = region_macs(region, self.oracle)
            reason = "onnxruntime runs ONNX operators " + ", ".join(ops)
            if self.reasons:
                reason += " (" + "; ".join(self.reasons) + ")"
            ins = tuple(feeds.values())
            for k, (o, (dtype, shape)) in enumerate(zip(outputs, out_types, strict=True)):
                if dtype not in DTYPES:
                    raise FrontendError(f"region output {o!r} has element type {dtype}, which the graph cannot "
                                        f"hold (accepted: {', '.join(DTYPES)})", node=first)
                attrs = dict(ATTRS, model=text, inputs=tuple(feeds), outputs=tuple(outputs), index=k,
                             shape=tuple(shape), dtype=dtype, ops=tuple(ops), macs=macs if k == 0 else 0,
                             reason=reason)
                name = im.unique(o)
                value = im.b.add_node(Node(OP, ins, attrs, name, TensorType(tuple(shape), dtype)))
                im.env[o] = _tensor(value)
        self.nodes, self.produced, self.reasons = [], set(), []


def _copy(node):
    import onnx

    out = onnx.NodeProto()
    out.CopyFrom(node)
    return out


def _const(name: str, data: np.ndarray):
    return Const(data, name)


def _tensor(value):
    return Tensor(value)
