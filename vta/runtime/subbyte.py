"""Sub-byte integer dtypes (``int4``, ``uint4``, ``int2``, ...): names, sizes and bit packing.

NumPy has no integer type narrower than a byte, so an array of dtype ``int4`` keeps its values
packed: ``8 // bits`` elements per byte, element ``i`` in bits ``[(i % k) * bits, (i % k + 1) *
bits)`` of byte ``i // k`` (``k = 8 // bits``), that is low bits first, two's complement for the
signed types. This is TVM's ``int4`` storage and VTA's DRAM and SRAM layout of a narrow tile
(reference vta-isa.md 4.1: sub-element ``j`` of an element occupies bits ``[j*bits +: bits]``). The
last byte of an odd count is padded with zero bits.

On the NumPy side such values travel as ``int8`` (signed types) or ``uint8`` (unsigned types):
:func:`pack` takes any integer array whose values fit, :func:`unpack` gives them back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DTypeRangeError

__all__ = ["SubByteDType", "parse", "pack", "unpack", "storage_nbytes"]

_NAME = re.compile(r"(u?)int([124])")


@dataclass(frozen=True)
class SubByteDType:
    """An integer dtype narrower than a byte.

    Attributes
    ----------
    name : str
        ``"int4"``, ``"uint2"``, ...
    bits : int
        1, 2 or 4.
    signed : bool
    """

    name: str
    bits: int
    signed: bool

    @property
    def lo(self) -> int:
        """Smallest value."""
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        """Largest value."""
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @property
    def per_byte(self) -> int:
        """Elements per byte."""
        return 8 // self.bits

    @property
    def numpy_dtype(self) -> np.dtype:
        """The NumPy dtype values are given and returned in (``int8`` or ``uint8``)."""
        return np.dtype(np.int8 if self.signed else np.uint8)

    @property
    def dl_code(self) -> int:
        """DLPack type code (0 int, 1 uint)."""
        return 0 if self.signed else 1

    def __str__(self) -> str:
        return self.name


def parse(dtype: Any) -> SubByteDType | None:
    """The :class:`SubByteDType` named by ``dtype``, or None for any other dtype.

    Accepts ``"int4"``, ``"uint4"``, ``"int2"``, ``"uint2"``, ``"int1"``, ``"uint1"`` and
    :class:`SubByteDType` values; everything else (NumPy dtypes included) gives None.
    """
    if isinstance(dtype, SubByteDType):
        return dtype
    if not isinstance(dtype, str):
        return None
    m = _NAME.fullmatch(dtype.strip())
    if m is None:
        return None
    return SubByteDType(dtype.strip(), int(m.group(2)), m.group(1) == "")


def storage_nbytes(count: int, dtype: SubByteDType) -> int:
    """Bytes holding ``count`` packed elements (the last byte may be partly used)."""
    return -(-int(count) // dtype.per_byte)


def _check_values(values: np.ndarray, dtype: SubByteDType) -> None:
    if values.dtype.kind not in "iu":
        raise TypeError(
            f"values for a {dtype} array must be integers (e.g. an int8 NumPy array), got dtype {str(values.dtype)!r}"
        )
    if values.size == 0:
        return
    lo, hi = int(values.min()), int(values.max())
    if lo < dtype.lo or hi > dtype.hi:
        bad = lo if lo < dtype.lo else hi
        where = np.unravel_index(int(np.argmax(values == bad)), values.shape)
        raise DTypeRangeError(
            f"value {bad} at index {tuple(int(i) for i in where)} does not fit {dtype}: "
            f"{dtype} holds integers in [{dtype.lo}, {dtype.hi}]"
        )


def pack(values: Any, dtype: SubByteDType | str) -> np.ndarray:
    """Pack integer ``values`` (any shape, read in C order) into bytes.

    Parameters
    ----------
    values : array_like of int
        Each value must lie in ``[dtype.lo, dtype.hi]`` (``[-8, 7]`` for ``int4``).
    dtype : SubByteDType or str

    Returns
    -------
    numpy.ndarray
        ``uint8``, :func:`storage_nbytes` long.

    Raises
    ------
    DTypeRangeError
        If a value does not fit; the message names the value, its index and the range.
    TypeError
        If the values are not integers, or ``dtype`` is not a sub-byte dtype.
    """
    dt = parse(dtype)
    if dt is None:
        raise TypeError(f"pack needs a sub-byte dtype (int4, uint4, int2, uint2, int1, uint1), got {dtype!r}")
    arr = np.asarray(values)
    if arr.dtype.kind == "b":
        arr = arr.astype(np.uint8)
    _check_values(arr, dt)
    flat = arr.reshape(-1).astype(np.int16) & ((1 << dt.bits) - 1)
    k = dt.per_byte
    padded = np.zeros(storage_nbytes(flat.size, dt) * k, dtype=np.uint16)
    padded[:flat.size] = flat
    shifts = (np.arange(k, dtype=np.uint16) * dt.bits)
    return np.bitwise_or.reduce(padded.reshape(-1, k) << shifts, axis=1).astype(np.uint8)


def unpack(data: Any, count: int, dtype: SubByteDType | str) -> np.ndarray:
    """The first ``count`` elements packed in ``data``, as a flat NumPy array.

    Parameters
    ----------
    data : bytes-like or uint8 array
        At least :func:`storage_nbytes` ``(count)`` bytes.
    count : int
    dtype : SubByteDType or str

    Returns
    -------
    numpy.ndarray
        ``int8`` for signed dtypes (sign-extended), ``uint8`` for unsigned ones, ``count`` long.

    Raises
    ------
    ValueError
        If ``data`` is shorter than ``count`` elements need.
    TypeError
        If ``dtype`` is not a sub-byte dtype.
    """
    dt = parse(dtype)
    if dt is None:
        raise TypeError(f"unpack needs a sub-byte dtype (int4, uint4, int2, uint2, int1, uint1), got {dtype!r}")
    raw = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8) if not isinstance(data, np.ndarray) \
        else data.reshape(-1).view(np.uint8)
    need = storage_nbytes(count, dt)
    if raw.size < need:
        raise ValueError(f"{count} {dt} elements need {need} bytes, got {raw.size}")
    shifts = np.arange(dt.per_byte, dtype=np.uint8) * dt.bits
    vals = ((raw[:need, None] >> shifts) & ((1 << dt.bits) - 1)).reshape(-1)[:count].astype(np.int16)
    if dt.signed:
        sign = 1 << (dt.bits - 1)
        vals = (vals ^ sign) - sign
    return vals.astype(dt.numpy_dtype)
