"""PackedFunc over the C ABI: conversions both ways, callbacks, native errors, bad arguments."""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

from vta import nd
from vta.errors import DeadlockError, TVMError
from vta.runtime import PackedFunc, cpu, ext_dev
from vta.runtime.abi import ArgTypeCode
from vta.runtime.packed import handles, set_pending_exception, take_pending_exception
from vta.runtime.registry import register_func, remove_global_func


def test_python_packed_func_calls_through():
    f = PackedFunc(lambda a, b=1: (a, b), name="pair")
    assert f(3) == (3, 1)
    assert f.name == "pair" and not f.is_native
    with pytest.raises(TypeError, match="callable"):
        PackedFunc(5)


def test_native_int_round_trip(kernels):
    add = kernels["add_int"]
    assert add.is_native
    assert add(2, 40) == 42
    assert add(-(1 << 62), -(1 << 62)) == -(1 << 63)
    assert add(True, np.int16(3)) == 4


@pytest.mark.parametrize("value", [7, -3, 2.5, "hello, vta", "", None])
def test_native_echo_scalars(kernels, value):
    assert kernels["echo"](value) == value


def test_native_echo_device_and_dtype(kernels):
    assert kernels["echo"](ext_dev(0)) == ext_dev(0)
    assert kernels["echo"](cpu(0)) == cpu(0)
    assert kernels["echo"](np.dtype("int8")) == np.dtype("int8")
    assert kernels["echo"](np.dtype("float32")) == np.dtype("float32")


def test_bytes_arrive_as_byte_array(kernels):
    assert kernels["echo"](b"\x00\x01bin") == b"\x00\x01bin"


@pytest.mark.parametrize(("value", "code"), [
    (1, ArgTypeCode.INT), (1.0, ArgTypeCode.FLOAT), ("s", ArgTypeCode.STR),
    (None, ArgTypeCode.NULLPTR), (cpu(0), ArgTypeCode.DEVICE),
    (np.dtype("int32"), ArgTypeCode.DATA_TYPE), (ctypes.c_void_p(16), ArgTypeCode.OPAQUE_HANDLE),
    (b"x", ArgTypeCode.BYTES),
])
def test_type_codes_seen_by_native_code(kernels, value, code):
    assert kernels["type_code"](value) == code


def test_tensor_arguments_on_cpu_and_ext_dev(kernels):
    data = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    for dev in (cpu(0), ext_dev(0)):
        with nd.array(data, dev) as arr:
            assert kernels["type_code"](arr) == ArgTypeCode.DLTENSOR_HANDLE
            assert kernels["sum_i32"](arr) == int(data.sum())
            code = 1 if dev == cpu(0) else 12
            assert kernels["describe"](arr) == (
                f"ndim=2 shape=3x4 code=0 bits=32 lanes=1 dev={code}:0 strides=null off=0"
            )


def test_native_code_writes_tensor_in_place(kernels):
    data = np.arange(-64, 64, dtype=np.int8).reshape(2, 64)
    expected = (data.astype(np.int64) * 3).astype(np.int8)  # wraps like the C cast
    for dev in (cpu(0), ext_dev(0)):
        with nd.array(data, dev) as arr:
            assert kernels["scale_i8"](arr, 3) is None
            np.testing.assert_array_equal(arr.numpy(), expected)


def test_python_callback_from_native_round_trip(kernels):
    seen = []

    def cb(*args):
        seen.append(args)
        return f"{args[0]}-{args[1]:.1f}-{args[2]}"

    f = PackedFunc(cb)
    before = len(handles)
    assert kernels["call_back"](f, 5, 1.5, "x") == "5-1.5-x"
    assert seen == [(5, 1.5, "x")]
    assert len(handles) == before  # the temporary handle of f was released


def test_callback_receives_tensor_views(kernels):
    data = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = {}

    def cb(t, dev):
        got["array"] = t.numpy()
        got["device"] = (t.device, dev)
        t.copyfrom(np.full((3, 4), 7, dtype=np.int32))  # writes through to the caller's array
        return None

    for dev in (cpu(0), ext_dev(0)):
        with nd.array(data, dev) as arr:
            assert kernels["call_back"](PackedFunc(cb), arr, dev) is None
            np.testing.assert_array_equal(got["array"], data)
            assert got["device"] == (dev, dev)
            np.testing.assert_array_equal(arr.numpy(), np.full((3, 4), 7, dtype=np.int32))


def test_callback_may_return_functions_and_numbers(kernels):
    inner = PackedFunc(lambda: 9, name="inner")
    assert kernels["call_back"](PackedFunc(lambda: inner)) is inner
    assert kernels["call_back"](PackedFunc(lambda: 2.25)) == 2.25
    assert kernels["call_back"](PackedFunc(lambda: np.dtype("int8"))) == np.dtype("int8")


def test_global_function_found_from_native(kernels):
    name = "test.packed.double"
    register_func(name, lambda x: 2 * x, override=True)
    try:
        assert kernels["call_env"](name, 21) == 42
    finally:
        remove_global_func(name)
    assert kernels["call_env"]("__tvm_set_device", 12, 0) is None


def test_missing_global_function_is_a_tvm_error(kernels):
    with pytest.raises(TVMError, match="'test.packed.nowhere' not found"):
        kernels["call_env"]("test.packed.nowhere")


def test_native_error_message(kernels):
    with pytest.raises(TVMError, match="always_fails: deliberate failure 42"):
        kernels["always_fails"]()
    with pytest.raises(TVMError, match="add_int: expects 2 int arguments"):
        kernels["add_int"](1, "two")


def test_error_messages_are_per_thread(kernels):
    messages = {}

    def worker(i):
        try:
            kernels["call_back"](PackedFunc(lambda: (_ for _ in ()).throw(ValueError(f"thread {i}"))))
        except ValueError as exc:
            messages[i] = (str(exc), str(exc.__cause__))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert messages == {i: (f"thread {i}", f"call_back: ValueError: thread {i}") for i in range(4)}


def test_python_exception_keeps_its_type_through_native_code(kernels):
    def stuck():
        raise DeadlockError("every stage waits for a token", insn_index=3)

    with pytest.raises(DeadlockError, match="every stage waits") as info:
        kernels["call_back"](PackedFunc(stuck))
    assert info.value.insn_index == 3
    assert isinstance(info.value.__cause__, TVMError)
    assert "DeadlockError" in str(info.value.__cause__)
    assert take_pending_exception() is None


def test_pending_exception_api():
    assert take_pending_exception() is None
    first, second = KeyError("first"), ValueError("second")
    set_pending_exception(first)
    set_pending_exception(second)
    assert take_pending_exception() is first
    assert first.__context__ is second
    assert take_pending_exception() is None
    with pytest.raises(TypeError):
        set_pending_exception("not an exception")


def test_bad_handle_from_native_is_an_error(kernels):
    with pytest.raises(TVMError, match="does not name a live function"):
        kernels["call_handle"](123456789)


@pytest.mark.parametrize(("arg", "hint"), [
    (np.zeros(3), "vta.nd.array"), (lambda: 1, "PackedFunc"), ([1, 2], "list"), (object(), "object"),
])
def test_wrong_argument_types(kernels, arg, hint):
    with pytest.raises(TypeError, match=f"argument 0: .*{hint}"):
        kernels["echo"](arg)


def test_integer_overflow_is_rejected(kernels):
    with pytest.raises(OverflowError, match="int64"):
        kernels["echo"](1 << 64)


def test_closed_array_cannot_be_passed(kernels):
    arr = nd.array(np.zeros(4, dtype=np.int32))
    arr.close()
    with pytest.raises(TVMError, match="closed"):
        kernels["sum_i32"](arr)


def test_module_handles_round_trip(kernels):
    from vta.runtime import PyModule

    mod = PyModule("handle_test", {"f": lambda: 1})
    assert kernels["type_code"](mod) == ArgTypeCode.MODULE_HANDLE
    assert kernels["echo"](mod) is mod
    assert kernels["call_back"](PackedFunc(lambda m: m["f"]()), mod) == 1
    mod.close()
    assert kernels["echo"](kernels) is kernels
