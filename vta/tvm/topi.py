"""``tvm.topi``: padding, packing helpers and NumPy reference operators from :mod:`vta.topi`.

``vta.topi`` is imported on first use. Upstream spells some names in sub-namespaces
(``topi.nn.pad``, ``topi.testing.conv2d_nchw_python``); when ``vta.topi`` keeps them flat, the
sub-namespaces here forward to it, so both spellings work.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from ._missing import missing

__all__: list[str] = []  # every name is looked up in vta.topi on first use

_SUBSPACES = ("nn", "testing", "utils")


def _topi() -> ModuleType:
    """``vta.topi``, or an AttributeError if it does not exist in this installation."""
    try:
        return importlib.import_module("vta.topi")
    except ModuleNotFoundError as exc:
        if exc.name != "vta.topi":
            raise
        raise AttributeError(
            "vta.tvm.topi forwards to vta.topi, which is not installed in this tree"
        ) from exc


class _Forward:
    """A sub-namespace (``topi.nn``) whose names are looked up in ``vta.topi`` itself."""

    def __init__(self, name: str, source: ModuleType):
        self._name = name
        self._source = source

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(self._source, name)
        except AttributeError:
            raise missing(f"vta.tvm.topi.{self._name}", name, dir(self._source)) from None

    def __dir__(self) -> list[str]:
        return [n for n in dir(self._source) if not n.startswith("_")]

    def __repr__(self) -> str:
        return f"<vta.tvm.topi.{self._name}: forwards to vta.topi>"


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    topi = _topi()
    value = getattr(topi, name, None)
    if value is not None:
        return value
    if name in _SUBSPACES:
        try:
            return importlib.import_module(f"vta.topi.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"vta.topi.{name}":
                raise
        return _Forward(name, topi)
    raise missing(__name__, name, list(dir(topi)) + list(_SUBSPACES))
