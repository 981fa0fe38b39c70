"""NDArray on cpu and ext_dev: round trips against NumPy, DRAM placement, lifetime, errors."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import vta.nd
from vta.dram import PAGE_BYTES, global_dram
from vta.errors import TVMError
from vta.runtime import Device, NDArray, cpu, device, ext_dev
from vta.runtime.abi import DLTensor

DTYPES = ["int8", "uint8", "int16", "int32", "uint32", "int64", "float32", "float64", "bool"]


@pytest.mark.parametrize("dev", [cpu(0), ext_dev(0)], ids=["cpu", "ext_dev"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip(dev, dtype):
    rng = np.random.default_rng(7)
    data = (rng.integers(-100, 100, size=(3, 5, 7)) % (2 if dtype == "bool" else 256)).astype(dtype)
    with vta.nd.array(data, dev) as arr:
        assert arr.shape == (3, 5, 7) and arr.dtype == dtype and arr.device == dev
        out = arr.numpy()
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out, data)
        np.testing.assert_array_equal(arr.asnumpy(), data)
        out[...] = 0  # numpy() returns a copy
        np.testing.assert_array_equal(arr.numpy(), data)


def test_upstream_runtime_array(env):
    """test_vta_insn.py::test_runtime_array: (100, 100, BATCH, BLOCK_OUT) int8 through ext_dev."""
    rng = np.random.default_rng(0)
    x_np = rng.integers(1, 10, size=(100, 100, env.BATCH, env.BLOCK_OUT)).astype("int8")
    x_nd = vta.nd.array(x_np, ext_dev(0))
    try:
        assert x_nd.nbytes == 160_000
        np.testing.assert_equal(x_np, x_nd.numpy())
    finally:
        x_nd.close()


def test_ext_dev_data_lives_in_the_arena():
    dram = global_dram()
    data = np.arange(64, dtype=np.int32)
    with vta.nd.array(data, ext_dev(0)) as arr:
        phys = arr.phys_addr
        assert phys and phys % PAGE_BYTES == 0
        assert dram.size_of(phys) == data.nbytes
        np.testing.assert_array_equal(dram.data[phys:phys + data.nbytes].view(np.int32), data)
        dl = DLTensor.from_address(arr.handle)
        assert dl.data == dram.host_address + phys
        assert dl.byte_offset == 0 and not dl.strides
        assert (dl.device.device_type, dl.device.device_id, dl.ndim) == (12, 0, 1)
        assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == (0, 32, 1)
        assert dl.shape[0] == 64
        # Writes through the arena (as a device would) are seen by numpy().
        dram.data[phys:phys + 4] = np.frombuffer(np.int32(-5).tobytes(), np.uint8)
        assert arr.numpy()[0] == -5


def test_close_frees_the_allocation_and_is_idempotent():
    dram = global_dram()
    arr = vta.nd.empty((10, 10), "int8", ext_dev(0))
    phys = arr.phys_addr
    assert dram.find(phys) is not None
    arr.close()
    assert dram.find(phys) is None
    arr.close()
    with pytest.raises(TVMError, match="closed"):
        arr.numpy()
    with pytest.raises(TVMError, match="closed"):
        arr.copyfrom(np.zeros((10, 10), np.int8))


def test_garbage_collection_frees_forgotten_arrays():
    dram = global_dram()
    arr = vta.nd.empty((4096,), "int8", ext_dev(0))
    phys = arr.phys_addr
    del arr
    gc.collect()
    assert dram.find(phys) is None


def test_empty_is_zero_on_both_devices():
    for dev in (cpu(0), ext_dev(0)):
        with vta.nd.empty((2, 3), "int32", dev) as arr:
            np.testing.assert_array_equal(arr.numpy(), np.zeros((2, 3), np.int32))
    with vta.nd.empty(5) as arr:
        assert arr.shape == (5,) and arr.dtype == "float32" and arr.device == cpu(0)


@pytest.mark.parametrize("dev", [cpu(0), ext_dev(0)], ids=["cpu", "ext_dev"])
def test_zero_size_and_scalar_arrays(dev):
    with vta.nd.array(np.zeros((0, 4), np.int8), dev) as arr:
        assert arr.numpy().shape == (0, 4)
    with vta.nd.array(np.int32(9), dev) as arr:
        assert arr.shape == () and arr.numpy() == 9


def test_copyfrom_numpy_ndarray_and_lists():
    with vta.nd.empty((2, 2), "int16", ext_dev(0)) as arr:
        arr.copyfrom(np.array([[1, 2], [3, 4]], np.int16))
        np.testing.assert_array_equal(arr.numpy(), [[1, 2], [3, 4]])
        with vta.nd.array(np.full((2, 2), 8, np.int16)) as host:
            assert arr.copyfrom(host) is arr
        np.testing.assert_array_equal(arr.numpy(), np.full((2, 2), 8))
        arr.copyfrom([[5, 6], [7, 8]])
        np.testing.assert_array_equal(arr.numpy(), [[5, 6], [7, 8]])


@pytest.mark.parametrize("source", [np.zeros((3, 2), np.int16), np.zeros((2, 2), np.int32)])
def test_copyfrom_mismatch_names_both(source):
    with vta.nd.empty((2, 2), "int16", ext_dev(0)) as arr:
        with pytest.raises(ValueError) as info:
            arr.copyfrom(source)
        message = str(info.value)
        assert str(source.shape) in message and str(source.dtype) in message
        assert "(2, 2)" in message and "int16" in message


def test_non_contiguous_source_is_copied_correctly():
    base = np.arange(64, dtype=np.int32).reshape(8, 8)
    view = base[::2, 1::3]
    with vta.nd.array(view, ext_dev(0)) as arr:
        np.testing.assert_array_equal(arr.numpy(), view)


@pytest.mark.parametrize(("shape", "dtype", "error"), [
    ((-1, 2), "int8", ValueError), ("ab", "int8", ValueError), ((2,), "complex64", TypeError),
    ((2,), "object", TypeError),
])
def test_bad_shapes_and_dtypes(shape, dtype, error):
    with pytest.raises(error):
        vta.nd.empty(shape, dtype, ext_dev(0))


def test_bad_device_argument():
    with pytest.raises(TypeError, match="Device"):
        vta.nd.empty((2,), "int8", "ext_dev")


def test_devices():
    assert (cpu(0).device_type, ext_dev(0).device_type) == (1, 12)
    assert device("ext_dev", 1) == ext_dev(1) != ext_dev(0)
    assert device("llvm -mcpu=core-avx2") == cpu(0)
    assert device(12) == ext_dev(0)
    assert ext_dev(0).session is None and repr(ext_dev(2)) == "ext_dev(2)"
    with pytest.raises(ValueError, match="unknown device name"):
        device("gpu")
    with pytest.raises(ValueError, match="unknown local device type"):
        Device(2, 0)
    with pytest.raises(ValueError, match="non-negative"):
        cpu(-1)


class _FakeSession:
    """Stands in for an RPC session: records calls and returns a local array."""

    def __init__(self):
        self.calls = []

    def alloc_array(self, shape, dtype, dev):
        self.calls.append((shape, dtype, dev))
        return vta.nd.empty(shape, dtype, ext_dev(0))


def test_session_devices_delegate_allocation():
    session = _FakeSession()
    remote = Device(12 + 128, 0, session=session)
    data = np.arange(6, dtype=np.int8).reshape(2, 3)
    with vta.nd.array(data, remote) as arr:
        np.testing.assert_array_equal(arr.numpy(), data)
    assert session.calls == [((2, 3), "int8", remote)]


def test_nd_module_reexports():
    assert vta.nd.NDArray is NDArray
    assert set(vta.nd.__all__) == {"array", "empty", "NDArray"}


def test_copyto_array_and_device():
    data = np.arange(12, dtype=np.int8).reshape(3, 4)
    with vta.nd.array(data) as src, vta.nd.empty((3, 4), "int8", ext_dev(0)) as dst:
        assert src.copyto(dst) is dst
        np.testing.assert_array_equal(dst.numpy(), data)
        with dst.copyto(cpu(0)) as back:
            assert back.device == cpu(0)
            np.testing.assert_array_equal(back.numpy(), data)
        with pytest.raises(TypeError, match="NDArray or a Device"):
            src.copyto("cpu")


@pytest.mark.parametrize("dev", [cpu(0), ext_dev(0)], ids=["cpu", "ext_dev"])
def test_view_shares_the_memory_in_another_shape(dev):
    data = np.arange(2 * 3 * 4, dtype=np.int8).reshape(2, 3, 4)
    with vta.nd.array(data, dev) as arr:
        v = arr.view((2, 3, 2, 2))
        assert v.shape == (2, 3, 2, 2) and v.dtype == "int8"
        np.testing.assert_array_equal(v.numpy(), data.reshape(2, 3, 2, 2))
        v.copyfrom(-data.reshape(2, 3, 2, 2))             # writes through the view reach the array
        np.testing.assert_array_equal(arr.numpy(), -data)
        with pytest.raises(ValueError, match="does not hold the 24 elements"):
            arr.view((5, 5))
