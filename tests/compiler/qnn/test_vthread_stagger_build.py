"""The staggered virtual threads in a built convolution: with ``ALU_MOV`` a 1x1 kernel's two
threads run one reduction step apart (the second thread's bias copy comes after the first
thread's first GEMM); a 3x3 kernel keeps lock-step (without the option the build is unchanged:
``python -m vta regress`` on the shipped configurations).
Outputs against the tests' integer oracle on fsim and on the cycle model."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import CONFIG_DIR
from vta import isa
from vta.env import Environment, load_config
from vta.topi import qnn
from vta.topi.tiling import Conv2DTiling

from . import oracle
from .capture import run_captured


def _env(name: str, target: str, **options) -> Environment:
    cfg = load_config(CONFIG_DIR / name)
    cfg.update(options, TARGET=target)
    return Environment(cfg)


def _conv(env: Environment, tmp_path, k: int, tiling: Conv2DTiling, stride: int = 2, seed: int = 0):
    """Build and run a fused convolution (64 -> 32 channels, 14x14 input) on ``env``; check it
    against the oracle; the compute unit's instructions."""
    rng = np.random.default_rng(seed)
    ci, co, hw = 64, 32, 14
    pad = (k // 2,) * 4
    x = rng.integers(-128, 128, size=(1, ci, hw, hw)).astype(np.int8)
    wt = rng.integers(-128, 128, size=(co, ci, k, k)).astype(np.int8)
    bias = rng.integers(-5000, 5000, size=co).astype(np.int32)
    with env:
        spec = qnn.QConv2DSpec(1, ci, co, hw, hw, k, k, (stride, stride), pad, 0, qnn.Requant.from_scale(0.0007),
                               0, (-128, 127))
        mod, layout = qnn.build_qconv2d(spec, "qconv", tiling=tiling)
        got, insns = run_captured(mod, layout, layout.pack_args(data=x, weight=wt, bias=bias), tmp_path,
                                  f"qconv_{k}_{env.TARGET}")
    want = oracle.finish(oracle.requant(oracle.conv_acc(x, wt, bias, (stride, stride), pad, 0), spec.requant),
                         0, (-128, 127), None, None)
    assert len(np.unique(want)) >= 8, "weak oracle"
    np.testing.assert_array_equal(got, want)
    return insns


def _compute_order(insns) -> list[str]:
    """The compute unit's bias copies (a MOV over many rows) and accumulating GEMMs, in order."""
    out = []
    for i in insns:
        if isinstance(i, isa.AluInsn) and i.alu_opcode == isa.ALU_MOV and i.iter_out * i.iter_in > 16:
            out.append("mov")
        elif isinstance(i, isa.GemmInsn) and not i.reset_reg:
            out.append("gemm")
    return out


#: Two tiles per thread, both thread kinds.
TILINGS = {
    "h_threads": Conv2DTiling(tile_h=2, tile_w=7, tile_co=2, tile_ci=1, h_nthread=2),
    "oc_threads": Conv2DTiling(tile_h=4, tile_w=7, tile_co=1, tile_ci=2, oc_nthread=2),
}


@pytest.mark.parametrize("target", ["sim", "model"])
@pytest.mark.parametrize("tiling", sorted(TILINGS))
def test_1x1_threads_staggered_with_mov(tmp_path, target, tiling):
    order = _compute_order(_conv(_env("extended.json", target), tmp_path, 1, TILINGS[tiling]))
    assert order[:3] == ["mov", "gemm", "mov"], order[:6]


@pytest.mark.parametrize("tiling", sorted(TILINGS))
def test_3x3_keeps_lock_step(tmp_path, tiling):
    order = _compute_order(_conv(_env("extended.json", "sim"), tmp_path, 3, TILINGS[tiling]))
    assert order[:2] == ["mov", "mov"], order[:6]
