"""NDArray: an n-dimensional array on a device, passed to native code as a DLTensor.

``cpu`` arrays live in host memory (a NumPy buffer the array owns). ``ext_dev`` arrays live in
the process-wide DRAM arena (:func:`vta.dram.global_dram`): the array owns one allocation, and
the ``DLTensor`` handed to native code has ``data`` = ``dram.host_address + phys`` (a host
pointer into the arena), ``byte_offset`` 0 and NULL strides, so the runtime recovers the
physical address by subtracting the arena base.

Arrays are released by :meth:`NDArray.close` (or a ``with`` block); garbage collection frees
a forgotten one as a fallback. Devices with an RPC session delegate allocation to the session.

Sub-byte dtypes (``int4`` ...; :mod:`vta.runtime.subbyte`) are stored packed, several elements
per byte, low bits first, as TVM and VTA's DRAM lay them out: ``nbytes`` is the packed size, the
``DLTensor`` says ``bits=4``, and the NumPy side (:meth:`NDArray.numpy`, :meth:`NDArray.copyfrom`)
sees one ``int8`` (``uint8`` for unsigned dtypes) per element.
"""

from __future__ import annotations

import ctypes
import weakref
from typing import Any, Iterable

import numpy as np

from ..dram import DRAM, global_dram
from ..errors import DRAMAccessError, TVMError
from . import subbyte
from .abi import ArgTypeCode, DLDataType, DLDevice, DLTensor, dl_to_dtype, dtype_to_dl
from .devices import CPU, EXT_DEV, Device, cpu

__all__ = ["NDArray", "array", "empty"]


def _normalise_shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"shape must be a sequence of non-negative ints, got {shape!r}") from exc
    if any(d < 0 for d in dims) or any(isinstance(d, bool) for d in shape):
        raise ValueError(f"shape must be a sequence of non-negative ints, got {shape!r}")
    return dims


def _resolve_dtype(dtype: Any) -> tuple[np.dtype, "subbyte.SubByteDType | None"]:
    """``(NumPy dtype of the values, sub-byte dtype or None)`` of a dtype argument."""
    sub = subbyte.parse(dtype)
    if sub is not None:
        return sub.numpy_dtype, sub
    return np.dtype(dtype), None


def _data_nbytes(shape: tuple[int, ...], np_dtype: np.dtype, sub: "subbyte.SubByteDType | None") -> int:
    count = int(np.prod(shape, dtype=np.int64))
    return subbyte.storage_nbytes(count, sub) if sub is not None else count * np_dtype.itemsize


#: ``int64[n]`` shape array types by length, up to 8 dimensions. ctypes caches its array types
#: only weakly, so without this a type is made again (and left to the cycle collector) whenever no
#: array of its length lives.
_SHAPE_TYPES = {n: ctypes.c_int64 * n for n in range(1, 9)}


def _shape_array(shape: tuple[int, ...]) -> ctypes.Array:
    n = max(len(shape), 1)
    kind = _SHAPE_TYPES.get(n) or ctypes.c_int64 * n
    return kind(*shape)


def _free_dram(dram: DRAM, phys: int) -> None:
    # An arena that was closed took its allocations with it; nothing is left to free.
    if not dram._closed:
        dram.free(phys)


class NDArray:
    """An array on a local device. Create it with :func:`array` or :func:`empty`.

    Attributes
    ----------
    shape : tuple of int
    dtype : str
        NumPy name of the element type (``"int8"``, ``"int32"``, ...), or a sub-byte name
        (``"int4"``, ``"uint4"``, ...) for packed arrays.
    device : Device
    """

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, device: Device, *,
                 host: np.ndarray | None = None, phys: int | None = None,
                 dram: DRAM | None = None, owner: bool = True):
        self._shape = shape
        self._np_dtype, self._sub = _resolve_dtype(dtype)
        self._device = device
        self._host = host
        self._phys = phys
        self._dram = dram
        self._closed = False
        self._shape_arr = _shape_array(shape)
        if host is not None:
            data = host.ctypes.data
        else:
            data = dram.host_address + phys
        self._dltensor = DLTensor(
            data, DLDevice(device.device_type, device.device_id), len(shape),
            self._dl_dtype(), self._shape_arr,  # an array converts to the pointer (no cast: it makes a cycle)
            None, 0,
        )
        self._finalizer = (weakref.finalize(self, _free_dram, dram, phys)
                           if owner and phys is not None else None)

    def _dl_dtype(self) -> DLDataType:
        return dtype_to_dl(self._sub if self._sub is not None else self._np_dtype)

    # ---------------------------------------------------------------- properties
    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape."""
        return self._shape

    @property
    def dtype(self) -> str:
        """The element type's name (NumPy's, or ``"int4"``... for packed sub-byte arrays)."""
        return self._sub.name if self._sub is not None else str(self._np_dtype)

    @property
    def device(self) -> Device:
        """The device the array lives on."""
        return self._device

    @property
    def nbytes(self) -> int:
        """Bytes of data (packed bytes for sub-byte dtypes: ``ceil(size * bits / 8)``)."""
        return _data_nbytes(self._shape, self._np_dtype, self._sub)

    @property
    def phys_addr(self) -> int | None:
        """Physical DRAM address of an ``ext_dev`` array (None for cpu)."""
        return self._phys

    @property
    def handle(self) -> int:
        """Address of the array's ``DLTensor`` (valid until :meth:`close`).

        Raises
        ------
        TVMError
            If the array is closed.
        """
        self._check_open()
        return ctypes.addressof(self._dltensor)

    def __repr__(self) -> str:
        state = ", closed" if self._closed else ""
        return f"<NDArray shape={self._shape} dtype={self.dtype} device={self._device!r}{state}>"

    # ---------------------------------------------------------------- data movement
    def view(self, shape: tuple[int, ...]) -> "NDArray":
        """The same memory as an array of ``shape`` (same element count; no copy, not an owner).

        Raises
        ------
        ValueError
            If ``shape`` holds a different number of elements.
        """
        self._check_open()
        shape = tuple(int(d) for d in shape)
        if int(np.prod(shape)) != int(np.prod(self._shape)):
            raise ValueError(f"a view of shape {shape} does not hold the {int(np.prod(self._shape))} elements of "
                             f"an array of shape {self._shape}")
        host = self._host.reshape(shape) if self._host is not None else None
        return NDArray(shape, self.dtype, self._device, host=host, phys=self._phys, dram=self._dram, owner=False)

    def _check_open(self) -> None:
        if self._closed:
            raise TVMError(f"NDArray {self._shape} {self.dtype} on {self._device!r} has been closed")

    def numpy(self) -> np.ndarray:
        """Copy the data to a new NumPy array.

        A sub-byte array gives its values unpacked: ``int8`` for ``int4`` (``uint8`` for
        unsigned dtypes), one per element.

        Raises
        ------
        TVMError
            If the array is closed.
        """
        self._check_open()
        if self._sub is not None:
            count = int(np.prod(self._shape, dtype=np.int64))
            if self._host is not None:
                raw = self._host
            else:
                raw = self._dram.read(self._phys, self.nbytes) if count else b""
            return subbyte.unpack(raw, count, self._sub).reshape(self._shape)
        if self._host is not None:
            return self._host.copy()
        return self._dram.copy_out(self._phys, self._shape, self._np_dtype)

    asnumpy = numpy

    def copyfrom(self, source: Any) -> "NDArray":
        """Copy data in from a NumPy array, another NDArray, or anything ``np.asarray`` takes.

        NumPy arrays and NDArrays must match the shape and dtype exactly; other inputs (lists,
        scalars) are converted to this array's dtype. A sub-byte array (``int4``...) takes any
        integer array of its shape whose values fit (``[-8, 7]`` for ``int4``) and packs them.

        Returns
        -------
        NDArray
            ``self``.

        Raises
        ------
        ValueError
            If the shape or dtype differs; the message names both.
        DTypeRangeError
            If a value does not fit a sub-byte dtype; the message names the range.
        TypeError
            If a sub-byte array is given non-integer values.
        TVMError
            If either array is closed.
        """
        self._check_open()
        if self._sub is not None:
            return self._copyfrom_packed(source)
        if isinstance(source, NDArray):
            src = source.numpy()
        elif isinstance(source, np.ndarray):
            src = source
        else:
            src = np.asarray(source, dtype=self._np_dtype)
        if src.shape != self._shape or src.dtype != self._np_dtype:
            raise ValueError(
                f"cannot copy an array of shape {src.shape} and dtype {str(src.dtype)!r} into an "
                f"NDArray of shape {self._shape} and dtype {self.dtype!r}"
            )
        if self._host is not None:
            self._host[...] = src
        elif src.size:
            self._dram.write(self._phys, np.ascontiguousarray(src))
        return self

    def _copyfrom_packed(self, source: Any) -> "NDArray":
        src = source.numpy() if isinstance(source, NDArray) else np.asarray(source)
        if src.shape != self._shape:
            raise ValueError(
                f"cannot copy an array of shape {src.shape} and dtype {str(src.dtype)!r} into an "
                f"NDArray of shape {self._shape} and dtype {self.dtype!r}"
            )
        packed = subbyte.pack(src, self._sub)
        if self._host is not None:
            self._host[...] = packed
        elif packed.size:
            self._dram.write(self._phys, packed)
        return self

    def copyto(self, target: "NDArray | Device") -> "NDArray":
        """Copy the data to another array, or to a new array on a device.

        Returns
        -------
        NDArray
            ``target`` when it is an array, else the new array.

        Raises
        ------
        ValueError
            If ``target`` is an array of another shape or dtype.
        TypeError
            If ``target`` is neither an NDArray nor a Device.
        TVMError
            If either array is closed.
        """
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        if isinstance(target, Device):
            return array(self.numpy(), target, dtype=self.dtype)
        raise TypeError(f"copyto expects an NDArray or a Device, got {target!r}")

    # ---------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Release the array's memory (idempotent). Later use raises :class:`TVMError`."""
        if self._closed:
            return
        self._closed = True
        if self._finalizer is not None:
            self._finalizer()
        self._host = None

    def __enter__(self) -> "NDArray":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------- packed ABI
    def _as_packed_arg(self) -> tuple[int, int]:
        return ArgTypeCode.DLTENSOR_HANDLE, self.handle

    @classmethod
    def from_dltensor_address(cls, address: int | None) -> "NDArray":
        """A view (not owning the memory) of a ``DLTensor`` that native code passed in.

        Raises
        ------
        TVMError
            If the pointer is NULL, the tensor is not compact, its device is unknown, or an
            ext_dev tensor's data is not inside a live DRAM allocation.
        """
        if not address:
            raise TVMError("a DLTensor argument is a NULL pointer")
        dl = DLTensor.from_address(address)
        shape = tuple(int(dl.shape[i]) for i in range(dl.ndim)) if dl.ndim > 0 else ()
        sub = None
        if int(dl.dtype.bits) < 8 and int(dl.dtype.lanes) == 1 and int(dl.dtype.code) in (0, 1):
            sub = subbyte.parse(f"{'u' if int(dl.dtype.code) == 1 else ''}int{int(dl.dtype.bits)}")
        try:
            dtype = sub if sub is not None else dl_to_dtype(dl.dtype)
        except TypeError as exc:
            raise TVMError(f"DLTensor argument: {exc}") from exc
        if dl.strides:
            expected, step = [], 1
            for dim in reversed(shape):
                expected.append(step)
                step *= dim
            strides = [int(dl.strides[i]) for i in range(dl.ndim)]
            if strides != expected[::-1]:
                raise TVMError(f"DLTensor argument has non-compact strides {strides}; only compact tensors are "
                               "supported")
        dev_type, dev_id = int(dl.device.device_type), int(dl.device.device_id)
        nbytes = _data_nbytes(shape, *_resolve_dtype(dtype))
        data = (dl.data or 0) + int(dl.byte_offset)
        if dev_type == CPU:
            buf = (ctypes.c_uint8 * nbytes).from_address(data) if nbytes else bytearray()
            host = np.frombuffer(buf, dtype=np.uint8)
            host = host if sub is not None else host.view(dtype).reshape(shape)
            return cls(shape, dtype, Device(CPU, dev_id), host=host, owner=False)
        if dev_type == EXT_DEV:
            dram = global_dram()
            phys = data - dram.host_address
            if nbytes:
                try:
                    dram.check(phys, nbytes, "DLTensor argument")
                except DRAMAccessError as exc:
                    raise TVMError(str(exc)) from exc
            return cls(shape, dtype, Device(EXT_DEV, dev_id), phys=phys, dram=dram, owner=False)
        raise TVMError(f"DLTensor argument on device type {dev_type!r}; accepted: {CPU} (cpu), {EXT_DEV} (ext_dev)")


def empty(shape: int | Iterable[int], dtype: Any = "float32", dev: Device | None = None) -> NDArray:
    """Allocate an uninitialised array (ext_dev memory is zero-filled by the arena).

    Parameters
    ----------
    shape : int or iterable of int
    dtype : str or numpy dtype
        Also ``"int4"``, ``"uint4"`` (and 2- and 1-bit variants): packed, see the module docstring.
    dev : Device, optional
        Default ``cpu(0)``. A device with an RPC session delegates to
        ``dev.session.alloc_array(shape, dtype, dev)``.

    Raises
    ------
    ValueError
        If the shape is not a sequence of non-negative ints.
    TypeError
        If the dtype has no DLPack equivalent or ``dev`` is not a Device.
    AllocationError
        If the DRAM arena cannot hold the array.
    """
    dev = cpu(0) if dev is None else dev
    if not isinstance(dev, Device):
        raise TypeError(f"dev must be a vta.runtime.Device, got {dev!r}")
    dims = _normalise_shape(shape)
    np_dtype, sub = _resolve_dtype(dtype)
    if sub is None:
        dtype_to_dl(np_dtype)  # reject dtypes native code cannot describe
    name = sub.name if sub is not None else str(np_dtype)
    if dev.session is not None:
        return dev.session.alloc_array(dims, name, dev)
    nbytes = _data_nbytes(dims, np_dtype, sub)
    if dev.device_type == CPU:
        host = np.zeros(nbytes, np.uint8) if sub is not None else np.zeros(dims, dtype=np_dtype)
        return NDArray(dims, sub or np_dtype, dev, host=host)
    dram = global_dram()
    phys = dram.alloc(max(nbytes, 1))
    return NDArray(dims, sub or np_dtype, dev, phys=phys, dram=dram)


def array(source: Any, dev: Device | None = None, dtype: Any = None) -> NDArray:
    """Copy a NumPy array (or anything ``np.asarray`` takes) to a new NDArray on ``dev``.

    Parameters
    ----------
    source : array_like or NDArray
    dev : Device, optional
        Default ``cpu(0)``.
    dtype : optional
        Convert to this dtype first (default: keep the source's). A sub-byte dtype
        (``"int4"``...) packs the source's integer values, which must fit (``[-8, 7]``).

    Raises
    ------
    ValueError, TypeError, AllocationError
        As for :func:`empty`.
    DTypeRangeError
        If a value does not fit a sub-byte ``dtype``; the message names the range.

    Examples
    --------
    >>> a = array(np.array([-8, 7, 3], dtype=np.int8), dtype="int4")
    >>> a.dtype, a.nbytes, a.numpy().tolist()
    ('int4', 2, [-8, 7, 3])
    """
    if isinstance(source, NDArray):
        if dtype is None:
            dtype = source.dtype
        source = source.numpy()
    if subbyte.parse(dtype) is not None:
        src = np.asarray(source)
        target_dtype = dtype
    else:
        src = np.asarray(source, dtype=dtype)
        target_dtype = src.dtype
    arr = empty(src.shape, target_dtype, dev)
    try:
        arr.copyfrom(src)
    except BaseException:
        arr.close()
        raise
    return arr
