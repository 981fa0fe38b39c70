"""``tvm.contrib.debugger``: the debug graph executor (``debug_executor.create``)."""

from . import debug_executor

__all__ = ["debug_executor"]
