"""topi breadth on the accelerator (issue 16 item 6): grouped convolution, transposed convolution
and dilation, compiled with ``vta.build`` and run on fsim (``TARGET`` sim) and the cycle model
(``model``), bit-exact with NumPy oracles written in :mod:`.oracle` (loops over kernel taps;
the transposed convolution as a scatter of input pixels).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import make_env
from vta.env import Environment
from vta.errors import ScheduleError
from vta.topi import Conv2DTiling
from vta.topi.conv2d_transpose import conv2d_transpose_packed

from ..fsim_run import build_and_run
from .cases import build_case, build_residual_case

#: (operator, sizes) run by default: small shapes, each feature at least once.
FAST = {
    "conv2d_dilated": ("conv2d", {"ci": 32, "co": 32, "h": 9, "w": 9, "k": 3, "p": 2, "d": (2, 2)}),
    "conv2d_dilated_strided": (
        "conv2d",
        {"ci": 16, "co": 32, "h": 11, "w": 8, "k": 3, "p": (1, 2, 0, 1), "s": (2, 1), "d": (3, 2)},
    ),
    "group_conv2d": ("group_conv2d", {"ci": 64, "co": 64, "h": 8, "w": 8, "k": 3, "p": 1, "g": 2}),
    "group_conv2d_strided": (
        "group_conv2d",
        {"ci": 64, "co": 128, "h": 7, "w": 7, "k": 3, "p": 1, "g": 4, "s": (2, 2)},
    ),
    "group_conv2d_dilated": ("group_conv2d", {"ci": 32, "co": 32, "h": 8, "w": 8, "k": 3, "p": 2, "g": 2, "d": (2, 2)}),
    "conv2d_transpose_s2": ("conv2d_transpose", {"ci": 32, "co": 16, "h": 4, "w": 4, "k": 4, "p": 1, "s": (2, 2)}),
    "conv2d_transpose_opad": (
        "conv2d_transpose",
        {"ci": 16, "co": 32, "h": 3, "w": 5, "k": 3, "p": 1, "s": (2, 2), "op": (1, 1)},
    ),
    "conv2d_transpose_s1": ("conv2d_transpose", {"ci": 16, "co": 16, "h": 5, "w": 5, "k": 3, "p": 1}),
    "conv2d_transpose_asym": (
        "conv2d_transpose",
        {"ci": 16, "co": 16, "h": 4, "w": 3, "k": 3, "p": (0, 2, 1, 0), "s": (3, 2), "op": (2, 1)},
    ),
}

#: Bigger shapes (upstream's benchmark layers, scaled): marked slow.
SLOW = {
    "conv2d_dilated_big": ("conv2d", {"ci": 64, "co": 64, "h": 28, "w": 28, "k": 3, "p": 2, "d": (2, 2)}),
    "group_conv2d_big": ("group_conv2d", {"ci": 128, "co": 128, "h": 28, "w": 28, "k": 3, "p": 1, "g": 4}),
    "group_conv2d_mobilenet": (
        "group_conv2d",
        {"ci": 256, "co": 256, "h": 14, "w": 14, "k": 3, "p": 1, "g": 16, "s": (2, 2)},
    ),
    "dcgan_ct2_scaled": ("conv2d_transpose", {"ci": 128, "co": 64, "h": 8, "w": 8, "k": 4, "p": 1, "s": (2, 2)}),
    "dcgan_ct3_scaled": ("conv2d_transpose", {"ci": 64, "co": 32, "h": 16, "w": 16, "k": 4, "p": 1, "s": (2, 2)}),
    # upstream's integration benchmark workloads
    "mobilenet_D1": ("group_conv2d", {"ci": 32, "co": 32, "h": 112, "w": 112, "k": 3, "p": 1, "g": 2}),
    "mobilenet_D8": ("group_conv2d", {"ci": 512, "co": 512, "h": 14, "w": 14, "k": 3, "p": 1, "g": 32, "s": (2, 2)}),
    "mobilenet_D9": ("group_conv2d", {"ci": 1024, "co": 1024, "h": 7, "w": 7, "k": 3, "p": 1, "g": 64}),
    "dcgan_CT1": (
        "conv2d_transpose",
        {"ci": 1024, "co": 512, "h": 4, "w": 4, "k": 4, "p": 1, "s": (2, 2), "shift": 11},
    ),
    "dcgan_CT3": ("conv2d_transpose", {"ci": 256, "co": 128, "h": 16, "w": 16, "k": 4, "p": 1, "s": (2, 2)}),
}

#: Ragged tiles: spatial tiles that do not divide the output (the last tile computes on zero
#: padding beyond the input and its store is cropped), as (operator, sizes, tiling).
RAGGED = {
    "conv2d_7x7_tile4": ("conv2d", {"ci": 16, "co": 32, "h": 7, "w": 7, "k": 3, "p": 1}, Conv2DTiling(4, 7, 1, 1)),
    "conv2d_7x7_tile3x5": ("conv2d", {"ci": 16, "co": 32, "h": 7, "w": 7, "k": 3, "p": 1}, Conv2DTiling(3, 5, 1, 1)),
    "conv2d_unpadded": ("conv2d", {"ci": 16, "co": 32, "h": 7, "w": 7, "k": 3, "p": 0}, Conv2DTiling(2, 3, 2, 1)),
    "conv2d_strided_threads": (
        "conv2d",
        {"ci": 32, "co": 32, "h": 13, "w": 11, "k": 3, "p": 1, "s": (2, 2)},
        Conv2DTiling(4, 4, 1, 2, 1, 2),
    ),
    "conv2d_dilated_oc_threads": (
        "conv2d",
        {"ci": 32, "co": 32, "h": 10, "w": 10, "k": 3, "p": 2, "d": (2, 2)},
        Conv2DTiling(4, 3, 1, 1, 2, 1),
    ),
    "group_conv2d_9x9": (
        "group_conv2d",
        {"ci": 64, "co": 64, "h": 9, "w": 9, "k": 3, "p": 1, "g": 2},
        Conv2DTiling(4, 4, 1, 1),
    ),
    "conv2d_transpose_13x7": (
        "conv2d_transpose",
        {"ci": 16, "co": 16, "h": 4, "w": 3, "k": 3, "p": (0, 2, 1, 0), "s": (3, 2), "op": (2, 1)},
        Conv2DTiling(6, 4, 1, 1),
    ),
    "conv2d_transpose_s1": (
        "conv2d_transpose",
        {"ci": 16, "co": 16, "h": 5, "w": 5, "k": 3, "p": 1},
        Conv2DTiling(2, 3, 1, 1),
    ),
}

CONFIGS = ("vta_config.json", "batch2.json")


def _retarget(name: str, target: str) -> Environment:
    env = make_env(name)
    return Environment({**env.cfg_dict, "TARGET": target})


def run_case(config: str, target: str, op: str, sizes: dict, tmp_path, seed: int = 0, tiling=None):
    """Build and run one case; return ``(packed output, plain output, expected, statistics)``.
    ``op`` "residual" is :func:`.cases.build_residual_case` (``sizes`` unused)."""
    from . import oracle

    with _retarget(config, target) as env:
        if op == "residual":
            case = build_residual_case(env, tiling)
        else:
            case = build_case(env, op, sizes, seed, tiling)
        outs, stats, _ = build_and_run(case.schedule, case.args, case.inputs, tmp_path)
    packed = outs[case.out_name]
    return packed, oracle.unpack_nchw(packed), case.want, stats[0]


def _check(got, want):
    assert got.shape == want.shape
    # the oracle is not degenerate: the requantized values are spread, not all clipped
    assert ((want > 0) & (want < 127)).mean() > 0.05
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", sorted(FAST))
def test_fsim_bit_exact(config, name, tmp_path):
    op, sizes = FAST[name]
    _, got, want, stats = run_case(config, "sim", op, sizes, tmp_path)
    _check(got, want)
    assert stats["gemm_counter"] > 0


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", sorted(RAGGED))
def test_ragged_tiles_bit_exact(config, name, tmp_path):
    op, sizes, tiling = RAGGED[name]
    packed, got, want, stats = run_case(config, "sim", op, sizes, tmp_path, tiling=tiling)
    _check(got, want)
    # the partial tiles' stores are cropped: every output byte is stored exactly once
    assert stats["out_store_nbytes"] == packed.size * packed.itemsize


@pytest.mark.parametrize("config", CONFIGS)
def test_ragged_tiles_with_a_residual_epilogue(config, tmp_path):
    """The residual (same shape as the output) is loaded per tile into the accumulator; the
    partial tiles' loads are padded with zeros past the tensor's end instead of reading beyond it."""
    packed, got, want, stats = run_case(config, "sim", "residual", {}, tmp_path, tiling=Conv2DTiling(4, 3, 1, 1))
    _check(got, want)
    assert stats["out_store_nbytes"] == packed.size


def test_ragged_tiles_of_a_prime_extent(tmp_path):
    """13 x 13 outputs in 4 x 4 tiles (the divisors of 13 are 1 and 13)."""
    sizes = {"ci": 16, "co": 16, "h": 13, "w": 13, "k": 3, "p": 1}
    _, got, want, stats = run_case("vta_config.json", "sim", "conv2d", sizes, tmp_path, tiling=Conv2DTiling(4, 4, 1, 1))
    _check(got, want)
    # 4 x 4 tiles of 4 x 4 pixels, 9 taps: the overhang is computed (on zeros) but not stored
    assert stats["gemm_counter"] == 16 * 16 * 9
    assert stats["out_store_nbytes"] == 13 * 13 * 16


def test_ragged_tiles_are_checked():
    with make_env():
        with pytest.raises(ScheduleError, match=r"tile_h=8 must lie in \[1, 7\]"):
            build_case(
                make_env(),
                "conv2d",
                {"ci": 16, "co": 16, "h": 7, "w": 7, "k": 3, "p": 1},
                tiling=Conv2DTiling(8, 7, 1, 1),
            )
        with pytest.raises(ScheduleError, match="virtual threads do not divide"):
            build_case(make_env(), "conv2d", {"ci": 16, "co": 16, "h": 7, "w": 7, "k": 3, "p": 1},
                       tiling=Conv2DTiling(3, 7, 1, 1, 1, 2))
        with pytest.raises(ScheduleError, match="multiple of the stride 2"):
            build_case(make_env(), "conv2d_transpose", FAST["conv2d_transpose_s2"][1], tiling=Conv2DTiling(3, 8, 1, 1))


@pytest.mark.parametrize("name", ["conv2d_dilated", "group_conv2d", "conv2d_transpose_s2"])
def test_model_bit_exact(name, tmp_path):
    """The cycle model (TARGET model) runs the same modules, with the same counters as fsim."""
    op, sizes = FAST[name]
    _, got, want, stats = run_case("vta_config.json", "model", op, sizes, tmp_path)
    _check(got, want)
    _, _, _, fstats = run_case("vta_config.json", "sim", op, sizes, tmp_path)
    for key in ("inp_load_nbytes", "wgt_load_nbytes", "out_store_nbytes", "gemm_counter", "alu_counter"):
        assert stats[key] == fstats[key], key
    assert stats["cycle_count"] > 0


@pytest.mark.parametrize("name", ["conv2d_dilated", "group_conv2d_strided", "conv2d_transpose_opad",
                                  "conv2d_strided_threads", "conv2d_transpose_13x7"])
def test_block32_bit_exact(name, tmp_path):
    """A third shipped configuration (BLOCK_IN = BLOCK_OUT = 32), ragged tilings included."""
    op, sizes, tiling = RAGGED[name] if name in RAGGED else (*FAST[name], None)
    sizes = {**sizes, "ci": 2 * sizes["ci"], "co": 2 * sizes["co"]}  # channel blocks of 32
    _, got, want, _ = run_case("block32.json", "sim", op, sizes, tmp_path, tiling=tiling)
    _check(got, want)


def test_conv2d_transpose_skips_inserted_zero_taps(tmp_path):
    """A stride-2 4x4 transposed convolution: each output pixel meets 2 x 2 real taps of 16, and
    only those run on the GEMM core (one uop execution per real tap and channel-block pair)."""
    op, sizes = FAST["conv2d_transpose_s2"]
    _, got, want, stats = run_case("vta_config.json", "sim", op, sizes, tmp_path)
    _check(got, want)
    oh = ow = (4 - 1) * 2 - 2 + 4
    assert stats["gemm_counter"] == oh * ow * 2 * 2 * (32 // 16) * (16 // 16)


def test_group_conv2d_loads_only_its_group(tmp_path):
    """Each output-channel tile reads the input blocks of its own group: the input bytes loaded
    are those of one group per tile, not the whole input."""
    op, sizes = FAST["group_conv2d"]
    from vta.topi import Conv2DTiling

    _, got, want, stats = run_case("vta_config.json", "sim", op, sizes, tmp_path, tiling=Conv2DTiling(8, 8, 1, 1))
    _check(got, want)
    # 4 output blocks, each a 2-block group: 2 steps of one 10 x 10 padded window of 16 bytes
    assert stats["inp_load_nbytes"] == 4 * 2 * 8 * 8 * 16


def test_conv2d_transpose_rejects_bad_arguments():
    from vta import te

    with make_env():
        data = te.placeholder((1, 1, 4, 4, 1, 16), name="data", dtype="int8")
        kernel = te.placeholder((1, 1, 3, 3, 16, 16), name="kernel", dtype="int8")
        with pytest.raises(ValueError, match="output_padding"):
            conv2d_transpose_packed(data, kernel, (2, 2), 1, "int32", (2, 0))
        with pytest.raises(ValueError, match="smaller than the kernel"):
            conv2d_transpose_packed(data, kernel, (2, 2), 3, "int32")


def test_group_conv2d_rejects_split_blocks():
    from vta import te
    from vta.topi.group_conv2d import group_conv2d_packed

    with make_env():
        data = te.placeholder((1, 4, 4, 4, 1, 16), name="data", dtype="int8")
        kernel = te.placeholder((3, 2, 3, 3, 16, 16), name="kernel", dtype="int8")
        with pytest.raises(ValueError, match="groups of whole channel"):
            group_conv2d_packed(data, kernel, 1, 1, 1, 2, "int32")


def test_tiling_overflow_is_named(tmp_path):
    from vta.topi import Conv2DTiling

    op, sizes = SLOW["dcgan_ct3_scaled"]
    with make_env(), pytest.raises(ScheduleError, match="buffer overflows"):
        build_case(make_env(), op, sizes, tiling=Conv2DTiling(32, 32, 2, 4))


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", sorted(SLOW))
def test_fsim_bit_exact_big(config, name, tmp_path):
    op, sizes = SLOW[name]
    _, got, want, _ = run_case(config, "sim", op, sizes, tmp_path)
    _check(got, want)


def test_upstream_style_epilogue_with_a_scalar_stage(tmp_path):
    """Upstream's integration tests build the epilogue from topi broadcasts; a shift by a scalar
    may arrive as a 0-D stage, which the schedule inlines (upstream's ``const_ops``)."""
    from vta import te
    from vta.tir import nodes as tn
    from vta.topi.group_conv2d import group_conv2d_packed, schedule_group_conv2d_packed

    from . import oracle

    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (1, 64, 8, 8)).astype(np.int8)
    w = rng.integers(-128, 128, (64, 32, 3, 3)).astype(np.int8)
    with make_env():
        data = te.placeholder((1, 4, 8, 8, 1, 16), name="data", dtype="int8")
        kernel = te.placeholder((4, 2, 3, 3, 16, 16), name="kernel", dtype="int8")
        conv = group_conv2d_packed(data, kernel, (1, 1), (1, 1, 1, 1), (1, 1), 2, "int32")
        shift = te.compute((), lambda: tn.const(8, "int32"), name="shift_const", tag="elemwise")
        x = te.compute(conv.shape, lambda *i: conv(*i) >> shift(), name="shr", tag="elemwise")
        x = te.compute(conv.shape, lambda *i: te.min(x(*i), tn.const(127, "int32")), name="clipA", tag="elemwise")
        y = te.compute(conv.shape, lambda *i: te.max(x(*i), tn.const(0, "int32")), name="clipB", tag="elemwise")
        res = te.compute(conv.shape, lambda *i: y(*i).astype("int8"), name="res", tag="elemwise")
        s = schedule_group_conv2d_packed([res])
        outs, _, _ = build_and_run(s, [data, kernel, res], {"data": oracle.pack_nchw(a, 1, 16),
                                                            "kernel": oracle.pack_oihw(w, 16, 16)}, tmp_path)
    _check(oracle.unpack_nchw(outs["res"]), oracle.requant(oracle.conv2d(a, w, (1, 1), (1, 1, 1, 1), (1, 1), 2)))


def test_ragged_chooser_tiles_an_extent_with_few_divisors(tmp_path):
    """53 x 53 outputs of 64 channels: the whole extent does not fit the accumulator, so the
    divisor tilings have 1-row (or 1-column) tiles; the ragged chooser takes several rows per
    tile, bit-exact and with less data moved than the divisor tiling."""
    from vta.topi.conv2d import choose_ragged_conv2d_tiling
    from vta.topi.tiling import Conv2DWorkload, choose_conv2d_tiling

    env = make_env()
    wl = Conv2DWorkload(1, 4, 4, 53, 53, 3, 3, (1, 1), (1, 1), 0, 0, 4)
    divisor, ragged = choose_conv2d_tiling(env, wl), choose_ragged_conv2d_tiling(env, wl)
    assert 1 in (divisor.tile_h, divisor.tile_w) and 1 < ragged.tile_h < 53 and 53 % ragged.tile_h
    sizes = {"ci": 64, "co": 64, "h": 53, "w": 53, "k": 3, "p": 1, "shift": 10}
    moved = {}
    for name, t in (("divisor", divisor), ("ragged", ragged)):
        _, got, want, stats = run_case("vta_config.json", "sim", "conv2d", sizes, tmp_path, tiling=t)
        _check(got, want)
        moved[name] = stats["inp_load_nbytes"] + stats["wgt_load_nbytes"]
    assert moved["ragged"] < moved["divisor"] / 2
