"""The contract every simulated device implements (DESIGN contract 2).

A device executes an instruction stream that sits in the shared DRAM arena. The native runtime
reaches a device through ``VTADeviceRun(dev, insn_phys_addr, insn_count, wait_cycles)``; Python
code calls :meth:`Device.run` directly.
"""

from __future__ import annotations

import abc

from ..dram import DRAM
from ..env import Environment
from .debug import check_flags

__all__ = ["Device", "NullDevice", "STAT_KEYS"]

#: Upstream statistics keys, in upstream order.
STAT_KEYS = (
    "inp_load_nbytes",
    "wgt_load_nbytes",
    "acc_load_nbytes",
    "uop_load_nbytes",
    "out_store_nbytes",
    "gemm_counter",
    "alu_counter",
)


class Device(abc.ABC):
    """A simulated VTA attached to a DRAM arena.

    Parameters
    ----------
    env : Environment
        The hardware configuration the device implements.
    dram : DRAM
        The arena holding instructions, micro-ops and data.
    """

    #: Short name used by the ``TARGET`` key of the configuration.
    name = "device"
    #: The debug flags (:mod:`vta.sim.debug`) this device implements.
    debug_flags_supported = 0

    def __init__(self, env: Environment, dram: DRAM):
        self.env = env
        self.dram = dram
        #: Debug flags in force (``DEBUG_SKIP_EXEC``, ``DEBUG_DUMP_INSN``); kept by clear_stats.
        self.debug_flags = 0

    def set_debug_mode(self, flag: int) -> None:
        """Set the debug flags (:mod:`vta.sim.debug`; 0 clears them).

        Raises
        ------
        TypeError
            If ``flag`` is not an int.
        ValueError
            If ``flag`` sets a bit this device does not implement.
        """
        self.debug_flags = check_flags(flag, self.debug_flags_supported, self.name)

    @abc.abstractmethod
    def run(self, insn_phys_addr: int, insn_count: int, wait_cycles: int = 0) -> int:
        """Execute ``insn_count`` instructions starting at ``insn_phys_addr``; block until FINISH.

        Returns
        -------
        int
            0 on success (the driver API's convention).

        Raises
        ------
        vta.errors.SimulationError
            (a subclass naming the instruction) for any invalid instruction, out-of-range
            access or deadlock.
        """

    @abc.abstractmethod
    def stats(self) -> dict:
        """Counters accumulated since the last :meth:`clear_stats` (upstream keys first)."""

    @abc.abstractmethod
    def clear_stats(self) -> None:
        """Zero every counter."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Forget SRAM contents and outstanding tokens, as a hardware reset would."""

    def close(self) -> None:
        """Release native resources (none by default)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class NullDevice(Device):
    """A compile-only device: accepts every run and executes nothing (for compiler tests)."""

    name = "null"

    def __init__(self, env: Environment, dram: DRAM):
        super().__init__(env, dram)
        self.runs = 0

    def run(self, insn_phys_addr: int, insn_count: int, wait_cycles: int = 0) -> int:
        self.runs += 1
        return 0

    def stats(self) -> dict:
        return {key: 0 for key in STAT_KEYS}

    def clear_stats(self) -> None:
        self.runs = 0

    def reset(self) -> None:
        pass
