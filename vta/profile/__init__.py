"""The profiler: where the cycles of a run went, per unit, per instruction and per layer.

* :mod:`~vta.profile.events`: the event model (instructions per unit, token hand-offs,
  counters) shared by tsim, the cycle model and fsim;
* :mod:`~vta.profile.collect`: each level's probe records -> events;
* :mod:`~vta.profile.recorder`: :class:`Recorder`, tracing switched on for one device;
* :mod:`~vta.profile.chrome`: the trace file (Chrome trace-event JSON, opened by
  ui.perfetto.dev and chrome://tracing);
* :mod:`~vta.profile.report`: the per-layer table (text, CSV, JSON);
* :mod:`~vta.profile.plots`: utilisation bars, roofline, timeline picture (matplotlib);
* :mod:`~vta.profile.session`: profiling program packs or a model end to end
  (``python -m vta profile``), with a progress bar.
"""

from .events import (
           CHANNELS,
           UNITS,
           Flow,
           InsnEvent,
           InsnInfo,
           Layer,
           Timeline,
           describe,
           program_order,
)
from .recorder import ProfileError, Recorder

__all__ = ["UNITS", "CHANNELS", "Flow", "InsnEvent", "InsnInfo", "Layer", "Timeline", "describe",
           "program_order", "Recorder", "ProfileError"]
