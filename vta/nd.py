"""Arrays on devices (``tvm.nd`` compatible names)."""

from .runtime.ndarray import NDArray, array, empty

__all__ = ["array", "empty", "NDArray"]
