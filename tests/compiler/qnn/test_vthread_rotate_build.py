"""Rotated virtual threads in a built convolution (``vta.tir.transform.vthread_rotate``):
with ``ALU_MOV`` and ``COMPUTE_OVERLAP`` a 1x1 (or 3x3) kernel whose whole reduction is one step and
whose threads each own one output-channel tile loads its weights once (shared by threads over the
rows, per thread over the output channels), and the threads' tiles follow one another (bias copy,
GEMM, bias copy of the next thread, ...) instead of lock-step. Outputs against the tests'
integer oracle on fsim and on the cycle model, with and without the options."""

from __future__ import annotations

import pytest

from vta import isa
from vta.env import Environment
from vta.errors import ScheduleError
from vta.topi import qnn
from vta.topi.qnn_build import qconv2d_workload
from vta.topi.tiling import Conv2DTiling, choose_conv2d_tiling, rotates

from .conftest import compute_order, config_env, run_checked_conv

CI, CO, HW, STRIDE = 64, 64, 16, 2


def _spec(env: Environment, k: int = 1) -> qnn.QConv2DSpec:
    """The 1x1 stride-2 convolution, or (``k`` 3) a padded 3x3 stride-1 one of the same output
    size."""
    if k == 1:
        return qnn.QConv2DSpec(env.BATCH, CI, CO, HW, HW, 1, 1, (STRIDE, STRIDE), (0, 0, 0, 0), 0,
                               qnn.Requant.from_scale(0.0007), 0, (-128, 127))
    hw = HW // STRIDE
    return qnn.QConv2DSpec(env.BATCH, CI, CO, hw, hw, k, k, (1, 1), (k // 2,) * 4, 0,
                           qnn.Requant.from_scale(0.0002), 0, (-128, 127))


def _conv(env: Environment, tmp_path, tiling: Conv2DTiling | None, seed: int = 0, k: int = 1):
    """Build and run the fused convolution (:func:`_spec`) on ``env``; check it against the
    oracle; its instructions."""
    with env:
        spec = _spec(env, k)
    return run_checked_conv(env, tmp_path, spec, tiling, seed)


def _weight_loads(insns) -> int:
    return sum(isinstance(i, isa.MemInsn) and i.opcode == isa.OPCODE_LOAD and i.memory_type == isa.MEM_WGT
               and i.x_size > 0 for i in insns)


def _compute_order(insns) -> list[str]:
    """The bias copies (a MOV over at least 16 rows) and accumulating GEMMs, in order."""
    return compute_order(insns, min_rows=16)


#: Output 8x8 pixels x 4 channel blocks, 4 input blocks: threads over the rows (weights shared)
#: or over the output channels (weights per thread); two to four tiles per thread.
ROTATED = {
    "h4_two_tiles": Conv2DTiling(tile_h=2, tile_w=4, tile_co=4, tile_ci=4, h_nthread=4),
    "h4_four_tiles": Conv2DTiling(tile_h=1, tile_w=4, tile_co=4, tile_ci=4, h_nthread=4),
    "h2_two_tiles": Conv2DTiling(tile_h=2, tile_w=8, tile_co=4, tile_ci=4, h_nthread=2),
    "h2_four_tiles": Conv2DTiling(tile_h=2, tile_w=4, tile_co=4, tile_ci=4, h_nthread=2),
    "oc4_four_tiles": Conv2DTiling(tile_h=4, tile_w=4, tile_co=1, tile_ci=4, oc_nthread=4),
    "oc2_two_tiles": Conv2DTiling(tile_h=4, tile_w=8, tile_co=2, tile_ci=4, oc_nthread=2),
}


@pytest.mark.parametrize("target", ["sim", "model"])
@pytest.mark.parametrize("name", sorted(ROTATED))
def test_rotated_threads_with_options(tmp_path, target, name):
    t = ROTATED[name]
    env = config_env("extended.json", target)
    with env:
        assert rotates(env, qconv2d_workload(_spec(env), env), t)
    insns = _conv(env, tmp_path, t)
    # the weights once: one load shared by the row threads, one per output-channel thread
    assert _weight_loads(insns) == (1 if t.oc_nthread == 1 else t.threads)
    order = _compute_order(insns)
    assert order[:4] == ["mov", "gemm", "mov", "gemm"], order[:8]
    assert order.count("gemm") == order.count("mov") == 64 // (t.tile_h * t.tile_w) * 4 // t.tile_co


@pytest.mark.parametrize("config", ["extended.json", "vta_config.json"])
@pytest.mark.parametrize("name", ["h4_two_tiles", "oc2_two_tiles"])
def test_3x3_kernel(tmp_path, config, name):
    """A padded 3x3 kernel rotates too (its weights loaded once) with the options; without them
    the two-thread tiling builds as before and the four-thread one is refused."""
    t = ROTATED[name]
    env = config_env(config, "sim")
    with env:
        assert rotates(env, qconv2d_workload(_spec(env, 3), env), t) is (config == "extended.json")
    if config != "extended.json" and t.threads > 2:
        with env, pytest.raises(ScheduleError, match="must be 1 or 2"):
            qnn.build_qconv2d(_spec(env, 3), "qconv", tiling=t)
        return
    insns = _conv(env, tmp_path, t, k=3)
    tiles = 64 // (t.tile_h * t.tile_w) * 4 // t.tile_co
    assert _weight_loads(insns) == ((1 if t.oc_nthread == 1 else t.threads) if config == "extended.json" else tiles)


@pytest.mark.parametrize("name", ["h2_four_tiles", "oc2_two_tiles"])
def test_same_tiling_without_options_is_not_rotated(tmp_path, name):
    """The default configuration builds the same two-thread tilings as before: weights loaded per
    tile, lock-step (its instruction streams are pinned by ``python -m vta regress``)."""
    t = ROTATED[name]
    env = config_env("vta_config.json", "sim")
    with env:
        assert not rotates(env, qconv2d_workload(_spec(env), env), t)
    insns = _conv(env, tmp_path, t)
    assert _weight_loads(insns) == 64 // (t.tile_h * t.tile_w) * 4 // t.tile_co


def test_one_tile_per_thread_is_not_rotated(tmp_path):
    """With one tile per thread nothing overlaps: the schedule keeps the staggered threads."""
    t = Conv2DTiling(tile_h=4, tile_w=8, tile_co=4, tile_ci=4, h_nthread=2)
    env = config_env("extended.json", "sim")
    with env:
        assert not rotates(env, qconv2d_workload(_spec(env), env), t)
    assert _weight_loads(_conv(env, tmp_path, t)) == 2


def test_four_threads_refused_without_options():
    env = config_env("vta_config.json", "sim")
    with env, pytest.raises(ScheduleError, match="must be 1 or 2"):
        qnn.build_qconv2d(_spec(env), "qconv", tiling=ROTATED["h4_two_tiles"])


@pytest.mark.parametrize("shape, expect", [((64, 128, 56), True), ((256, 512, 14), False)])
def test_chooser_rotates_only_with_options(shape, expect):
    """ResNet-18's 1x1 projections C4 (rotated) and C10 (its 128 KiB of weights would hold the
    first GEMM back: staggered) on configs/extended.json; never on the default configuration."""
    ci, co, hw = shape
    for name in ("extended.json", "vta_config.json"):
        env = config_env(name, "sim")
        with env:
            spec = qnn.QConv2DSpec(env.BATCH, ci, co, hw, hw, 1, 1, (2, 2), (0, 0, 0, 0), 0,
                                   qnn.Requant.from_scale(0.0007), 0, (-128, 127))
            wl = qconv2d_workload(spec, env)
            assert rotates(env, wl, choose_conv2d_tiling(env, wl)) is (expect and name == "extended.json"), name


def test_fallback_lock_step_is_correct(tmp_path, monkeypatch):
    """A body the rotation does not handle is expanded lock-step, the shared weights' token
    popped once before the threads (each thread popping it would deadlock)."""
    from vta.tir.transform import inject_virtual_thread as ivt

    monkeypatch.setattr(ivt, "rotate_threads", lambda *args: None)
    insns = _conv(config_env("extended.json", "sim"), tmp_path, ROTATED["h4_two_tiles"])
    assert _compute_order(insns)[:4] == ["mov", "mov", "mov", "mov"]


def test_epilogue_shifting_first_is_not_rotated():
    """``vta.topi.requantize`` shifts before it adds the bias: the tile starts from a GEMM reset,
    which the rotated order does not overlap; the workload says so and the chooser keeps the
    staggered threads."""
    from dataclasses import replace

    env = config_env("extended.json", "sim")
    with env:
        wl = qconv2d_workload(_spec(env), env)
        assert wl.bias_first
        t = ROTATED["h4_two_tiles"]
        assert rotates(env, wl, t) and not rotates(env, replace(wl, bias_first=False), t)
        big = qconv2d_workload(qnn.QConv2DSpec(env.BATCH, 64, 128, 56, 56, 1, 1, (2, 2), (0, 0, 0, 0), 0,
                                               qnn.Requant.from_scale(0.0007), 0, (-128, 127)), env)
        assert not rotates(env, big, choose_conv2d_tiling(env, replace(big, bias_first=False)))
