"""fsim: the functional simulator, the executable specification of the ISA.

Public face: :class:`FunctionalSimulator` (a :class:`~vta.sim.device.Device`; ``TARGET`` ``sim``)
the statistics keys it adds, :data:`INSN_KEYS` and :data:`TOKEN_KEYS`, and :func:`check_stream`,
the whole-stream checks every level applies before executing anything.

Inside: ``simulator.py`` (the device: decoding, statistics, errors), ``sched.py`` (the order of
execution the dependency tokens allow), ``units.py`` (one NumPy function per opcode: the
specification), ``loops.py`` (their index grids), ``plans.py`` (the NumPy engine's fast form of
small common instructions, made once per distinct instruction), ``jit.py`` and ``kernels.py``
(the same semantics as a loop compiled by numba, used when it is installed).
"""

from ..targets import register_target
from .simulator import INSN_KEYS, TOKEN_KEYS, FunctionalSimulator, check_stream

__all__ = ["FunctionalSimulator", "INSN_KEYS", "TOKEN_KEYS", "check_stream"]

register_target("sim", FunctionalSimulator)
