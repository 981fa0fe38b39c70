"""tsim: the Verilated RTL of the accelerator as a :class:`~vta.sim.device.Device`.

The hardware library (built by :mod:`vta.sim.tsim.library`) holds the Verilated ``vta_tsim_top``
and the C++ shim of ``sim/vta_tsim.h``. A :class:`TSim` binds one native model to a DRAM arena:
the core reads its instructions, micro-ops and data straight from the arena's memory and writes
results back into it, so fsim and tsim execute the very same bytes.

Statistics keep the upstream keys, counted from the instruction stream each successful run
executed exactly as fsim counts them, and add the hardware's own counters: ``cycle_count`` (the
ECNT0 register summed over runs), busy and stall cycles and instructions retired per unit, and
the tokens left on each channel.

Errors the core reports (its STATUS register) become the same :mod:`vta.errors` exceptions fsim
raises; a DRAM burst outside the arena, or a transfer outside every live allocation (checked
before the run, as fsim checks it), is a :class:`~vta.errors.DRAMAccessError`; a design that
stops making progress trips the core's watchdog and is reported as a
:class:`~vta.errors.DeadlockError` carrying each unit's instruction index, queue fill and the
token counts. A failing SystemVerilog assertion of the RTL stops the run (checked every 64
cycles) and is a :class:`~vta.errors.HardwareAssertionError` naming its source location, the
text the simulator printed and the cycle.

State between runs follows the device contract (:mod:`vta.sim.device`), as fsim and the cycle
model do: the stream is checked as a whole before launch (:func:`vta.sim.stream.check_stream`);
tokens the stream has no use for are held back (the core is reset, keeping SRAM, and given the
lent tokens by a stream of no-ops that push them; the held ones are pushed back after the run);
after FINISH the core is clocked until every queue is empty; after any error the core is reset
and its scratchpads zeroed by a short pad-only stream (:meth:`TSim.reset`).

:meth:`TSim.set_probe` turns on the profiler's probe (:mod:`vta.sim.tsim.probe`): while it is on,
every run leaves the RTL's per-cycle unit states, queue fills, tokens and memory beats, as
change records, in ``probe_records``. Off (the default), the Verilated model makes no probe call.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
from pathlib import Path
from typing import Callable

import numpy as np

from ... import isa
from ...dram import DRAM, global_dram
from ...env import Environment, get_env
from ...errors import (ConfigError, DeadlockError, DRAMAccessError, HardwareAssertionError,
                      InvalidInstructionError, ModuleLoadError, SimulationError, SRAMIndexError, TokenOverflowError)
from ..debug import DEBUG_DUMP_INSN, ExecutionDump
from ..device import RUN_KEYS, STAT_KEYS, Device
from ..stream import Program, check_stream, lent_tokens
from ..targets import attach_device, device_for
from . import hwgen
from .library import (ASSERTION as _ASSERTION, DRAM_ERROR as _DRAM_ERROR, HW_ERROR as _HW_ERROR, OK as _OK,
                      PROGRESS_FN as _PROGRESS_FN, PROTOCOL_ERROR as _PROTOCOL_ERROR, TIMEOUT as _TIMEOUT,
                      STOPPED as _STOPPED, UNDRAINED as _UNDRAINED, Library, load_library)

__all__ = ["TSim", "TSimModule", "Library", "load_library", "init", "HW_STAT_KEYS", "GLOBAL_FUNCTIONS"]

log = logging.getLogger("vta.tsim")

_UNITS = ("fetch", "load", "compute", "store")
_CHANNELS = ("l2g", "g2l", "g2s", "s2g")
_FSIM_ORDER = ("l2g", "g2l", "s2g", "g2s")  # fsim's channel order (vta.sim.fsim.sched.CHANNELS)
#: Hardware counters added to the upstream statistics keys.
HW_STAT_KEYS = (("cycle_count",) + tuple(f"{u}_busy_cycles" for u in _UNITS)
                + tuple(f"{u}_stall_cycles" for u in _UNITS)
                + tuple(f"{u}_retired" for u in _UNITS) + ("acc_write_count",))
_ERRORS = {
    hwgen.ERR_INVALID_INSN: InvalidInstructionError,
    hwgen.ERR_SRAM_INDEX: SRAMIndexError,
    hwgen.ERR_TOKEN_OVERFLOW: TokenOverflowError,
    hwgen.ERR_WATCHDOG: DeadlockError,
}
#: Default cycles between progress reports (a log line, or the callback).
PROGRESS_INTERVAL = 10_000_000
_INSN_BYTES = 16
#: Widest pad row of the scratchpad-zeroing stream (x_size and x_stride are 16-bit fields).
_ZERO_CHUNK = 4096
_MASK64 = (1 << 64) - 1
#: Per-opcode instruction counts, as fsim names them (x_size 0 loads and stores are no-ops).
_INSN_KEYS = ("insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish", "insn_nop")


def _trace_kind_of(path: Path) -> str:
    return "fst" if path.suffix.lower() == ".fst" else "vcd"


class TSim(Device):
    """The RTL simulation of the accelerator, bound to a DRAM arena.

    Parameters
    ----------
    env : Environment
        The configuration; the library must have been built for it.
    dram : DRAM
        The arena the core reads and writes.
    library : str, Path or Library, optional
        A built hardware library; default: :func:`vta.sim.tsim.library.build` for ``env`` (with
        waveform support when ``trace_path`` is given).
    trace_path : str or Path, optional
        Write a waveform of the whole simulation there (``.fst`` for FST, else VCD).
    progress : callable, optional
        ``progress(cycles, retired)`` called every ``progress_interval`` cycles of a run, with
        the cycles elapsed in the run and the instructions retired by load, compute and store.
        Return True to stop the run (a :class:`~vta.errors.SimulationError`). Without it, a log
        line is written to the ``vta.tsim`` logger instead.
    progress_interval : int
        Cycles between progress reports.
    check_streams : bool
        Check each stream as fsim does before launching it (default). Off, invalid
        instructions, deadlocks and token overflows are found by the RTL itself (for tests
        of the hardware's own checks); the state after a run is the same either way.

    Raises
    ------
    BuildError
        If the library has to be built and the build fails.
    ModuleLoadError
        If the library cannot be loaded, or has no waveform support while ``trace_path`` is set.
    ConfigError
        If the library was built for another configuration.

    Examples
    --------
    >>> with TSim(env, dram) as dev:          # doctest: +SKIP
    ...     dev.run(insn_addr, insn_count)
    ...     dev.stats()["cycle_count"]
    """

    name = "tsim"
    debug_flags_supported = DEBUG_DUMP_INSN

    def __init__(self, env: Environment, dram: DRAM, *, library=None, trace_path=None,
                 progress: Callable[[int, int], object] | None = None,
                 progress_interval: int = PROGRESS_INTERVAL, check_streams: bool = True):
        super().__init__(env, dram)
        self._handle = None
        self.check_streams = bool(check_streams)
        self._tokens = dict.fromkeys(_CHANNELS, 0)  # outstanding on the core after the last run
        trace_path = Path(trace_path) if trace_path is not None else None
        if library is None:
            from .library import build
            library = build(env, trace=_trace_kind_of(trace_path) if trace_path else None)
        self._lib = library if isinstance(library, Library) else load_library(library)
        if trace_path is not None and self._lib.trace_kind == 0:
            raise ModuleLoadError(
                f"tsim library {str(self._lib.path)!r} has no waveform support; build it with "
                f"vta.sim.tsim.library.build(env, trace='vcd' or 'fst') to write {str(trace_path)!r}")
        if progress_interval <= 0:
            raise ValueError(f"progress_interval {progress_interval!r} must be a positive number of cycles")
        err = ctypes.create_string_buffer(512)
        handle = self._lib.lib.vta_tsim_create(
            dram.host_address, dram.capacity,
            str(trace_path).encode() if trace_path else None, err, len(err))
        if not handle:
            raise ModuleLoadError(f"cannot create a tsim model from {str(self._lib.path)!r}: {err.value.decode()}")
        self._handle = ctypes.c_void_p(handle)
        self.trace_path = trace_path
        self._progress = progress
        self._progress_error: BaseException | None = None
        self._progress_cb = _PROGRESS_FN(self._on_progress)  # kept alive with the device
        regs = (ctypes.c_uint32 * 3)(hwgen.REG_RETIRED_LOAD, hwgen.REG_RETIRED_COMPUTE, hwgen.REG_RETIRED_STORE)
        self._progress_args = (self._progress_cb, None, progress_interval, regs, 3)
        try:
            self._call("vta_tsim_set_progress", *self._progress_args)
            self._check_config()
            self._set_dram()
        except BaseException:
            self.close()  # do not leak the native model of a refused library
            raise
        self._stats: dict[str, int] = {}
        self.clear_stats()
        self._probe_window = 0
        #: The probe records of the last traced run (see :meth:`set_probe`), else None.
        self.probe_records = None

    def set_probe(self, enable: bool, window: int = 256) -> None:
        """Turn the profiler's probe on or off (:mod:`vta.sim.tsim.probe`).

        While it is on, every run leaves its records in :attr:`probe_records`.

        Parameters
        ----------
        enable : bool
            On or off.
        window : int
            Cycles per memory-beat window.

        Raises
        ------
        ValueError
            If ``window`` is not a positive number of cycles.
        ModuleLoadError
            If the library has no probe (built before it existed).
        SimulationError
            If the device is closed.
        """
        if not self._lib.has_probe:
            raise ModuleLoadError(f"tsim library {str(self._lib.path)!r} was built without the profiler's probe")
        if enable and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
            raise ValueError(f"probe window {window!r} must be a positive number of cycles")
        self._call("vta_tsim_probe", 1 if enable else 0, window if enable else 0)
        self._probe_window = window if enable else 0
        self.probe_records = None

    # ------------------------------------------------------------------ native plumbing
    def _call(self, name: str, *args) -> int:
        if self._handle is None:
            raise SimulationError("this tsim device has been closed")
        rc = getattr(self._lib.lib, name)(self._handle, *args)
        if rc < 0:
            raise SimulationError(f"{name} failed: {self._lib.last_error()}")
        return rc

    def read_reg(self, addr: int) -> int:
        """Read one 32-bit register of the core through the host port (clocks the core).

        Raises
        ------
        SimulationError
            If the device is closed, the address is not a register or the core does not answer.
        """
        value = ctypes.c_uint32()
        if self._call("vta_tsim_reg_read", addr, ctypes.byref(value)) != _OK:
            raise SimulationError(f"register read at 0x{addr:02x} failed: {self._lib.last_error()}")
        return value.value

    def write_reg(self, addr: int, value: int) -> None:
        """Write one 32-bit register of the core through the host port.

        Raises
        ------
        SimulationError
            If the device is closed, the address is not a register or the write is not taken.
        """
        if self._call("vta_tsim_reg_write", addr, value & 0xFFFFFFFF) != _OK:
            raise SimulationError(f"register write at 0x{addr:02x} failed: {self._lib.last_error()}")

    def _check_config(self) -> None:
        cfg = self.read_reg(hwgen.REG_CONFIG)
        env = self.env
        want = ((hwgen.CONFIG_MAGIC << 24) | (env.LOG_ACC_WIDTH << 14) | (env.LOG_WGT_WIDTH << 11)
                | (env.LOG_INP_WIDTH << 8) | (env.LOG_BLOCK << 4) | env.LOG_BATCH)
        if cfg != want:
            raise ConfigError(
                f"tsim library {str(self._lib.path)!r} reports CONFIG 0x{cfg:08x}, but {env.MODEL!r} needs "
                f"0x{want:08x}; build the library for this configuration")

    def _set_dram(self) -> None:
        """Give the memory shim the configuration's DRAM timing (``DRAM``, ``DRAM_*`` keys)."""
        timing = self.env.dram_timing
        if not self._lib.has_dram_model:
            if timing != (1, 8, 0):
                raise ModuleLoadError(f"tsim library {str(self._lib.path)!r} has no DRAM model; rebuild it to "
                                      f"simulate the memory {self.env.DRAM!r} {timing!r}")
            return
        self._call("vta_tsim_set_dram", *timing)

    def _on_progress(self, _user, cycles: int, retired: int) -> int:
        try:
            if self._progress is None:
                log.info("tsim: %.1f M cycles simulated, %d instructions retired", cycles / 1e6, retired)
                return 0
            return 1 if self._progress(int(cycles), int(retired)) else 0
        except BaseException as exc:  # re-raised by run() once the native loop has returned
            self._progress_error = exc
            return 1

    # ------------------------------------------------------------------ Device contract
    def run(self, insn_phys_addr: int, insn_count: int, wait_cycles: int = 0) -> int:
        """Execute ``insn_count`` instructions at ``insn_phys_addr`` on the RTL; block until FINISH.

        Parameters
        ----------
        insn_phys_addr : int
            Physical address of the first 16-byte instruction.
        insn_count : int
            Number of instructions (at least 1).
        wait_cycles : int
            Give up after this many simulated cycles (0: no limit; the core's watchdog still
            stops a design that makes no progress). Upstream tsim counted register polls here
            and returned 0 on a timeout; this device raises instead.

        Returns
        -------
        int
            0.

        Raises
        ------
        DRAMAccessError
            If the instructions or a transfer lie outside the live allocations, or a burst
            leaves the arena.
        InvalidInstructionError, SRAMIndexError, TokenOverflowError
            As reported by the core, naming the instruction index, field, value and limit.
        DeadlockError
            If the core's watchdog fired; the message holds each unit's state.
        HardwareAssertionError
            If an assertion of the RTL failed (a hardware bug): location, message and cycle.
        SimulationError
            If ``wait_cycles`` elapsed, the progress callback stopped the run, or the core broke
            a rule of its memory channels (a hardware bug, named in the message).
        """
        if self._handle is None:
            raise SimulationError("this tsim device has been closed")
        if isinstance(insn_count, bool) or not isinstance(insn_count, (int, np.integer)) or insn_count < 1:
            raise ValueError(f"insn_count {insn_count!r} must be a positive integer")
        try:
            cols, held = self._check(insn_phys_addr, int(insn_count))
            if any(held.values()):  # the core may only hold what the stream is lent
                lent = {c: self._tokens[c] - held[c] for c in _CHANNELS}
                self._reset_core()
                self._push_tokens(lent)
        except SimulationError:
            self._recover()
            raise
        insn_phys_addr, insn_count = int(insn_phys_addr), int(insn_count)
        self._progress_error = None
        max_cycles = int(wait_cycles) if wait_cycles and wait_cycles > 0 else (1 << 63)
        if self.debug_flags & DEBUG_DUMP_INSN:
            rc = self._run_dumped(insn_phys_addr, insn_count, max_cycles, held)
        else:
            rc = self._call("vta_tsim_run", insn_phys_addr, insn_count, max_cycles)
        if self._probe_window:
            from .probe import take
            self.probe_records = take(self._lib.lib, self._handle)
        if self._progress_error is not None:
            exc, self._progress_error = self._progress_error, None
            self._recover()
            raise exc
        if rc == _OK:
            self._count(cols)
            if any(held.values()):
                self._stats["runs_with_surplus_tokens"] += 1
                self._push_tokens(held)  # give back what was held: the core holds it again
            self._tokens = {c: self.read_reg(hwgen.REG_TOKENS_L2G + 4 * i) for i, c in enumerate(_CHANNELS)}
            if any(self._tokens.values()):
                self._stats["runs_with_tokens_left"] += 1
            return 0
        if rc == _HW_ERROR:
            raise self._hardware_error()
        if rc == _DRAM_ERROR:
            addr, nbytes, is_write = ctypes.c_uint64(), ctypes.c_uint32(), ctypes.c_int()
            self._call("vta_tsim_dram_error", ctypes.byref(addr), ctypes.byref(nbytes), ctypes.byref(is_write))
            state = self._state_text()
            self._recover()
            kind = "write" if is_write.value else "read"
            raise DRAMAccessError(
                f"tsim: memory {kind} burst 0x{addr.value:x} (+{nbytes.value} bytes) lies outside the DRAM "
                f"arena 0x1000..0x{self.dram.capacity:x}; {state}")
        if rc == _ASSERTION:
            message = self._lib.last_error()
            state = self._state_text()
            self._recover()
            raise HardwareAssertionError(f"tsim: {message}; {state}")
        if rc == _PROTOCOL_ERROR:
            message = self._lib.last_error()
            state = self._state_text()
            self._recover()
            raise SimulationError(f"tsim: {message}; {state}")
        message = self._lib.last_error()
        state = self._state_text()
        self._recover()
        if rc == _STOPPED:
            raise SimulationError(f"tsim: the progress callback stopped the run; {state}")
        if rc == _UNDRAINED:
            raise DeadlockError(f"tsim: FINISH retired but {message}; {state}")
        raise SimulationError(f"tsim: the run did not finish within wait_cycles={wait_cycles!r} cycles; {state}")

    def stats(self) -> dict:
        """Counters since the last :meth:`clear_stats`: the upstream keys, then the hardware's.

        ``tokens_<channel>`` is the count outstanding on each channel after the last run (0
        after a failed run); ``runs_failed``, ``runs_with_tokens_left`` and
        ``runs_with_surplus_tokens`` count runs as every level does.
        """
        out = dict(self._stats)
        out.update({f"tokens_{c}": n for c, n in self._tokens.items()})
        return out

    def clear_stats(self) -> None:
        """Zero every counter."""
        self._stats = {key: 0 for key in STAT_KEYS + HW_STAT_KEYS}
        self._stats.update({key: 0 for key in _INSN_KEYS + RUN_KEYS})

    def reset(self) -> None:
        """Reset the core (tokens, queues, units) and zero its scratchpads, as fsim's reset does.

        The scratchpads are zeroed by running a stream of pad-only LOADs (``y_size`` 0, one pad
        row as wide as the buffer) placed in a page of the arena allocated for the purpose and
        freed at once. The WATCHDOG register keeps its value.

        Raises
        ------
        SimulationError
            If the core cannot be reset or the zeroing stream does not finish.
        AllocationError
            If the arena has no free page for the zeroing stream.
        """
        self._reset_core()
        self._zero_sram()
        self._tokens = dict.fromkeys(_CHANNELS, 0)

    def _reset_core(self) -> None:
        """Hold the core in reset (tokens, queues, units, per-run counters); SRAM is kept."""
        watchdog = self.read_reg(hwgen.REG_WATCHDOG)
        if self._call("vta_tsim_reset") != _OK:
            raise SimulationError(f"tsim reset failed: {self._lib.last_error()}")
        if watchdog != hwgen.WATCHDOG_DEFAULT:
            self.write_reg(hwgen.REG_WATCHDOG, watchdog)

    def _zero_sram(self) -> None:
        env = self.env
        insns = []
        for mt, depth in ((isa.MEM_UOP, env.UOP_BUFF_DEPTH), (isa.MEM_ACC, env.ACC_BUFF_DEPTH),
                          (isa.MEM_INP, env.INP_BUFF_DEPTH), (isa.MEM_WGT, env.WGT_BUFF_DEPTH)):
            for base in range(0, depth, _ZERO_CHUNK):
                width = min(_ZERO_CHUNK, depth - base)
                insns.append(isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=mt, sram_base=base, y_size=0,
                                         x_size=width, x_stride=width, y_pad_0=1))
        self._run_internal(insns, "zeroing the scratchpads")

    def _push_tokens(self, counts: dict) -> None:
        """Put ``counts[channel]`` more tokens on the core's channels with a stream of no-ops."""
        nop = {"l2g": (isa.OPCODE_LOAD, isa.MEM_INP, "push_next_dep"),
               "g2l": (isa.OPCODE_LOAD, isa.MEM_UOP, "push_prev_dep"),
               "g2s": (isa.OPCODE_LOAD, isa.MEM_UOP, "push_next_dep"),
               "s2g": (isa.OPCODE_STORE, isa.MEM_UOP, "push_prev_dep")}
        insns = []
        for c, k in counts.items():
            op, mt, flag = nop[c]
            insns += [isa.MemInsn(opcode=op, memory_type=mt, **{flag: 1})] * int(k)
        if insns:
            self._run_internal(insns, "restoring the tokens held back")

    def _run_internal(self, insns: list, what: str) -> None:
        """Run ``insns`` and a FINISH on the core for the device itself (no statistics)."""
        insns = list(insns) + [isa.FinishInsn()]
        words = isa.encode_program(insns, self.env).astype("<u8")
        addr = self.dram.alloc(words.nbytes)
        self._call("vta_tsim_set_progress", _PROGRESS_FN(), None, 0, None, 0)  # not the user's run
        try:
            self.dram.write(addr, words)
            rc = self._call("vta_tsim_run", addr, len(insns), 1 << 32)
        finally:
            self.dram.free(addr)
            self._call("vta_tsim_set_progress", *self._progress_args)
        if rc != _OK:
            message = self._lib.last_error()
            self._call("vta_tsim_reset")
            raise SimulationError(f"tsim: {what} failed (status {rc}): {message}")

    def close(self) -> None:
        """Release the native model (and close the waveform file). Idempotent."""
        if self._handle is not None:
            self._lib.lib.vta_tsim_destroy(self._handle)
            self._handle = None

    @property
    def cycles(self) -> int:
        """Cycles simulated since the model was created (runs, register accesses, resets)."""
        return int(self._lib.lib.vta_tsim_cycles(self._handle)) if self._handle is not None else 0

    # ------------------------------------------------------------------ debug mode
    #: Cycles clocked between two polls of the retired counters in ``DEBUG_DUMP_INSN`` mode.
    DUMP_POLL_CYCLES = 4

    def _run_dumped(self, insn_phys_addr: int, insn_count: int, max_cycles: int, held: dict) -> int:
        """``vta_tsim_run`` driven from Python, printing each instruction when its unit retires it.

        Each unit executes its queue in stream order, so the retired-instruction counter of a unit
        says which of its instructions have completed. The counters are polled every few cycles
        (:data:`DUMP_POLL_CYCLES` plus the register reads); instructions retired by several units
        within one poll print in stream order. Returns a ``vta_tsim_run`` status code (memory
        channel protocol checks of the native loop are not made in this mode).
        """
        words = self.dram.data[insn_phys_addr:insn_phys_addr + insn_count * _INSN_BYTES].copy().view("<i8")
        words = words.reshape(insn_count, 2)
        # the counts shown include the tokens held back from the stream (as fsim's dump)
        regs = {c: self.read_reg(hwgen.REG_TOKENS_L2G + 4 * i) + held[c] for i, c in enumerate(_CHANNELS)}
        dump = ExecutionDump(self.env, words, [regs["l2g"], regs["g2l"], regs["s2g"], regs["g2s"]])
        stages = [isa.stage_of(isa.decode((int(w0) & _MASK64, int(w1) & _MASK64), self.env)) for w0, w1 in words]
        queues = [[i for i, st in enumerate(stages) if st == stage]
                  for stage in (isa.STAGE_LOAD, isa.STAGE_COMPUTE, isa.STAGE_STORE)]
        seen = [0, 0, 0]

        def report() -> None:
            new = []
            for u, q in enumerate(queues):
                done = min(self.read_reg(hwgen.REG_RETIRED_LOAD + 4 * u), len(q))
                new.extend(q[seen[u]:done])
                seen[u] = max(seen[u], done)
            dump.executed(sorted(new))

        self.write_reg(hwgen.REG_CTRL, 0)
        self.write_reg(hwgen.REG_VAL0, insn_count)
        self.write_reg(hwgen.REG_PTR0, insn_phys_addr)
        self.write_reg(hwgen.REG_CTRL, hwgen.CTRL_LAUNCH)
        start = self.cycles
        while True:
            rc = self._call("vta_tsim_step", self.DUMP_POLL_CYCLES)
            if rc != _OK:
                report()
                return rc
            ctrl = self.read_reg(hwgen.REG_CTRL)
            report()
            if ctrl & hwgen.CTRL_ERROR:
                return _HW_ERROR
            if ctrl & hwgen.CTRL_FINISH:
                rc = self._drain_dumped(report)  # as the native loop does (vta_tsim_run)
                if rc == _OK:
                    self.write_reg(hwgen.REG_CTRL, 0)
                return rc
            if self.cycles - start >= max_cycles:
                return _TIMEOUT

    def _drain_dumped(self, report) -> int:
        """After FINISH: step until every unit is idle, reporting what retires."""
        last = None
        while True:
            state = self.read_reg(hwgen.REG_UNIT_STATE)
            report()
            if state == 0:
                return _OK
            busy = any((state >> (4 * u)) & 0xF == hwgen.STATE_BUSY for u in range(4))
            if not busy and state == last:
                return _UNDRAINED
            last = None if busy else state
            rc = self._call("vta_tsim_step", self.DUMP_POLL_CYCLES)
            if rc != _OK:
                return rc
            if self.read_reg(hwgen.REG_CTRL) & hwgen.CTRL_ERROR:
                return _HW_ERROR

    # ------------------------------------------------------------------ helpers
    def _count(self, cols) -> None:
        s = self._stats
        for key, value in _stream_stats(self.env, cols).items():
            s[key] += value
        s["cycle_count"] += self.read_reg(hwgen.REG_ECNT0)
        s["acc_write_count"] += self.read_reg(hwgen.REG_UCNT0)
        for i, unit in enumerate(_UNITS):
            s[f"{unit}_busy_cycles"] += self.read_reg(hwgen.REG_BUSY_FETCH + 4 * i)
            s[f"{unit}_stall_cycles"] += self.read_reg(hwgen.REG_STALL_FETCH + 4 * i)
            s[f"{unit}_retired"] += self.read_reg(hwgen.REG_RETIRED_FETCH + 4 * i)

    def state(self) -> dict:
        """Each unit's state, instruction index and queue fill, and the tokens per channel."""
        states = self.read_reg(hwgen.REG_UNIT_STATE)
        out = {}
        for i, unit in enumerate(_UNITS):
            nib = (states >> (4 * i)) & 0xF
            out[unit] = {"state": hwgen.STATE_NAMES.get(nib, f"state {nib}"),
                         "index": self.read_reg(hwgen.REG_INDEX_FETCH + 4 * i)}
            if unit != "fetch":
                out[unit]["queue_fill"] = self.read_reg(hwgen.REG_FILL_LOAD + 4 * (i - 1))
        out["tokens"] = {c: self.read_reg(hwgen.REG_TOKENS_L2G + 4 * i) for i, c in enumerate(_CHANNELS)}
        return out

    def _state_text(self) -> str:
        st = self.state()
        units = "; ".join(
            f"{u}: {st[u]['state']} at instruction {st[u]['index']}"
            + (f", queue fill {st[u]['queue_fill']}" if "queue_fill" in st[u] else "") for u in _UNITS)
        tokens = ", ".join(f"{c}={n}" for c, n in st["tokens"].items())
        return f"unit state: {units}; tokens: {tokens}"

    def _hardware_error(self) -> SimulationError:
        status = self.read_reg(hwgen.REG_STATUS)
        code, field, unit = status & 0xFF, (status >> 8) & 0xFF, (status >> 16) & 0xF
        index = self.read_reg(hwgen.REG_ERR_INSN)
        value = self.read_reg(hwgen.REG_ERR_VALUE)
        limit = self.read_reg(hwgen.REG_ERR_LIMIT)
        state = self._state_text()
        self._recover()
        cls = _ERRORS.get(code, SimulationError)
        what = hwgen.ERROR_NAMES.get(code, f"error code {code}")
        if code == hwgen.ERR_WATCHDOG:
            msg = f"tsim: deadlock: no unit made progress for {limit} cycles (watchdog); {state}"
        else:
            fname = hwgen.FIELD_NAMES.get(field, f"field {field}")
            if field == hwgen.FIELD_CHANNEL:
                value_text = hwgen.CHANNEL_NAMES.get(value, str(value))
            else:
                value_text = repr(value)
            bound = f" (limit {limit})" if code != hwgen.ERR_INVALID_INSN else ""
            if field == hwgen.FIELD_ALU_OPCODE and value in isa.ALU_OPTIONS:
                # an opcode of a hardware option this configuration lacks
                bound = f" ({self.env.option_refusal(isa.ALU_OPTIONS[value], isa.ALU_NAMES[value])})"
            msg = (f"tsim: {what} at instruction {index} ({hwgen.UNIT_NAMES.get(unit, unit)} unit): "
                   f"{fname} {value_text}{bound}; {state}")
        return cls(msg, insn_index=None if code == hwgen.ERR_WATCHDOG else index)

    def _check(self, insn_phys_addr, insn_count: int):
        """The checks before launch: alignment, the stream inside an allocation, then
        :func:`vta.sim.stream.check_stream` (with ``check_streams``) or the transfers alone.
        Returns the decoded columns and the tokens to hold back per channel."""
        if not isinstance(insn_phys_addr, (int, np.integer)) or insn_phys_addr % _INSN_BYTES:
            raise DRAMAccessError(f"instruction address {insn_phys_addr!r} is not a 16-byte aligned integer")
        insn_phys_addr = int(insn_phys_addr)
        self.dram.check(insn_phys_addr, insn_count * _INSN_BYTES, "instruction fetch")
        raw = self.dram.data[insn_phys_addr:insn_phys_addr + insn_count * _INSN_BYTES].copy()
        cols = isa.decode_array(raw, self.env)
        words = raw.view("<i8").reshape(insn_count, 2)
        outstanding = [self._tokens[c] for c in _FSIM_ORDER]
        if self.check_streams:
            lent, _ = check_stream(self.env, words, self.dram, outstanding)
        else:
            _check_transfers(self.env, self.dram, cols)  # the core checks no allocation itself
            try:
                lent = lent_tokens(Program(words, self.env).flow, outstanding)
            except SimulationError:  # invalid token flags: left for the core to report
                lent = outstanding
        held = dict(zip(_FSIM_ORDER, (a - b for a, b in zip(outstanding, lent))))
        return cols, {c: held[c] for c in _CHANNELS}

    def _recover(self) -> None:
        """After a failed run: the reset state of the contract (the core halts on errors until
        reset), counted in ``runs_failed``."""
        self._stats["runs_failed"] += 1
        try:
            self.reset()
        except SimulationError as exc:  # a broken design: keep the run's own error the one raised
            self._reset_core()
            log.warning("tsim: the scratchpads could not be zeroed after a failed run: %s", exc)


def _check_transfers(env: Environment, dram: DRAM, cols) -> None:
    """Raise DRAMAccessError for the first LOAD/STORE whose DRAM range is not inside one allocation.

    Only transfers the core would execute are checked (LOAD of UOP/WGT/INP/ACC/ACC_8BIT, STORE
    of OUT); an invalid memory type is left for the core to report.
    """
    op = cols.header["opcode"]
    m = cols.mem
    mt = m["memory_type"]
    elem = np.zeros(len(op), dtype=np.int64)
    for code in (isa.MEM_UOP, isa.MEM_WGT, isa.MEM_INP, isa.MEM_ACC, isa.MEM_ACC_8BIT):
        elem[(op == isa.OPCODE_LOAD) & (mt == code)] = env.elem_bytes(code)
    elem[(op == isa.OPCODE_STORE) & (mt == isa.MEM_OUT)] = env.elem_bytes(isa.MEM_OUT)
    rows = np.nonzero((elem > 0) & (m["x_size"] > 0) & (m["y_size"] > 0))[0]
    if rows.size == 0:
        return
    e = elem[rows]
    start = m["dram_base"][rows] * e
    extent = ((m["y_size"][rows] - 1) * m["x_stride"][rows] + m["x_size"][rows]) * e
    for k, row in enumerate(rows):
        name = f"{isa.OPCODE_NAMES[int(op[row])]} {isa.MEM_NAMES[int(mt[row])]}"
        try:
            dram.check(int(start[k]), int(extent[k]), f"instruction {int(row)} ({name})")
        except DRAMAccessError as exc:
            raise DRAMAccessError(f"tsim: {exc}", insn_index=int(row)) from None


def _stream_stats(env: Environment, cols) -> dict[str, int]:
    """The upstream statistics of one executed stream, counted as fsim counts them."""
    op = cols.header["opcode"]
    m = cols.mem
    load = op == isa.OPCODE_LOAD
    nelem = m["x_size"] * m["y_size"]
    mt = m["memory_type"]

    def total(mask, nbytes) -> int:
        return int(nelem[mask].sum()) * nbytes

    out = {
        "inp_load_nbytes": total(load & (mt == isa.MEM_INP), env.INP_ELEM_BYTES),
        "wgt_load_nbytes": total(load & (mt == isa.MEM_WGT), env.WGT_ELEM_BYTES),
        "acc_load_nbytes": total(load & ((mt == isa.MEM_ACC) | (mt == isa.MEM_ACC_8BIT)), env.ACC_ELEM_BYTES),
        "uop_load_nbytes": total(load & (mt == isa.MEM_UOP), 4),
        "out_store_nbytes": total(op == isa.OPCODE_STORE, env.BATCH * env.BLOCK_OUT * env.OUT_WIDTH // 8),
    }
    for key, opcode, fmt in (("gemm_counter", isa.OPCODE_GEMM, cols.gemm), ("alu_counter", isa.OPCODE_ALU, cols.alu)):
        rows = op == opcode
        if opcode == isa.OPCODE_GEMM:
            rows &= fmt["reset_reg"] == 0
        span = np.maximum(fmt["uop_end"] - fmt["uop_bgn"], 0)
        out[key] = int((fmt["iter_out"] * fmt["iter_in"] * span)[rows].sum())
    mem = (op == isa.OPCODE_LOAD) | (op == isa.OPCODE_STORE)
    out["insn_load"] = int(((op == isa.OPCODE_LOAD) & (m["x_size"] > 0)).sum())
    out["insn_store"] = int(((op == isa.OPCODE_STORE) & (m["x_size"] > 0)).sum())
    out["insn_gemm"] = int((op == isa.OPCODE_GEMM).sum())
    out["insn_alu"] = int((op == isa.OPCODE_ALU).sum())
    out["insn_finish"] = int((op == isa.OPCODE_FINISH).sum())
    out["insn_nop"] = int((mem & (m["x_size"] == 0)).sum())  # x_size 0 loads and stores
    return out


# ---------------------------------------------------------------------------- module loader
class TSimModule:
    """A loaded tsim hardware library, as ``runtime.module.loadfile_vta-tsim`` returns it.

    Parameters
    ----------
    path : str or Path
        The library built by :func:`vta.sim.tsim.library.build`.

    Raises
    ------
    ModuleLoadError
        If the file is missing or not a tsim library.
    """

    type_key = "vta-tsim"

    def __init__(self, path: str | os.PathLike):
        self.library = load_library(path)
        self.path = self.library.path

    def __repr__(self) -> str:
        return f"TSimModule({str(self.path)!r})"


def _tsim_env(env: Environment) -> Environment:
    """``env`` itself when its TARGET is tsim, else the same configuration with TARGET tsim."""
    return env if env.TARGET == "tsim" else Environment({**env.cfg_dict, "TARGET": "tsim"})


def init(module: TSimModule, env: Environment | None = None) -> TSim:
    """Attach a loaded hardware library: the runtime's tsim device becomes a :class:`TSim` on it.

    The device runs on :func:`vta.dram.global_dram`; a TSim attached earlier for the same
    configuration is closed.

    Raises
    ------
    TypeError
        If ``module`` is not a :class:`TSimModule`.
    ConfigError
        If the library was built for another configuration.
    """
    if not isinstance(module, TSimModule):
        raise TypeError(f"vta.tsim.init needs a module of type 'vta-tsim', got {module!r}")
    env = _tsim_env(env or get_env())
    dev = TSim(env, global_dram(), library=module.library)
    old = attach_device(env, dev)
    if isinstance(old, TSim) and old is not dev:
        old.close()
    return dev


def _current_tsim() -> TSim:
    dev = device_for(_tsim_env(get_env()))
    if not isinstance(dev, TSim):
        raise SimulationError(f"the runtime's tsim device is {dev!r}, not a TSim")
    return dev


def profiler_status() -> str:
    """JSON text of the runtime tsim device's statistics (``vta.tsim.profiler_status``)."""
    return json.dumps(_current_tsim().stats())


def profiler_clear() -> None:
    """Zero the runtime tsim device's statistics (``vta.tsim.profiler_clear``)."""
    _current_tsim().clear_stats()


#: The global functions tsim offers; the runtime publishes them in its registry.
GLOBAL_FUNCTIONS = {
    "runtime.module.loadfile_vta-tsim": lambda path, fmt="": TSimModule(path),
    "vta.tsim.init": init,
    "vta.tsim.profiler_status": profiler_status,
    "vta.tsim.profiler_clear": profiler_clear,
}
