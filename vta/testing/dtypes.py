"""Integer element types on the host: their value ranges, random data and wrap-around.

The tutorials and tests make host data for tensors whose element type comes from the
configuration (``env.inp_dtype`` is ``int8`` by default, ``int4`` on a narrow configuration).
NumPy has no 4-bit type, so values of a sub-byte type travel in ``int8`` (``uint8`` when
unsigned) and :func:`vta.tvm.nd.array` packs them (:mod:`vta.runtime.subbyte`). These helpers
keep that detail in one place:

* :func:`value_range` -- the smallest and largest value of a type;
* :func:`host_dtype` -- the NumPy dtype that carries its values;
* :func:`random_ints` -- random values that fit the type;
* :func:`wrap` -- what a narrowing cast leaves of wider values (the low bits, read back as
  the type), as the accelerator's store to a narrower output does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..runtime import subbyte

__all__ = ["value_range", "host_dtype", "random_ints", "wrap"]


def _bits_and_sign(dtype: Any) -> tuple[int, bool]:
    sub = subbyte.parse(dtype)
    if sub is not None:
        return sub.bits, sub.signed
    try:
        np_dtype = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"not an integer dtype: {dtype!r}") from exc
    if np_dtype.kind not in "iu":
        raise TypeError(f"not an integer dtype: {dtype!r} (kind {np_dtype.kind!r})")
    return np_dtype.itemsize * 8, np_dtype.kind == "i"


def value_range(dtype: Any) -> tuple[int, int]:
    """The smallest and largest value of an integer dtype.

    Parameters
    ----------
    dtype : str or numpy dtype
        ``"int8"``, ``"int32"``, ``"uint8"``, or a sub-byte type such as ``"int4"``.

    Returns
    -------
    (int, int)
        ``(lo, hi)``, both included: ``(-8, 7)`` for ``int4``, ``(-128, 127)`` for ``int8``.

    Raises
    ------
    TypeError
        If ``dtype`` is not an integer dtype.
    """
    bits, signed = _bits_and_sign(dtype)
    if signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def host_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype that carries values of ``dtype`` on the host.

    A sub-byte type is carried in ``int8`` (``uint8`` if unsigned); any other integer dtype is
    its own NumPy dtype.

    Raises
    ------
    TypeError
        If ``dtype`` is not an integer dtype.
    """
    _bits_and_sign(dtype)
    sub = subbyte.parse(dtype)
    return sub.numpy_dtype if sub is not None else np.dtype(dtype)


def random_ints(rng: np.random.Generator, dtype: Any, size: Any) -> np.ndarray:
    """Uniform random values covering the whole range of ``dtype``.

    Parameters
    ----------
    rng : numpy.random.Generator
    dtype : str or numpy dtype
        The element type the values must fit (see :func:`value_range`).
    size : int or tuple of int
        The shape of the result.

    Returns
    -------
    numpy.ndarray
        Of :func:`host_dtype` ``(dtype)``. For ``int8`` this draws exactly what
        ``rng.integers(-128, 128, size)`` draws.

    Raises
    ------
    TypeError
        If ``dtype`` is not an integer dtype.
    """
    lo, hi = value_range(dtype)
    return rng.integers(lo, hi + 1, size=size).astype(host_dtype(dtype))


def wrap(values: Any, dtype: Any) -> np.ndarray:
    """Narrow integer values to ``dtype`` as a cast in hardware does: keep the low bits.

    The kept bits are read back as ``dtype`` (two's complement when signed), so for ``int4``
    the value 9 becomes -7 and -9 becomes 7. For ``int8`` this is NumPy's ``astype("int8")``.

    Parameters
    ----------
    values : array_like of int
        Wider integers (``int32`` accumulator values, say).
    dtype : str or numpy dtype
        The narrow type.

    Returns
    -------
    numpy.ndarray
        Of :func:`host_dtype` ``(dtype)``, the same shape as ``values``.

    Raises
    ------
    TypeError
        If ``values`` are not integers or ``dtype`` is not an integer dtype.
    """
    bits, signed = _bits_and_sign(dtype)
    wide = np.asarray(values)
    if wide.dtype.kind not in "iu":
        raise TypeError(f"wrap takes integer values, got dtype {wide.dtype!r}")
    low = wide.astype(np.int64) & ((1 << bits) - 1)
    if signed:
        # A set top bit means a negative value: subtract 2**bits.
        low = np.where(low >= (1 << (bits - 1)), low - (1 << bits), low)
    return low.astype(host_dtype(dtype))
