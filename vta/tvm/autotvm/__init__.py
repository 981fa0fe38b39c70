"""``tvm.autotvm``: :mod:`vta.autotvm` under TVM's name (templates, tasks, tuners, measurement
on the cycle model or tsim, logs, ``apply_history_best``, ``tophub.context``)."""

from __future__ import annotations

import sys as _sys

from ...autotvm import *  # noqa: F401,F403
from ...autotvm import __all__, callback, measure, record, space, task, tophub, tuner  # noqa: F401

for _name in ("callback", "measure", "record", "space", "task", "tophub", "tuner"):
    _sys.modules[f"{__name__}.{_name}"] = _sys.modules[f"vta.autotvm.{_name}"]
