"""fsim's compiled engine probes numba's private ``_nrt`` option instead of assuming it."""

from __future__ import annotations

import pytest

from vta.sim.fsim import kernels


def _njit_without_nrt(**options):
    """A stand-in for a numba release that no longer knows ``_nrt`` (it fails on first call)."""
    def decorate(func):
        def compiled(*args):
            if "_nrt" in options:
                raise KeyError("Unrecognized options: {'_nrt'}")
            return func(*args)
        return compiled
    return decorate


def test_a_numba_without_the_option_compiles_with_reference_counting():
    assert kernels._accepts_nrt_option(_njit_without_nrt) is False


def test_the_installed_numba_accepts_the_option():
    numba = pytest.importorskip("numba")
    assert kernels._accepts_nrt_option(numba.njit) is True
