"""Plain TE schedules built for the host CPU (``llvm``, ``c``, ``env.target_vta_cpu``) go through
the C code generator and run on ``cpu(0)`` arrays: the path of upstream's ``arm_cpu`` variants.

Every result is compared with a NumPy oracle written here.
"""

from __future__ import annotations

import numpy as np
import pytest

import vta
from vta import tvm
from vta.tvm import rpc, te, topi
from vta.tvm.contrib import utils

from . import oracles

pytestmark = pytest.mark.native


def _run_on_host(s, args, arrays, target, tmp_path, name="host_fn"):
    """Build ``s`` for ``target``, save/upload/load it as upstream does, run it; return the outputs."""
    mod = tvm.build(s, args, target=tvm.target.Target(target, host="llvm"), name=name)
    temp = utils.tempdir(custom_path=tmp_path / "build")
    mod.save(temp.relpath(f"{name}.o"))
    with rpc.LocalSession(workdir_parent=tmp_path) as remote:
        remote.upload(temp.relpath(f"{name}.o"))
        f = remote.load_module(f"{name}.o")
        dev = remote.device(str(target))
        nds = [tvm.nd.array(a, dev) for a in arrays]
        f(*nds)
        return [x.numpy() for x in nds]


@pytest.mark.parametrize("target", ["llvm", "c", "cpu_of_env"])
def test_broadcast_epilogue_on_the_host(env, tmp_path, target):
    target = env.target_vta_cpu if target == "cpu_of_env" else target
    shape, bshape = (2, 3, 4, 5), (2, 3, 1, 1)
    a = te.placeholder(shape, name="a", dtype="int32")
    b = te.placeholder(bshape, name="b", dtype="int32")
    with tvm.target.Target(target):
        r = topi.right_shift(a, 8)
        r = topi.add(r, b)
        r = topi.maximum(topi.minimum(r, 127), 0)
        r = topi.cast(r, "int8")
        s = te.create_schedule(r.op)
    rng = np.random.default_rng(0)
    a_np = rng.integers(-(1 << 16), 1 << 16, size=shape).astype(np.int32)
    b_np = rng.integers(-64, 64, size=bshape).astype(np.int32)
    out = _run_on_host(s, [a, b, r], [a_np, b_np, np.zeros(shape, np.int8)], target, tmp_path)[-1]
    np.testing.assert_array_equal(out, oracles.epilogue(a_np, 8, b_np, 8))


def test_dense_nopack_on_the_host(env, tmp_path):
    data = te.placeholder((5, 24), name="data", dtype="int8")
    kernel = te.placeholder((7, 24), name="kernel", dtype="int8")
    res = topi.x86.dense_nopack(data, kernel, None, "int32")
    res = topi.cast(topi.right_shift(res, 4), "int8")
    s = topi.x86.schedule_dense_nopack([res])
    rng = np.random.default_rng(1)
    d = rng.integers(-128, 128, size=(5, 24)).astype(np.int8)
    w = rng.integers(-128, 128, size=(7, 24)).astype(np.int8)
    out = _run_on_host(s, [data, kernel, res], [d, w, np.zeros((5, 7), np.int8)], env.target_vta_cpu, tmp_path)[-1]
    want = ((d.astype(np.int32) @ w.astype(np.int32).T) >> 4).astype(np.int8)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("groups, stride, pad", [(1, (1, 1), (1, 1, 1, 1)), (1, (2, 2), (0, 0, 0, 0)),
                                                 (2, (1, 1), (1, 1, 1, 1)), (4, (2, 2), (1, 0, 1, 0))])
def test_conv2d_and_group_conv2d_on_the_host(env, tmp_path, groups, stride, pad):
    n, c, h, w, f, k = 1, 8, 7, 6, 8, 3
    data = te.placeholder((n, c, h, w), name="data", dtype="int8")
    kernel = te.placeholder((f, c // groups, k, k), name="kernel", dtype="int8")
    with env.target_vta_cpu:
        if groups == 1:
            res = topi.arm_cpu.conv2d_nchw_spatial_pack(data, kernel, stride, pad, (1, 1), "int32")
            s = topi.arm_cpu.schedule_conv2d_nchw_spatial_pack([res])
        else:
            res = topi.nn.group_conv2d_nchw(data, kernel, stride, pad, (1, 1), groups, "int32")
            s = topi.generic.schedule_group_conv2d_nchw([res])
    rng = np.random.default_rng(groups)
    a = rng.integers(-128, 128, size=(n, c, h, w)).astype(np.int8)
    wt = rng.integers(-128, 128, size=(f, c // groups, k, k)).astype(np.int8)
    want = oracles.conv2d(a, wt, stride, pad, groups)
    out = _run_on_host(s, [data, kernel, res], [a, wt, np.zeros(want.shape, np.int32)], env.target_vta_cpu,
                       tmp_path)[-1]
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(tvm.topi.testing.conv2d_nchw_python(a.astype(np.int32), wt.astype(np.int32),
                                                                       stride, pad, groups), want)


@pytest.mark.parametrize("stride, pad, out_pad", [((2, 2), (1, 1), (0, 0)), ((1, 1), (0, 0), (0, 0)),
                                                  ((2, 2), (1, 1), (1, 1))])
def test_conv2d_transpose_on_the_host(env, tmp_path, stride, pad, out_pad):
    n, c, h, w, f, k = 1, 4, 4, 3, 6, 4
    data = te.placeholder((n, c, h, w), name="data", dtype="int8")
    kernel = te.placeholder((c, f, k, k), name="kernel", dtype="int8")
    with env.target_vta_cpu:
        res = topi.arm_cpu.conv2d_transpose_nchw(data, kernel, stride, relay_pad(pad), "int32", out_pad)
        s = topi.arm_cpu.schedule_conv2d_transpose_nchw([res])
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, size=(n, c, h, w)).astype(np.int8)
    wt = rng.integers(-128, 128, size=(c, f, k, k)).astype(np.int8)
    want = oracles.conv2d_transpose(a, wt, stride, pad, out_pad)
    out = _run_on_host(s, [data, kernel, res], [a, wt, np.zeros(want.shape, np.int32)], "llvm", tmp_path)[-1]
    np.testing.assert_array_equal(out, want)
    ref = tvm.topi.testing.conv2d_transpose_nchw_python(a.astype(np.int32), wt.astype(np.int32), stride,
                                                        relay_pad(pad), out_pad)
    np.testing.assert_array_equal(ref, want)


def relay_pad(pad):
    return tvm.relay.nn.get_pad_tuple2d(pad)


def test_host_function_refuses_accelerator_arrays(env, tmp_path):
    a = te.placeholder((4,), name="a", dtype="int32")
    b = te.compute((4,), lambda i: a[i] + 1, name="b")
    mod = tvm.build(te.create_schedule(b.op), [a, b], target="llvm", name="inc")
    with rpc.LocalSession(workdir_parent=tmp_path) as remote:
        path = tmp_path / "inc.o"
        mod.save(str(path))
        remote.upload(str(path))
        f = remote.load_module("inc.o")
        x = tvm.nd.array(np.arange(4, dtype=np.int32), remote.cpu(0))
        y = tvm.nd.empty((4,), "int32", remote.cpu(0))
        f(x, y)
        np.testing.assert_array_equal(y.numpy(), np.arange(4) + 1)
        with pytest.raises(Exception, match=r"must live on cpu \(device type 1\)"):
            f(tvm.nd.array(np.arange(4, dtype=np.int32), remote.ext_dev(0)), y)


def test_host_functions_keep_intermediates_on_the_heap(env):
    a = te.placeholder((3,), name="a", dtype="int8")
    b = te.compute((3,), lambda i: a[i] * 2, name="b")
    c = te.compute((3,), lambda i: b[i] + 1, name="c")
    src = tvm.build(te.create_schedule(c.op), [a, c], target=env.target_vta_cpu, name="dbl").get_source()
    assert "malloc(3)" in src and "VTABufferAlloc" not in src and "VTASynchronize" not in src


def test_vta_build_points_host_targets_to_tvm_build(env):
    a = te.placeholder((3,), name="a", dtype="int8")
    b = te.compute((3,), lambda i: a[i] * 2, name="b")
    with pytest.raises(ValueError, match="ext_dev' only.*tvm.build"):
        vta.build(te.create_schedule(b.op), [a, b], target=env.target_vta_cpu, name="dbl")


def test_accelerator_schedule_built_for_the_host_is_refused(env):
    from vta.errors import ScheduleError

    shape = (1, 2, env.BATCH, env.BLOCK_OUT)
    a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
    a_buf = te.compute(shape, lambda *i: a(*i), "a_buf")
    out = te.compute(shape, lambda *i: a_buf(*i).astype(env.inp_dtype), "out")
    s = te.create_schedule(out.op)
    s[a_buf].set_scope(env.acc_scope)
    with pytest.raises(ScheduleError, match="local.acc_buffer.*ext_dev"):
        tvm.build(s, [a, out], target="llvm", name="acc_on_host")


def test_emit_c_takes_only_the_two_device_types(env):
    from vta.build import lower_host
    from vta.codegen import CPU, EXT_DEV, CodegenError, emit_c

    a = te.placeholder((2,), name="a", dtype="int32")
    b = te.compute((2,), lambda i: a[i] + 1, name="b")
    func = lower_host(te.create_schedule(b.op), [a, b], name="inc")
    assert ", 1, &" in emit_c(func, "inc", CPU) and ", 12, &" in emit_c(func, "inc", EXT_DEV)
    with pytest.raises(CodegenError, match="device_type"):
        emit_c(func, "inc", device_type=5)
