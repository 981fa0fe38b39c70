"""``topi.tag``: the operator-pattern tags TVM's operators carry (``te.tag_scope(tag=topi.tag.ELEMWISE)``)."""

from __future__ import annotations

__all__ = ["ELEMWISE", "BROADCAST", "INJECTIVE", "COMM_REDUCE", "COMM_REDUCE_IDX", "is_broadcast", "is_injective"]

#: Element-wise: each output element reads the same element of each input.
ELEMWISE = "elemwise"
#: Element-wise with broadcasting (an input of a smaller shape is read at index 0 where it is 1).
BROADCAST = "broadcast"
#: Any one-to-one index mapping (reshape, transpose, pad ...).
INJECTIVE = "injective"
#: A commutative reduction.
COMM_REDUCE = "comm_reduce"
#: A commutative reduction returning an index (argmax).
COMM_REDUCE_IDX = "comm_reduce_idx"


def is_broadcast(tag: str) -> bool:
    """Whether ``tag`` marks an element-wise or broadcast stage (possibly with a suffix)."""
    return tag in (ELEMWISE, BROADCAST) or tag.startswith(ELEMWISE + "_") or tag.startswith(BROADCAST + "_")


def is_injective(tag: str) -> bool:
    """Whether ``tag`` marks an injective stage (element-wise and broadcast ones included)."""
    return is_broadcast(tag) or tag == INJECTIVE or tag.startswith(INJECTIVE + "_")
