"""ctypes mirrors of ``native/include/tvm_c_abi.h``: DLPack structs, ``TVMValue``, type codes.

Everything the Python runtime hands to native code, or reads back from it, goes through the
structures defined here, so their layout is written down once on the Python side.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import subbyte

__all__ = [
    "DLDevice", "DLDataType", "DLTensor", "TVMValue", "TVMByteArray",
    "PackedCFunc", "GetFuncFromEnvCallback", "FuncCallCallback",
    "ArgTypeCode", "dtype_to_dl", "dl_to_dtype",
]


class ArgTypeCode:
    """Type codes of the packed calling convention (``TVMArgTypeCode``)."""

    INT = 0
    UINT = 1
    FLOAT = 2
    OPAQUE_HANDLE = 3
    NULLPTR = 4
    DATA_TYPE = 5
    DEVICE = 6
    DLTENSOR_HANDLE = 7
    OBJECT_HANDLE = 8
    MODULE_HANDLE = 9
    PACKED_FUNC_HANDLE = 10
    STR = 11
    BYTES = 12
    NDARRAY_HANDLE = 13

    NAMES = {
        0: "Int", 1: "UInt", 2: "Float", 3: "OpaqueHandle", 4: "Null", 5: "DataType",
        6: "Device", 7: "DLTensorHandle", 8: "ObjectHandle", 9: "ModuleHandle",
        10: "PackedFuncHandle", 11: "Str", 12: "Bytes", 13: "NDArrayHandle",
    }


class DLDevice(ctypes.Structure):
    """``DLDevice``: device type (1 = CPU, 12 = ext_dev) and device id."""

    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    """``DLDataType``: type code (0 int, 1 uint, 2 float), bits and lanes."""

    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    """``DLTensor`` as generated host code reads it (strides NULL means compact)."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class TVMValue(ctypes.Union):
    """The 8-byte value union of the packed calling convention."""

    _fields_ = [
        ("v_int64", ctypes.c_int64),
        ("v_float64", ctypes.c_double),
        ("v_handle", ctypes.c_void_p),
        ("v_str", ctypes.c_char_p),
        ("v_type", DLDataType),
        ("v_device", DLDevice),
    ]


class TVMByteArray(ctypes.Structure):
    """``TVMByteArray``: the payload of a ``kTVMBytes`` argument."""

    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


#: ``int f(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* resource)``.
PackedCFunc = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(TVMValue), ctypes.POINTER(ctypes.c_int), ctypes.c_int,
    ctypes.POINTER(TVMValue), ctypes.POINTER(ctypes.c_int), ctypes.c_void_p,
)
#: Python side of ``TVMBackendGetFuncFromEnv(mod_node, name, out_handle)``.
GetFuncFromEnvCallback = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
)
#: Python side of ``TVMFuncCall(handle, args, codes, n, ret, ret_code)``.
FuncCallCallback = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(TVMValue), ctypes.POINTER(ctypes.c_int),
    ctypes.c_int, ctypes.POINTER(TVMValue), ctypes.POINTER(ctypes.c_int),
)

_KIND_TO_CODE = {"i": 0, "u": 1, "f": 2, "b": 1}
_CODE_TO_KIND = {0: "int", 1: "uint", 2: "float"}


def dtype_to_dl(dtype) -> DLDataType:
    """Convert a NumPy dtype (or anything ``np.dtype`` accepts) to a ``DLDataType``.

    Sub-byte names (``"int4"``, ``"uint4"``, 2 and 1 bits) give ``bits`` 4, 2 or 1.

    Raises
    ------
    TypeError
        If the dtype is not a signed or unsigned integer, bool or float type.
    """
    sub = subbyte.parse(dtype)
    if sub is not None:
        return DLDataType(sub.dl_code, sub.bits, 1)
    dt = np.dtype(dtype)
    if dt.kind not in _KIND_TO_CODE:
        raise TypeError(
            f"dtype {str(dt)!r} has no DLPack equivalent; use an int, uint, bool or float dtype"
        )
    bits = 8 if dt.kind == "b" else dt.itemsize * 8
    return DLDataType(_KIND_TO_CODE[dt.kind], bits, 1)


def dl_to_dtype(dl: DLDataType) -> np.dtype:
    """Convert a ``DLDataType`` with one lane back to a NumPy dtype.

    Raises
    ------
    TypeError
        If the code, bit width or lane count has no NumPy equivalent.
    """
    kind = _CODE_TO_KIND.get(int(dl.code))
    if kind is None or dl.lanes != 1 or dl.bits not in (8, 16, 32, 64) or (kind == "float" and dl.bits == 8):
        raise TypeError(
            f"DLDataType(code={dl.code}, bits={dl.bits}, lanes={dl.lanes}) has no NumPy equivalent; "
            "accepted: code 0/1 with 8..64 bits, code 2 with 16..64 bits, one lane"
        )
    return np.dtype(f"{kind}{dl.bits}")
