"""``tvm.contrib``: the helper modules VTA code imports (``utils``)."""

from . import utils

__all__ = ["utils"]
