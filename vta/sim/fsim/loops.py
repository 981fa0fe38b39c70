"""Loop nests of GEMM and ALU instructions as whole-array NumPy operations.

A GEMM or ALU instruction runs ``for i_out, for i_in, for u in uop_bgn..uop_end`` and uses the
row indices ``uop[u].X + i_out*X_factor_out + i_in*X_factor_in`` for X in dst, src, wgt
(``reference/vta-isa.md`` 4.4 and 4.5). :class:`LoopNest` holds that nest and turns it into index
grids; :meth:`LoopNest.gemm_contributions` turns a GEMM into a few BLAS matrix products by
classifying each loop level by the operands it moves (a reduction, a row, a column, a batch
axis, or a pure repetition); :func:`alu_segments` splits an ALU sequence into runs that are
safe to execute as one vector operation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...errors import SRAMIndexError

__all__ = ["LoopNest", "alu_segments"]

#: Float32 / float64 sums of integers are exact up to these magnitudes.
_EXACT32 = float(1 << 24)
_EXACT = float(1 << 53)
#: Triples per chunk on the generic gather path (bounds temporary memory).
_CHUNK = 1 << 15
#: Use the per-micro-op BLAS path when a micro-op repeats at least this often.
_MIN_REPEAT = 8


@dataclass
class LoopNest:
    """The iteration space of one GEMM/ALU instruction.

    Attributes
    ----------
    iters : tuple of int
        Trip counts from the outermost level in: ``(iter_out, iter_in)`` for one instruction;
        a fused run of GEMMs (:func:`vta.sim.fsim.units.gemm_run`) adds a level in front.
    bases : dict
        Per role (``"dst"``, ``"src"``, ``"wgt"``), the micro-op index column over the uop range.
    factors : dict
        Per role, the index step of each level (``(factor_out, factor_in)``).
    uop_bgn : int
        First micro-op (for messages).
    """

    iters: tuple
    bases: dict
    factors: dict
    uop_bgn: int

    @classmethod
    def from_fields(cls, sp, f: dict, roles: tuple[str, ...]) -> "LoopNest":
        """Build the nest of a decoded GEMM/ALU instruction ``f`` over scratchpads ``sp``."""
        bgn, end = f["uop_bgn"], f["uop_end"]
        end = max(bgn, end)
        cols = {"dst": sp.uop_dst, "src": sp.uop_src, "wgt": sp.uop_wgt}
        bases = {r: cols[r][bgn:end] for r in roles}
        factors = {r: (f[f"{r}_factor_out"], f[f"{r}_factor_in"]) for r in roles}
        return cls((f["iter_out"], f["iter_in"]), bases, factors, bgn)

    @property
    def n_uops(self) -> int:
        return len(next(iter(self.bases.values())))

    @property
    def count(self) -> int:
        """Number of uop-iterations (``iter_out * iter_in * uops``)."""
        return math.prod(self.iters) * self.n_uops

    @property
    def empty(self) -> bool:
        return self.count == 0

    # -------------------------------------------------------------- checks and grids
    def check_bounds(self, index: int, name: str, limits: dict) -> None:
        """Require every index of every role to be below its buffer depth.

        Parameters
        ----------
        limits : dict
            Role -> ``(buffer name, depth)``.

        Raises
        ------
        SRAMIndexError
            Naming the instruction, the uop, the fields and the largest index reached.
        """
        o, i = self.iters[-2:]
        for role, base in self.bases.items():
            fo, fi = self.factors[role][-2:]
            u = int(np.argmax(base))
            top = int(base[u]) + sum((n - 1) * f for n, f in zip(self.iters, self.factors[role], strict=True))
            buf, depth = limits[role]
            if top >= depth:
                raise SRAMIndexError(
                    f"instruction {index} ({name}): {buf} index {role}_idx + i_out*{role}_factor_out + "
                    f"i_in*{role}_factor_in reaches {top} at uop {self.uop_bgn + u} ({role}_idx={int(base[u])}, "
                    f"{role}_factor_out={fo}, {role}_factor_in={fi}, iter_out={o}, iter_in={i}); "
                    f"accepted 0..{depth - 1}", index)

    def in_bounds(self, limits: dict) -> bool:
        """Whether every index of every role is below its depth (``limits``: role -> depth)."""
        return all(int(base.max()) + sum((n - 1) * f for n, f in zip(self.iters, self.factors[role], strict=True))
                   < limits[role] for role, base in self.bases.items())

    def flat(self, role: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Indices of ``role`` for uop-iterations ``lo..hi`` in execution order (i_out, i_in, u)."""
        hi = self.count if hi is None else hi
        return _positions(self.bases[role], self.iters, self.factors[role], lo, hi)

    def chunks(self, size: int = 1 << 20) -> Iterator[tuple[int, int]]:
        """``(lo, hi)`` ranges of at most ``size`` uop-iterations covering the nest in order."""
        for lo in range(0, self.count, size):
            yield lo, min(lo + size, self.count)

    def unique_rows(self, role: str) -> np.ndarray:
        """The distinct indices of ``role`` (loop levels that do not move it are dropped first)."""
        grid = self.bases[role]
        for n, f in zip(self.iters, self.factors[role], strict=True):
            if f:
                grid = (grid[None, :] + (np.arange(n) * f)[:, None]).reshape(-1)
        return np.unique(grid)

    # -------------------------------------------------------------- GEMM
    def gemm_contributions(self, inp: np.ndarray, wgt: np.ndarray,
                           max_product: int) -> Iterator[tuple[np.ndarray, np.ndarray, bool]]:
        """Yield ``(acc_rows, int64 contributions (n, BATCH, BLOCK_OUT), rows_unique)`` chunks.

        The contributions of all chunks add up (modulo 2^32) to what the sequential loop would
        add to the accumulator; every float sum stays below 2^53 so it is exact.
        """
        reps = math.prod(self.iters)
        if self.n_uops == 1 or reps >= _MIN_REPEAT * self.n_uops:
            for u in range(self.n_uops):
                done = self._affine(u, inp, wgt, max_product)
                if done is None:
                    break
                yield done
            else:
                return
            # an over-long reduction for float64: the generic path is exact for any size
            yield from self._gather(inp, wgt, start_uop=u)
            return
        yield from self._gather(inp, wgt, start_uop=0)

    def _axes(self) -> tuple[list, int]:
        """Loop levels that move at least one operand, and the repetition factor of the rest."""
        axes, mult = [], 1
        for level, extent in enumerate(self.iters):
            if extent == 1:
                continue
            f = {r: self.factors[r][level] for r in ("dst", "src", "wgt")}
            if not any(f.values()):
                mult *= extent
                continue
            axes.append((extent, f))
        return axes, mult

    def _affine(self, u: int, inp, wgt, max_product):
        """One micro-op's whole nest as one batched matrix product (None if not exact in float64)."""
        axes, mult = self._axes()
        d0, s0, w0 = (int(self.bases[r][u]) for r in ("dst", "src", "wgt"))
        n_ax = len(axes)
        in_s = [bool(a[1]["src"]) for a in axes]
        in_w = [bool(a[1]["wgt"]) for a in axes]
        in_d = [bool(a[1]["dst"]) for a in axes]
        summed = math.prod(a[0] for k, a in enumerate(axes) if not in_d[k])
        bound = float(max_product) * summed * inp.shape[-1]
        if bound >= _EXACT:
            return None
        ftype = np.float32 if bound <= _EXACT32 else np.float64
        x = as_strided(inp[s0:], shape=tuple(a[0] for k, a in enumerate(axes) if in_s[k]) + inp.shape[1:],
                       strides=tuple(a[1]["src"] * inp.strides[0] for k, a in enumerate(axes) if in_s[k])
                       + inp.strides[1:])
        w = as_strided(wgt[w0:], shape=tuple(a[0] for k, a in enumerate(axes) if in_w[k]) + wgt.shape[1:],
                       strides=tuple(a[1]["wgt"] * wgt.strides[0] for k, a in enumerate(axes) if in_w[k])
                       + wgt.strides[1:])
        x_ids = [k for k in range(n_ax) if in_s[k]]
        w_ids = [k for k in range(n_ax) if in_w[k]]
        # Levels that move only one operand and not dst are plain sums of that operand.
        for k in reversed(range(n_ax)):
            if in_s[k] and not in_w[k] and not in_d[k]:
                x = x.sum(axis=x_ids.index(k))
                x_ids.remove(k)
            if in_w[k] and not in_s[k] and not in_d[k]:
                w = w.sum(axis=w_ids.index(k))
                w_ids.remove(k)
        batch = [k for k in range(n_ax) if in_d[k] and in_s[k] and in_w[k]]
        rows_ax = [k for k in range(n_ax) if in_d[k] and in_s[k] and not in_w[k]]
        cols_ax = [k for k in range(n_ax) if in_d[k] and in_w[k] and not in_s[k]]
        red = [k for k in range(n_ax) if in_s[k] and in_w[k] and not in_d[k]]
        only_d = [k for k in range(n_ax) if in_d[k] and not in_s[k] and not in_w[k]]
        ext = [a[0] for a in axes]
        nb = math.prod(ext[k] for k in batch)
        nm = math.prod(ext[k] for k in rows_ax)
        nn = math.prod(ext[k] for k in cols_ax)
        nk = math.prod(ext[k] for k in red)
        nbat, kdim = inp.shape[1], inp.shape[2]
        nout = wgt.shape[1]
        nx = len(x_ids)
        xp = x.transpose([x_ids.index(k) for k in batch + rows_ax] + [nx]
                         + [x_ids.index(k) for k in red] + [nx + 1])
        xp = xp.astype(ftype, copy=False).reshape(nb, nm * nbat, nk * kdim)
        nw = len(w_ids)
        wp = w.transpose([w_ids.index(k) for k in batch + cols_ax] + [nw]
                         + [w_ids.index(k) for k in red] + [nw + 1])
        wp = wp.astype(ftype, copy=False).reshape(nb, nn * nout, nk * kdim)
        r = np.matmul(xp, wp.transpose(0, 2, 1))
        r = r.reshape(nb, nm, nbat, nn, nout).transpose(0, 1, 3, 2, 4)
        nd = math.prod(ext[k] for k in only_d)
        contrib = np.broadcast_to(r.reshape(nb * nm * nn, 1, nbat, nout), (nb * nm * nn, nd, nbat, nout))
        contrib = contrib.reshape(-1, nbat, nout).astype(np.int64)
        if mult != 1:
            contrib *= mult
        out_ax = batch + rows_ax + cols_ax + only_d
        rows = np.full(1, d0, dtype=np.int64)
        for k in out_ax:
            rows = (rows[:, None] + np.arange(ext[k]) * axes[k][1]["dst"]).reshape(-1)
        unique = _grid_injective([ext[k] for k in out_ax], [axes[k][1]["dst"] for k in out_ax])
        return rows, contrib, unique and self.n_uops == 1

    def _gather(self, inp, wgt, start_uop: int) -> Iterator[tuple[np.ndarray, np.ndarray, bool]]:
        """Generic path: gather the rows of each uop-iteration and multiply them in batches."""
        axes, mult = self._axes()
        ext = [a[0] for a in axes]
        n = math.prod(ext) * (self.n_uops - start_uop)
        for lo in range(0, n, _CHUNK):
            hi = min(n, lo + _CHUNK)
            idx = {}
            for r in ("dst", "src", "wgt"):
                idx[r] = _positions(self.bases[r][start_uop:], ext, [a[1][r] for a in axes], lo, hi)
            d = idx["dst"]
            x = inp[idx["src"]].astype(np.float64)
            w = wgt[idx["wgt"]].astype(np.float64)
            contrib = np.matmul(x, w.transpose(0, 2, 1)).astype(np.int64)
            if mult != 1:
                contrib *= mult
            yield d, contrib, False


def _positions(base: np.ndarray, extents, factors, lo: int, hi: int) -> np.ndarray:
    """Indices ``base[u] + sum_k i_k*factors[k]`` at flat positions ``lo..hi`` of the loop order
    (levels outermost first, the micro-op innermost); ``extents`` are the trip counts."""
    pos = np.arange(lo, hi, dtype=np.int64)
    rest, u = np.divmod(pos, base.size)
    out = base[u]
    for n, f in zip(reversed(list(extents)), reversed(list(factors)), strict=True):
        rest, i = np.divmod(rest, n)
        out = out + i * f
    return out


def _grid_injective(extents: list[int], factors: list[int]) -> bool:
    """Whether ``sum_k i_k * factors[k]`` (0 <= i_k < extents[k], factors > 0) never repeats."""
    if len(extents) <= 1:
        return True
    if len(extents) == 2:
        (e0, e1), (f0, f1) = extents, factors
        g = math.gcd(f0, f1)
        return f1 // g >= e0 or f0 // g >= e1
    return False


def alu_segments(dst: np.ndarray, src: np.ndarray | None) -> Iterator[tuple[int, int]]:
    """Split a sequence of ALU uop-iterations into runs safe to execute as one vector operation.

    Within a run every destination row is distinct and no source row was written by an earlier
    uop-iteration of the same run, so reading all operands first and writing all results after
    gives the sequential result.
    """
    n = dst.size
    if _safe(dst, src):
        yield 0, n
        return
    written: set[int] = set()
    lo = 0
    d_list = dst.tolist()
    s_list = d_list if src is None else src.tolist()
    for t in range(n):
        d, s = d_list[t], s_list[t]
        if d in written or (src is not None and s in written):
            yield lo, t
            lo = t
            written = set()
        written.add(d)
    yield lo, n


def _safe(dst: np.ndarray, src: np.ndarray | None) -> bool:
    order = np.argsort(dst, kind="stable")
    sd = dst[order]
    if sd.size > 1 and np.any(sd[1:] == sd[:-1]):
        return False
    if src is None:
        return True
    pos = np.clip(np.searchsorted(sd, src), 0, sd.size - 1)
    hit = sd[pos] == src
    writer = order[pos]
    return not np.any(hit & (writer < np.arange(src.size)))
