"""vta.testing.dtypes: the host-side ranges, random data and wrap-around the tutorials use."""

from __future__ import annotations

import numpy as np
import pytest

from vta.runtime import ndarray
from vta.testing import dtypes


@pytest.mark.parametrize("dtype, expected", [("int4", (-8, 7)), ("int8", (-128, 127)), ("uint4", (0, 15)),
                                             ("int32", (-(2 ** 31), 2 ** 31 - 1)), ("int2", (-2, 1))])
def test_value_range(dtype, expected):
    assert dtypes.value_range(dtype) == expected


def test_host_dtype():
    assert dtypes.host_dtype("int4") == np.int8
    assert dtypes.host_dtype("uint4") == np.uint8
    assert dtypes.host_dtype("int32") == np.int32


@pytest.mark.parametrize("dtype", ["float32", "bool", "not-a-type"])
def test_non_integer_dtypes_are_refused(dtype):
    with pytest.raises(TypeError):
        dtypes.value_range(dtype)


def test_random_ints_cover_the_range_and_match_a_plain_draw_for_int8():
    values = dtypes.random_ints(np.random.default_rng(1), "int4", 4096)
    assert values.dtype == np.int8 and values.min() == -8 and values.max() == 7
    same = np.random.default_rng(1).integers(-128, 128, size=64).astype(np.int8)
    assert np.array_equal(dtypes.random_ints(np.random.default_rng(1), "int8", 64), same)


def test_wrap_keeps_the_low_bits_as_a_signed_value():
    wide = np.array([0, 7, 8, 9, -8, -9, 16, 255, -2 ** 31], dtype=np.int32)
    assert dtypes.wrap(wide, "int4").tolist() == [0, 7, -8, -7, -8, 7, 0, -1, 0]
    assert np.array_equal(dtypes.wrap(wide, "int8"), wide.astype(np.int8))
    assert dtypes.wrap(np.array([17, -1]), "uint4").tolist() == [1, 15]
    with pytest.raises(TypeError):
        dtypes.wrap(np.array([1.5]), "int4")


def test_wrapped_values_round_trip_through_a_packed_array():
    values = dtypes.wrap(np.arange(-40, 40, dtype=np.int32), "int4")
    arr = ndarray.array(values, dtype="int4")
    try:
        assert np.array_equal(arr.numpy(), values)
    finally:
        arr.close()
