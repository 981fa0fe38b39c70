"""The staggered virtual threads in a built convolution: with ``ALU_MOV`` a 1x1 kernel's two
threads run one reduction step apart (the second thread's bias copy comes after the first
thread's first GEMM); a 3x3 kernel keeps lock-step (without the option the build is unchanged:
``python -m vta regress`` on the shipped configurations).
Outputs against the tests' integer oracle on fsim and on the cycle model."""

from __future__ import annotations

import pytest

from vta.env import Environment
from vta.topi import qnn
from vta.topi.tiling import Conv2DTiling

from .conftest import compute_order, config_env, run_checked_conv


def _conv(env: Environment, tmp_path, k: int, tiling: Conv2DTiling, stride: int = 2, seed: int = 0):
    """Build and run a fused convolution (64 -> 32 channels, 14x14 input) on ``env``; check it
    against the oracle; the instructions it executed."""
    with env:
        spec = qnn.QConv2DSpec(1, 64, 32, 14, 14, k, k, (stride, stride), (k // 2,) * 4, 0,
                               qnn.Requant.from_scale(0.0007), 0, (-128, 127))
    return run_checked_conv(env, tmp_path, spec, tiling, seed, f"qconv_{k}_{env.TARGET}")


def _compute_order(insns) -> list[str]:
    """The bias copies (a MOV over more than 16 rows) and accumulating GEMMs, in order."""
    return compute_order(insns, min_rows=17)


#: Two tiles per thread, both thread kinds.
TILINGS = {
    "h_threads": Conv2DTiling(tile_h=2, tile_w=7, tile_co=2, tile_ci=1, h_nthread=2),
    "oc_threads": Conv2DTiling(tile_h=4, tile_w=7, tile_co=1, tile_ci=2, oc_nthread=2),
}


@pytest.mark.parametrize("target", ["sim", "model"])
@pytest.mark.parametrize("tiling", sorted(TILINGS))
def test_1x1_threads_staggered_with_mov(tmp_path, target, tiling):
    order = _compute_order(_conv(config_env("extended.json", target), tmp_path, 1, TILINGS[tiling]))
    assert order[:3] == ["mov", "gemm", "mov"], order[:6]


@pytest.mark.parametrize("tiling", sorted(TILINGS))
def test_3x3_keeps_lock_step(tmp_path, tiling):
    order = _compute_order(_conv(config_env("extended.json", "sim"), tmp_path, 3, TILINGS[tiling]))
    assert order[:2] == ["mov", "mov"], order[:6]
