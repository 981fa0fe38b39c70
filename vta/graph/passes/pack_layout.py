"""PackLayout: accelerator regions in the packed layout, ``layout_transform`` only at their borders.

Every ``vta.*`` operator switches to ``NCHW{BATCH}n{BLOCK}c`` (``NC{BATCH}n{BLOCK}c`` for dense).
An activation that comes from another accelerator operator is already packed and is used as it
is; one from the CPU (or a graph input) passes through one ``layout_transform`` (shared by all
readers) that packs and zero-pads its channels; a packed result read by the CPU or returned by
the graph passes through one ``layout_transform`` that unpacks and crops to the logical channels.
A batch that is not a multiple of BATCH is padded the same way (and cropped at the exit).
A ``concatenate`` along the channels of packed values, all but the last a whole number of channel
blocks, stays in the packed layout (the blocks follow one another): no conversion around it.
This is what upstream's ``graph_pack`` did for Relay, minus its reliance on start/stop names.
"""

from __future__ import annotations

from ...env import Environment, get_env
from ..accel_ops import ACCEL_OPS
from ..infer import parse_layout
from ..ir import Graph, Node, Value
from ._rewrite import Rewriter

__all__ = ["PackLayout"]


class PackLayout:
    """Pack accelerator regions (module docstring).

    Parameters
    ----------
    env : Environment, optional
        The configuration (BATCH and BLOCK give the layouts); the current one by default.
    """

    name = "PackLayout"

    def __init__(self, env: Environment | None = None):
        self.env = env

    def __call__(self, graph: Graph) -> Graph:
        env = self.env or get_env()
        b, c = env.BATCH, env.BLOCK_IN
        rw = Rewriter(graph)
        packed_in: dict[str, Value] = {}   # plain value name -> its packed form
        plain_out: dict[str, Value] = {}   # packed value name -> its plain form
        logical: dict[str, tuple[int, int]] = {}   # packed value name -> logical (batch, channels)

        def plain(v: Value) -> Value:
            v = rw.map(v)
            if v.name not in logical:
                return v
            if v.name not in plain_out:
                base, _, _ = parse_layout(_layout_of(v, b, c))
                batch, channels = logical[v.name]
                plain_out[v.name] = rw.emit("layout_transform", [v], dict(
                    src_layout=_layout_of(v, b, c), dst_layout=base, channels=channels,
                    batch=batch if batch % b else None), rw.fresh(f"{v.name}_unpack"))
            return plain_out[v.name]

        def packed(v: Value, layout: str) -> Value:
            v = rw.map(v)
            if v.name in logical:
                return v
            if v.name not in packed_in:
                base, _, _ = parse_layout(layout)
                packed_in[v.name] = rw.emit("layout_transform", [v], dict(
                    src_layout=base, dst_layout=layout), rw.fresh(f"{v.name}_pack"))
            return packed_in[v.name]

        for node in graph.nodes:
            op = ACCEL_OPS.get(node.op)
            if op is None and node.op == "concatenate" and _packed_concat_ok(node, [rw.map(v) for v in node.inputs],
                                                                           logical, c):
                ins = [rw.map(v) for v in node.inputs]
                out = rw.emit(node.op, ins, dict(node.attrs, axis=1), node.name)
                rw.subst[node.name] = out
                logical[out.name] = (logical[ins[0].name][0], sum(logical[v.name][1] for v in ins))
                continue
            if op is None:
                inputs = [plain(v) for v in node.inputs]
                _emit_same(rw, node, inputs)
                continue
            acts = op.activation_inputs
            layout = f"{op.layout}{b}n{c}c"
            inputs = [packed(v, layout) if i in acts else rw.map(v) for i, v in enumerate(node.inputs)]
            channels = node.attrs.get("channels")
            if channels is None:
                channels = node.output_type.shape[1]
            out = rw.emit(node.op, inputs, dict(node.attrs, layout=layout, channels=int(channels)), node.name)
            rw.subst[node.name] = out
            logical[out.name] = (int(node.attrs["spec"].batch), int(channels))
        outputs = [plain(v) for v in graph.outputs]
        return rw.finish(outputs)


def _packed_concat_ok(node: Node, inputs: list[Value], logical: dict, block: int) -> bool:
    """A channel concatenation of packed values stays packed: every input packed (NCHW), every
    one but the last a whole number of channel blocks (the packed blocks then follow one another)."""
    if node.output_type.ndim != 4 or int(node.attrs["axis"]) % 4 != 1:
        return False
    if not all(v.name in logical and v.type.ndim == 6 for v in inputs):
        return False
    return all(logical[v.name][1] % block == 0 for v in inputs[:-1])


def _layout_of(v: Value, b: int, c: int) -> str:
    return f"NCHW{b}n{c}c" if v.type.ndim == 6 else f"NC{b}n{c}c"


def _emit_same(rw: Rewriter, node: Node, inputs: list[Value]) -> None:
    if all(a == o for a, o in zip(inputs, node.inputs, strict=True)):
        rw.nodes.append(node)
        return
    rw.emit(node.op, inputs, node.attrs, node.name)
