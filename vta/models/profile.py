"""Profile a whole ONNX model: ``python -m vta profile MODEL.onnx``.

The model is imported and compiled for the current configuration with its ``TARGET`` replaced
by the profiled level, fed one seeded random input, and run once with tracing on; every
accelerator call is labelled with its graph node's name, so the trace and the per-layer report
show one layer per node that ran on the accelerator (host nodes take no accelerator time).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["profile_model", "random_input", "last_node_table"]

_last_table: list[str] = []


def last_node_table() -> str | None:
    """The node table (CPU and accelerator nodes, with the accelerator's share of MACs and wall
    time) of the last :func:`profile_model` run in this process, or None."""
    return _last_table[-1] if _last_table else None


def random_input(shape: tuple, dtype: str, seed: int = 0) -> np.ndarray:
    """A seeded input of ``shape``: standard normal for floats, the full range for integers."""
    rng = np.random.default_rng(seed)
    if np.issubdtype(np.dtype(dtype), np.floating):
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(np.dtype(dtype))
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def profile_model(path: str | Path, target: str, window: int = 256):
    """Run ``path`` once on ``target`` with tracing on and return the timeline.

    Raises
    ------
    vta.errors.FrontendError
        If the model cannot be imported.
    vta.profile.ProfileError
        If the target's device cannot be traced.
    vta.errors.SimulationError
        If a program fails on the device.
    """
    from ..env import Environment, get_env
    from ..testing.trace import trace
    from . import runner

    base = get_env()
    env = Environment({**base.cfg_dict, "TARGET": target})
    built = runner.build(Path(path), env)
    try:
        x = {name: random_input(tuple(shape), dtype) for name, shape, dtype in built.inputs}
        with env, trace(env=env, window=window) as rec:
            built.module.layer_scope = rec.layer
            runner.run(built, x)
        _last_table[:] = [runner.format_layers(built)]
        return rec.timeline
    finally:
        built.close()
