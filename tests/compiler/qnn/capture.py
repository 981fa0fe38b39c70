"""One call of a built operator on the configured device through the tutorial flow, with the
instructions it executed (``Module.capture``)."""

from __future__ import annotations

from contextlib import ExitStack

from vta import nd, rpc
from vta.testing import simulator


def run_captured(mod, layout, packed: list, tmp_path, name: str = "op"):
    """Save ``mod`` under ``tmp_path``, load it through ``rpc.LocalSession`` and call it once on
    ``packed`` (the arguments from ``layout.pack_args``); ``(unpacked output, decoded
    instructions)``."""
    obj = tmp_path / f"{name}_{len(list(tmp_path.iterdir()))}.o"
    mod.save(obj)
    with ExitStack() as stack:
        remote = stack.enter_context(rpc.LocalSession())
        remote.upload(str(obj))
        f = remote.load_module(obj.name)
        dev = remote.ext_dev(0)
        arrays = [stack.enter_context(nd.array(a, dev)) for a in packed]
        out = stack.enter_context(nd.array(layout.empty_output(), dev))
        simulator.clear_stats()
        insns = f.capture(*arrays, out, execute=True).instructions()
        return layout.unpack(out.numpy()), insns
