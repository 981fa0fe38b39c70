"""PadChannels: channel counts of accelerator operators up to the configuration's blocks.

Every ``vta.*`` spec gets its channels padded as its registration says
(:attr:`vta.graph.accel_ops.AccelOp.pad`): a GEMM core its input channels rounded up to
BLOCK_IN and its output channels to BLOCK_OUT (zero weight rows/columns, zero bias, per-channel
multipliers zero: the padded output channels hold the clipped zero point and are cropped at the
region's exit), an element-wise operator its channels. The node keeps the logical channel
count in its ``channels`` attribute.
"""

from __future__ import annotations

from ...env import Environment, get_env
from ..accel_ops import ACCEL_OPS, round_up
from ..ir import PARAM, Graph
from ._rewrite import Rewriter

__all__ = ["PadChannels", "round_up"]


class PadChannels:
    """Pad the channels of every ``vta.*`` operator to the blocks (module docstring).

    Parameters
    ----------
    env : Environment, optional
        The configuration; the current one by default.
    """

    name = "PadChannels"

    def __init__(self, env: Environment | None = None):
        self.env = env

    def __call__(self, graph: Graph) -> Graph:
        env = self.env or get_env()
        rw = Rewriter(graph)
        for node in graph.nodes:
            op = ACCEL_OPS.get(node.op)
            if op is None:
                rw.keep(node)
                continue
            inputs = [rw.map(v) for v in node.inputs]
            consts = {op.roles[i]: rw.params[v.name] for i, v in enumerate(inputs) if v.kind == PARAM}
            spec = node.attrs["spec"]
            new_spec, padded = op.pad(spec, consts, env)
            if new_spec is spec:
                rw.keep(node)
                continue
            for i, v in enumerate(inputs):
                data = padded.get(op.roles[i]) if v.kind == PARAM else None
                if data is not None:
                    inputs[i] = rw.const(v.name, data, like=v.type)
            rw.emit(node.op, inputs, dict(node.attrs, spec=new_spec), node.name)
        return rw.finish()
