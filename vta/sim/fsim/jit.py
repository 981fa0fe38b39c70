"""An optional compiled engine for fsim (numba), bit-identical to the NumPy opcode functions.

The NumPy functions of :mod:`vta.sim.fsim.units` are the specification. Executing one small
instruction through them costs tens of microseconds of interpreter overhead, so a stream of
many small instructions is slow. This module compiles one loop that executes a stretch of the
execution order directly on the same scratchpad arrays and the DRAM arena, with the plain
sequential loops of ``reference/vta-isa.md`` section 4.

The loop decodes each instruction's fields from the raw words as it reaches it and runs one
small helper per opcode, inlined; it is compiled without numba's reference counting, which
would otherwise cost more than a small instruction's work (see :func:`kernels._stretch`).

The compiled loop handles the common case and *defers* everything else: when an instruction
would fail a check (an index or address out of range, an invalid field), is an enormous GEMM,
or uses an element width the loop does not implement (accumulators narrower than 32 bits), the
loop stops and returns its position. The simulator then executes that instruction through the
NumPy functions -- which raise the precise error when there is one -- and resumes the loop
after it. Both paths therefore always agree.

Sub-byte inputs, weights and outputs (1, 2 or 4 bits, several elements to a byte, the first in
the lowest bits) are unpacked with sign extension on LOAD and packed on STORE inside the loop,
like :func:`vta.sim.fsim.units.unpack_signed` and :func:`~vta.sim.fsim.units.pack_low_bits`.

Runs of consecutive GEMMs that differ only in their micro-op (the inner loops of a blocked
matrix product) are executed inside the loop as matrix products, with no Python in between: on
a CPU with AVX-512 VNNI and 16-lane blocks, by int8 dot products of the operands packed as
bytes (:func:`vta.sim.fsim.kernels.int8_dots_available`); elsewhere as BLAS products of the
float32 scratchpads, read in place where their layout allows and gathered otherwise. Both are
exact (see :mod:`vta.sim.fsim.kernels`).

numba is optional: without it (or with ``engine="numpy"``) fsim uses the NumPy path alone.
Compiled code is cached on disk (:mod:`vta.sim.numba_cache`).
"""

from __future__ import annotations

import importlib.util

import numpy as np

from ... import isa
from ...env import Environment
from ..rules import alu_mask
from . import kernels
from .kernels import COUNT_KEYS

__all__ = ["BATCH_MIN_MACS", "BIG_GEMM_MACS", "JitEngine", "available"]

#: Single GEMMs with at least this many multiply-accumulates go to the NumPy path (which splits
#: them into BLAS products in bounded memory); the loop handles everything smaller.
BIG_GEMM_MACS = 1 << 30
#: Runs of lined-up GEMMs doing at least this many multiply-accumulates in all are executed as
#: BLAS products inside the loop (smaller ones by the loop's own multiply-add nest, which wins
#: below about this size). Read when a :class:`JitEngine` is made.
BATCH_MIN_MACS = 1 << 20
#: Float32 scratch an engine keeps for its BLAS products (1 MiB; a product needing more allocates
#: its own for the time of the run of GEMMs).
MATS_FLOATS = 1 << 18


def available() -> bool:
    """Whether numba can be imported (the compiled engine is usable)."""
    return importlib.util.find_spec("numba") is not None


def _compile():
    """Import numba and compile the loop (once; cached on disk, see :mod:`vta.sim.numba_cache`)."""
    import numba

    # numba calls BLAS (for the batched GEMM products) through SciPy's BLAS bindings; load them
    # now, so that fsim's thread limit (set up on first use) sees that library too.
    blas = importlib.util.find_spec("scipy") is not None
    if blas:
        importlib.import_module("scipy.linalg.cython_blas")
    return kernels.compile_all(numba.njit, blas=blas)


class JitEngine:
    """Runs execution orders for one configuration with the compiled loop.

    Parameters
    ----------
    env : Environment
        The configuration.
    batch_gemms : bool
        Execute runs of lined-up GEMMs (at least :data:`BATCH_MIN_MACS` multiply-accumulates)
        as BLAS products inside the loop.

    Raises
    ------
    ImportError
        If numba is not installed.
    """

    def __init__(self, env: Environment, batch_gemms: bool = True):
        self.kernel = _compile()
        lay = isa.layout(env)
        uf = {f.name: f for f in lay.uop}
        # element widths the loop packs and unpacks (1, 2, 4 or 8 bits: every encodable one)
        widths_ok = all(w in (1, 2, 4, 8) for w in (env.INP_WIDTH, env.WGT_WIDTH, env.OUT_WIDTH))
        self.cfg = np.array([
            env.BATCH, env.BLOCK_IN, env.BLOCK_OUT,
            env.INP_ELEM_BYTES, env.WGT_ELEM_BYTES, env.ACC_ELEM_BYTES, env.OUT_ELEM_BYTES, env.ACC_8BIT_ELEM_BYTES,
            uf["dst_idx"].lo, uf["dst_idx"].width, uf["src_idx"].lo, uf["src_idx"].width,
            uf["wgt_idx"].lo, uf["wgt_idx"].width,
            int(widths_ok), int(env.ACC_WIDTH == 32), BIG_GEMM_MACS,
            BATCH_MIN_MACS if batch_gemms else -1,
            env.INP_WIDTH, env.WGT_WIDTH, env.OUT_WIDTH,  # element bits (slots 18..20)
        ], dtype=np.int64)
        #: Per memory type (UOP, WGT, INP, ACC, OUT, ACC_8BIT): buffer depth and element bytes
        #: (OUT: the accumulator a STORE reads and the bytes it writes).
        self.depths = np.array([env.UOP_BUFF_DEPTH, env.WGT_BUFF_DEPTH, env.INP_BUFF_DEPTH, env.ACC_BUFF_DEPTH,
                                env.ACC_BUFF_DEPTH, env.ACC_BUFF_DEPTH], dtype=np.int64)
        self.elems = np.array([env.elem_bytes(isa.MEM_UOP), env.WGT_ELEM_BYTES, env.INP_ELEM_BYTES,
                               env.ACC_ELEM_BYTES, env.OUT_ELEM_BYTES, env.elem_bytes(isa.MEM_ACC_8BIT)],
                              dtype=np.int64)
        #: The ALU opcodes the configuration accepts, as a bit mask (the pre-pass flags any other).
        self.alu_ok = alu_mask(env)
        self.batch_gemms = bool(batch_gemms)
        #: Runs of GEMMs executed as matrix products during the last :meth:`run` (a diagnostic).
        self.batched_runs = 0
        #: Those of them done by int8 dot products (:func:`vta.sim.fsim.kernels.int8_dots_available`).
        self.int8_runs = 0
        #: Instructions the last :meth:`run` handed to the NumPy path (a diagnostic).
        self.deferred = 0
        #: Scratch of the BLAS products (float32; pages are touched on first use only).
        self.mats = np.empty(MATS_FLOATS if batch_gemms else 0, dtype=np.float32)
        #: The weight blocks transposed, as the loop's dot products read them, and the weight
        #: version each was transposed at (the loop fills both as GEMMs read the blocks; kept
        #: between runs so the pages are not faulted in again: untouched pages cost nothing).
        self.wt = np.empty((env.WGT_BUFF_DEPTH, env.BLOCK_IN, env.BLOCK_OUT), dtype=np.float32)
        self.wver = np.empty(env.WGT_BUFF_DEPTH, dtype=np.int64)
        #: The last stream :meth:`prechecks` checked: (its words, (tokens, allocation starts and
        #: ends), the result). The checks depend on nothing else, so a run of the same stream with
        #: the same tokens and allocations reuses the result instead of checking every row again.
        self._checked: tuple | None = None

        fields = [lay.header[0]] + [lay.field("mem", k) for k in kernels.MEM_COLUMNS] \
            + [lay.field("gemm", k) for k in kernels.GEMM_COLUMNS] \
            + [lay.field("alu", k) for k in kernels.ALU_COLUMNS]
        #: Per column of the field layout above: (word, shift, mask, sign bit or 0).
        self.table = np.array([(f.lo // 64, f.lo % 64, (1 << f.width) - 1, (1 << (f.width - 1)) if f.signed else 0)
                               for f in fields], dtype=np.int64)

    def prechecks(self, words: np.ndarray, tokens: list, dram) -> tuple[list | None, list[int]]:
        """The checks made before a run, in one compiled pass (:func:`kernels._prepass`).

        Returns
        -------
        (list of 4 int or None, list of int)
            The token counts after the run when the stream is valid and its ``tokens`` let it
            run in stream order (None means "check the slow way": the stream may be invalid,
            out of order or deadlocked); and the LOAD and STORE rows whose fields alone fail
            a check: the candidates :func:`vta.sim.stream.confirm_suspects` confirms
            one by one.
        """
        starts, ends = _allocations(dram)
        words = np.ascontiguousarray(words)
        key = (tuple(int(t) for t in tokens), starts.tobytes(), ends.tobytes())
        kept = self._checked
        if kept is not None and kept[1] == key and kernels.same_words(words, kept[0]):
            after, suspects = kept[2]
        else:
            state = np.zeros(6, dtype=np.int64)
            state[:4] = tokens
            state[4] = self.alu_ok
            out = np.empty(words.shape[0], dtype=np.int64)
            found = kernels.prepass(words, self.table, self.depths, self.elems, np.stack((starts, ends), axis=1),
                                    state, out)
            after, suspects = (state[:4].tolist() if state[5] else None), out[:found].tolist()
            self._checked = (words.copy(), key, (after, suspects))
        return (None if after is None else list(after)), list(suspects)

    def runs_as_written(self, words: np.ndarray, tokens: list) -> bool:
        """Whether a stream is valid and its tokens let it run in stream order (the first half of
        :meth:`prechecks`). On success ``tokens`` is updated to the counts after the run."""
        state = np.zeros(6, dtype=np.int64)
        state[:4] = tokens
        state[4] = self.alu_ok
        kernels.prepass(np.ascontiguousarray(words), self.table, self.depths, self.elems, np.zeros((1, 2), np.int64),
                        state, np.empty(words.shape[0], dtype=np.int64))
        if not state[5]:
            return False
        tokens[:] = state[:4].tolist()
        return True

    def field_suspects(self, words: np.ndarray, dram) -> list[int]:
        """The LOAD and STORE rows whose fields alone fail a check (the second half of
        :meth:`prechecks`)."""
        return self.prechecks(words, [0, 0, 0, 0], dram)[1]

    def run(self, sim, program, order: np.ndarray, count_numpy) -> None:
        """Execute ``order`` on ``sim``; advance ``sim._position`` as instructions complete.

        Adds the statistics of everything executed to ``sim``'s counters, using
        ``count_numpy(stats, program, indices, env)`` for the instructions run by the NumPy path.
        """
        words = np.ascontiguousarray(program.words)
        starts, ends = _allocations(sim.dram)
        sp = sim.sram
        order = np.ascontiguousarray(order, dtype=np.int64)
        n = order.size
        counts = np.zeros(len(COUNT_KEYS) + 2, dtype=np.int64)  # + runs executed as products, as int8 ones
        deferred = []
        data = sim.dram.data
        try:
            while sim._position < n:
                sim._position = self.kernel(order, sim._position, words, self.table, sp.uop_dst, sp.uop_src,
                                            sp.uop_wgt, sp.inp, sp.wgt, sp.acc, data, data.view(np.int8),
                                            data.view(np.int32), starts, ends, self.cfg, counts, self.mats, self.wt,
                                            self.wver)
                if sim._position == n:
                    break
                # deferred: the NumPy path executes it, or raises the precise error
                i = int(order[sim._position])
                sim.step(program, i)
                deferred.append(i)
                sim._position += 1
        finally:
            values = counts.tolist()
            for key, value in zip(COUNT_KEYS, values[:-2], strict=True):  # the last two: batched runs
                sim._stats[key] += value
            self.batched_runs, self.int8_runs = values[-2], values[-1]
            self.deferred = len(deferred)
            count_numpy(sim._stats, program, np.asarray(deferred, dtype=np.int64), sim.env)


def _allocations(dram) -> tuple[np.ndarray, np.ndarray]:
    """Start and end addresses of the live allocations of ``dram`` (one empty one if there are none),
    from the arena's bounds array (made once per allocation generation)."""
    bounds = dram.bounds()
    if not bounds.shape[0]:
        return np.zeros(1, np.int64), np.zeros(1, np.int64)
    return np.ascontiguousarray(bounds[:, 0]), np.ascontiguousarray(bounds[:, 1])
