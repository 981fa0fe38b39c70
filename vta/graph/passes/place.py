"""PlaceDevices: every node gets a ``device`` ("vta" or "cpu") and the ``reason`` for it.

Fused ``vta.*`` operators (:data:`vta.graph.accel_ops.ACCEL_OPS`) run on the accelerator
("supported", plus what padding costs when the channels are far from the blocks, and how a
grouped convolution runs); everything else runs on the CPU with the reason it is not
on the accelerator: the matcher's finding for convolutions, dense layers, adds, products and
pools that were not fused (kept by :class:`~vta.graph.passes.fuse.FuseAccelerator` in the ``reasons`` it
reports), or what the operator is (a float operator, a layout conversion at a region border).
An operator with no host kernel and no accelerator form raises.
"""

from __future__ import annotations

from ...env import Environment, get_env
from ...errors import UnsupportedOperatorError
from ..accel_ops import ACCEL_OPS, round_up
from ..host import KERNELS
from ..ir import Graph

__all__ = ["PlaceDevices", "cpu_reason"]

_CPU_REASONS = {
    "layout_transform": "layout conversion at an accelerator region border",
    "vta.to_int8": "uint8 -> int8 offset at an accelerator region entry",
    "vta.to_uint8": "int8 -> uint8 offset at an accelerator region exit",
    "vta.fold_width": "a first layer's input with the kernel columns folded into the channels",
    "qnn.quantize": "quantization of a float tensor (no accelerator operator)",
    "qnn.dequantize": "dequantization to float (no accelerator operator)",
    "nn.softmax": "float operator (no accelerator operator)",
    "reshape": "data movement only (no accelerator operator)",
    "nn.batch_flatten": "data movement only (no accelerator operator)",
    "transpose": "data movement only (no accelerator operator)",
    "concatenate": "data movement only (no accelerator operator)",
    "nn.avg_pool2d": "float operator (no accelerator operator)",
    "nn.global_avg_pool2d": "float operator (no accelerator operator)",
}


def cpu_reason(op: str, dtype: str) -> str:
    """Why an operator that was not fused runs on the CPU (generic reasons)."""
    if op in _CPU_REASONS:
        return _CPU_REASONS[op]
    if dtype.startswith("float"):
        return "float operator (no accelerator operator)"
    return f"{op} is not fused into an accelerator operator"


class PlaceDevices:
    """Record ``device`` and ``reason`` in every node's attributes (module docstring).

    Parameters
    ----------
    env : Environment, optional
        The configuration; the current one by default.
    reasons : dict, optional
        Reasons found earlier for nodes left on the CPU, and notes on how a fused node runs (by
        node name); the pipeline passes the fusion pass's findings.
    """

    name = "PlaceDevices"

    def __init__(self, env: Environment | None = None, reasons: dict[str, str] | None = None):
        self.env = env
        self.reasons = reasons if reasons is not None else {}

    def __call__(self, graph: Graph) -> Graph:
        env = self.env or get_env()
        nodes = []
        for node in graph.nodes:
            if node.op in ACCEL_OPS:
                device, reason = "vta", self._vta_reason(node, graph, env, self.reasons.get(node.name))
            elif node.op == "concatenate" and node.output_type.ndim == 6:
                device, reason = "cpu", ("channel blocks of accelerator results concatenated in the packed layout "
                                         "(a copy, no layout conversion)")
            elif node.op in KERNELS:
                device = "cpu"
                reason = (self.reasons.get(node.name) or node.attrs.get("reason")
                          or cpu_reason(node.op, node.output_type.dtype))
            else:
                raise UnsupportedOperatorError(
                    f"node {node.name!r}: operator {node.op!r} runs neither on the accelerator nor on the host")
            nodes.append(node.with_(attrs=dict(node.attrs, device=device, reason=reason)))
        return graph.replace(nodes=nodes)

    @staticmethod
    def _vta_reason(node, graph: Graph, env: Environment, fused_note: str | None) -> str:
        notes = []
        spec = node.attrs["spec"]
        producer = graph.producer(node.inputs[0])
        if getattr(spec, "fold_width", False):
            f = spec.folded()
            notes.append(f"kernel width folded into the channels ({spec.in_channels}x{spec.kernel_w} = "
                         f"{f.in_channels} channels padded to {round_up(f.in_channels, env.BLOCK_IN)})")
        elif ACCEL_OPS[node.op].kind == "conv2d" and producer is not None and producer.op == "layout_transform":
            logical = producer.inputs[0].type.shape[1]
            padded = round_up(logical, env.BLOCK_IN)
            if padded > logical:
                notes.append(f"{logical} input channels padded to {padded} "
                             f"({padded / logical:.1f}x the MACs of the layer)")
        if spec.batch % env.BATCH:
            notes.append(f"batch {spec.batch} padded to {round_up(spec.batch, env.BATCH)} (BATCH={env.BATCH})")
        return "; ".join(["supported"] + notes + ([fused_note] if fused_note else []))
