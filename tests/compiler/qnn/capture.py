"""One call of a built operator on the configured device through the tutorial flow, with the
instructions it executed (``Module.capture``, through :func:`vta.testing.run_built`)."""

from __future__ import annotations

from vta.testing import Output, run_built


def run_captured(mod, layout, packed: list, tmp_path, name: str = "op"):
    """Save ``mod`` under ``tmp_path``, load it through ``rpc.LocalSession`` and call it once on
    ``packed`` (the arguments from ``layout.pack_args``); ``(unpacked output, decoded
    instructions)``."""
    run = run_built(mod, [*packed, Output.like(layout.empty_output())], tmp_path, name=name, capture=True)
    return layout.unpack(run.outputs[0]), run.instructions
