"""Parameter dictionaries: TVM's byte layout, written out by hand here, both ways."""

from __future__ import annotations

import numpy as np
import pytest

from vta.errors import ParamFormatError
from vta.graph.params import load_param_dict, save_param_dict
from vta.runtime import NDArray, array, cpu, ext_dev


def _hand_blob() -> bytes:
    """``{"w": int8 [[1, -2, 3], [4, 5, -6]], "s": float32 scalar 0.5}`` in TVM's layout."""
    out = bytearray()
    out += bytes.fromhex("B79C04054F8DE5F7")        # kTVMNDArrayListMagic, little endian
    out += bytes(8)                                 # reserved
    out += (2).to_bytes(8, "little")                # two names
    out += (1).to_bytes(8, "little") + b"w"
    out += (1).to_bytes(8, "little") + b"s"
    out += (2).to_bytes(8, "little")                # two arrays
    # array "w"
    out += bytes.fromhex("3FA1B496F0405EDD")        # kTVMNDArrayMagic
    out += bytes(8)                                 # reserved
    out += (1).to_bytes(4, "little") + bytes(4)     # DLDevice: kDLCPU, id 0
    out += (2).to_bytes(4, "little")                # ndim
    out += bytes([0, 8]) + (1).to_bytes(2, "little")  # DLDataType int, 8 bits, 1 lane
    out += (2).to_bytes(8, "little") + (3).to_bytes(8, "little")  # shape
    out += (6).to_bytes(8, "little")                # data bytes
    out += bytes([1, 0xFE, 3, 4, 5, 0xFA])
    # array "s"
    out += bytes.fromhex("3FA1B496F0405EDD") + bytes(8)
    out += (1).to_bytes(4, "little") + bytes(4)
    out += bytes(4)                                 # ndim 0
    out += bytes([2, 32]) + (1).to_bytes(2, "little")  # float32
    out += (4).to_bytes(8, "little")
    out += bytes.fromhex("0000003F")                # 0.5f
    return bytes(out)


W = np.array([[1, -2, 3], [4, 5, -6]], dtype=np.int8)


def test_save_matches_hand_written_layout():
    blob = save_param_dict({"w": W, "s": np.array(0.5, dtype=np.float32)})
    assert blob == _hand_blob()


def test_load_hand_written_layout():
    params = load_param_dict(_hand_blob())
    assert list(params) == ["w", "s"]
    assert all(isinstance(v, NDArray) and v.device == cpu(0) for v in params.values())
    np.testing.assert_array_equal(params["w"].numpy(), W)
    assert params["s"].numpy().shape == () and params["s"].numpy() == np.float32(0.5)
    as_np = load_param_dict(_hand_blob(), as_numpy=True)
    assert as_np["w"].dtype == np.int8 and as_np["w"].flags.writeable


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "uint32", "float16",
                                   "float32", "float64", "bool"])
def test_round_trip_dtypes(dtype):
    rng = np.random.default_rng(1)
    a = (rng.integers(-100, 100, size=(3, 1, 4)) > 0) if dtype == "bool" else \
        rng.integers(-100, 100, size=(3, 1, 4)).astype(dtype)
    back = load_param_dict(save_param_dict({"a": a}), as_numpy=True)["a"]
    assert back.dtype == a.dtype and back.shape == a.shape
    np.testing.assert_array_equal(back, a)


def test_bool_is_tvm_one_bit_uint():
    blob = save_param_dict({"m": np.array([True, False, True])})
    # header 16 + names 8+8+1 + count 8, then magic, reserved, device, ndim: dtype at +28
    dtype_at = 16 + 17 + 8 + 28
    assert blob[dtype_at:dtype_at + 4] == bytes([1, 1, 1, 0])
    assert blob[-3:] == bytes([1, 0, 1])


def test_save_accepts_ndarrays_on_both_devices_and_noncontiguous():
    a = np.arange(24, dtype=np.int32).reshape(4, 6)[:, ::2]
    with array(a, cpu(0)) as c, array(a, ext_dev(0)) as e:
        back = load_param_dict(save_param_dict({"c": c, "e": e, "v": a}), as_numpy=True)
    for k in "cev":
        np.testing.assert_array_equal(back[k], a)


def test_empty_dict_and_empty_array():
    assert load_param_dict(save_param_dict({})) == {}
    back = load_param_dict(save_param_dict({"z": np.zeros((0, 3), np.int8)}), as_numpy=True)
    assert back["z"].shape == (0, 3)


def test_save_rejects_bad_input():
    with pytest.raises(TypeError, match="names must be str"):
        save_param_dict({1: np.zeros(1)})
    with pytest.raises(TypeError, match="complex64"):
        save_param_dict({"c": np.zeros(2, np.complex64)})
    with pytest.raises(TypeError, match="mapping"):
        save_param_dict([("a", np.zeros(1))])
    with pytest.raises(TypeError, match="NumPy array or an NDArray"):
        save_param_dict({"a": object()})


@pytest.mark.parametrize("cut", [0, 7, 16, 30, 45, 60, 90, 113, 120, len(_hand_blob()) - 1])
def test_truncated_blob_names_offset(cut):
    with pytest.raises(
        ParamFormatError, match=r"truncated.* (needs \d+ bytes but only|remaining bytes can hold).*\(at byte \d+"
    ):
        load_param_dict(_hand_blob()[:cut])


def _patched(offset: int, data: bytes) -> bytes:
    blob = bytearray(_hand_blob())
    blob[offset:offset + len(data)] = data
    return bytes(blob)


# Offsets into the hand blob: names end at 16+8+9+9 = 42, array count 42..50, array w at 50.
W_AT = 50


@pytest.mark.parametrize(
    "offset, data, message",
    [
        (0, b"\x00", r"list magic is 0x.* expected 0xF7E58D4F05049CB7 \(at byte 0 "),
        (42, (3).to_bytes(8, "little"), r"names 2 parameters but holds 3 arrays|more than the"),
        (42, (1).to_bytes(8, "little"), r"names 2 parameters but holds 1 arrays"),
        (W_AT, b"\x00", rf"magic of array 0 \('w'\) is 0x.*expected 0xDD5E40F096B4A13F \(at byte {W_AT} "),
        (W_AT + 16, (12).to_bytes(4, "little"), rf"device type 12 .* only CPU \(1\) arrays .*at byte {W_AT + 16} "),
        (W_AT + 24, (-1).to_bytes(4, "little", signed=True), rf"ndim of array 0 \('w'\) is -1.*at byte {W_AT + 24} "),
        (W_AT + 28, bytes([4, 16, 1, 0]), rf"DLDataType\(code=4, bits=16, lanes=1\).*at byte {W_AT + 28} "),
        (W_AT + 28, bytes([0, 8, 4, 0]), r"lanes=4"),
        (W_AT + 32, (-2).to_bytes(8, "little", signed=True), r"negative dimension"),
        (
            W_AT + 48,
            (7).to_bytes(8, "little"),
            rf"data size of array 0 \('w'\) is 7 bytes but shape \[2, 3\] of int8 needs 6 \(at byte {W_AT + 48} ",
        ),
    ],
)
def test_corrupt_blob_names_field_and_offset(offset, data, message):
    with pytest.raises(ParamFormatError, match=message):
        load_param_dict(_patched(offset, data))


def test_duplicate_name_and_trailing_bytes():
    dup = _hand_blob().replace(b"\x01\x00\x00\x00\x00\x00\x00\x00s", b"\x01\x00\x00\x00\x00\x00\x00\x00w", 1)
    with pytest.raises(ParamFormatError, match="'w' appears twice"):
        load_param_dict(dup)
    with pytest.raises(ParamFormatError, match=r"3 unexpected bytes after the end \(at byte 156 "):
        load_param_dict(_hand_blob() + b"xyz")


def test_not_utf8_name():
    bad = _hand_blob().replace(b"\x01\x00\x00\x00\x00\x00\x00\x00s", b"\x01\x00\x00\x00\x00\x00\x00\x00\xff", 1)
    with pytest.raises(ParamFormatError, match="not UTF-8"):
        load_param_dict(bad)


def test_load_rejects_non_bytes():
    with pytest.raises(TypeError, match="takes bytes"):
        load_param_dict("not bytes")
