"""``topi.x86``: the dense operator upstream's CPU benchmark variant calls (``dense_nopack``)."""

from __future__ import annotations

from typing import Any

from .._missing import missing
from . import nn
from .generic import default_schedule

__all__ = ["dense_nopack", "schedule_dense_nopack"]


def dense_nopack(data: Any, weight: Any, bias: Any = None, out_dtype: str | None = None) -> Any:
    """``data @ weight.T`` (+ bias) for the host (see :func:`.nn.dense`).

    Raises
    ------
    ValueError
        As :func:`.nn.dense`.
    """
    return nn.dense(data, weight, bias, out_dtype)


#: The default schedule (one loop nest per stage) for the host.
schedule_dense_nopack = default_schedule


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
