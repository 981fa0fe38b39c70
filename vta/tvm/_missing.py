"""Clear AttributeErrors for TVM names the compatibility namespace does not provide."""

from __future__ import annotations

from typing import Iterable

__all__ = ["missing"]


def missing(module: str, name: str, provided: Iterable[str]) -> AttributeError:
    """The error for ``<module>.<name>`` when ``name`` is not part of the namespace.

    Parameters
    ----------
    module : str
        The namespace, e.g. ``"vta.tvm.te"``.
    name : str
        The attribute that was asked for.
    provided : iterable of str
        The names the namespace does provide (listed in the message).

    Returns
    -------
    AttributeError
        Naming the missing attribute and what is available instead.
    """
    names = ", ".join(sorted(n for n in provided if not n.startswith("_")))
    return AttributeError(
        f"module {module!r} has no attribute {name!r}: the TVM compatibility namespace provides "
        f"only the names VTA programs use ({names})"
    )
