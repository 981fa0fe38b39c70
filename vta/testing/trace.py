"""Tracing from Python: the switch behind ``vta.testing.trace``.

Everything the runtime runs on the configuration's device while the block is active is
recorded (tsim and the cycle model with time, fsim in program order); the graph executor's debug
run labels its runs with the node names through :meth:`vta.profile.Recorder.layer`.

Examples
--------
>>> with vta.testing.trace(out_dir=tmp_path) as rec:     # doctest: +SKIP
...     with rec.layer("conv1"):
...         f(a, w, c)
>>> rec.timeline.layers[0].name                           # doctest: +SKIP
'conv1'
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from ..env import Environment, get_env
from ..profile import Recorder
from ..sim.targets import device_for

__all__ = ["trace"]


@contextlib.contextmanager
def trace(out_dir: str | Path | None = None, env: Environment | None = None, *, window: int = 256,
          plots: bool = False) -> Iterator[Recorder]:
    """Trace every run of the runtime's device for ``env`` (default: the current one).

    Parameters
    ----------
    out_dir : str or Path, optional
        When given, the trace and the reports (and the plots with ``plots``) are written there
        when the block ends without an error.
    env : Environment, optional
        The configuration whose device is traced.
    window : int
        Cycles per memory-traffic window.
    plots : bool
        Also draw the plots (needs matplotlib).

    Yields
    ------
    Recorder
        Its ``timeline`` holds the runs; ``layer(name)`` labels the runs inside a block.

    Raises
    ------
    vta.profile.ProfileError
        If the device has no probe.
    """
    rec = Recorder(device_for(env or get_env()), window=window)
    with rec:
        yield rec
    if out_dir is not None:
        from ..profile.session import write_outputs

        write_outputs(rec.timeline, out_dir, plots=plots)
