"""The ResNet basic block on the cycle model: the same bits as on fsim, cycles per layer."""

from __future__ import annotations

import numpy as np
import pytest

from vta.env import Environment
from vta.graph import compile
from vta.graph.executor import GraphModule
from vta.runtime import ext_dev

from .nets import basic_block
from .test_e2e_fsim import oracle_basic_block

pytestmark = pytest.mark.native


def test_basic_block_on_the_cycle_model(env):
    g = basic_block(np.random.default_rng(3))
    x = np.random.default_rng(4).integers(-128, 128, (1, 16, 8, 8)).astype(np.int8)
    with Environment({**env.cfg_dict, "TARGET": "model"}) as model_env:
        graph_json, lib, params = compile(g, env=model_env)
        with GraphModule(graph_json, lib, ext_dev(0)) as m:
            m.set_input(**params)
            m.run(x=x)
            out = m.get_output(0)
            records = m.node_records()
    np.testing.assert_array_equal(out, oracle_basic_block(g, x))
    assert all(r.stats["cycle_count"] > r.stats["gemm_counter"] > 0 for r in records if r.device == "vta")
