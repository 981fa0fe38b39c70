"""Seeing what was built: record the instruction streams the runtime hands the device.

Inside ``with capture() as cap:`` every ``VTADeviceRun`` of this thread is recorded by the
bridge (:mod:`vta.runtime.vta_bridge`) before the device runs it: the instruction words and
the micro-ops of every LOAD UOP, read from DRAM at that moment (the runtime loads every uop
kernel a run uses within that run, so each run is self-contained). With ``execute=False`` the
device is not run at all: the streams are only recorded and the output arrays stay untouched.

:class:`CapturedRun` decodes a stream with :mod:`vta.isa`: ``instructions()`` as records,
``disassemble()`` in the upstream dump format, ``uop_kernels()`` as the distinct GEMM and ALU
kernels with the instructions that run them. Compiled and loaded modules expose the same
through ``mod.disassemble(*args)``, ``mod.instructions(*args)`` and ``mod.uop_kernels(*args)``.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from .. import isa
from ..env import Environment

__all__ = ["capture", "active", "Capture", "CapturedRun", "UopKernel", "UopLoad", "CaptureViews"]

_state = threading.local()


@dataclass(frozen=True)
class UopLoad:
    """The micro-ops one LOAD UOP instruction brought into the uop SRAM."""

    insn_index: int
    sram_base: int
    words: tuple[int, ...]


@dataclass(frozen=True)
class UopKernel:
    """A distinct micro-op kernel: its unit, hardware loops, uops and the instructions running it.

    Attributes
    ----------
    kind : str
        ``"GEMM"``, ``"GEMM reset"`` or ``"ALU"``.
    loops : tuple
        ``((iter_out, dst_out, src_out, wgt_out), (iter_in, dst_in, src_in, wgt_in))`` (wgt is 0 for ALU).
    uops : tuple of vta.isa.Uop
    insn_indices : tuple of int
        Indices (in the run's stream) of the instructions that run this kernel.
    alu_ops : tuple of str
        The ALU operation of the kernel (``("SHR imm 8",)``, ``("ADD",)``); empty for GEMM.
    """

    kind: str
    loops: tuple
    uops: tuple
    insn_indices: tuple
    alu_ops: tuple = ()

    def __str__(self) -> str:
        (io, do, so, wo), (ii, di, si, wi) = self.loops
        used = ", ".join(f"#{k}" for k in self.insn_indices[:8]) + (" ..." if len(self.insn_indices) > 8 else "")
        ops = f" ({', '.join(self.alu_ops)})" if self.alu_ops else ""
        lines = [(f"{self.kind} kernel{ops}: {len(self.uops)} uop(s), run by {len(self.insn_indices)} "
                  f"instruction(s) [{used}]"),
                 f"  loop outer: iter {io}, acc +{do}, src +{so}, wgt +{wo}",
                 f"  loop inner: iter {ii}, acc +{di}, src +{si}, wgt +{wi}"]
        for k, u in enumerate(self.uops):
            src = "inp" if self.kind.startswith("GEMM") else "acc"
            lines.append(f"  uop {k}: acc[{u.dst_idx}] <- {src}[{u.src_idx}], wgt[{u.wgt_idx}]")
        return "\n".join(lines)


@dataclass
class CapturedRun:
    """One ``VTADeviceRun``: the instruction words and the uops its LOAD UOPs read.

    Attributes
    ----------
    env : Environment
        The configuration the stream is encoded for.
    words : numpy.ndarray
        ``(N, 2)`` uint64, the instructions as the device reads them.
    uop_loads : list of UopLoad
    executed : bool
        Whether the device ran the stream.
    """

    env: Environment
    words: np.ndarray
    uop_loads: list[UopLoad] = field(default_factory=list)
    executed: bool = True

    def instructions(self) -> list:
        """The decoded instructions (:mod:`vta.isa` records).

        Raises
        ------
        DecodeError
            If a word is not a valid instruction.
        """
        return isa.decode_program(self.words, self.env)

    def disassemble(self, tokens: bool = True) -> str:
        """The stream in the upstream ``VTA_DEBUG_DUMP_INSN`` format (:func:`vta.isa.disassemble`).

        Raises
        ------
        DecodeError
            If a word is not a valid instruction.
        """
        return isa.disassemble(self.words, self.env, tokens=tokens)

    def uop_kernels(self) -> list[UopKernel]:
        """The distinct GEMM and ALU kernels, in order of first use.

        The uop SRAM is replayed from the LOAD UOPs; each GEMM/ALU instruction's kernel is its
        uop range there plus its two hardware loops.

        Raises
        ------
        DecodeError
            If an instruction or a uop range refers to uop SRAM that no LOAD UOP of the run wrote.
        """
        from ..errors import DecodeError

        sram: dict[int, int] = {}
        loads = {ld.insn_index: ld for ld in self.uop_loads}
        users: dict[tuple, list[int]] = {}  # kernel key -> instruction indices, in first-use order
        for k, insn in enumerate(self.instructions()):
            if k in loads:
                ld = loads[k]
                for j, w in enumerate(ld.words):
                    sram[ld.sram_base + j] = w
            if not isinstance(insn, (isa.GemmInsn, isa.AluInsn)):
                continue
            missing = [a for a in range(insn.uop_bgn, insn.uop_end) if a not in sram]
            if missing:
                raise DecodeError(
                    f"instruction {k} uses uop SRAM [{insn.uop_bgn}, {insn.uop_end}) but entries "
                    f"{missing[:4]!r} were not loaded in this run"
                )
            uops = tuple(isa.decode_uop(sram[a], self.env) for a in range(insn.uop_bgn, insn.uop_end))
            if isinstance(insn, isa.GemmInsn):
                kind = "GEMM reset" if insn.reset_reg else "GEMM"
                loops = ((insn.iter_out, insn.dst_factor_out, insn.src_factor_out, insn.wgt_factor_out),
                         (insn.iter_in, insn.dst_factor_in, insn.src_factor_in, insn.wgt_factor_in))
                ops: tuple[str, ...] = ()
            else:
                kind = "ALU"
                loops = ((insn.iter_out, insn.dst_factor_out, insn.src_factor_out, 0),
                         (insn.iter_in, insn.dst_factor_in, insn.src_factor_in, 0))
                op = isa.ALU_NAMES.get(insn.alu_opcode, str(insn.alu_opcode))
                ops = (op + (f" imm {insn.imm}" if insn.use_imm else ""),)
            # As in the runtime, an ALU kernel is recorded together with its operation.
            users.setdefault((kind, ops, loops, uops), []).append(k)
        return [UopKernel(kind, loops, uops, tuple(idx), ops) for (kind, ops, loops, uops), idx in users.items()]


class Capture:
    """The runs recorded inside one :func:`capture` block.

    Attributes
    ----------
    execute : bool
        Whether recorded streams are also run on the device.
    runs : list of CapturedRun
    """

    def __init__(self, execute: bool = True):
        self.execute = bool(execute)
        self.runs: list[CapturedRun] = []

    def record(self, env: Environment, dram, insn_phys: int, insn_count: int) -> CapturedRun:
        """Copy one stream and the uops of its LOAD UOPs out of DRAM (called by the bridge).

        Raises
        ------
        DRAMAccessError
            If the stream or a uop range lies outside the arena.
        """
        raw = dram.read(int(insn_phys), int(insn_count) * 16)
        words = np.frombuffer(raw, dtype=np.uint64).reshape(-1, 2).copy()
        run = CapturedRun(env, words, executed=self.execute)
        if len(words):
            uop_bytes = env.elem_bytes(isa.MEM_UOP)  # one 32-bit uop per DRAM element
            cols = isa.decode_array(words, env)
            is_uop = ((cols.header["opcode"] == isa.OPCODE_LOAD) & (cols.mem["memory_type"] == isa.MEM_UOP)
                      & (cols.mem["x_size"] > 0))
            for k in np.flatnonzero(is_uop):
                base, x, y = int(cols.mem["dram_base"][k]), int(cols.mem["x_size"][k]), int(cols.mem["y_size"][k])
                stride = int(cols.mem["x_stride"][k]) or x
                uops: list[int] = []
                for row in range(max(y, 1)):
                    data = dram.read((base + row * stride) * uop_bytes, x * uop_bytes)
                    uops.extend(int(w) for w in np.frombuffer(data, dtype=np.uint32))
                run.uop_loads.append(UopLoad(int(k), int(cols.mem["sram_base"][k]), tuple(uops)))
        self.runs.append(run)
        return run

    def instructions(self) -> list:
        """The decoded instructions of every run, concatenated."""
        return [insn for run in self.runs for insn in run.instructions()]

    def disassemble(self, tokens: bool = True) -> str:
        """Every run's stream in the upstream dump format (a header line per run if several)."""
        if len(self.runs) == 1:
            return self.runs[0].disassemble(tokens)
        parts = [f"RUN {k} of {len(self.runs)}\n{run.disassemble(tokens)}" for k, run in enumerate(self.runs)]
        return "\n".join(parts)

    def uop_kernels(self) -> list[UopKernel]:
        """The distinct kernels of every run (a kernel used in several runs is listed per run)."""
        return [kern for run in self.runs for kern in run.uop_kernels()]

    # ------------------------------------------------------------------ across a connection
    def to_wire(self) -> dict:
        """The capture as plain data (dicts, lists, ints, NumPy arrays) an RPC reply can carry."""
        return {"execute": self.execute, "runs": [
            {"config": dict(run.env.cfg_dict), "words": run.words, "executed": run.executed,
             "uop_loads": [{"insn_index": ld.insn_index, "sram_base": ld.sram_base,
                            "words": np.asarray(ld.words, dtype=np.uint32)} for ld in run.uop_loads]}
            for run in self.runs]}

    @classmethod
    def from_wire(cls, data: dict) -> "Capture":
        """Rebuild a capture from :meth:`to_wire` data (received from an RPC server).

        Raises
        ------
        ValueError
            If the data does not have that shape (a name says which part).
        vta.errors.ConfigError
            If a run's configuration is not a valid one.
        """
        if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
            raise ValueError(f"a captured stream must be a dict with a list of runs, got {type(data).__name__}")
        cap = cls(bool(data.get("execute", False)))
        for k, run in enumerate(data["runs"]):
            words = run.get("words") if isinstance(run, dict) else None
            if not isinstance(words, np.ndarray) or words.ndim != 2 or words.shape[1] != 2:
                raise ValueError(f"captured run {k}: 'words' must be an (N, 2) array of instruction words")
            config = run.get("config")
            if not isinstance(config, dict):
                raise ValueError(f"captured run {k}: 'config' must be a configuration dict")
            loads = []
            for ld in run.get("uop_loads", []):
                try:
                    loads.append(UopLoad(int(ld["insn_index"]), int(ld["sram_base"]),
                                         tuple(int(w) for w in np.asarray(ld["words"]).reshape(-1))))
                except (KeyError, TypeError, ValueError) as exc:
                    raise ValueError(f"captured run {k}: malformed uop load {ld!r}") from exc
            cap.runs.append(CapturedRun(Environment(config), words.astype(np.uint64), loads, bool(run.get("executed"))))
        return cap


class CaptureViews:
    """``disassemble``, ``instructions`` and ``uop_kernels`` of a call, for any class with a
    ``capture(*args, execute=..., func_name=...)`` returning a :class:`Capture` (local modules
    and modules reached through an RPC session)."""

    def capture(self, *args, execute: bool = False, func_name: str | None = None) -> Capture:
        raise NotImplementedError

    def disassemble(self, *args, execute: bool = False, func_name: str | None = None, uops: bool = False) -> str:
        """The instructions a call on ``args`` generates, in the upstream dump format.

        Parameters
        ----------
        *args, execute, func_name
            As ``capture``.
        uops : bool
            Append the distinct uop kernels (:meth:`uop_kernels`).

        Raises
        ------
        AttributeError, TVMError
            As ``capture``.
        """
        cap = self.capture(*args, execute=execute, func_name=func_name)
        text = cap.disassemble()
        if uops:
            text += "\nUOP KERNELS\n" + "\n".join(str(k) for k in cap.uop_kernels()) + "\n"
        return text

    def instructions(self, *args, execute: bool = False, func_name: str | None = None) -> list:
        """The decoded instructions (:mod:`vta.isa` records) a call on ``args`` generates.

        Raises
        ------
        AttributeError, TVMError
            As ``capture``.
        """
        return self.capture(*args, execute=execute, func_name=func_name).instructions()

    def uop_kernels(self, *args, execute: bool = False, func_name: str | None = None) -> list:
        """The distinct GEMM/ALU uop kernels (:class:`UopKernel`) of a call.

        Raises
        ------
        AttributeError, TVMError
            As ``capture``.
        """
        return self.capture(*args, execute=execute, func_name=func_name).uop_kernels()


def active() -> Capture | None:
    """The innermost capture of this thread, or None."""
    stack = getattr(_state, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def capture(execute: bool = True) -> Iterator[Capture]:
    """Record every stream this thread hands the device inside the block.

    Parameters
    ----------
    execute : bool
        Also run the streams (default). False records only: outputs are not written and the
        device's statistics and tokens do not change.

    Yields
    ------
    Capture
    """
    cap = Capture(execute)
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    stack.append(cap)
    try:
        yield cap
    finally:
        stack.remove(cap)
