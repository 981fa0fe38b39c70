"""The compiler and the hardware option ``ALU_REQUANT``: on ``configs/extended.json`` a per-tensor
``fixed`` requantisation clipped right after becomes one ALU REQ per output row (fewer ALU
micro-ops than the default core's multi-op form, same outputs as the tests' integer oracle);
the forms REQ cannot express fall back; without the option the lowering refuses REQ."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import CONFIG_DIR, make_env
from vta.env import OPTION_KEYS, Environment, load_config
from vta.errors import ScheduleError
from vta.tir import nodes as n
from vta.topi import qnn
from vta.topi.qnn_build import REQUANT_OP
from vta.transform.alu import _opcode

from . import oracle
from .conftest import run_op


def _req_only() -> Environment:
    """``extended.json`` with only this option (the others change the ALU program too)."""
    cfg = load_config(CONFIG_DIR / "extended.json")
    cfg.update({key: key == "ALU_REQUANT" for key in OPTION_KEYS})
    return Environment(cfg)


def _conv_alu(name, tmp_path, *, k=3, stride=1, z_out=0, clip=(-128, 127), per_channel=False, seed=0):
    """Build and run one fused convolution on configuration ``name`` (a shipped file or an
    Environment); check it against the oracle; return the ALU micro-ops it took."""
    rng = np.random.default_rng(seed)
    pad = (k // 2,) * 4
    scale = rng.uniform(0.001, 0.004, 32) if per_channel else 0.0023
    with make_env(name) if isinstance(name, str) else name:
        spec = qnn.QConv2DSpec(1, 16, 32, 8, 8, k, k, (stride, stride), pad, 0, qnn.Requant.from_scale(scale),
                               z_out, clip, None)
        x = rng.integers(-128, 128, size=(1, 16, 8, 8)).astype(np.int8)
        wt = rng.integers(-128, 128, size=(32, 16, k, k)).astype(np.int8)
        bias = rng.integers(-5000, 5000, size=32).astype(np.int32)
        mod, layout = qnn.build_qconv2d(spec, "qconv")
        out, stats = run_op(mod, layout, layout.pack_args(data=x, weight=wt, bias=bias), tmp_path)
        got = layout.unpack(out)
    acc = oracle.conv_acc(x, wt, bias, (stride, stride), pad, 0)
    want = oracle.finish(oracle.requant(acc, spec.requant), z_out, clip, None, None)
    np.testing.assert_array_equal(got, want)
    return stats["alu_counter"]


@pytest.mark.parametrize("k,stride,clip", [(3, 1, (-128, 127)), (1, 2, (-128, 127)), (3, 1, (0, 127))])
def test_req_takes_fewer_alu_uops_with_the_same_outputs(tmp_path, k, stride, clip):
    base = _conv_alu("vta_config.json", tmp_path, k=k, stride=stride, clip=clip)
    ext = _conv_alu("extended.json", tmp_path, k=k, stride=stride, clip=clip)
    assert ext < base


@pytest.mark.parametrize("case", [{"z_out": 7}, {"per_channel": True}])
def test_forms_req_cannot_express_fall_back(tmp_path, case):
    """A zero point after the requantisation, per-channel multipliers: the multi-op form, as on
    the default core."""
    assert _conv_alu(_req_only(), tmp_path, **case) == _conv_alu("vta_config.json", tmp_path, **case)


def test_lowering_refuses_req_without_the_option():
    x = n.Var("x", "int32")
    call = n.Call("int32", REQUANT_OP, (x, x))
    assert _opcode(make_env("extended.json"), call, "stage")[0] == 5
    with pytest.raises(ScheduleError, match="ALU_REQUANT"):
        _opcode(make_env(), call, "stage")
