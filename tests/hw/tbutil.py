"""Helpers shared by the cocotb testbenches: configuration, lane packing, clock and reset."""

from __future__ import annotations

import os

import numpy as np

from tests.conftest import make_env


def u(handle) -> int:
    """Unsigned value of a signal of any width (a one-bit signal is a ``Logic``, not an array)."""
    v = handle.value
    return v.to_unsigned() if hasattr(v, "to_unsigned") else int(v)


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


class ReadServer:
    """Serves a unit's read requests from a bytearray, one beat per cycle after ``latency``.

    A beat that is due is delivered with probability ``beat_prob`` each cycle (1.0: a memory
    that streams one beat per cycle, for timing measurements).

    The unit side is ``req_valid_o`` (one bit per client), ``req_ready_i``, ``req_addr_o``,
    ``req_len_o`` and ``rsp_valid_i`` (one bit per client), ``rsp_data_i``. Call :meth:`cycle`
    once per clock, after the falling edge, with the values sampled after the rising edge.
    """

    def __init__(self, dut, mem: bytearray, clients: int = 1, latency: int = 2, seed: int = 0,
                 beat_prob: float = 0.85):
        import random

        self.beat_prob = beat_prob
        self.dut = dut
        self.mem = mem
        self.clients = clients
        self.latency = latency
        self.rng = random.Random(seed)
        self.queue: list[list[int]] = []  # [due, addr, beats, client]
        self.requests: list[tuple[int, int, int]] = []
        self.now = 0

    def sample(self):
        """Read the request outputs (call in the read-only phase after a rising edge)."""
        valid = u(self.dut.req_valid_o)
        if valid:
            return valid, u(self.dut.req_addr_o), u(self.dut.req_len_o)
        return 0, 0, 0

    def drive(self, sampled) -> None:
        """Accept the sampled request (ready is always 1) and present the next beat."""
        self.now += 1
        valid, addr, length = sampled
        self.dut.req_ready_i.value = (1 << self.clients) - 1
        if valid:
            client = (valid & -valid).bit_length() - 1
            self.queue.append([self.now + self.latency, addr, length + 1, client])
            self.requests.append((addr, length, client))
        if self.queue and self.queue[0][0] <= self.now and self.rng.random() < self.beat_prob:
            head = self.queue[0]
            self.dut.rsp_valid_i.value = 1 << head[3]
            self.dut.rsp_data_i.value = int.from_bytes(self.mem[head[1]:head[1] + 8], "little")
            head[1] += 8
            head[2] -= 1
            if head[2] == 0:
                self.queue.pop(0)
        else:
            self.dut.rsp_valid_i.value = 0

    def bursts_ok(self) -> bool:
        """Every request was 8-byte aligned, at most 16 beats and inside one 128-byte block."""
        return all(a % 8 == 0 and n < 16 and (a % 128) // 8 + n < 16 for a, n, _ in self.requests)
