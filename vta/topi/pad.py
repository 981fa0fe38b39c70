"""Zero padding of a tensor expression (upstream ``topi.nn.pad``) and the subsampled view a
strided one-tap kernel reads (:func:`subsample`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..te import compute, if_then_else
from ..te.tensor import Tensor
from ..tir import nodes as n

__all__ = ["PAD_TAG", "SUBSAMPLE_TAG", "pad", "subsample"]

#: Tag of the stage :func:`pad` creates; schedules look for ``"pad"`` in a producer's tag.
PAD_TAG = "injective,pad"

#: Tag of the stage :func:`subsample` creates.
SUBSAMPLE_TAG = "injective,subsample"


def _const_int(value: Any, what: str) -> int:
    if isinstance(value, n.IntImm):
        value = value.value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"pad: {what} must be an integer, got {value!r}")
    if value < 0:
        raise ValueError(f"pad: {what} must be non-negative, got {value!r}")
    return value


def pad(data: Tensor, pad_before: Sequence[Any], pad_after: Sequence[Any] | None = None, pad_value: Any = 0,
        name: str = "pad") -> Tensor:
    """``data`` surrounded by ``pad_value``: ``pad_before[i]`` elements before and ``pad_after[i]``
    after along dimension ``i``.

    The result is one compute stage tagged :data:`PAD_TAG` whose body is
    ``if_then_else(inside, data[i - pad_before], pad_value)`` (a plain copy along dimensions
    without padding). On VTA, a padded stage in an on-chip scope with a ``dma_copy`` pragma
    becomes a padded load: the hardware writes the zeros itself.

    Parameters
    ----------
    data : Tensor
        The tensor to pad.
    pad_before : sequence of int
        Padding before each dimension (one entry per dimension).
    pad_after : sequence of int, optional
        Padding after each dimension; ``pad_before`` when omitted.
    pad_value : int or float
        The value of the padding, converted to ``data.dtype``.
    name : str
        Name of the stage.

    Returns
    -------
    Tensor

    Raises
    ------
    ValueError
        If ``pad_before``/``pad_after`` do not have one entry per dimension, or an entry is negative.
    TypeError
        If ``data`` is not a tensor or an entry is not an integer.
    """
    if not isinstance(data, Tensor):
        raise TypeError(f"pad: expected a Tensor, got {data!r}")
    pad_before = list(pad_before)
    pad_after = list(pad_before if pad_after is None else pad_after)
    ndim = len(data.shape)
    for what, pads in (("pad_before", pad_before), ("pad_after", pad_after)):
        if len(pads) != ndim:
            raise ValueError(
                f"pad: {what} has {len(pads)} entries {pads!r} but tensor {data.name!r} has {ndim} dimensions"
            )
    before = [_const_int(p, f"pad_before[{i}]") for i, p in enumerate(pad_before)]
    after = [_const_int(p, f"pad_after[{i}]") for i, p in enumerate(pad_after)]
    out_shape = tuple(n.IntImm(s.value + b + a) if isinstance(s, n.IntImm) else s + (b + a)
                      for s, b, a in zip(data.shape, before, after, strict=True))
    fill = n.const(pad_value, data.dtype)

    def _pad(*idx):
        inside, src = [], []
        for i, v in enumerate(idx):
            if before[i] == 0 and after[i] == 0:
                src.append(v)
                continue
            src.append(v - before[i])
            inside.append(v >= before[i])
            inside.append(v < data.shape[i] + before[i])
        if not inside:
            return data(*src)
        cond = inside[0]
        for c in inside[1:]:
            cond = n.And(cond, c)
        return if_then_else(cond, data(*src), fill)

    return compute(out_shape, _pad, name=name, tag=PAD_TAG)


def subsample(data: Tensor, steps: Sequence[int], name: str = "subsample") -> Tensor:
    """Every ``steps[i]``-th element of ``data`` along each dimension ``i``, from the first one:
    ``out[i0, i1, ...] = data[i0 * steps[0], i1 * steps[1], ...]``, of extent
    ``ceil(shape[i] / steps[i])``.

    A strided convolution whose kernel has one tap along a dimension reads only these elements
    of its input; in an on-chip scope under a ``dma_copy`` pragma the stage is a load whose DRAM
    rows (or elements) are ``steps[i]`` apart, so the rows in between are never moved. The stage
    carries ``attrs["steps"]`` (the steps as a tuple) and the tag :data:`SUBSAMPLE_TAG`.

    Raises
    ------
    ValueError
        If ``steps`` does not have one entry per dimension or an entry is not positive.
    TypeError
        If ``data`` is not a tensor, an entry is not an integer, or a dimension is not constant.
    """
    if not isinstance(data, Tensor):
        raise TypeError(f"subsample: expected a Tensor, got {data!r}")
    steps = [_const_int(v, f"steps[{i}]") for i, v in enumerate(steps)]
    if len(steps) != len(data.shape):
        raise ValueError(f"subsample: steps {steps!r} need one entry per dimension of {data.name!r} "
                         f"({len(data.shape)})")
    if 0 in steps:
        raise ValueError(f"subsample: steps {steps!r} must be positive")
    shape = [_const_int(s, f"the extent of dimension {i}") for i, s in enumerate(data.shape)]
    out_shape = tuple(-(-e // k) for e, k in zip(shape, steps, strict=True))

    def _take(*idx):
        return data(*[v * k if k != 1 else v for v, k in zip(idx, steps, strict=True)])

    return compute(out_shape, _take, name=name, tag=SUBSAMPLE_TAG, attrs={"steps": tuple(steps)})
