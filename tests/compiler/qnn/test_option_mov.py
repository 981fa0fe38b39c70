"""The compiler and the hardware option ``ALU_MOV``: a fused convolution or dense layer starts
its accumulator from the bias (one ALU MOV where the GEMM reset was) and drops the bias ADD
(InjectBiasMov); copies and constant fills take one MOV. Outputs against the tests' integer
oracle on ``configs/extended.json`` and on the default core with only ``ALU_MOV``; the stream's
micro-ops counted against the same build without the option; the fall-backs keep the reset."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import make_env
from vta import isa
from vta.env import Environment
from vta.errors import ScheduleError
from vta.testing import Output, run_built
from vta.tir import nodes as n
from vta.topi import qnn
from vta.topi.tiling import Conv2DTiling
from vta.transform.alu import MOV_OP, _opcode
from vta.transform.bias_mov import inject_bias_mov

from . import oracle
from .capture import run_captured
from .conftest import config_env


#: (name, configuration): the option alone on the default core, and with every option.
MOV_CONFIGS = {"mov_only": ("vta_config.json", {"ALU_MOV": True}), "extended": ("extended.json", {})}



def _uops(insns) -> dict:
    """Micro-ops executed, by kind: ``reset`` (GEMM with the reset flag), ``gemm`` (accumulating),
    and per ALU opcode name with ``_t`` (tensor operand) or ``_i`` (immediate)."""
    out: dict = {}
    for i in insns:
        if isinstance(i, isa.GemmInsn):
            key = "reset" if i.reset_reg else "gemm"
        elif isinstance(i, isa.AluInsn):
            key = isa.ALU_NAMES[i.alu_opcode] + ("_i" if i.use_imm else "_t")
        else:
            continue
        out[key] = out.get(key, 0) + (i.uop_end - i.uop_bgn) * i.iter_out * i.iter_in
    return out


def _conv(env: Environment, tmp_path, *, ci=16, co=32, hw=8, k=3, stride=1, z_in=0, z_out=0, clip=(-128, 127),
          scale=0.0023, residual=None, groups=1, fold_width=False, tiling=None, seed=0):
    """Build and run one fused convolution on ``env``; check it against the oracle; its uops."""
    rng = np.random.default_rng(seed)
    pad = (k // 2,) * 4
    with env:
        spec = qnn.QConv2DSpec(1, ci, co, hw, hw, k, k, (stride, stride), pad, z_in, qnn.Requant.from_scale(scale),
                               z_out, clip, residual, fold_width=fold_width, groups=groups)
        x = rng.integers(-128, 128, size=(1, ci, hw, hw)).astype(np.int8)
        wt = rng.integers(-128, 128, size=(co, ci // groups, k, k)).astype(np.int8)
        bias = rng.integers(-5000, 5000, size=co).astype(np.int32)
        r = rng.integers(-128, 128, size=spec.out_shape).astype(np.int8) if residual else None
        mod, layout = qnn.build_qconv2d(spec, "qconv", tiling=tiling)
        got, insns = run_captured(mod, layout, layout.pack_args(data=x, weight=wt, bias=bias, residual=r), tmp_path)
    gi, go = ci // groups, co // groups
    acc = np.concatenate([oracle.conv_acc(x[:, g * gi:(g + 1) * gi], wt[g * go:(g + 1) * go], bias[g * go:(g + 1) * go],
                                          (stride, stride), pad, z_in) for g in range(groups)], axis=1)
    want = oracle.finish(oracle.requant(acc, spec.requant), z_out, clip, r, residual)
    assert len(np.unique(want)) >= 8, "weak oracle"
    np.testing.assert_array_equal(got, want)
    return _uops(insns)


def _dense(env: Environment, tmp_path, form: str, seed=3):
    """Build and run one fused dense layer (``form``: ``plain``, ``per_channel_residual``,
    ``intermediate_residual``) on ``env``; check it against the oracle; its uops."""
    rng = np.random.default_rng(seed)
    nb, fi, fo = 3, 40, 40
    rq = qnn.Requant.from_scale(rng.uniform(1e-3, 4e-3, size=fo) if form != "plain" else 0.0021)
    res = qnn.ResidualSpec(-3, qnn.Requant.from_scale(0.45)) if form != "plain" else None
    inter = None
    if form.startswith("intermediate"):
        inter = qnn.IntermediateSpec(zero_point=3, requant=qnn.Requant.from_scale(0.9))
    z_out, clip = (-128, (-128, 127)) if inter else (5, (0, 127))
    with env:
        spec = qnn.QDenseSpec(nb, fi, fo, 0, rq, z_out, clip, res, inter)
        x = rng.integers(-128, 128, size=(nb, fi)).astype(np.int8)
        w = rng.integers(-128, 128, size=(fo, fi)).astype(np.int8)
        bias = rng.integers(-3000, 3000, size=fo).astype(np.int32)
        r = rng.integers(-128, 128, size=(nb, fo)).astype(np.int8) if res else None
        mod, layout = qnn.build_qdense(spec, "qdense")
        got, insns = run_captured(mod, layout, layout.pack_args(data=x, weight=w, bias=bias, residual=r), tmp_path)
    acc = x.astype(np.int64) @ w.astype(np.int64).T + bias
    if inter is None:
        want = oracle.finish(oracle.requant(acc, rq), z_out, clip, r, res)
    else:
        own = np.clip(oracle.requant(acc, rq) + 3, -128, 127)
        operands = [own - 3, r.astype(np.int64) - res.zero_point]
        want = oracle.rounded_sum(operands, [inter.requant, res.requant], z_out, clip)
    assert len(np.unique(want)) >= 8, "weak oracle"
    np.testing.assert_array_equal(got, want)
    return _uops(insns)


def _check_mov(with_mov: dict, without: dict, map_loaded: bool = False) -> None:
    """The reset pass became MOV rows and the bias ADD is gone. Without the option a copy is
    MUL 0 then a tensor ADD and a constant fill MUL 0 then an immediate ADD; with it each is one
    MOV. So: no reset left; the tensor MOVs are the reset rows (none when the bias is a full map
    loaded straight into the accumulator: ``map_loaded``) plus the copies; the bias ADD is gone
    and every other tensor ADD of the build without the option is kept or became a copy's MOV;
    each MUL 0 dropped is a copy's or a fill's; the same accumulating GEMM; fewer micro-ops."""
    assert without.get("reset", 0) > 0 and "MOV_t" not in without and "MOV_i" not in without
    assert "reset" not in with_mov
    copies = with_mov.get("MOV_t", 0) - (0 if map_loaded else without["reset"])
    assert copies >= 0
    assert with_mov.get("ADD_t", 0) + copies == without["ADD_t"] - without["reset"]
    assert copies + with_mov.get("MOV_i", 0) == without.get("MUL_i", 0) - with_mov.get("MUL_i", 0)
    assert with_mov["gemm"] == without["gemm"]
    assert sum(with_mov.values()) < sum(without.values())


CONV_CASES = {
    "3x3_bias_vector": {},
    # the bias is a full map: SRAM allocation puts the accumulator tile onto it (the map dies at
    # the MOV), so the map's LOAD initialises the tile and the MOV is the identity, dropped
    "3x3_border_map": {"z_in": 5},
    "1x1_stride2": {"k": 1, "stride": 2, "ci": 32},
    # several tiles, reduction steps, virtual threads; the tiling pinned (what the chooser takes
    # without ALU_MOV: with it and COMPUTE_OVERLAP it would rotate the threads, one step per tile)
    "multi_tile": {"ci": 64, "co": 64, "hw": 14, "tiling": Conv2DTiling(14, 14, 2, 1, 2, 1)},
    "output_zero_point": {"z_out": -100, "clip": (-128, 127), "scale": 0.004},
    "grouped": {"ci": 32, "groups": 2},
    # ragged channel tiles (3 blocks in tiles of 2): the last tile's bias rows past the last
    # channel are not loaded, the MOV copies whatever is there into rows never stored
    "ragged_channels": {"ci": 48, "co": 48, "tiling": Conv2DTiling(4, 8, 2, 2, 1, 2)},
    "7x7_folded_width": {"ci": 3, "k": 7, "stride": 2, "hw": 16, "fold_width": True, "scale": 0.0005},
}


@pytest.mark.parametrize("config", sorted(MOV_CONFIGS))
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv_bias_mov_same_outputs_fewer_uops(tmp_path, config, case):
    name, options = MOV_CONFIGS[config]
    with_mov = _conv(config_env(name, **options), tmp_path, **CONV_CASES[case])
    without = _conv(config_env(name, **{**options, "ALU_MOV": False}), tmp_path, **CONV_CASES[case])
    _check_mov(with_mov, without, map_loaded=case == "3x3_border_map")


def test_conv_residual_per_channel_copies_become_movs(tmp_path):
    """Per-channel multipliers (the split product copies a tile) and a residual: the copies are
    MOVs too, outputs unchanged."""
    res = qnn.ResidualSpec(-3, qnn.Requant.from_scale(0.7))
    env = config_env("extended.json")
    case = {"residual": res, "scale": np.linspace(0.001, 0.004, 32), "z_in": -7, "seed": 5}
    with_mov = _conv(env, tmp_path, **case)
    without = _conv(config_env("extended.json", ALU_MOV=False), tmp_path, **case)
    _check_mov(with_mov, without, map_loaded=True)  # an input zero point: a bias map
    assert with_mov["MOV_t"] > 0


@pytest.mark.parametrize("config", sorted(MOV_CONFIGS))
@pytest.mark.parametrize("form", ["plain", "per_channel_residual", "intermediate_residual"])
def test_dense_bias_mov(tmp_path, config, form):
    name, options = MOV_CONFIGS[config]
    with_mov = _dense(config_env(name, **options), tmp_path, form)
    without = _dense(config_env(name, **{**options, "ALU_MOV": False}), tmp_path, form)
    _check_mov(with_mov, without)


def test_without_the_option_no_mov(tmp_path):
    """The default core and extended.json without ALU_MOV: the reset and the bias ADD stay."""
    for env in (make_env(), config_env("extended.json", ALU_MOV=False)):
        uops = _conv(env, tmp_path)
        assert uops["reset"] > 0 and "MOV_t" not in uops and "MOV_i" not in uops


def test_fallback_epilogue_shifting_before_the_bias(tmp_path):
    """``vta.topi.requantize`` shifts before adding the bias: the first ALU stage after the
    reduction is no bias ADD, so the reset stays (the bias ADD too), outputs as NumPy's."""
    from vta import build
    from vta.te import placeholder
    from vta.topi import conv2d_packed, requantize, schedule_conv2d_packed

    env = config_env("vta_config.json", ALU_MOV=True)
    rng = np.random.default_rng(2)
    with env:
        data = placeholder((1, 1, 8, 8, 1, 16), name="data", dtype="int8")
        kernel = placeholder((1, 1, 3, 3, 16, 16), name="kernel", dtype="int8")
        bias = placeholder((1, 1, 1, 1, 1, 16), name="bias", dtype="int32")
        out = requantize(conv2d_packed(data, kernel, 1, 1), bias, shift=8)
        mod = build(schedule_conv2d_packed(out), [data, kernel, bias, out], "ext_dev", name="conv")
        x = rng.integers(-128, 128, size=(1, 1, 8, 8, 1, 16)).astype(np.int8)
        w = rng.integers(-128, 128, size=(1, 1, 3, 3, 16, 16)).astype(np.int8)
        b = rng.integers(-20, 20, size=(1, 1, 1, 1, 1, 16)).astype(np.int32)
        run = run_built(mod, [x, w, b, Output.like(np.zeros((1, 1, 8, 8, 1, 16), np.int8))], tmp_path, name="conv",
                        capture=True)
    uops, got = _uops(run.instructions), run.outputs[0]
    xp = np.pad(x[0, 0, :, :, 0, :].astype(np.int64), ((1, 1), (1, 1), (0, 0)))
    acc = np.zeros((8, 8, 16), np.int64)
    for di in range(3):
        for dj in range(3):
            acc += xp[di:di + 8, dj:dj + 8, :] @ w[0, 0, di, dj].astype(np.int64).T
    want = np.clip((acc >> 8) + b[0, 0, 0, 0], 0, 127).astype(np.int8)
    assert len(np.unique(want)) >= 8, "weak oracle"
    np.testing.assert_array_equal(got[0, 0, :, :, 0, :], want)
    assert uops["reset"] == 64 and uops["ADD_t"] == 64 and "MOV_t" not in uops


def test_pass_is_identity_without_the_option():
    func = n.PrimFunc((), n.Evaluate(n.IntImm(0)))
    for env in (make_env(), config_env("extended.json", ALU_MOV=False)):
        assert inject_bias_mov(env)(func) is func


def test_lowering_refuses_mov_without_the_option():
    x = n.Var("x", "int32")
    call = n.Call("int32", MOV_OP, (x,))
    assert _opcode(config_env("vta_config.json", ALU_MOV=True), call, "stage")[0] == "mov"
    with pytest.raises(ScheduleError, match="ALU_MOV"):
        _opcode(make_env(), call, "stage")
