"""FoldConstants: evaluate on the host every node whose inputs are all constants."""

from __future__ import annotations

import numpy as np

from ..host import KERNELS, run_kernel
from ..ir import PARAM, Graph
from ._rewrite import Rewriter

__all__ = ["FoldConstants"]


class FoldConstants:
    """Replace each node whose inputs are all constants by a constant holding its result.

    The result keeps the node's name and quantisation parameters. Fused accelerator operators
    and operators without a host kernel are left alone.
    """

    name = "FoldConstants"

    def __call__(self, graph: Graph) -> Graph:
        rw = Rewriter(graph)
        for node in graph.nodes:
            inputs = [rw.map(v) for v in node.inputs]
            if (inputs and all(v.kind == PARAM for v in inputs) and node.op in KERNELS
                    and not node.op.startswith("vta.")):
                data = run_kernel(node.op, node.attrs, [rw.params[v.name] for v in inputs])
                data = np.asarray(data, dtype=node.output_type.dtype).reshape(node.output_type.shape)
                rw.subst[node.name] = rw.const(node.name, data, like=node.output_type)
            else:
                rw.keep(node)
        return rw.finish()
