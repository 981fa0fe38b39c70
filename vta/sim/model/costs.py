"""Per-instruction costs of the fast cycle-level model (:mod:`vta.sim.model`).

Every figure here is a property of OUR RTL (``hw/README.md``), measured on tsim with one
instruction at a time between a fetch and a FINISH and fitted with a small formula:

* a unit spends :attr:`Timing.overhead` cycle on any instruction (the sequencer takes, decodes
  and, for a no-op, retires it in one cycle; the next one is taken the cycle after): a no-op or
  FINISH costs exactly that;
* GEMM and ALU (immediate or tensor operand: the accumulator has a read port for each operand)
  run one micro-op per cycle behind a 3-stage pipeline and retire when the last micro-op leaves
  S1: ``n + 2`` cycles for ``n > 0`` micro-ops (``n`` = iter_out x iter_in x (uop_end -
  uop_bgn); the take cycle, n issue cycles, the last uop's S1), 1 (a no-op) for none;
* a LOAD requests its rows, the first beat arrives :attr:`Timing.load_latency` cycles after the
  start (with the ideal memory and an idle channel), then the 64-bit read port delivers one beat
  per cycle; the unit retires in the cycle after the last beat (:mod:`vta.sim.model.replay` times
  the read channel and the pads exactly; :func:`load_pad_cycles` is the estimate for a lone load);
* a STORE streams: its accumulator reads run ahead of the beats and no burst waits for the
  acknowledgement of the previous one, so the write port takes one beat per cycle,
  ``max(1, OUT_ELEM_BYTES / 8)`` per element, whatever the rows and bursts, plus a fixed
  :attr:`Timing.store_fixed` (start, first read, the last ack, retire);
* fetch reads up to 8 instructions per burst (2 beats each, never across 128 bytes) into a
  buffer of :data:`FETCH_BUFFER_INSNS`; a burst is requested as soon as the buffer has room for
  it, its beats take the read port from the cycle after the request, and each instruction can
  be dispatched ``fetch_latency - 1`` cycles after its second beat, one per cycle.

The functions take the decoded fields of one instruction as a dict (the names of
:func:`vta.isa.layout`) so that tests can check them against hand-derived numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import isa
from ...env import Environment

__all__ = [
    "BEAT_BYTES",
    "FETCH_BUFFER_INSNS",
    "BURST_BYTES",
    "DEFAULT_TIMING",
    "Timing",
    "compute_cycles",
    "fetch_burst_size",
    "load_beats",
    "load_pad_cycles",
    "store_cycles",
    "uop_count",
]

#: Width of the memory bus (one beat).
BEAT_BYTES = 8
#: Largest burst, and the boundary no burst crosses (16 beats).
BURST_BYTES = 128
#: Instructions per fetch burst at most.
FETCH_BURST_INSNS = 8
#: Instructions the fetch buffer holds (requested and not yet dispatched ones included).
FETCH_BUFFER_INSNS = 16
#: Bytes of one instruction.
INSN_BYTES = 16


@dataclass(frozen=True)
class Timing:
    """The constants of the cost formulas (defaults: measured on tsim, see the module docstring).

    Attributes
    ----------
    overhead : int
        Cycles of an instruction that does no work (no-op, FINISH).
    pipe_fill : int
        Extra cycles of a GEMM / ALU with at least one micro-op, on top of one per uop.
    empty_compute : int
        Cycles of a GEMM / ALU whose loops run no micro-op.
    load_latency : int
        Cycles from the start of a LOAD to its first data beat.
    load_tail : int
        Cycles from the last data beat to retirement.
    pad_fixed, pad_per_row : int
        Padding cost besides one cycle per pad element: once per padded load, per pad row.
    store_fixed, store_per_row, store_ack : int
        STORE costs besides one cycle per beat: once, per row, per burst (the streaming store
        has none per row or burst).
    fetch_latency : int
        Cycles from the arrival of an instruction's second beat to its dispatch, plus one.
    """

    overhead: int = 1
    pipe_fill: int = 2
    empty_compute: int = 1
    load_latency: int = 5
    load_tail: int = 0
    pad_fixed: int = 3
    pad_per_row: int = 2
    store_fixed: int = 5
    store_per_row: int = 0
    store_ack: int = 0
    fetch_latency: int = 2


#: The measured constants.
DEFAULT_TIMING = Timing()


def uop_count(f: dict) -> int:
    """Micro-ops a GEMM or ALU executes: iter_out x iter_in x (uop_end - uop_bgn), at least 0."""
    return int(f["iter_out"]) * int(f["iter_in"]) * max(int(f["uop_end"]) - int(f["uop_bgn"]), 0)


def compute_cycles(opcode: int, f: dict, timing: Timing = DEFAULT_TIMING) -> int:
    """Cycles a GEMM or ALU occupies the compute unit.

    Parameters
    ----------
    opcode : int
        :data:`vta.isa.OPCODE_GEMM` or :data:`vta.isa.OPCODE_ALU`.
    f : dict
        The instruction's fields (``iter_out``, ``iter_in``, ``uop_bgn``, ``uop_end``; an ALU's
        ``use_imm`` does not change its cost).
    timing : Timing
        The constants.

    Raises
    ------
    ValueError
        If ``opcode`` is neither GEMM nor ALU.
    """
    if opcode not in (isa.OPCODE_GEMM, isa.OPCODE_ALU):
        raise ValueError(f"compute_cycles takes a GEMM ({isa.OPCODE_GEMM}) or ALU ({isa.OPCODE_ALU}) "
                         f"opcode, got {opcode!r}")
    n = uop_count(f)
    if n == 0:
        return timing.empty_compute
    return n + timing.pipe_fill


def _row_bursts(start: int, nbytes: int) -> int:
    """Bursts that move ``nbytes`` from byte ``start`` (128-byte blocks touched)."""
    if nbytes <= 0:
        return 0
    return (start + nbytes - 1) // BURST_BYTES - start // BURST_BYTES + 1


def load_beats(env: Environment, f: dict) -> int:
    """Data beats a LOAD reads over the 64-bit port: each row's bytes, rounded out to whole beats.

    Parameters
    ----------
    env : Environment
        The configuration (element sizes).
    f : dict
        Memory-instruction fields (``memory_type``, ``dram_base``, ``y_size``, ``x_size``,
        ``x_stride``).

    Raises
    ------
    ValueError
        If ``memory_type`` is not one of 0..5.
    """
    elem = env.elem_bytes(int(f["memory_type"]))
    x, y = int(f["x_size"]), int(f["y_size"])
    if x <= 0 or y <= 0:
        return 0
    if elem % BEAT_BYTES == 0:
        return y * x * elem // BEAT_BYTES
    total = 0  # elements smaller than a beat (micro-ops): each row rounds out on both ends
    base, stride = int(f["dram_base"]) * elem, int(f["x_stride"]) * elem
    for r in range(y):
        lo = base + r * stride
        total += (lo + x * elem + BEAT_BYTES - 1) // BEAT_BYTES - lo // BEAT_BYTES
    return total


def load_pad_cycles(f: dict, timing: Timing = DEFAULT_TIMING) -> int:
    """Extra cycles of a LOAD's zero padding (0 without pads)."""
    x, y = int(f["x_size"]), int(f["y_size"])
    yp = int(f["y_pad_0"]) + int(f["y_pad_1"])
    xp = int(f["x_pad_0"]) + int(f["x_pad_1"])
    if yp == 0 and xp == 0:
        return 0
    pad_elems = (y + yp) * (x + xp) - y * x
    return pad_elems + timing.pad_per_row * yp + timing.pad_fixed


def store_cycles(env: Environment, f: dict, timing: Timing = DEFAULT_TIMING) -> int:
    """Cycles a STORE occupies the store unit (x_size = 0 is a no-op: ``timing.overhead``).

    Raises
    ------
    ValueError
        Never for valid fields; see :meth:`vta.env.Environment.elem_bytes`.
    """
    x, y = int(f["x_size"]), int(f["y_size"])
    if x <= 0:
        return timing.overhead
    elem = env.OUT_ELEM_BYTES
    per_elem = max(elem // BEAT_BYTES, 1)
    total = timing.store_fixed + y * (timing.store_per_row + x * per_elem)
    if timing.store_ack:
        base, stride = int(f["dram_base"]) * elem, int(f["x_stride"]) * elem
        total += timing.store_ack * sum(_row_bursts(base + r * stride, x * elem) for r in range(y))
    return total


def fetch_burst_size(insn_addr: int, remaining: int) -> int:
    """Instructions in the fetch burst starting at byte ``insn_addr`` with ``remaining`` to go."""
    to_boundary = (BURST_BYTES - insn_addr % BURST_BYTES) // INSN_BYTES
    return max(1, min(FETCH_BURST_INSNS, to_boundary, remaining))

