"""The requantisation epilogue of the packed operators (as the upstream integration tests):
``>> shift``, ``+ bias`` (optional), clip to ``[0, 2^(INP_WIDTH-1) - 1]`` in two stages (min then
max), cast to the output dtype. Every stage is element-wise, so the packed schedules run them on
the ALU in the accumulator scope.
"""

from __future__ import annotations

from ..env import get_env
from ..te import compute
from ..te import max as te_max
from ..te import min as te_min
from ..te.tensor import Tensor
from ..tir import nodes as n

__all__ = ["BROADCAST_TAG", "ELEMWISE_TAG", "requantize"]

ELEMWISE_TAG = "elemwise"
BROADCAST_TAG = "broadcast"


def requantize(res: Tensor, bias: Tensor | None = None, shift: int = 8, out_dtype: str | None = None) -> Tensor:
    """``cast(clip((res >> shift) + bias, 0, 127))`` as four or five element-wise stages.

    Parameters
    ----------
    res : Tensor
        The int32 accumulator tensor (output of :func:`conv2d_packed` / :func:`dense_packed`).
    bias : Tensor, optional
        Added after the shift; same rank as ``res``, each dimension either equal to ``res``'s or 1
        (broadcast), e.g. ``(1, CO/BLOCK_OUT, 1, 1, BATCH, BLOCK_OUT)`` for a convolution.
    shift : int
        Arithmetic right shift (``env.WGT_WIDTH`` upstream: 8).
    out_dtype : str, optional
        The result dtype; ``env.out_dtype`` (int8) by default.

    Raises
    ------
    ValueError
        If ``bias`` has another rank or a dimension that neither matches nor is 1.
    """
    env = get_env()
    out_dtype = out_dtype or env.out_dtype
    shape = res.shape
    x = compute(shape, lambda *i: res(*i) >> shift, name="res_shr", tag=ELEMWISE_TAG)
    if bias is not None:
        if len(bias.shape) != len(shape):
            raise ValueError(f"requantize: bias shape {bias.shape!r} must have the rank of the result {shape!r}")
        bcast = []
        for d, (bs, rs) in enumerate(zip(bias.shape, shape, strict=True)):
            b, r = int(bs), int(rs)
            if b not in (1, r):
                raise ValueError(f"requantize: bias dimension {d} is {b!r}; accepted: 1 (broadcast) or {r!r}")
            bcast.append(b == 1 and r != 1)
        prev = x
        x = compute(shape,
                    lambda *i: prev(*i) + bias(*[n.IntImm(0) if bc else v for bc, v in zip(bcast, i, strict=True)]),
                    name="res_bias", tag=BROADCAST_TAG)
    hi = (1 << (env.INP_WIDTH - 1)) - 1
    lo_in = x
    x = compute(shape, lambda *i: te_min(lo_in(*i), n.const(hi, res.dtype)), name="res_min", tag=ELEMWISE_TAG)
    hi_in = x
    x = compute(shape, lambda *i: te_max(hi_in(*i), n.const(0, res.dtype)), name="res_max", tag=ELEMWISE_TAG)
    last = x
    return compute(shape, lambda *i: last(*i).astype(out_dtype), name="res", tag=ELEMWISE_TAG)
