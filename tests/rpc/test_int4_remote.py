"""Packed int4 arrays through RPC sessions: a LocalSession and the socket server, with a GEMM
built for configs/narrow.json (4-bit inputs, weights and outputs) run on fsim, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.compiler.configs.test_every_config import WORKLOADS, _retarget
from vta import nd, rpc
from vta.build import build
from vta.errors import DTypeRangeError

pytestmark = pytest.mark.native


def _narrow_gemm(tmp_path):
    """The tutorial GEMM on narrow.json: (environment, object path, args, int8 inputs, expected
    int8 output)."""
    env = _retarget("narrow.json", "sim")
    path = tmp_path / "gemm4.o"
    with env:
        s, args, inputs, _, want, _ = WORKLOADS["gemm"](env, np.random.default_rng(5))
        build(s, args, "ext_dev", name="gemm4").save(path)
    return env, path, args, inputs, want


def _call(remote, path, args, inputs):
    """Upload, load and call the GEMM in ``remote``; returns the output array."""
    remote.upload(str(path))
    f = remote.load_module("gemm4.o")
    dev = remote.ext_dev(0)
    a = nd.array(inputs["A"], dev, dtype="int4")
    b = nd.array(inputs["B"], dev, dtype="int4")
    c = nd.empty(tuple(int(d) for d in args[2].shape), "int4", dev)
    assert (a.dtype, c.dtype) == ("int4", "int4")
    f(a, b, c)
    return c


def test_int4_gemm_through_a_local_session(tmp_path):
    env, path, args, inputs, want = _narrow_gemm(tmp_path)
    with env, rpc.LocalSession() as remote:
        c = _call(remote, path, args, inputs)
        assert c.nbytes == c.numpy().size // 2
        np.testing.assert_array_equal(c.numpy(), want)


def test_int4_arrays_over_the_socket(server):
    data = np.array([[-8, 7, 0], [1, -1, 5]], np.int8)
    with rpc.connect(server.host, server.port, timeout=60) as remote:
        dev = remote.ext_dev(0)
        arr = nd.array(data, dev, dtype="int4")
        assert isinstance(arr, rpc.RemoteNDArray)
        assert (arr.dtype, arr.shape, arr.nbytes) == ("int4", (2, 3), 3)
        np.testing.assert_array_equal(arr.numpy(), data)
        with pytest.raises(DTypeRangeError, match=r"value 9 .*\[-8, 7\]"):
            arr.copyfrom(np.array([[9, 0, 0], [0, 0, 0]]))  # refused before anything is sent
        np.testing.assert_array_equal(arr.numpy(), data)
        with pytest.raises(ValueError, match="shape"):
            arr.copyfrom(data.ravel())
        with nd.array(data[::-1], dtype="int4") as local:  # a local int4 NDArray as the source
            arr.copyfrom(local)
        np.testing.assert_array_equal(arr.numpy(), data[::-1])
        empty = nd.empty((5,), "uint4", dev)
        assert empty.dtype == "uint4" and empty.nbytes == 3
        np.testing.assert_array_equal(empty.numpy(), np.zeros(5, np.uint8))


def test_int4_gemm_over_the_socket(server, tmp_path):
    env, path, args, inputs, want = _narrow_gemm(tmp_path)
    with env, rpc.connect(server.host, server.port, timeout=60) as remote:
        c = _call(remote, path, args, inputs)
        assert isinstance(c, rpc.RemoteNDArray)
        np.testing.assert_array_equal(c.numpy(), want)
