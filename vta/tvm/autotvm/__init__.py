"""``tvm.autotvm``: the part of AutoTVM that VTA code reaches on the simulator path.

Upstream VTA benchmarks wrap their builds in ``with autotvm.tophub.context(target):`` to load
pre-tuned schedule parameters. This package holds no tuning logs and no tuner: inside the
context the operators' default schedules apply (``vta.top`` chooses its tilings from the
active configuration's SRAM sizes), exactly what upstream does for a workload it has no
record of.
"""

from __future__ import annotations

from typing import Any

from .._missing import missing
from . import tophub
from .tophub import DispatchContext

__all__ = ["tophub", "DispatchContext"]


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
