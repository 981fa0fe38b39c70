"""Packed sub-byte arrays (``int4``...): the bit layout, round trips, odd counts, bad values.

The oracle is a scalar loop written here: element ``i`` of a ``bits``-wide dtype sits in bits
``[(i % k) * bits, (i % k + 1) * bits)`` of byte ``i // k`` (``k = 8 // bits``), two's complement.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vta.nd
from vta.dram import global_dram
from vta.errors import DTypeRangeError
from vta.runtime import NDArray, cpu, ext_dev, subbyte
from vta.runtime.abi import DLTensor

DEVICES = [cpu(0), ext_dev(0)]
DEV_IDS = ["cpu", "ext_dev"]


def _scalar_pack(values, bits: int) -> bytes:
    """Pack one value at a time (the oracle)."""
    k = 8 // bits
    out = bytearray(-(-len(values) // k))
    for i, v in enumerate(values):
        out[i // k] |= (int(v) & ((1 << bits) - 1)) << ((i % k) * bits)
    return bytes(out)


# ------------------------------------------------------------------ pack / unpack
def test_int4_layout_is_low_nibble_first():
    assert subbyte.pack(np.array([-8, 7], np.int8), "int4").tolist() == [0x78]
    assert subbyte.pack(np.array([1, 2, 3], np.int8), "int4").tolist() == [0x21, 0x03]
    assert subbyte.pack(np.array([-1], np.int8), "int4").tolist() == [0x0F]
    assert subbyte.unpack(bytes([0x9F]), 2, "int4").tolist() == [-1, -7]
    assert subbyte.unpack(bytes([0x9F]), 2, "uint4").tolist() == [15, 9]


@pytest.mark.parametrize("name,bits,lo,hi", [("int4", 4, -8, 7), ("uint4", 4, 0, 15), ("int2", 2, -2, 1),
                                             ("uint2", 2, 0, 3), ("int1", 1, -1, 0), ("uint1", 1, 0, 1)])
def test_every_value_round_trips(name, bits, lo, hi):
    dt = subbyte.parse(name)
    assert (dt.bits, dt.lo, dt.hi) == (bits, lo, hi)
    values = np.arange(lo, hi + 1).repeat(3)
    packed = subbyte.pack(values, name)
    assert packed.tobytes() == _scalar_pack(values, bits)
    out = subbyte.unpack(packed, values.size, name)
    assert out.dtype == (np.int8 if lo < 0 else np.uint8)
    np.testing.assert_array_equal(out, values)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-8, 7), max_size=41))
def test_int4_round_trip_matches_the_scalar_oracle(values):
    arr = np.array(values, dtype=np.int8)
    packed = subbyte.pack(arr, "int4")
    assert packed.tobytes() == _scalar_pack(values, 4)
    assert packed.size == (len(values) + 1) // 2
    np.testing.assert_array_equal(subbyte.unpack(packed, len(values), "int4"), arr)


@pytest.mark.parametrize("count", [0, 1, 3, 15, 17])
def test_odd_counts_pad_the_last_byte_with_zero_bits(count):
    values = np.full(count, -1, np.int8)  # every nibble 0xF, so padding shows as a 0 nibble
    packed = subbyte.pack(values, "int4")
    assert packed.size == subbyte.storage_nbytes(count, subbyte.parse("int4")) == -(-count // 2)
    if count % 2:
        assert packed[-1] == 0x0F
    np.testing.assert_array_equal(subbyte.unpack(packed, count, "int4"), values)


@pytest.mark.parametrize("name,bad,rng", [("int4", 8, r"\[-8, 7\]"), ("int4", -9, r"\[-8, 7\]"),
                                          ("uint4", -1, r"\[0, 15\]"), ("uint4", 16, r"\[0, 15\]")])
def test_out_of_range_values_name_the_range(name, bad, rng):
    values = np.array([[0, 1], [2, bad]], dtype=np.int16)
    with pytest.raises(DTypeRangeError, match=rf"value {bad} at index \(1, 1\) does not fit {name}.*{rng}"):
        subbyte.pack(values, name)
    with pytest.raises(ValueError):  # DTypeRangeError is a ValueError too
        vta.nd.array(values, dtype=name)


def test_non_integers_and_other_dtypes_are_refused():
    with pytest.raises(TypeError, match="must be integers"):
        subbyte.pack(np.array([1.0, 2.0]), "int4")
    with pytest.raises(TypeError, match="sub-byte dtype"):
        subbyte.pack(np.array([1]), "int8")
    with pytest.raises(ValueError, match="need 2 bytes"):
        subbyte.unpack(b"\x00", 3, "int4")
    with pytest.raises(DTypeRangeError, match=r"value 1 .*\[-1, 0\]"):
        subbyte.pack(np.array([False, True]), "int1")  # bools are 0 and 1
    assert subbyte.pack(np.array([True, False, True]), "uint1").tolist() == [0b101]
    assert subbyte.parse("int8") is None and subbyte.parse(np.int8) is None and subbyte.parse("int3") is None


# ------------------------------------------------------------------ NDArray
@pytest.mark.parametrize("dev", DEVICES, ids=DEV_IDS)
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 1, 16)])
def test_ndarray_round_trip(dev, shape):
    rng = np.random.default_rng(1)
    data = rng.integers(-8, 8, size=shape).astype(np.int8)
    with vta.nd.array(data, dev, dtype="int4") as arr:
        assert arr.dtype == "int4" and arr.shape == shape
        assert arr.nbytes == -(-data.size // 2)
        out = arr.numpy()
        assert out.dtype == np.int8
        np.testing.assert_array_equal(out, data)
        dl = DLTensor.from_address(arr.handle)
        assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == (0, 4, 1)
        raw = ctypes.string_at(dl.data, arr.nbytes)
        assert raw == _scalar_pack(data.ravel(), 4)


def test_ext_dev_array_is_packed_in_dram():
    data = np.array([-8, 7, 1, -2, 5], np.int8)
    with vta.nd.array(data, ext_dev(0), dtype="int4") as arr:
        assert global_dram().read(arr.phys_addr, 3) == bytes([0x78, 0xE1, 0x05])


def test_copies_keep_int4():
    data = np.arange(-8, 8, dtype=np.int8).reshape(4, 4)
    with vta.nd.array(data, ext_dev(0), dtype="int4") as dev_arr:
        with dev_arr.copyto(cpu(0)) as host:
            assert host.dtype == "int4"
            np.testing.assert_array_equal(host.numpy(), data)
            with host.copyto(ext_dev(0)) as back:  # host -> device
                assert back.dtype == "int4" and back.nbytes == 8
                assert global_dram().read(back.phys_addr, 8) == global_dram().read(dev_arr.phys_addr, 8)
        with vta.nd.array(dev_arr) as again:  # an NDArray source keeps its dtype
            assert again.dtype == "int4"
        with vta.nd.empty((4, 4), "int4", ext_dev(0)) as dst:
            np.testing.assert_array_equal(dst.numpy(), np.zeros((4, 4), np.int8))
            dev_arr.copyto(dst)
            np.testing.assert_array_equal(dst.numpy(), data)
            dst.copyfrom(-data.clip(-7, 7))  # any integer array whose values fit
            np.testing.assert_array_equal(dst.numpy(), -data.clip(-7, 7))
            with pytest.raises(ValueError, match=r"shape \(16,\)"):
                dst.copyfrom(data.ravel())
            with pytest.raises(DTypeRangeError, match=r"\[-8, 7\]"):
                dst.copyfrom(data + 8)
            np.testing.assert_array_equal(dst.numpy(), -data.clip(-7, 7))  # unchanged by the refused copy


def test_tvm_names_make_int4_arrays():
    from vta.tvm import nd as tvm_nd

    data = np.array([[3, -4, 7]], np.int8)
    arr = tvm_nd.empty(data.shape, "int4", ext_dev(0)).copyfrom(data)
    np.testing.assert_array_equal(arr.numpy(), data)
    np.testing.assert_array_equal(tvm_nd.array(data, ext_dev(0), dtype="int4").numpy(), data)


@pytest.mark.parametrize("dev", DEVICES, ids=DEV_IDS)
def test_view_of_a_native_int4_tensor(dev):
    """What a native caller hands back (from_dltensor_address) is read as packed int4."""
    data = np.array([1, -1, 6, -8, 2], np.int8)
    with vta.nd.array(data, dev, dtype="int4") as arr:
        view = NDArray.from_dltensor_address(arr.handle)
        assert view.dtype == "int4" and view.nbytes == 3
        np.testing.assert_array_equal(view.numpy(), data)


def test_dlpack_descriptions_of_sub_byte_dtypes():
    from vta.runtime.abi import dtype_to_dl

    for name, code, bits in (("int4", 0, 4), ("uint4", 1, 4), ("int2", 0, 2), ("uint1", 1, 1)):
        dl = dtype_to_dl(name)
        assert (dl.code, dl.bits, dl.lanes) == (code, bits, 1)
    assert dtype_to_dl("int8").bits == 8
