"""Debug modes of the simulated devices (``vta.testing.simulator.debug_mode(flag)``).

Flags (bits of one int, as upstream's ``profiler_debug_mode``):

* :data:`DEBUG_SKIP_EXEC` (1, upstream fsim's only flag): count every instruction but execute
  only micro-op loads, so a stream's statistics come without its data movement and compute
  (fsim and the cycle model);
* :data:`DEBUG_DUMP_INSN` (2, the bit of the runtime's ``VTA_DEBUG_DUMP_INSN``): print every
  instruction the device executes, in execution order, in the upstream dump format
  (:func:`vta.isa.dump_insn`): ``There are <n> instructions`` once per run, then for each
  executed instruction ``INSTRUCTION <index in the stream>: <name>``, its flags and fields and
  the token counts of the four channels after it. fsim prints in the order its scheduler ran
  the instructions, the cycle model in the order its timing model started them, tsim in the
  order the RTL units retired them. A run that fails prints the instructions executed before
  the failure.
"""

from __future__ import annotations

import sys
from typing import Iterable, TextIO

import numpy as np

from .. import isa
from ..env import Environment

__all__ = ["DEBUG_SKIP_EXEC", "DEBUG_DUMP_INSN", "FLAG_NAMES", "check_flags", "dump_executed", "ExecutionDump"]

DEBUG_SKIP_EXEC = 1
DEBUG_DUMP_INSN = 2
FLAG_NAMES = {DEBUG_SKIP_EXEC: "DEBUG_SKIP_EXEC", DEBUG_DUMP_INSN: "DEBUG_DUMP_INSN"}


def check_flags(flag: int, supported: int, device: str) -> int:
    """``flag`` as an int after checking every bit is one ``device`` implements.

    Raises
    ------
    TypeError
        If ``flag`` is not an int.
    ValueError
        If ``flag`` is negative or sets a bit the device does not implement.
    """
    if isinstance(flag, bool) or not isinstance(flag, (int, np.integer)):
        raise TypeError(f"debug_mode flag must be an int (a sum of DEBUG_* bits), got {flag!r}")
    flag = int(flag)
    accepted = " | ".join(f"{name} ({bit})" for bit, name in FLAG_NAMES.items() if supported & bit) or "none"
    if flag < 0 or flag & ~supported:
        raise ValueError(f"debug_mode flag {flag!r} is not supported by the {device} device; accepted bits: "
                         f"{accepted}, or 0 to clear")
    return flag


class ExecutionDump:
    """Prints executed instructions of one run as they are reported (see the module docstring).

    Parameters
    ----------
    env : Environment
        The configuration the stream is encoded for.
    words : ndarray of shape (n, 2)
        The stream's 64-bit words.
    tokens : sequence of 4 int
        Tokens outstanding at the start of the run (l2g, g2l, s2g, g2s).
    out : text stream, optional
        Where to print (default: ``sys.stdout`` at the time of each write).
    """

    def __init__(self, env: Environment, words: np.ndarray, tokens: Iterable[int], out: TextIO | None = None):
        self.env = env
        self.words = words
        self.tokens = [int(t) for t in tokens]
        self.out = out
        self._write(f"There are {words.shape[0]} instructions\n")

    def _write(self, text: str) -> None:
        out = self.out or sys.stdout
        out.write(text)
        out.flush()

    def executed(self, indices: Iterable[int]) -> None:
        """Print the instructions ``indices`` (stream positions), in this order."""
        parts = []
        for i in indices:
            w0, w1 = (int(v) & 0xFFFF_FFFF_FFFF_FFFF for v in self.words[int(i)])
            insn = isa.decode((w0, w1), self.env)
            isa.apply_tokens(insn, self.tokens)
            parts.append(isa.dump_insn(int(i), insn, self.tokens))
        if parts:
            self._write("".join(parts))


def dump_executed(env: Environment, words: np.ndarray, order: Iterable[int], tokens: Iterable[int],
                  out: TextIO | None = None) -> None:
    """Print a whole run at once: the header, then ``order`` (see :class:`ExecutionDump`)."""
    ExecutionDump(env, words, tokens, out).executed(order)
