"""The :class:`Workload` record and the helpers every schedule builder shares.

A workload is a schedule with its argument tensors, the input arrays (packed, by argument name)
and a NumPy reference computing the output from those inputs, independently of the compiler.
The last argument is always the output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from vta import te
from vta.tir import nodes as tn

from ..frontend.interp import storage_dtype, wrap


@dataclass
class Workload:
    """A schedule ready to lower, build and run, and the NumPy oracle of its output.

    Attributes
    ----------
    name : str
        Short name (used as the function name by the frontend tests).
    schedule : te.Schedule
        The schedule.
    args : list
        Argument tensors in call order; the last one is the output.
    inputs : dict
        Input arrays by argument name (every argument but the output).
    reference : callable
        ``reference(inputs) -> ndarray``: the expected output, computed with NumPy.
    """

    name: str
    schedule: te.Schedule
    args: list
    inputs: dict
    reference: Callable[[dict], np.ndarray]

    @property
    def out_name(self) -> str:
        """Name of the output argument."""
        return self.args[-1].name

    @property
    def out_shape(self) -> tuple:
        """Shape of the output argument."""
        return tuple(int(s) for s in self.args[-1].shape)

    @property
    def out_dtype(self) -> str:
        """NumPy dtype holding the output (sub-byte integers live in int8/uint8)."""
        return storage_dtype(self.args[-1].dtype)

    def expected(self) -> np.ndarray:
        """The NumPy reference applied to :attr:`inputs`."""
        return self.reference(self.inputs)

    def arrays(self) -> list:
        """Fresh arrays in argument order: copies of the inputs, then a zeroed output.

        Raises
        ------
        KeyError
            If an argument other than the output has no input array.
        """
        missing = [t.name for t in self.args[:-1] if t.name not in self.inputs]
        if missing:
            raise KeyError(f"workload {self.name!r}: no input array for argument(s) {missing!r}; "
                           f"inputs are {sorted(self.inputs)!r}")
        return [self.inputs[t.name].copy() for t in self.args[:-1]] + [np.zeros(self.out_shape, self.out_dtype)]


def default_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """``rng``, or a generator seeded with 0 when it is ``None`` (reproducible by default)."""
    return np.random.default_rng(0) if rng is None else rng


def wrap_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """Two's complement truncation of integer ``values`` to an IR dtype, stored as NumPy."""
    return wrap(np.asarray(values), dtype).astype(storage_dtype(dtype))


def wrap_int32(values: np.ndarray) -> np.ndarray:
    """Integer ``values`` wrapped to the int32 range, kept as int64 (accumulator arithmetic)."""
    return wrap(np.asarray(values), "int32")


def random_like(rng: np.random.Generator, t) -> np.ndarray:
    """Random values over the whole range of tensor ``t``'s (possibly sub-byte) integer dtype."""
    bits = tn.dtype_bits(t.dtype)
    lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if t.dtype.startswith("int") else (0, 1 << bits)
    return rng.integers(lo, hi, tuple(int(x) for x in t.shape)).astype(storage_dtype(t.dtype))


def clip_max(env) -> int:
    """Largest value of the input dtype: the upper bound of the tutorials' clip."""
    return (1 << (env.INP_WIDTH - 1)) - 1


def copy_stage(t, name: str):
    """A compute stage copying tensor ``t`` (becomes a DMA load once scoped and pragma'd)."""
    return te.compute(t.shape, lambda *i: t(*i), name)


def zero_pad(x, before: Sequence[int], after: Sequence[int], name: str):
    """``x`` zero-padded by ``before``/``after`` elements per dimension, through ``if_then_else``.

    Same call shape as ``vta.topi.nn.pad`` (data, pad_before, pad_after, name=...), written
    here so the frontend tests do not depend on TOPI.
    """
    shape = tuple(int(s) + b + a for s, b, a in zip(x.shape, before, after, strict=True))

    def body(*i):
        conds, src = [], []
        for d, idx in enumerate(i):
            if before[d] or after[d]:
                conds += [idx >= before[d], idx < int(x.shape[d]) + before[d]]
            src.append(idx - before[d] if before[d] else idx)
        cond = conds[0]
        for c in conds[1:]:
            cond = tn.And(cond, c)
        return te.if_then_else(cond, x(*src), 0)

    return te.compute(shape, body, name=name)


def gemm_reference(a: np.ndarray, b: np.ndarray, shift: int | None = None, clip: int | None = None) -> np.ndarray:
    """Packed GEMM with int32 accumulation, then optional ``>> shift`` and ``clip(0, clip)``.

    ``a`` is (o, n, BATCH, BLOCK_IN), ``b`` is (m, n, BLOCK_OUT, BLOCK_IN); the result is
    (o, m, BATCH, BLOCK_OUT) as int64 (the caller narrows it to the output dtype).
    """
    acc = wrap_int32(np.einsum("onbi,mnci->ombc", a.astype(np.int64), b.astype(np.int64)))
    if shift is not None:
        acc = acc >> shift
    if clip is not None:
        acc = np.clip(acc, 0, clip)
    return acc


def gemm_stage(env, a_buf, b_buf, n_tiles: int, oshape, name: str, ko_name: str = "ko", ki_name: str = "ki",
               inp=None):
    """The packed GEMM compute stage ``out[bo, co, bi, ci] = sum a_buf[bo, k, bi, i] * b_buf[co, k, ci, i]``.

    ``inp(bo, bi, ko, ki)`` may replace the (cast) read of ``a_buf``, e.g. to guard it.
    """
    ko = te.reduce_axis((0, n_tiles), name=ko_name)
    ki = te.reduce_axis((0, env.BLOCK_IN), name=ki_name)

    def read(bo, bi):
        if inp is not None:
            return inp(bo, bi, ko, ki)
        return a_buf[bo, ko, bi, ki].astype(env.acc_dtype)

    return te.compute(oshape, lambda bo, co, bi, ci: te.sum(
        read(bo, bi) * b_buf[co, ko, ci, ki].astype(env.acc_dtype), axis=[ko, ki]), name=name)


def requantize_stages(env, acc, shift: int, names=("res_shr", "res_max", "res_min", "res")):
    """``int8(clip(acc >> shift, 0, clip_max))`` as three accumulator stages and the cast.

    Returns ``(shr, max, min, out)``.
    """
    shape = acc.shape
    shr = te.compute(shape, lambda *i: acc(*i) >> shift, name=names[0])
    mx = te.compute(shape, lambda *i: te.max(shr(*i), 0), names[1])
    mn = te.compute(shape, lambda *i: te.min(mx(*i), clip_max(env)), names[2])
    out = te.compute(shape, lambda *i: mn(*i).astype(env.inp_dtype), name=names[3])
    return shr, mx, mn, out


def alu_pipeline(env, s, acc_stages, alu_stages, out) -> None:
    """Accumulator scope for ``acc_stages``, ``alu`` pragmas on ``alu_stages``, and a DMA store
    of ``out`` at its outermost axis unless ``out`` is ``None`` (the caller stores it)."""
    for t in acc_stages:
        s[t].set_scope(env.acc_scope)
    for t in alu_stages:
        s[t].pragma(s[t].op.axis[0], env.alu)
    if out is not None:
        s[out].pragma(s[out].op.axis[0], env.dma_copy)


def schedule_matmul(env, s, a_buf, b_buf, c_buf, out, store_axis=None):
    """Section 3.2's schedule of ``c_buf = a_buf . b_buf^T`` feeding ``out``: on-chip scopes, both
    loads at the outer reduction axis ``ko``, loop order (ko, bo, co, bi, ci, ki), DMA loads, and
    the store of ``out`` at ``store_axis`` (its outermost axis by default). Returns the tensor axis
    ``bi`` for the caller's tensorize or GEMM pragma."""
    s[a_buf].set_scope(env.inp_scope)
    s[b_buf].set_scope(env.wgt_scope)
    s[c_buf].set_scope(env.acc_scope)
    ko, ki = s[c_buf].op.reduce_axis
    bo, co, bi, ci = s[c_buf].op.axis
    s[c_buf].reorder(ko, bo, co, bi, ci, ki)
    s[a_buf].compute_at(s[c_buf], ko)
    s[b_buf].compute_at(s[c_buf], ko)
    s[a_buf].pragma(s[a_buf].op.axis[0], env.dma_copy)
    s[b_buf].pragma(s[b_buf].op.axis[0], env.dma_copy)
    s[out].pragma(s[out].op.axis[0] if store_axis is None else store_axis, env.dma_copy)
    return bi


def schedule_vadd(env, s, a_buf, b_buf, c_buf, out) -> None:
    """Section 3.1's schedule: both operands DMA'd into the accumulator, one ALU stage, a store."""
    for t in (a_buf, b_buf):
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    alu_pipeline(env, s, [a_buf, b_buf, c_buf], [c_buf], out)
