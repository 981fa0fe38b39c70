"""``tvm.contrib.debugger.debug_executor``: run a network node by node (:mod:`vta.graph.debug_executor`).

::

    m = debug_executor.create(lib.get_graph_json(), lib.get_lib(), ext_dev(0))
    m.set_input(**lib.get_params())
    m.set_input("data", x)
    print(m.profile())        # node, operator, device, shapes, MACs, instructions, cycles, % of the GEMM bound
"""

from __future__ import annotations

from typing import Any

from ....graph.debug_executor import DebugReport, GraphModuleDebug, NodeReport, create
from ..._missing import missing

__all__ = ["create", "GraphModuleDebug", "DebugReport", "NodeReport"]


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
