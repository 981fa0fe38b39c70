"""``vta.top.dense_packed`` / ``schedule_dense_packed`` with upstream's signatures."""

from __future__ import annotations

from typing import Any

from ..topi import dense as _dense
from ._args import out_dtype_or_acc

__all__ = ["dense_packed", "schedule_dense_packed"]


def dense_packed(data: Any, kernel: Any, bias: Any = None, out_dtype: Any = None) -> Any:
    """The packed dense layer (tag ``"dense_pack"``): ``(N/BATCH, I/BLOCK_IN, BATCH, BLOCK_IN)``
    data times ``(O/BLOCK_OUT, I/BLOCK_IN, BLOCK_OUT, BLOCK_IN)`` weights.

    Parameters
    ----------
    data, kernel : Tensor
    bias : None
        Upstream's signature has it and ignores it; add a bias with ``topi.add`` after the
        layer. Only None is accepted, so that no bias is silently dropped.
    out_dtype : str, optional
        The accumulator type (``env.acc_dtype`` when None).

    Raises
    ------
    ValueError
        If a bias is given, or the operands are not packed 4-D tensors agreeing on the input
        features (as :func:`vta.topi.dense_packed`).
    """
    if bias is not None:
        raise ValueError("dense_packed: the bias argument is not applied by the packed layer (upstream ignores it); "
                         "pass None and add the bias with topi.add(res, bias)")
    return _dense.dense_packed(data, kernel, out_dtype_or_acc(out_dtype))


def schedule_dense_packed(outs: Any) -> Any:
    """The VTA schedule of a packed dense layer and its element-wise epilogue (default tiling).

    Raises
    ------
    ScheduleError
        As :func:`vta.topi.schedule_dense_packed`.
    """
    return _dense.schedule_dense_packed(outs)
