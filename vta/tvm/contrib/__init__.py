"""``tvm.contrib``: the helper modules VTA code imports (``utils``, ``graph_executor``, ``debugger``,
``pickle_memoize``)."""

from . import debugger, graph_executor, pickle_memoize, utils

__all__ = ["utils", "graph_executor", "debugger", "pickle_memoize"]
