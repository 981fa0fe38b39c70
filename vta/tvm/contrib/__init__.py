"""``tvm.contrib``: the helper modules VTA code imports (``utils``, ``graph_executor``, ``debugger``)."""

from . import debugger, graph_executor, utils

__all__ = ["utils", "graph_executor", "debugger"]
