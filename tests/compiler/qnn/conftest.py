"""Fixtures and helpers of the quantized-operator tests: the configurations, running a compiled
operator through the tutorial flow (save, ``rpc.LocalSession`` upload, load, call on ``ext_dev``)."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from tests.conftest import make_env
from vta import nd, rpc
from vta.testing import simulator

#: The configurations every operator runs on: the default and BATCH=2.
CONFIGS = ("vta_config.json", "batch2.json")


@pytest.fixture(params=CONFIGS)
def qenv(request):
    """Each configuration of :data:`CONFIGS` in turn, made current for the test."""
    with make_env(request.param) as e:
        yield e


def run_op(mod, layout, packed_inputs: list, tmp_path, remote=None):
    """Call a compiled operator once on the current target.

    ``packed_inputs`` are the arguments but ``out`` in call order (``layout.pack_args``).
    Returns ``(packed output, statistics of the call)``.
    """
    name = mod.entry_name if hasattr(mod, "entry_name") else "op"
    obj = tmp_path / f"{name}_{len(list(tmp_path.iterdir()))}.o"
    mod.save(obj)
    with ExitStack() as stack:
        if remote is None:
            remote = stack.enter_context(rpc.LocalSession())
        remote.upload(str(obj))
        f = remote.load_module(obj.name)
        dev = remote.ext_dev(0)
        arrays = [stack.enter_context(nd.array(a, dev)) for a in packed_inputs]
        out = stack.enter_context(nd.array(layout.empty_output(), dev))
        simulator.clear_stats()
        f(*arrays, out)
        stats = simulator.stats()
        return out.numpy(), stats
