"""PadChannels: channel counts of accelerator operators up to the configuration's blocks.

Every ``vta.*`` spec gets its input channels rounded up to BLOCK_IN and its output channels to
BLOCK_OUT; the weights get zero rows/columns, the bias zeros, per-channel multipliers zeros (the
padded output channels hold the clipped zero point and are cropped at the region's exit). The
node keeps the logical channel count in its ``channels`` attribute.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...env import Environment, get_env
from ..ir import Graph
from ._rewrite import Rewriter

__all__ = ["PadChannels", "round_up"]


def round_up(n: int, block: int) -> int:
    """``n`` rounded up to a multiple of ``block``."""
    return -(-int(n) // block) * block


def _pad_axis(a: np.ndarray, axis: int, size: int, value: int = 0) -> np.ndarray:
    extra = size - a.shape[axis]
    if not extra:
        return a
    widths = [(0, 0)] * a.ndim
    widths[axis] = (0, extra)
    return np.pad(a, widths, constant_values=value)


def _pad_requant(rq, channels: int):
    if not rq.per_channel or rq.channels == channels:
        return rq
    return dataclasses.replace(rq, multiplier=_pad_axis(rq.multiplier, 0, channels, 0),
                               shift=_pad_axis(rq.shift, 0, channels, 1))


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
        bi, bo = env.BLOCK_IN, env.BLOCK_OUT
        rw = Rewriter(graph)
        for node in graph.nodes:
            spec = node.attrs.get("spec")
            if node.op not in ("vta.conv2d", "vta.dense"):
                if node.op in ("vta.add", "vta.max_pool2d") and spec.channels % bi:
                    attrs = dict(node.attrs, spec=dataclasses.replace(spec, channels=round_up(spec.channels, bi)))
                    rw.emit(node.op, [rw.map(v) for v in node.inputs], attrs, node.name)
                else:
                    rw.keep(node)
                continue
            conv = node.op == "vta.conv2d"
            cin = spec.in_channels if conv else spec.in_features
            cout = spec.out_channels if conv else spec.out_features
            pin, pout = round_up(cin, bi), round_up(cout, bo)
            if (pin, pout) == (cin, cout):
                rw.keep(node)
                continue
            x, w, b, *rest = [rw.map(v) for v in node.inputs]
            wdata = _pad_axis(_pad_axis(rw.params[w.name], 0, pout), 1, pin)
            bdata = _pad_axis(rw.params[b.name], 0, pout)
            wv = rw.const(w.name, wdata, like=w.type)
            bv = rw.const(b.name, bdata, like=b.type)
            sizes = dict(in_channels=pin, out_channels=pout) if conv else dict(in_features=pin, out_features=pout)
            new_spec = dataclasses.replace(spec, requant=_pad_requant(spec.requant, pout), **sizes)
            rw.emit(node.op, [x, wv, bv, *rest], dict(node.attrs, spec=new_spec), node.name)
        return rw.finish()
