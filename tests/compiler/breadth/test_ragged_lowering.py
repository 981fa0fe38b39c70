"""How ragged spatial tiles lower: the last tile's input window is a padded load whose padding
depends on the tile, its store is cropped to the rows and columns inside the output, and the
on-chip stages (GEMM, ALU) compute the whole tile without guards."""

from __future__ import annotations

import pytest

from tests.conftest import make_env
from vta.build import lower
from vta.errors import ScheduleError
from vta.te.bound import infer_bound
from vta.tir.printer import astext
from vta.topi import Conv2DTiling

from .cases import build_case


def _lowered(sizes, tiling):
    with make_env() as env:
        case = build_case(env, "conv2d", sizes, tiling=tiling)
        return case, astext(lower(case.schedule, case.args))


def test_rows_cropped_store_and_padded_window():
    _, text = _lowered({"ci": 16, "co": 32, "h": 7, "w": 7, "k": 3, "p": 1}, Conv2DTiling(4, 7, 1, 1))
    store = [line for line in text.splitlines() if "VTAStoreBuffer2D" in line]
    assert len(store) == 1 and "min(4, i2.outer*(-4) + 7)" in store[0]  # y_size: 4 rows, then 3
    load = [line for line in text.splitlines() if "VTALoadBuffer2D" in line and "data" in line]
    assert len(load) == 1 and "max(i2.outer*4 - 2, 0)" in load[0]        # zero rows past the input
    assert "likely" not in text                                          # no guard left


def test_cropped_columns_store_row_by_row_only_in_the_last_column():
    _, text = _lowered({"ci": 16, "co": 16, "h": 13, "w": 13, "k": 3, "p": 1}, Conv2DTiling(4, 4, 1, 1))
    stores = [line for line in text.splitlines() if "VTAStoreBuffer2D" in line]
    assert len(stores) == 2  # whole-row 2-D transfer, or one transfer per row of a cropped tile
    assert "if (min(4, i3.outer*(-4) + 13) == 4)" in text


def test_on_chip_stages_carry_no_guards_but_dram_readers_do():
    with make_env() as env:
        case = build_case(
            env, "conv2d", {"ci": 16, "co": 32, "h": 7, "w": 7, "k": 3, "p": 0}, tiling=Conv2DTiling(2, 5, 1, 1)
        )
        bounds, _ = infer_bound(case.schedule)
    by_name = {stage.op.name: b for stage, b in bounds.items()}
    for name in ("res_conv", "res_shr", "res_min", "res_max", "kernel.local.wgt_buffer"):
        assert by_name[name].conditions == [], name      # on chip, reading on-chip tensors only
    assert by_name["data.local.inp_buffer"].conditions   # reads DRAM: guarded (a padded load)
    assert by_name["res"].conditions                     # the output's split: a cropped store


def test_ragged_output_channel_tiles_only_where_supported():
    # conv2d takes a ragged tile_co (tests/compiler/breadth/test_ragged_channels.py); the
    # grouped conv2d still needs it to divide the output blocks of a group
    with make_env() as env:
        build_case(env, "conv2d", {"ci": 16, "co": 64, "h": 7, "w": 7, "k": 3, "p": 1}, tiling=Conv2DTiling(7, 7, 3, 1))
    with make_env() as env, pytest.raises(ScheduleError, match="tile_co=3 does not divide"):
        build_case(env, "group_conv2d", {"ci": 32, "co": 128, "h": 4, "w": 4, "k": 3, "p": 1, "g": 2},
                   tiling=Conv2DTiling(4, 4, 3, 1))
