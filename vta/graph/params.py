"""Parameter dictionaries in TVM's byte layout (``save_param_dict`` / ``load_param_dict``).

A blob is a dmlc binary stream, little endian::

    u64  0xF7E58D4F05049CB7            list magic (kTVMNDArrayListMagic)
    u64  0                             reserved
    u64  n, then n x (u64 length + UTF-8 bytes)     the names (a dmlc vector<string>)
    u64  n, then n arrays, each:
        u64  0xDD5E40F096B4A13F        array magic (kTVMNDArrayMagic)
        u64  0                         reserved
        i32 device_type, i32 device_id the DLDevice; always CPU (1, 0) in a saved blob
        i32  ndim
        u8 code, u8 bits, u16 lanes    the DLDataType
        ndim x i64                     the shape
        i64  data byte count           = product(shape) * ceil(bits / 8)
        the data, C order

Blobs written here load in TVM and the other way round. The reader checks every field and
reports what was wrong with its byte offset; it builds nothing until the whole blob is read,
so a failed load leaves nothing half made. The same array reader serves the executor factory's
``save_to_binary`` payload (:mod:`vta.graph.factory`).
"""

from __future__ import annotations

import math
import struct
from typing import Any, Mapping

import numpy as np

from ..errors import ParamFormatError
from ..runtime import NDArray, cpu
from ..runtime import array as nd_array

__all__ = [
    "save_param_dict", "load_param_dict", "LIST_MAGIC", "ARRAY_MAGIC",
    "ByteReader", "write_string", "write_string_vector", "write_array",
]

#: ``kTVMNDArrayListMagic``: first word of a parameter blob.
LIST_MAGIC = 0xF7E58D4F05049CB7
#: ``kTVMNDArrayMagic``: first word of each array.
ARRAY_MAGIC = 0xDD5E40F096B4A13F
_DL_CPU = 1
#: DLDataType codes.
_INT, _UINT, _FLOAT = 0, 1, 2


# ----------------------------------------------------------------------------- writing
def write_string(data: bytes) -> bytes:
    """A dmlc string: u64 length, then the bytes."""
    return struct.pack("<Q", len(data)) + data


def write_string_vector(items: list[str]) -> bytes:
    """A dmlc ``vector<string>``: u64 count, then each string."""
    return struct.pack("<Q", len(items)) + b"".join(write_string(s.encode("utf-8")) for s in items)


def _dl_type(dtype: np.dtype) -> tuple[int, int]:
    if dtype.kind == "b":
        return _UINT, 1  # TVM's bool: uint, 1 bit, stored in one byte
    if dtype.kind in "iu" and dtype.itemsize in (1, 2, 4, 8):
        return (_INT if dtype.kind == "i" else _UINT), dtype.itemsize * 8
    if dtype.kind == "f" and dtype.itemsize in (2, 4, 8):
        return _FLOAT, dtype.itemsize * 8
    raise TypeError(f"dtype {str(dtype)!r} cannot be saved in a parameter blob; accepted: bool, int8..64, "
                    "uint8..64, float16/32/64")


def _to_numpy(name: str, value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    to_np = getattr(value, "numpy", None)
    if callable(to_np):  # NDArray (any device) or a remote array: copied to the host
        return np.asarray(to_np())
    if isinstance(value, (list, tuple, int, float, np.generic)):
        return np.asarray(value)
    raise TypeError(f"parameter {name!r} is a {type(value).__name__}; expected a NumPy array or an NDArray")


def write_array(arr: np.ndarray) -> bytes:
    """One array in ``NDArray::Save`` layout (device recorded as CPU).

    Raises
    ------
    TypeError
        If the dtype has no DLPack equivalent this layout supports.
    """
    code, bits = _dl_type(arr.dtype)
    head = struct.pack("<QQiiiBBH", ARRAY_MAGIC, 0, _DL_CPU, 0, arr.ndim, code, bits, 1)
    shape = struct.pack(f"<{arr.ndim}q", *arr.shape)
    data = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
    return head + shape + struct.pack("<q", len(data)) + data


def save_param_dict(params: Mapping[str, Any]) -> bytes:
    """Serialise named arrays in TVM's parameter-dict layout (``tvm.runtime.save_param_dict``).

    Parameters
    ----------
    params : mapping of str to array
        NumPy arrays, NDArrays (any device; copied to the host) or anything with ``numpy()``.
        Names keep the mapping's order.

    Returns
    -------
    bytes
        The blob; :func:`load_param_dict` (or TVM's ``load_param_dict``) reads it back.

    Raises
    ------
    TypeError
        If ``params`` is not a mapping, a name is not a str, a value is not an array, or a
        dtype cannot be saved.

    Examples
    --------
    >>> blob = save_param_dict({"w": np.arange(4, dtype="int8")})
    >>> load_param_dict(blob, as_numpy=True)["w"].tolist()
    [0, 1, 2, 3]
    """
    if not isinstance(params, Mapping):
        raise TypeError(f"save_param_dict takes a mapping of names to arrays, got {type(params).__name__}")
    names, arrays = [], []
    for name, value in params.items():
        if not isinstance(name, str):
            raise TypeError(f"parameter names must be str, got {name!r}")
        names.append(name)
        arrays.append(_to_numpy(name, value))
    parts = [struct.pack("<QQ", LIST_MAGIC, 0), write_string_vector(names), struct.pack("<Q", len(arrays))]
    parts += [write_array(a) for a in arrays]
    return b"".join(parts)


# ----------------------------------------------------------------------------- reading
class ByteReader:
    """Reads little-endian fields from a blob and reports failures with their byte offset.

    Parameters
    ----------
    data : bytes-like
    what : str
        The blob's description, the start of every error message.
    error : type
        The exception class raised (default :class:`~vta.errors.ParamFormatError`).
    """

    def __init__(self, data: bytes, what: str = "parameter blob", error: type[Exception] = ParamFormatError):
        self.data = memoryview(bytes(data))
        self.pos = 0
        self.what = what
        self.error = error

    @property
    def remaining(self) -> int:
        """Bytes not read yet."""
        return len(self.data) - self.pos

    def fail(self, message: str, at: int | None = None) -> Exception:
        """The error for ``message`` at byte ``at`` (default: the current offset)."""
        at = self.pos if at is None else at
        return self.error(f"corrupt {self.what}: {message} (at byte {at} of {len(self.data)})")

    def take(self, n: int, field: str) -> memoryview:
        """The next ``n`` bytes.

        Raises
        ------
        error
            If fewer than ``n`` bytes remain (the blob is truncated).
        """
        if n < 0 or n > self.remaining:
            raise self.fail(f"truncated: {field} needs {n} bytes but only {self.remaining} remain")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, field: str) -> tuple:
        """``struct.unpack("<" + fmt)`` of the next bytes."""
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), field))

    def u64(self, field: str) -> int:
        """The next unsigned 64-bit word."""
        return self.unpack("Q", field)[0]

    def string(self, field: str) -> str:
        """A dmlc string holding UTF-8 text."""
        start = self.pos
        raw = self.take(self.u64(f"length of {field}"), field)
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"{field} is not UTF-8 text ({exc.reason})", at=start) from None

    def count(self, field: str, min_item_bytes: int) -> int:
        """A u64 item count, checked against the bytes left (each item takes at least ``min_item_bytes``)."""
        start = self.pos
        n = self.u64(field)
        if n * min_item_bytes > self.remaining:
            raise self.fail(f"truncated or corrupt: {field} is {n}, more than the {self.remaining} remaining bytes "
                            "can hold", at=start)
        return n

    def string_vector(self, field: str) -> list[str]:
        """A dmlc ``vector<string>``."""
        n = self.count(f"number of {field}", 8)
        return [self.string(f"{field}[{i}]") for i in range(n)]

    def magic(self, expected: int, field: str) -> None:
        """Check a magic word."""
        start = self.pos
        value = self.u64(field)
        if value != expected:
            raise self.fail(f"{field} is 0x{value:016X}, expected 0x{expected:016X}", at=start)

    def array(self, field: str) -> np.ndarray:
        """One array in ``NDArray::Load`` layout, as a new NumPy array.

        Raises
        ------
        error
            On a bad magic, a device other than CPU, a negative or oversized ndim, a dtype
            without a NumPy equivalent, a negative dimension, a byte count that disagrees with
            the shape, or truncation.
        """
        self.magic(ARRAY_MAGIC, f"magic of {field}")
        self.u64(f"reserved word of {field}")
        at = self.pos
        dev_type, dev_id = self.unpack("ii", f"device of {field}")
        if dev_type != _DL_CPU:
            raise self.fail(f"{field} is saved on device type {dev_type} (id {dev_id}); only CPU (1) arrays "
                            "are stored in a parameter blob", at=at)
        at = self.pos
        (ndim,) = self.unpack("i", f"ndim of {field}")
        if ndim < 0 or ndim * 8 > self.remaining:
            raise self.fail(f"ndim of {field} is {ndim}, not a rank the remaining {self.remaining} bytes can hold",
                            at=at)
        at = self.pos
        code, bits, lanes = self.unpack("BBH", f"dtype of {field}")
        dtype = _np_dtype(code, bits, lanes)
        if dtype is None:
            raise self.fail(f"dtype of {field} is DLDataType(code={code}, bits={bits}, lanes={lanes}), which has "
                            "no NumPy equivalent (accepted: int/uint 8..64 bits, uint 1 bit (bool), "
                            "float 16/32/64, one lane)", at=at)
        at = self.pos
        shape = self.unpack(f"{ndim}q", f"shape of {field}")
        if any(d < 0 for d in shape):
            raise self.fail(f"shape of {field} is {list(shape)}, with a negative dimension", at=at)
        expected = math.prod(shape) * dtype.itemsize
        at = self.pos
        (nbytes,) = self.unpack("q", f"data size of {field}")
        if nbytes != expected:
            raise self.fail(f"data size of {field} is {nbytes} bytes but shape {list(shape)} of {dtype} "
                            f"needs {expected}", at=at)
        raw = self.take(nbytes, f"data of {field}")
        return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)

    def finish(self) -> None:
        """Require every byte to have been read."""
        if self.remaining:
            raise self.fail(f"{self.remaining} unexpected bytes after the end")


def _np_dtype(code: int, bits: int, lanes: int) -> np.dtype | None:
    if lanes != 1:
        return None
    if code == _UINT and bits == 1:
        return np.dtype(bool)
    if code in (_INT, _UINT) and bits in (8, 16, 32, 64):
        return np.dtype(f"{'int' if code == _INT else 'uint'}{bits}")
    if code == _FLOAT and bits in (16, 32, 64):
        return np.dtype(f"float{bits}")
    return None


def read_named_arrays(reader: ByteReader, names: list[str], count: int) -> dict[str, np.ndarray]:
    """Read ``count`` arrays named by ``names`` (checked: equal lengths, no duplicates)."""
    if count != len(names):
        raise reader.fail(f"the blob names {len(names)} parameters but holds {count} arrays")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise reader.fail(f"parameter name {name!r} appears twice")
        seen.add(name)
    return {name: reader.array(f"array {i} ({name!r})") for i, name in enumerate(names)}


def load_param_dict(param_bytes: bytes | bytearray | memoryview, *, as_numpy: bool = False) -> dict[str, Any]:
    """Read a blob written by :func:`save_param_dict` (or TVM's ``save_param_dict``).

    Parameters
    ----------
    param_bytes : bytes-like
        The blob.
    as_numpy : bool
        Return NumPy arrays instead of CPU :class:`~vta.runtime.NDArray` s.

    Returns
    -------
    dict of str to NDArray (or numpy.ndarray)
        In the blob's order; NDArrays live on ``cpu(0)`` as in TVM.

    Raises
    ------
    TypeError
        If ``param_bytes`` is not bytes-like.
    ParamFormatError
        If the blob is truncated or corrupt: a wrong magic word, more or fewer arrays than
        names, a repeated name, an array saved on a device other than CPU, an unsupported
        dtype, a shape and byte count that disagree, or bytes left after the last array. The
        message names the field and its byte offset. Nothing is returned half loaded.
    """
    if not isinstance(param_bytes, (bytes, bytearray, memoryview)):
        raise TypeError(f"load_param_dict takes bytes, got {type(param_bytes).__name__}")
    reader = ByteReader(param_bytes)
    reader.magic(LIST_MAGIC, "list magic")
    reader.u64("reserved word")
    names = reader.string_vector("parameter names")
    count = reader.count("number of arrays", 40)
    arrays = read_named_arrays(reader, names, count)
    reader.finish()
    if as_numpy:
        return arrays
    return {name: _to_ndarray(a) for name, a in arrays.items()}


def _to_ndarray(arr: np.ndarray) -> NDArray:
    return nd_array(arr, cpu(0))
