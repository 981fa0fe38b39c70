"""Bad input never kills the process: kernel argument checks, runtime misuse, deadlocks."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import vta.nd
from vta.dram import global_dram
from vta.errors import DeadlockError, TVMError
from vta.testing import simulator

from .conftest import upload_module, vadd_data

pytestmark = pytest.mark.native


def vadd_arrays(dev, a_dtype=np.int32, shape=(1, 64, 1, 16)):
    a_np, b_np, _ = vadd_data(7)
    a = vta.nd.array(np.zeros(shape, dtype=a_dtype), dev)
    b = vta.nd.array(b_np, dev)
    c = vta.nd.array(np.zeros((1, 64, 1, 16), dtype=np.int8), dev)
    return a, b, c


def assert_vadd_still_works(remote, kernel_objects, recorder):
    """The runtime and device recover: a correct call gives the exact 8-instruction stream."""
    f = upload_module(remote, kernel_objects["vadd"])
    a_np, b_np, expected = vadd_data(8)
    dev = remote.ext_dev(0)
    a, b = vta.nd.array(a_np, dev), vta.nd.array(b_np, dev)
    c = vta.nd.array(np.zeros((1, 64, 1, 16), dtype=np.int8), dev)
    recorder.streams.clear()
    simulator.clear_stats()
    f(a, b, c)
    np.testing.assert_array_equal(c.numpy(), expected)
    assert [len(s) for s in recorder.streams] == [8]
    assert simulator.stats()["alu_counter"] == 64


def test_wrong_argument_count(env, remote, kernel_objects, recorder):
    f = upload_module(remote, kernel_objects["vadd"])
    a, b, _ = vadd_arrays(remote.ext_dev(0))
    with pytest.raises(TVMError, match="my_vadd: num_args should be 3"):
        f(a, b)
    assert_vadd_still_works(remote, kernel_objects, recorder)


def test_wrong_dtype(env, remote, kernel_objects, recorder):
    f = upload_module(remote, kernel_objects["vadd"])
    a, b, c = vadd_arrays(remote.ext_dev(0), a_dtype=np.int8)
    with pytest.raises(TVMError, match=r"arg\[0\]\.dtype is expected to be int32"):
        f(a, b, c)
    assert_vadd_still_works(remote, kernel_objects, recorder)


def test_wrong_shape(env, remote, kernel_objects, recorder):
    f = upload_module(remote, kernel_objects["vadd"])
    a, b, c = vadd_arrays(remote.ext_dev(0), shape=(1, 32, 1, 16))
    with pytest.raises(TVMError, match=r"arg\[0\]\.shape\[1\] has an unsatisfied constraint: 64 == 32"):
        f(a, b, c)
    assert_vadd_still_works(remote, kernel_objects, recorder)


def test_array_on_the_cpu(env, remote, kernel_objects, recorder):
    f = upload_module(remote, kernel_objects["vadd"])
    _, b, c = vadd_arrays(remote.ext_dev(0))
    a = vta.nd.array(np.zeros((1, 64, 1, 16), dtype=np.int32), remote.cpu(0))
    with pytest.raises(TVMError, match=r"arg\[0\]\.device_type has an unsatisfied constraint: 12 == 1"):
        f(a, b, c)
    assert_vadd_still_works(remote, kernel_objects, recorder)


@pytest.mark.parametrize("entry, message", [
    ("three_loops", "at most 2 hardware loops"),
    ("foreign_pointer", "is not inside the VTA DRAM arena"),
    ("uop_outside_kernel", "VTAUopPush: called outside a kernel recording"),
    ("long_signature", "signature of 8 bytes; accepted: 0 bytes or 4 bytes"),
    ("field_too_wide", "x_size = 70000 does not fit the 16-bit instruction field"),
    ("imm_too_wide", "immediate 40000 does not fit the 16-bit signed ALU field"),
    ("load_to_store_token", r"VTADepPush\(1, 3\): queue ids must be neighbouring stages"),
    ("loop_left_open", "left 1 loop\\(s\\) open"),
    ("foreign_then_push", "VTALoadBuffer2D: pointer .* is not inside the VTA DRAM arena"),
    ("nested_recording", "VTAPushGEMMOp: called inside the finit callback of another kernel"),
    ("sync_in_recording", "VTASynchronize: called inside the finit callback"),
])
def test_runtime_rejects_misuse(env, remote, kernel_objects, recorder, entry, message):
    mod = upload_module(remote, kernel_objects["bad"])
    x = vta.nd.array(np.zeros((1, 4, 1, 16), dtype=np.int32), remote.ext_dev(0))
    with pytest.raises(TVMError, match=message):
        mod[entry](x)
    assert recorder.streams == []  # nothing reached the device
    assert_vadd_still_works(remote, kernel_objects, recorder)


def test_deadlock_reaches_the_caller(env, remote, kernel_objects, recorder):
    mod = upload_module(remote, kernel_objects["bad"])
    x = vta.nd.array(np.zeros((1, 4, 1, 16), dtype=np.int32), remote.ext_dev(0))
    with pytest.raises(DeadlockError):
        mod["deadlock"](x)
    assert len(recorder.streams) == 1
    assert_vadd_still_works(remote, kernel_objects, recorder)


# ---------------------------------------------------------------------------- the C API directly
def test_buffer_alloc_copy_free_round_trip(env, rt):
    rt.VTABufferAlloc.restype = ctypes.c_void_p
    rt.VTABufferAlloc.argtypes = [ctypes.c_size_t]
    rt.VTABufferFree.argtypes = [ctypes.c_void_p]
    rt.VTABufferCopy.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                 ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int]
    rt.VTABufferCPUPtr.restype = ctypes.c_void_p
    rt.VTABufferCPUPtr.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    dram = global_dram()
    data = np.arange(1000, dtype=np.int32)
    back = np.zeros_like(data)
    dev = rt.VTABufferAlloc(data.nbytes)
    dev2 = rt.VTABufferAlloc(data.nbytes)
    try:
        phys = dev - dram.host_address
        assert dram.find(phys) == (phys, data.nbytes)  # a live arena allocation
        assert rt.VTABufferCPUPtr(rt.VTATLSCommandHandle(), dev) == dev
        rt.VTABufferCopy(data.ctypes.data, 0, dev, 0, data.nbytes, 1)  # host -> device
        np.testing.assert_array_equal(dram.copy_out(phys, data.shape, np.int32), data)
        rt.VTABufferCopy(dev, 8, dev2, 0, data.nbytes - 8, 3)  # device -> device, offset 2 ints
        rt.VTABufferCopy(dev2, 0, back.ctypes.data, 0, data.nbytes - 8, 2)  # device -> host
        np.testing.assert_array_equal(back[:-2], data[2:])
    finally:
        rt.VTABufferFree(dev)
        rt.VTABufferFree(dev2)
    assert dram.find(phys) is None


def test_bad_free_is_reported_by_the_next_synchronize(env, rt, recorder):
    rt.VTABufferFree.argtypes = [ctypes.c_void_p]
    rt.VTASynchronize.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    rt.VTABridgePendingError.restype = ctypes.c_char_p
    rt.TVMGetLastError.restype = ctypes.c_char_p
    host = ctypes.create_string_buffer(64)
    rt.VTABufferFree(ctypes.addressof(host))
    assert b"not inside the VTA DRAM arena" in rt.VTABridgePendingError()
    cmd = rt.VTATLSCommandHandle()
    assert rt.VTASynchronize(cmd, 1 << 31) == -1
    assert b"VTABufferFree: pointer" in rt.TVMGetLastError()
    assert rt.VTABridgePendingError() is None
    assert recorder.streams == []
    # the queue is usable again: an empty window still closes its tokens and finishes
    assert rt.VTASynchronize(cmd, 1 << 31) == 0
    assert [len(s) for s in recorder.streams] == [4]


def test_bad_copy_direction_is_rejected(env, rt):
    rt.VTABufferCopy.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                 ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int]
    rt.VTASynchronize.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    rt.TVMGetLastError.restype = ctypes.c_char_p
    a, b = ctypes.create_string_buffer(16), ctypes.create_string_buffer(16)
    rt.VTABufferCopy(ctypes.addressof(a), 0, ctypes.addressof(b), 0, 16, 7)
    assert rt.VTASynchronize(rt.VTATLSCommandHandle(), 1 << 31) == -1
    assert b"kind_mask 7 is not one of 0..3" in rt.TVMGetLastError()
    rt.VTABufferCopy(ctypes.addressof(a), 0, ctypes.addressof(b), 0, 16, 1)  # host -> "device"
    assert rt.VTASynchronize(rt.VTATLSCommandHandle(), 1 << 31) == -1
    assert b"VTABufferCopy (destination)" in rt.TVMGetLastError()


def test_failed_automatic_synchronisation_is_reported(env, remote, kernel_objects, recorder):
    from vta.runtime import vta_bridge

    mod = upload_module(remote, kernel_objects["bad"])
    x = vta.nd.array(np.zeros((1, 4, 1, 16), dtype=np.int32), remote.ext_dev(0))
    vta_bridge.set_xfer_limit(256, env)  # 16 instructions: the loads overflow the first window
    with pytest.raises(DeadlockError):
        mod["deadlock_then_more"](x)
    assert len(recorder.streams) == 1  # the rest of the stream was dropped, not run
    vta_bridge.set_xfer_limit(0, env)
    assert_vadd_still_works(remote, kernel_objects, recorder)
