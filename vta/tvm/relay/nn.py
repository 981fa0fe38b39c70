"""``tvm.relay.nn``: the padding helper upstream VTA tests call (``relay.nn.get_pad_tuple2d``)."""

from __future__ import annotations

from typing import Any

from .._missing import missing

__all__ = ["get_pad_tuple2d"]


def get_pad_tuple2d(padding: Any) -> tuple[int, int, int, int]:
    """The 2-D padding as ``(top, left, bottom, right)``.

    Parameters
    ----------
    padding : int, or a tuple/list of 1, 2 or 4 ints
        One value for every side, ``(pad_h, pad_w)`` (top = bottom, left = right), or the four
        sides already.

    Raises
    ------
    ValueError
        If ``padding`` has another length or holds a negative value or a non-integer.
    """
    if isinstance(padding, int) and not isinstance(padding, bool):
        values: list[Any] = [padding]
    elif isinstance(padding, (tuple, list)):
        values = list(padding)
    else:
        raise ValueError(f"padding must be an int or a tuple of 1, 2 or 4 ints, got {padding!r}")
    try:
        ints = [int(v) for v in values]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"padding must hold integers, got {padding!r}") from exc
    if any(isinstance(v, bool) or int(v) != v for v in values) or any(v < 0 for v in ints):
        raise ValueError(f"padding must hold non-negative integers, got {padding!r}")
    if len(ints) == 1:
        return (ints[0],) * 4  # type: ignore[return-value]
    if len(ints) == 2:
        return ints[0], ints[1], ints[0], ints[1]
    if len(ints) == 4:
        return ints[0], ints[1], ints[2], ints[3]
    raise ValueError(f"padding must have 1, 2 or 4 values, got {len(ints)}: {padding!r}")


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
