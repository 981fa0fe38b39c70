"""``topi.generic``: default schedules, one loop nest per stage, built for the host CPU."""

from __future__ import annotations

from typing import Any

from ... import te as _te
from .._missing import missing

__all__ = ["default_schedule", "schedule_group_conv2d_nchw", "schedule_conv2d_nchw", "schedule_dense",
           "schedule_conv2d_transpose_nchw", "schedule_injective"]


def default_schedule(outs: Any) -> _te.Schedule:
    """The schedule computing every stage of ``outs`` in its own plain loop nest (TVM's default).

    Raises
    ------
    TypeError
        If ``outs`` is not a tensor or a list of tensors.
    """
    outs = [outs] if isinstance(outs, _te.Tensor) else list(outs)
    if not outs or not all(isinstance(t, _te.Tensor) for t in outs):
        raise TypeError(f"a schedule takes a tensor or a list of tensors, got {outs!r}")
    return _te.create_schedule([t.op for t in outs])


#: Each operator's schedule for the CPU is the default one.
schedule_group_conv2d_nchw = default_schedule
schedule_conv2d_nchw = default_schedule
schedule_conv2d_transpose_nchw = default_schedule
schedule_dense = default_schedule
schedule_injective = default_schedule


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
