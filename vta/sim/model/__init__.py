"""The cycle model: fsim's results with the RTL's cycle counts from an event-driven timing model.

Public face: :class:`CycleModel` (a :class:`~vta.sim.device.Device`; ``TARGET`` ``model``),
:class:`Timing` (its cost parameters), :func:`time_stream` (the timing of one decoded stream)
and :data:`HW_STAT_KEYS` (the hardware counters it reports, as tsim does).

Inside: ``simulator.py`` (the device), ``replay.py`` (the event-driven timing replay, with the
read channel and the DRAM model; compiled by numba when installed), ``costs.py`` (what each
instruction costs each unit, derived from the RTL; ``hw/README.md`` has the timing).
"""

from ..targets import register_target
from .costs import Timing
from .simulator import HW_STAT_KEYS, CycleModel, time_stream

__all__ = ["CycleModel", "Timing", "time_stream", "HW_STAT_KEYS"]

register_target("model", CycleModel)
