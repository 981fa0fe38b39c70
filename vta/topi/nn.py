"""Upstream spelling ``topi.nn.pad``."""

from .pad import pad

__all__ = ["pad"]
