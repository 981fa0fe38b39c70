"""The VTA-specific passes of the lowering pipeline (reference tvm-vta-software.md 2.4).

Each pass is a :class:`Pass` object (a name and a ``PrimFunc -> PrimFunc`` function); the
pipeline that orders them lives in :mod:`vta.build`.
"""

from ._util import Pass, VTA_AXIS

__all__ = ["Pass", "VTA_AXIS"]
