"""Profile-guided optimisation (GCC) of the tsim library's per-cycle code.

:func:`vta.sim.tsim.library.build` compiles the Verilated model and the shim twice: once
instrumented (``-fprofile-generate``), which then runs a training program in a
child process (:func:`train`; the profile is written when that process exits), and once with
the profile (``-fprofile-use``). The training program (:func:`training_program`) is built from instructions
here, below the compiler. The profile only steers the compiler's code layout, inlining,
unrolling and branch order: the library computes the same bits and the same cycles, and runs
faster: per CPU second about 7% on ResNet-18 C11 and 10% on the GEMM-heavy program of
``benchmarks/tsim_throughput.py`` (neither is the training program), with about 3% fewer host
instructions per simulated cycle.

The training set (:data:`TRAINING`) is part of the library's cache key: the same sources, flags
and training give the same library. Set ``VTA_TSIM_PGO=0`` to build without it (for instance with
a compiler other than GCC); that setting is part of the key too.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

from ... import isa
from ...dram import DRAM
from ...env import Environment
from ...errors import BuildError

__all__ = ["TRAINING", "GENERATE_FLAGS", "USE_FLAGS", "enabled", "train", "recipe", "training_program"]

#: The training program (:func:`training_program`): rounds of a tiled GEMM with an ALU epilogue,
#: the load, compute and store stages overlapping through dependency tokens as in a compiled
#: convolution, and the runs of it the instrumented library makes.
TRAINING = ("tiled-gemm-alu", "rounds=8", "reps=12", "runs=4", "seed=0")
_ROUNDS = 8
_REPS = 12  # repetitions of the accumulating GEMM: GEMM uops in most cycles, as in a convolution
#: Runs of the training program (:mod:`vta.sim.tsim.pgo_train`).
RUNS = 4
#: Compiler flags (the C++ preprocessor and compiler line, and the link line) of the instrumented
#: build. The model is single-threaded, so the counters need no atomic updates.
GENERATE_FLAGS = ("-fprofile-generate -fprofile-update=single", "-fprofile-generate")
#: Compiler flags of the build with the profile: code the training did not reach (the checks'
#: failure paths, the run-time library) is compiled as without a profile.
USE_FLAGS = "-fprofile-use -fprofile-partial-training -Wno-missing-profile"
#: Characters of the training's output kept in a BuildError.
_TAIL_CHARS = 4000


@functools.lru_cache(maxsize=None)
def _compiler_is_gcc() -> bool:
    """Whether ``c++`` (the compiler of Verilator's makefile) is GCC, whose profile flags these are."""
    try:
        proc = subprocess.run(["c++", "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError:
        return False
    return proc.returncode == 0 and "Free Software Foundation" in proc.stdout and "clang" not in proc.stdout


def enabled() -> bool:
    """Whether builds use the profile: on Linux x86-64 with GCC, unless ``VTA_TSIM_PGO`` is ``0``.

    Raises
    ------
    BuildError
        If ``VTA_TSIM_PGO`` is set to anything but ``0`` or ``1``.
    """
    value = os.environ.get("VTA_TSIM_PGO", "1")
    if value not in ("0", "1"):
        raise BuildError(f"VTA_TSIM_PGO is {value!r}; accepted: '0' (build without a profile) or '1' (the default)")
    return (value == "1" and platform.system() == "Linux" and platform.machine() in ("x86_64", "AMD64")
            and _compiler_is_gcc())


def recipe() -> list[str]:
    """What the profile depends on besides the sources and the configuration (for the cache key)."""
    return ["pgo", *TRAINING, *GENERATE_FLAGS, USE_FLAGS]


def train(library: Path, env: Environment, cwd: Path) -> None:
    """Run the training program on the instrumented ``library`` in a child process.

    Parameters
    ----------
    library : Path
        The instrumented build.
    env : Environment
        Its configuration.
    cwd : Path
        Working directory of the child.

    Raises
    ------
    BuildError
        If the child fails (the message ends with the tail of its output).
    """
    package_root = Path(__file__).resolve().parents[3]
    path = os.pathsep.join([str(package_root), *filter(None, [os.environ.get("PYTHONPATH")])])
    cmd = [sys.executable, "-m", "vta.sim.tsim.pgo_train", str(library), json.dumps(env.cfg_dict)]
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=dict(os.environ, PYTHONPATH=path))
    if proc.returncode != 0:
        raise BuildError(f"the profile-guided build's training run failed (exit code {proc.returncode}); set "
                         f"VTA_TSIM_PGO=0 to build without a profile:\n{proc.stdout[-_TAIL_CHARS:]}")


def _sizes(env: Environment) -> tuple[int, int]:
    """(rows m, input blocks k) of a training round that fit the configuration's buffers."""
    k = max(1, min(4, env.WGT_BUFF_DEPTH, env.UOP_BUFF_DEPTH - 2))
    m = max(1, min(16, (env.INP_BUFF_DEPTH - 2) // k, env.ACC_BUFF_DEPTH))
    return m, k


def training_program(env: Environment, dram: DRAM, seed: int = 0) -> tuple[int, int, list[int]]:
    """Encode the training program in ``dram``: ``(insn_addr, insn_count, allocations)``.

    Each of :data:`_ROUNDS` rounds loads an input tile (padded on both sides) and a weight tile,
    resets and accumulates an ``m x k`` GEMM, runs an epilogue of the ALU operations of the
    configuration (immediate and two-operand), and stores the tile; the load of round ``r + 1``
    waits for the GEMM of round ``r`` (g2l), its GEMM for the store of round ``r`` (s2g). Every
    token pushed is popped. The values are random: only the work matters, not the result.
    """
    rng = np.random.default_rng(seed)
    m, k = _sizes(env)
    inp = rng.integers(-128, 128, size=(m * k * env.INP_ELEM_BYTES,), dtype=np.int8)
    wgt = rng.integers(-128, 128, size=(k * env.WGT_ELEM_BYTES,), dtype=np.int8)
    uops = [isa.Uop(0, 1 + kk, kk) for kk in range(k)] + [isa.Uop(0, 0, 0)]
    uop_words = np.array([isa.encode_uop(u, env) for u in uops], dtype=np.uint32)
    addrs = [dram.alloc(inp.nbytes), dram.alloc(wgt.nbytes), dram.alloc(uop_words.nbytes),
             dram.alloc(m * env.OUT_ELEM_BYTES)]
    inp_addr, wgt_addr, uop_addr, out_addr = addrs
    dram.write(inp_addr, inp)
    dram.write(wgt_addr, wgt)
    dram.write(uop_addr, uop_words)
    alu = [(op, imm) for op, imm in ((isa.ALU_ADD, 3), (isa.ALU_MUL, 2), (isa.ALU_SHR, 4), (isa.ALU_MIN, 127),
                                     (isa.ALU_MAX, -128)) if isa.check_alu_opcode(op, env) is None]
    program: list[isa.Insn] = [isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_UOP, dram_base=uop_addr // 4,
                                           y_size=1, x_size=len(uops), x_stride=len(uops))]
    for r in range(_ROUNDS):
        last = r == _ROUNDS - 1
        program += [
            isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_INP, dram_base=inp_addr // env.INP_ELEM_BYTES,
                        y_size=1, x_size=m * k, x_stride=m * k, x_pad_0=1, x_pad_1=1, pop_next_dep=int(r > 0)),
            isa.MemInsn(opcode=isa.OPCODE_LOAD, memory_type=isa.MEM_WGT, dram_base=wgt_addr // env.WGT_ELEM_BYTES,
                        y_size=1, x_size=k, x_stride=k, push_next_dep=1),
            isa.GemmInsn(reset_reg=1, uop_bgn=k, uop_end=k + 1, iter_out=m, dst_factor_out=1, pop_next_dep=int(r > 0)),
            isa.GemmInsn(uop_bgn=0, uop_end=k, iter_out=m, iter_in=_REPS, dst_factor_out=1, src_factor_out=k,
                         pop_prev_dep=1, push_prev_dep=int(not last)),
            isa.AluInsn(uop_bgn=k, uop_end=k + 1, iter_out=m, dst_factor_out=1, src_factor_out=1,
                        alu_opcode=isa.ALU_ADD),
        ]
        program += [isa.AluInsn(uop_bgn=k, uop_end=k + 1, iter_out=m, dst_factor_out=1, src_factor_out=1,
                                alu_opcode=op, use_imm=1, imm=imm, push_next_dep=int(i == len(alu) - 1))
                    for i, (op, imm) in enumerate(alu)]
        program.append(isa.MemInsn(opcode=isa.OPCODE_STORE, memory_type=isa.MEM_OUT,
                                   dram_base=out_addr // env.OUT_ELEM_BYTES, y_size=1, x_size=m, x_stride=m,
                                   pop_prev_dep=1, push_prev_dep=1))
    program.append(isa.FinishInsn(pop_next_dep=1))
    words = isa.encode_program(program, env)
    insn_addr = dram.alloc(words.nbytes)
    dram.write(insn_addr, words)
    return insn_addr, len(program), addrs + [insn_addr]
