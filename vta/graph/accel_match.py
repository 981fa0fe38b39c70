"""What the accelerator can run: pattern matching of fusable chains, with the reason when not.

Each accelerator operator's registration (:mod:`vta.graph.accel_ops`) names its matcher, called
as ``match(matcher, node, claimed)``; the fusion pass fuses what matches and the placement pass
records why a node stayed on the CPU. A chain is ``qnn.conv2d``/``qnn.dense`` -> optional ``nn.bias_add`` ->
``qnn.requantize`` -> optional ``qnn.add`` (the residual) -> ``nn.relu``/``clip`` ...; every
intermediate value must have exactly one reader and not be a graph output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..env import Environment
from .ir import PARAM, Graph, Node, Value

__all__ = ["INT8", "Chain", "Matcher", "match_add", "match_avg_pool", "match_core", "match_max_pool", "match_minmax",
           "match_mul", "match_upsampling"]

INT8 = ("int8", "uint8")


@dataclass
class Chain:
    """A matched pattern: the nodes it absorbs and what the fused operator needs."""

    kind: str                       # "conv2d", "dense", "add", "max_pool2d"
    nodes: list[Node]               # every absorbed node, in order; the last one's value is replaced
    core: Node
    bias: Node | None = None
    requant: Node | None = None
    add: Node | None = None
    residual: Value | None = None   # the other operand of the absorbed add
    activations: list[Node] = field(default_factory=list)

    @property
    def last(self) -> Node:
        return self.nodes[-1]


def _pair(v) -> tuple[int, int]:
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    a, b = (int(x) for x in v)
    return a, b


class Matcher:
    """Pattern matching over one graph (readers of every value computed once)."""

    def __init__(self, graph: Graph, env: Environment, sources: frozenset[str] = frozenset()):
        self.graph = graph
        self.env = env
        #: the graph operators that start an accelerator chain (the registry's ``sources``)
        self.sources = sources
        self.readers = graph.consumers()
        self.outputs = {v.name for v in graph.outputs}

    def sole_reader(self, v: Value) -> Node | None:
        """The only node reading ``v`` (None if several, none, or ``v`` is a graph output)."""
        readers = self.readers.get(v.name, [])
        if len(readers) != 1 or v.name in self.outputs:
            return None
        return readers[0]

    def activations(self, v: Value) -> list[Node]:
        """The ``nn.relu``/``clip`` nodes following ``v`` one after the other, sole readers each."""
        acts = []
        while True:
            nxt = self.sole_reader(v)
            if nxt is None or nxt.op not in ("nn.relu", "clip"):
                return acts
            acts.append(nxt)
            v = nxt.output

    def _batch_ok(self, n: int) -> str | None:
        """Every batch fits: one that is not a multiple of BATCH is padded at the region borders."""
        del n
        return None


def match_core(m: Matcher, node: Node, claimed: set[str]) -> tuple[Chain | None, str]:
    """Match the chain starting at a ``qnn.conv2d``/``qnn.dense`` node.

    Returns
    -------
    (Chain or None, str)
        The chain, or None and the reason the node cannot run on the accelerator.
    """
    x, w = node.inputs
    a = node.attrs
    if x.type.dtype not in INT8:
        return None, f"input dtype {x.type.dtype} (int8 or uint8 needed)"
    if w.kind != PARAM:
        return None, "weights are not constants"
    zw = int(a["kernel_zero_point"])
    if not ((w.type.dtype == "int8" and zw == 0) or (w.type.dtype == "uint8" and zw == 128)):
        return None, f"kernel zero point {zw} for {w.type.dtype} weights not supported (symmetric weights needed)"
    if node.op == "qnn.conv2d":
        if _pair(a["dilation"]) != (1, 1):
            return None, f"dilation={tuple(_pair(a['dilation']))} not supported"
    reason = m._batch_ok(x.type.shape[0])
    if reason:
        return None, reason
    chain = Chain("conv2d" if node.op == "qnn.conv2d" else "dense", [node], node)
    v = node.output
    nxt = m.sole_reader(v)
    if nxt is not None and nxt.op == "nn.bias_add" and nxt.inputs[0] == v and nxt.inputs[1].kind == PARAM \
            and int(nxt.attrs["axis"]) % v.type.ndim == 1:
        chain.bias = nxt
        chain.nodes.append(nxt)
        v = nxt.output
        nxt = m.sole_reader(v)
    if nxt is None or nxt.op != "qnn.requantize":
        return None, "its int32 result is not requantized (alone): it stays on the CPU"
    if int(nxt.attrs["input_zero_point"]) != 0 or nxt.attrs["out_dtype"] not in INT8:
        return None, "requantize with an input zero point or a non-8-bit output not supported"
    chain.requant = nxt
    chain.nodes.append(nxt)
    v = nxt.output
    add = m.sole_reader(v)
    if add is not None and add.op == "qnn.add" and add.name not in claimed and _can_absorb_add(m, add, v):
        other = add.inputs[1] if add.inputs[0] == v else add.inputs[0]
        if other.type.shape == v.type.shape and other.type.dtype in INT8 and np.size(add.attrs["lhs_scale"]) == 1 \
                and np.size(add.attrs["rhs_scale"]) == 1 and add.output_type.dtype in INT8:
            chain.add, chain.residual = add, other
            chain.nodes.append(add)
            v = add.output
    chain.activations = m.activations(v)
    chain.nodes.extend(chain.activations)
    return chain, "supported"


def _can_absorb_add(m: Matcher, add: Node, v: Value) -> bool:
    """A chain takes the add when it is the lhs, or when the lhs is no requantize another chain takes."""
    if add.inputs[0] == v:
        return True
    lhs = m.graph.producer(add.inputs[0])
    return not (lhs is not None and lhs.op == "qnn.requantize" and m.sole_reader(lhs.output) is add)


def match_add(m: Matcher, node: Node, claimed: set[str]) -> tuple[Chain | None, str]:
    """Match a standalone ``qnn.add`` (+ relu/clip) of two NCHW int8/uint8 tensors of one shape."""
    del claimed  # an add starts no chain another one could take
    a, b = node.inputs
    if a.type.shape != b.type.shape or a.type.ndim != 4:
        return None, "only adds of two NCHW tensors of the same shape run on the accelerator"
    if a.type.dtype not in INT8 or b.type.dtype not in INT8 or node.output_type.dtype not in INT8:
        return None, "operands must be int8 or uint8"
    if np.size(node.attrs["lhs_scale"]) != 1 or np.size(node.attrs["rhs_scale"]) != 1:
        return None, "per-channel scales of an add not supported"
    reason = m._batch_ok(a.type.shape[0])
    if reason:
        return None, reason
    chain = Chain("add", [node], node, add=node)
    chain.activations = m.activations(node.output)
    chain.nodes.extend(chain.activations)
    return chain, "supported"


def match_mul(m: Matcher, node: Node, claimed: set[str]) -> tuple[Chain | None, str]:
    """Match a ``qnn.mul`` (+ relu/clip) of two NCHW int8/uint8 tensors of one shape, or of a
    tensor and a ``(N, C, 1, 1)`` one broadcast over its pixels (either operand)."""
    a, b = node.inputs
    sa, sb = a.type.shape, b.type.shape
    if len(sa) == len(sb) == 4 and sa != sb and (sa[:2] == sb[:2]) and (sb[2:] == (1, 1) or sa[2:] == (1, 1)) \
            and node.output_type.shape in (sa, sb):
        if a.type.dtype not in INT8 or b.type.dtype not in INT8 or node.output_type.dtype not in INT8:
            return None, "operands must be int8 or uint8"
        chain = Chain("multiply", [node], node, add=node)
        chain.activations = m.activations(node.output)
        chain.nodes.extend(chain.activations)
        reason = "supported"
    else:
        chain, reason = match_add(m, node, claimed)
    if chain is None:
        return None, reason.replace("adds", "products").replace("an add", "a product")
    from ..topi.qnn_mul import mul_requant

    a = node.attrs
    try:
        mul_requant(float(np.ravel(a["lhs_scale"])[0] * np.ravel(a["rhs_scale"])[0] / np.ravel(a["output_scale"])[0]))
    except ValueError as exc:
        return None, f"requantization not representable: {exc}"
    chain.kind = "multiply"
    return chain, reason


def match_max_pool(m: Matcher, node: Node, claimed: set[str]) -> tuple[Chain | None, str]:
    """Match an ``nn.max_pool2d`` of an int8/uint8 NCHW tensor with padding smaller than the pool."""
    del claimed
    (x,) = node.inputs
    a = node.attrs
    if x.type.dtype not in INT8:
        return None, f"max pooling of {x.type.dtype} runs on the CPU"
    if a.get("ceil_mode"):
        return None, "ceil_mode not supported"
    ph, pw = _pair(a["pool_size"])
    pad = tuple(int(p) for p in (a["padding"] if not isinstance(a["padding"], int) else (a["padding"],) * 4))
    if len(pad) == 2:
        pad = (pad[0], pad[1], pad[0], pad[1])
    if max(pad[0], pad[2]) >= ph or max(pad[1], pad[3]) >= pw:
        return None, f"padding {pad} not smaller than the pool {ph}x{pw}"
    reason = m._batch_ok(x.type.shape[0])
    if reason:
        return None, reason
    from ..topi.qnn import MaxPoolSpec
    from ..topi.qnn import maxpool_unsupported_reason

    n, c, h, w = x.type.shape
    reason = maxpool_unsupported_reason(MaxPoolSpec(n, c, h, w, (ph, pw), _pair(a["strides"]), pad), m.env)
    if reason:
        return None, f"the ALU cannot run it: {reason}"
    return Chain("max_pool2d", [node], node), "supported"


def avg_pool_spec(node: Node, x_zero_point: int, out_zero_point: int, clip: tuple[int, int], mode: str = "fixed"):
    """The :class:`~vta.topi.qnn_avgpool.AvgPoolSpec` of a ``qnn.avg_pool2d`` or
    ``qnn.global_avg_pool2d`` node (zero points and clip as given: the int8 domain of the fusion).

    Raises
    ------
    ValueError
        If the requantisation cannot be represented.
    """
    from ..topi.qnn_avgpool import AvgPoolSpec, avgpool_requant

    (x,) = node.inputs
    a = node.attrs
    n, c, h, w = x.type.shape
    if node.op == "qnn.global_avg_pool2d":
        pool, strides = (h, w), (1, 1)
    else:
        pool, strides = _pair(a["pool_size"]), _pair(a["strides"])
    s_in = a.get("input_scale")
    s_in = x.type.scale if s_in is None else s_in
    s_out = a.get("output_scale")
    s_out = s_in if s_out is None else s_out
    rq = avgpool_requant(float(np.ravel(s_in)[0]), float(np.ravel(s_out)[0]), pool[0] * pool[1], mode)
    return AvgPoolSpec(n, c, h, w, pool, strides, int(x_zero_point), rq, int(out_zero_point), clip)


def match_avg_pool(m: Matcher, node: Node, claimed: set[str]) -> tuple[Chain | None, str]:
    """Match a ``qnn.avg_pool2d``/``qnn.global_avg_pool2d`` (+ relu/clip) of an int8/uint8 NCHW
    tensor, per-tensor scales, no padding (the ALU sums each window, :mod:`vta.topi.qnn_avgpool`)."""
    del claimed
    (x,) = node.inputs
    a = node.attrs
    if x.type.dtype not in INT8 or node.output_type.dtype not in INT8 or x.type.ndim != 4:
        return None, "average pooling of an int8/uint8 NCHW tensor runs on the accelerator, not of " \
                     f"{x.type.dtype} {x.type.shape}"
    scales = [a.get("input_scale"), a.get("output_scale"), x.type.scale]
    if any(s is not None and np.size(s) != 1 for s in scales):
        return None, "per-channel scales of an average pool not supported"
    if node.op == "qnn.avg_pool2d":
        if a.get("ceil_mode"):
            return None, "ceil_mode not supported"
        pad = a["padding"]
        if any(int(p) for p in ((pad,) if isinstance(pad, (int, np.integer)) else pad)):
            return None, f"padding {pad} not supported (a padded window's pixel count depends on its position)"
    reason = m._batch_ok(x.type.shape[0])
    if reason:
        return None, reason
    from ..topi.qnn_avgpool import avgpool_unsupported_reason

    try:
        spec = avg_pool_spec(node, 0, 0, (-128, 127))
    except ValueError as exc:
        return None, f"requantization not representable: {exc}"
    reason = avgpool_unsupported_reason(spec, m.env)
    if reason:
        return None, f"the ALU cannot run it: {reason}"
    chain = Chain("avg_pool2d", [node], node)
    chain.activations = m.activations(node.output)
    chain.nodes.extend(chain.activations)
    return chain, "supported"


def _accel_reader(m: Matcher, v: Value) -> bool:
    """Some reader of ``v`` (through reshapes that only relabel it) may run on the accelerator."""
    for r in m.readers.get(v.name, []):
        if r.op in m.sources:
            return True
        if r.op == "reshape" and r.output_type.shape == v.type.shape and _accel_reader(m, r.output):
            return True
    return False


def match_upsampling(m: Matcher, node: Node, claimed: set[str]) -> tuple[Chain | None, str]:
    """Match an ``nn.upsampling`` (nearest neighbour, integer factors) of an int8/uint8 NCHW tensor."""
    del claimed
    (x,) = node.inputs
    if x.type.dtype not in INT8 or x.type.ndim != 4:
        return None, f"upsampling of an int8/uint8 NCHW tensor runs on the accelerator, not of {x.type.dtype}"
    reason = m._batch_ok(x.type.shape[0])
    if reason:
        return None, reason
    producer = m.graph.producer(x)
    if (producer is None or producer.op == "onnx.region") and not _accel_reader(m, node.output):
        return None, ("its input comes from the CPU and no reader runs on the accelerator: there it would only "
                      "add two layout conversions")
    from ..topi.qnn_upsampling import UpsamplingSpec, upsampling_unsupported_reason

    n, c, h, w = x.type.shape
    reason = upsampling_unsupported_reason(UpsamplingSpec(n, c, h, w, int(node.attrs["scale_h"]),
                                                          int(node.attrs["scale_w"])), m.env)
    if reason:
        return None, f"the ALU cannot run it: {reason}"
    return Chain("upsampling", [node], node), "supported"


def match_minmax(m: Matcher, node: Node, claimed: set[str]) -> tuple[Chain | None, str]:
    """Match a ``qnn.maximum``/``qnn.minimum`` (+ relu/clip) of two NCHW int8/uint8 tensors of one
    shape whose scales the ALU can rescale (:mod:`vta.topi.qnn_minmax`)."""
    chain, reason = match_add(m, node, claimed)
    if chain is None:
        what = "maxima" if node.op == "qnn.maximum" else "minima"
        return None, reason.replace("adds", what).replace("an add", f"a {what[:-1]}um")
    from ..topi.qnn_minmax import minmax_requant

    a = node.attrs
    try:
        for side in ("lhs", "rhs"):
            minmax_requant(float(np.ravel(a[f"{side}_scale"])[0] / np.ravel(a["output_scale"])[0]))
    except ValueError as exc:
        return None, f"requantization not representable: {exc}"
    chain.kind = "minmax"
    return chain, reason
