"""The contract every simulated device implements (DESIGN contract 2).

A device executes an instruction stream that sits in the shared DRAM arena. The native runtime
reaches a device through ``VTADeviceRun(dev, insn_phys_addr, insn_count, wait_cycles)``; Python
code calls :meth:`Device.run` directly.

State between runs (the same on fsim, the cycle model and tsim):

* **Before anything executes**, the stream is checked as a whole (opcodes, memory types, ALU
  opcodes, token flags, a FINISH, every instruction able to get its tokens, at most 255 tokens
  on a channel in stream order). A stream that fails raises and executes nothing.
* **A run is over when every instruction of its stream has executed**, not merely FINISH:
  tsim keeps clocking after FINISH until fetch has dispatched the whole stream and every
  queue is empty, so no instruction of one run is ever left to execute during the next.
* **Tokens persist across runs, but a stream is only lent those it needs.** A stream may pop
  tokens an earlier run pushed (the runtime leaves a pending pop for the next window), so the
  tokens a successful run leaves stay outstanding (``tokens_<channel>`` in
  :meth:`Device.stats`, the ``runs_with_tokens_left`` counter). When a stream starts, it is
  lent per channel what it needs to run in stream order (the deepest deficit of pops over
  pushes along it, at most what is outstanding: :func:`vta.sim.stream.lent_tokens`);
  the rest is held back during the run and outstanding again after it
  (``runs_with_surplus_tokens`` counts such runs). A surplus token would let one of the
  stream's consumers start before its producer, which tsim (concurrent units) and fsim
  (stream order) resolve differently: a silently wrong answer on tsim.
* **SRAM contents persist across successful runs.**
* **A run that raises** (any :class:`~vta.errors.SimulationError`, whether found before or
  during execution) leaves the device in its reset state: scratchpads zero, no tokens, empty
  queues; it counts in ``runs_failed``. DRAM written by the failed stream's own STOREs may
  hold the results of the instructions that executed before the error (which ones depends on
  the level, since tsim's units run concurrently); nothing else is written.
* :meth:`Device.reset` gives the same reset state at any time.

A later valid program therefore computes exactly what it computes on a fresh device, whatever
ran before it.
"""

from __future__ import annotations

import abc

from ..dram import DRAM
from ..env import Environment
from .debug import check_flags

__all__ = ["Device", "NullDevice", "RUN_KEYS", "STAT_KEYS"]

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

#: Run outcome counters every level adds to its statistics (see the module docstring).
RUN_KEYS = ("runs_failed", "runs_with_tokens_left", "runs_with_surplus_tokens")


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
            access or deadlock; the device is then in its reset state (see the module
            docstring).
        """

    @abc.abstractmethod
    def stats(self) -> dict:
        """Counters accumulated since the last :meth:`clear_stats` (upstream keys first)."""

    @abc.abstractmethod
    def clear_stats(self) -> None:
        """Zero every counter."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Zero the scratchpads and drop outstanding tokens and queued instructions."""

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
