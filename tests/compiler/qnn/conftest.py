"""Fixtures and helpers of the quantized-operator tests: the configurations, running a compiled
operator through the tutorial flow (save, ``rpc.LocalSession`` upload, load, call on ``ext_dev``),
and the checked convolution run of the virtual-thread order tests."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import CONFIG_DIR, make_env
from vta import isa
from vta.env import Environment, load_config
from vta.testing import Output, run_built
from vta.topi import qnn

from . import oracle
from .capture import run_captured

#: The configurations every operator runs on: the default and BATCH=2.
CONFIGS = ("vta_config.json", "batch2.json")


@pytest.fixture(params=CONFIGS)
def qenv(request):
    """Each configuration of :data:`CONFIGS` in turn, made current for the test."""
    with make_env(request.param) as e:
        yield e


def run_op(mod, layout, packed_inputs: list, tmp_path, remote=None):
    """Call a compiled operator once on the current target (:func:`vta.testing.run_built`).

    ``packed_inputs`` are the arguments but ``out`` in call order (``layout.pack_args``).
    Returns ``(packed output, statistics of the call)``.
    """
    run = run_built(mod, [*packed_inputs, Output.like(layout.empty_output())], tmp_path, remote=remote)
    return run.outputs[0], run.stats[0]


def config_env(name: str, target: str | None = None, **options) -> Environment:
    """The shipped configuration ``name`` with ``options`` set (e.g. ``ALU_MOV=False``) and, when
    given, its ``TARGET``."""
    cfg = load_config(CONFIG_DIR / name)
    cfg.update(options)
    if target is not None:
        cfg["TARGET"] = target
    return Environment(cfg)


def run_checked_conv(env: Environment, tmp_path, spec: qnn.QConv2DSpec, tiling=None, seed: int = 0,
                     name: str = "op") -> list:
    """Build the fused convolution ``spec`` (no residual) on ``env`` with ``tiling`` (default the
    chosen one), run it once on seeded int8 data and weights and an int32 bias, check its output
    against the tests' integer oracle; the instructions it executed."""
    rng = np.random.default_rng(seed)
    ci, co = spec.in_channels, spec.out_channels
    x = rng.integers(-128, 128, size=(spec.batch, ci, spec.height, spec.width)).astype(np.int8)
    wt = rng.integers(-128, 128, size=(co, ci, spec.kernel_h, spec.kernel_w)).astype(np.int8)
    bias = rng.integers(-5000, 5000, size=co).astype(np.int32)
    with env:
        mod, layout = qnn.build_qconv2d(spec, "qconv", **({} if tiling is None else {"tiling": tiling}))
        got, insns = run_captured(mod, layout, layout.pack_args(data=x, weight=wt, bias=bias), tmp_path, name)
    acc = oracle.conv_acc(x, wt, bias, spec.strides, spec.padding, spec.input_zero_point)
    want = oracle.finish(oracle.requant(acc, spec.requant), spec.output_zero_point, spec.clip, None, None)
    assert len(np.unique(want)) >= 8, "weak oracle"
    np.testing.assert_array_equal(got, want)
    return insns


def compute_order(insns, min_rows: int) -> list[str]:
    """The compute unit's bias copies (a MOV over at least ``min_rows`` rows) and accumulating
    GEMMs, in order."""
    out = []
    for i in insns:
        if isinstance(i, isa.AluInsn) and i.alu_opcode == isa.ALU_MOV and i.iter_out * i.iter_in >= min_rows:
            out.append("mov")
        elif isinstance(i, isa.GemmInsn) and not i.reset_reg:
            out.append("gemm")
    return out
