"""``tvm.testing``: comparison helpers used by VTA tests and tutorials."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._missing import missing

__all__ = ["assert_allclose"]


def _host(value: Any) -> np.ndarray:
    numpy = getattr(value, "numpy", None)
    return np.asarray(numpy() if callable(numpy) else value)


def assert_allclose(actual: Any, desired: Any, rtol: float = 1e-7, atol: float = 1e-7) -> None:
    """Assert that two arrays (NumPy arrays, NDArrays or lists) have one shape and close values.

    Parameters
    ----------
    actual, desired : array_like or NDArray
    rtol, atol : float
        Relative and absolute tolerance, as :func:`numpy.testing.assert_allclose`.

    Raises
    ------
    AssertionError
        If the shapes differ or a value is outside the tolerance.
    """
    a, d = _host(actual), _host(desired)
    if a.shape != d.shape:
        raise AssertionError(f"shapes differ: actual {a.shape!r}, desired {d.shape!r}")
    np.testing.assert_allclose(a, d, rtol=rtol, atol=atol, verbose=True)


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)
