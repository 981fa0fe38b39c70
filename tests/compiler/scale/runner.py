"""The scale tests' view of ``tests/compiler/fsim_run.py``: one call, upstream counters."""

from __future__ import annotations

from ..fsim_run import build_and_run, counters


def run(sched, args, inputs: dict, tmp_path, name: str = "default_function"):
    """Build ``sched`` and call it once on fsim.

    ``inputs`` maps argument names to NumPy arrays; every other argument is an output, allocated
    with the tensor's shape and dtype. Returns ``(outputs by name, upstream counters)``.
    """
    outs, per_call, _ = build_and_run(sched, args, inputs, tmp_path, name=name)
    return outs, counters(per_call[0])
