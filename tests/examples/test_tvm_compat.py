"""``vta.tvm``: the TVM names upstream VTA code uses, their accepted forms and clear failures."""

from __future__ import annotations

import os

import numpy as np
import pytest

import vta
from vta import tvm
from vta.tvm import rpc, te
from vta.tvm.contrib import utils
from vta.tvm.target import Target


def _vadd_schedule(env, m=4):
    shape = (1, m, env.BATCH, env.BLOCK_OUT)
    A = te.placeholder(shape, name="A", dtype=env.acc_dtype)
    B = te.placeholder(shape, name="B", dtype=env.acc_dtype)
    A_buf = te.compute(shape, lambda *i: A(*i), "A_buf")
    B_buf = te.compute(shape, lambda *i: B(*i), "B_buf")
    C_buf = te.compute(shape, lambda *i: A_buf(*i) + B_buf(*i), "C_buf")
    C = te.compute(shape, lambda *i: C_buf(*i).astype(env.inp_dtype), "C")
    s = te.create_schedule(C.op)
    return s, (A, B, C), (A_buf, B_buf, C_buf), shape


def _vta_schedule(env):
    s, args, (A_buf, B_buf, C_buf), shape = _vadd_schedule(env)
    for t in (A_buf, B_buf, C_buf):
        s[t].set_scope(env.acc_scope)
    for t in (A_buf, B_buf, args[2]):
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    s[C_buf].pragma(s[C_buf].op.axis[0], env.alu)
    return s, list(args), shape


# ---------------------------------------------------------------------------- targets
def test_target_strings_round_trip(env):
    t = tvm.target.vta(model=env.MODEL)
    assert str(t) == f"ext_dev -device=vta -keys=vta,cpu -model={env.MODEL}"
    assert t.kind.name == "ext_dev" and t.keys == ("vta", "cpu") and t.model == env.MODEL
    assert Target(str(t)) == t
    assert str(env.target) == str(t)
    host = tvm.target.Target("ext_dev", host=env.target_host)
    assert str(host.kind) == "ext_dev" and str(host.host) == env.target_host
    assert Target("llvm -mtriple=armv7-none-linux-gnueabihf").attrs == {"mtriple": "armv7-none-linux-gnueabihf"}


@pytest.mark.parametrize("bad", ["cuda", "", "ext_dev model=x"])
def test_target_rejects_unknown_forms(bad):
    with pytest.raises(ValueError, match="target"):
        Target(bad)


# ---------------------------------------------------------------------------- lower/build
def test_tvm_lower_has_no_vta_calls_and_vta_lower_does(env):
    s, args, _ = _vta_schedule(env)
    plain = str(tvm.lower(s, args, simple_mode=True))
    lowered = str(vta.lower(s, args, simple_mode=True))
    assert "VTALoadBuffer2D" not in plain and "local.acc_buffer" in plain
    assert lowered.count("VTALoadBuffer2D") == 2 and "VTAStoreBuffer2D" in lowered


@pytest.mark.parametrize("form", ["target_object", "env_target_with_host", "string", "default"])
def test_build_accepts_the_tutorial_target_forms(env, tmp_path, form):
    s, args, shape = _vta_schedule(env)
    kwargs = {
        "target_object": dict(target=tvm.target.Target("ext_dev", host=env.target_host)),
        "env_target_with_host": dict(target=env.target, target_host=env.target_host),
        "string": dict(target="ext_dev", target_host="llvm"),
        "default": {},
    }[form]
    mod = tvm.build(s, args, name="vadd_form", **kwargs)
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, size=shape).astype(np.int32)
    b = rng.integers(-128, 128, size=shape).astype(np.int32)
    with rpc.LocalSession(workdir_parent=tmp_path) as remote:
        dev = remote.ext_dev(0)
        path = tmp_path / "vadd.o"
        mod.save(str(path))
        remote.upload(str(path))
        f = remote.load_module("vadd.o")
        arrays = [tvm.nd.array(a, dev), tvm.nd.array(b, dev), tvm.nd.empty(shape, "int8", dev)]
        f(*arrays)
        tvm.testing.assert_allclose(arrays[2], (a + b).astype(np.int8))
        for arr in arrays:
            arr.close()
    mod.close()


def test_vta_build_takes_a_target_object(env):
    s, args, _ = _vta_schedule(env)
    mod = vta.build(s, args, env.target, name="vadd_env_target", target_host=env.target_host)
    assert "int vadd_env_target(" in mod.get_source()
    mod.close()


@pytest.mark.parametrize("target", ["llvm", "c", Target("llvm")])
def test_build_rejects_host_only_targets(env, target):
    s, args, _ = _vta_schedule(env)
    with pytest.raises(ValueError, match="ext_dev"):
        tvm.build(s, args, target=target)


def test_build_needs_a_schedule_and_arguments(env):
    s, args, _ = _vta_schedule(env)
    with pytest.raises(TypeError, match="schedule"):
        tvm.build(tvm.lower(s, args), args)
    with pytest.raises(TypeError, match="argument tensors"):
        tvm.build(s)


# ---------------------------------------------------------------------------- nd, utils, testing
def test_nd_accepts_every_device_spelling(env):
    dev = tvm.ext_dev(0)
    x = np.arange(16, dtype=np.int32).reshape(1, 16)
    for arr in (tvm.nd.array(x, dev), tvm.nd.array(x, device=dev), tvm.nd.array(x, ctx=dev)):
        np.testing.assert_equal(arr.numpy(), x)
        np.testing.assert_equal(arr.asnumpy(), x)
        arr.close()
    e = tvm.nd.empty((2, 3), device=dev, dtype="int8")
    assert e.shape == (2, 3) and e.dtype == "int8"
    e.close()
    with pytest.raises(TypeError, match="once"):
        tvm.nd.array(x, dev, ctx=dev)


def test_tempdir_relpath_and_removal(tmp_path):
    temp = utils.tempdir()
    path = temp.relpath("vadd.o")
    with open(path, "wb") as fh:
        fh.write(b"x")
    assert temp.listdir() == ["vadd.o"] and os.path.dirname(path) == temp.temp_dir
    temp.remove()
    assert not os.path.exists(temp.temp_dir)
    with pytest.raises(ValueError, match="inside"):
        utils.tempdir(custom_path=tmp_path / "kept").relpath("../escape")
    assert (tmp_path / "kept").is_dir()


def test_assert_allclose_compares_shapes_and_values():
    tvm.testing.assert_allclose(np.ones(3), [1.0, 1.0, 1.0 + 1e-9])
    with pytest.raises(AssertionError, match="shapes differ"):
        tvm.testing.assert_allclose(np.ones(3), np.ones((1, 3)))
    with pytest.raises(AssertionError):
        tvm.testing.assert_allclose(np.ones(3), np.zeros(3))


# ---------------------------------------------------------------------------- te
def test_te_elementwise_max_min_and_tag_scope(env):
    x = te.placeholder((4,), name="x", dtype="int32")
    with te.tag_scope("elemwise"):
        y = te.compute((4,), lambda i: te.min(te.max(x[i], 0), tvm.tir.const(7, "int32")), name="y")
    z = te.compute((4,), lambda i: y[i] + 1, name="z")
    assert y.op.tag == "elemwise" and z.op.tag == ""
    assert "max(" in str(y.op.body).lower() and "min(" in str(y.op.body).lower()
    assert te.thread_axis("cthread").thread_tag == "cthread"


# ---------------------------------------------------------------------------- missing names
@pytest.mark.parametrize("namespace, name", [
    (tvm, "auto_scheduler"), (tvm.te, "hybrid"), (tvm.tir, "transform"), (tvm.nd, "from_dlpack"), (tvm.rpc, "tracker"),
    (tvm.runtime, "profiler_vm"), (tvm.testing, "parametrize_targets"),
])
def test_missing_names_raise_attribute_error_naming_them(namespace, name):
    with pytest.raises(AttributeError, match=repr(name)):
        getattr(namespace, name)
    assert not hasattr(namespace, name)


def test_topi_forwards_or_says_why():
    try:
        import vta.topi  # noqa: F401
    except ModuleNotFoundError:
        with pytest.raises(AttributeError, match="vta.topi"):
            _ = tvm.topi.nn.pad
        return
    assert callable(tvm.topi.nn.pad)
    with pytest.raises(AttributeError, match="no_such_operator"):
        _ = tvm.topi.no_such_operator


def test_vta_testing_reachable_after_import_vta():
    assert callable(vta.testing.simulator.stats)
