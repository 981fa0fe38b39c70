"""Checks of the upstream arguments shared by the ``vta.top`` operators."""

from __future__ import annotations

import re
from typing import Any

from ..env import get_env

__all__ = ["pair", "check_packed_layout", "out_dtype_or_acc"]


def pair(v: Any, what: str, op: str) -> tuple[int, int]:
    """``v`` (an int or a pair of ints) as a pair.

    Raises
    ------
    ValueError
        If ``v`` is neither.
    """
    if isinstance(v, int) and not isinstance(v, bool):
        return v, v
    try:
        a, b = (int(x) for x in v)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{op}: {what} must be an int or a pair of ints, got {v!r}") from exc
    return a, b


def check_packed_layout(layout: Any, op: str) -> None:
    """Accept only the packed layout ``NCHW<b>n<c>c`` of the active configuration.

    Raises
    ------
    ValueError
        If ``layout`` is another layout or its blocks differ from ``env.BATCH``/``env.BLOCK_IN``.
    """
    env = get_env()
    m = re.fullmatch(r"NCHW(\d+)n(\d+)c", str(layout))
    if m is None:
        raise ValueError(
            f"{op}: layout {layout!r} is not packed; the accelerator takes NCHW{env.BATCH}n{env.BLOCK_IN}c"
        )
    if (int(m.group(1)), int(m.group(2))) != (env.BATCH, env.BLOCK_IN):
        raise ValueError(f"{op}: layout {layout!r} does not match this configuration's NCHW{env.BATCH}n{env.BLOCK_IN}c")


def out_dtype_or_acc(out_dtype: Any) -> str:
    """``out_dtype``, or the configuration's accumulator type when None."""
    return str(out_dtype) if out_dtype is not None else get_env().acc_dtype
