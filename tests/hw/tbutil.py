"""Helpers shared by the cocotb testbenches: configuration, lane packing, clock and reset."""

from __future__ import annotations

import os

import numpy as np

from tests.conftest import make_env


def hw_env():
    """The configuration the model was built for (``VTA_HW_CONFIG``, set by the runner)."""
    return make_env(os.environ.get("VTA_HW_CONFIG", "vta_config.json"))


def pack(values, width: int) -> int:
    """Pack integers (lane 0 in the low bits) into one unsigned integer of ``width``-bit lanes."""
    out = 0
    mask = (1 << width) - 1
    for i, v in enumerate(np.asarray(values).reshape(-1).tolist()):
        out |= (int(v) & mask) << (i * width)
    return out


def unpack(word: int, width: int, count: int, signed: bool = True) -> np.ndarray:
    """Split an integer into ``count`` lanes of ``width`` bits (two's complement if ``signed``)."""
    mask = (1 << width) - 1
    lanes = [(word >> (i * width)) & mask for i in range(count)]
    if signed:
        lanes = [v - (1 << width) if v >> (width - 1) else v for v in lanes]
    return np.array(lanes, dtype=np.int64)


def wrap(values, width: int) -> np.ndarray:
    """Two's-complement wrap of integers to ``width`` bits."""
    v = np.asarray(values, dtype=object)
    m = 1 << width
    return np.array([((int(x) + m // 2) % m) - m // 2 for x in v.reshape(-1)], dtype=np.int64).reshape(v.shape)


async def start_clock_and_reset(dut, cycles: int = 3) -> None:
    """Start a 10 ns clock on ``clk_i`` and hold ``rst_ni`` low for ``cycles`` cycles."""
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import RisingEdge

    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    dut.rst_ni.value = 0
    for _ in range(cycles):
        await RisingEdge(dut.clk_i)
    dut.rst_ni.value = 1
    await RisingEdge(dut.clk_i)
