"""The TVM names upstream VTA benchmarks import, as they use them (``from vta import tvm`` ports).

Each test uses a name the way ``test_benchmark_topi_*.py`` does and checks what it gives with
plain Python/NumPy.
"""

from __future__ import annotations

import importlib
import pickle

import numpy as np
import pytest

import vta
from vta import tvm
from vta.tvm import autotvm, relay, te, topi
from vta.tvm.contrib import pickle_memoize


def test_import_tvm_topi_testing_style():
    mod = importlib.import_module("vta.tvm.topi.testing")
    assert mod is tvm.topi.testing
    for name in ("conv2d_nchw_python", "conv2d_transpose_nchw_python"):
        assert callable(getattr(tvm.topi.testing, name))
    from vta.tvm.topi.testing import conv2d_nchw_python  # the tutorial's spelling

    assert conv2d_nchw_python is tvm.topi.testing.conv2d_nchw_python


def test_topi_forwards_packed_helpers_and_names_missing_ones():
    assert topi.conv2d_packed is vta.topi.conv2d_packed
    with pytest.raises(AttributeError, match="no_such_operator"):
        _ = topi.no_such_operator


@pytest.mark.parametrize(
    "padding, want",
    [
        ((1, 1), (1, 1, 1, 1)),
        ((2, 0), (2, 0, 2, 0)),
        (3, (3, 3, 3, 3)),
        ((1,), (1, 1, 1, 1)),
        ((0, 1, 2, 3), (0, 1, 2, 3)),
    ],
)
def test_relay_get_pad_tuple2d(padding, want):
    assert relay.nn.get_pad_tuple2d(padding) == want


@pytest.mark.parametrize("bad", [(1, 2, 3), (-1, 0), "SAME", (1.5, 1)])
def test_relay_get_pad_tuple2d_rejects(bad):
    with pytest.raises(ValueError, match="padding"):
        relay.nn.get_pad_tuple2d(bad)


def test_tophub_context_is_a_context_manager_without_records(env):
    assert autotvm.tophub.DispatchContext.current() is None
    with autotvm.tophub.context(env.target) as ctx:
        assert autotvm.tophub.DispatchContext.current() is ctx
        assert ctx.targets == (env.target,) and ctx.records == {}
        assert ctx.query(env.target, ("conv2d_packed.vta",)) is None
        with autotvm.tophub.context([env.target, env.target_vta_cpu]) as inner:
            assert len(inner.targets) == 2
        assert autotvm.tophub.DispatchContext.current() is ctx
    assert autotvm.tophub.DispatchContext.current() is None
    with pytest.raises(FileNotFoundError, match="vta.log"):
        autotvm.tophub.context(env.target, extra_files=["vta.log"])


def test_target_is_a_context_manager(env):
    assert tvm.target.Target.current() is None
    target = env.target
    with target:
        assert tvm.target.Target.current() is target
        with env.target_vta_cpu as cpu:
            assert tvm.target.Target.current() is cpu
            assert "arm_cpu" in cpu.keys and cpu.kind.name == "llvm"
        assert tvm.target.Target.current() is target
    assert tvm.target.Target.current() is None
    with pytest.raises(ValueError, match="no target is current"):
        tvm.target.Target.current(allow_none=False)


def test_target_vta_cpu_keys(env):
    t = env.target_vta_cpu
    assert str(t) == f"llvm -keys=arm_cpu,cpu -device=arm_cpu -model={env.TARGET}"
    assert "vta" not in t.keys and "vta" in env.target.keys
    assert tvm.target.arm_cpu("pynq").model == "pynq"


def test_tag_scope_with_elemwise_tag():
    @tvm.te.tag_scope(tag=topi.tag.ELEMWISE)
    def clip_like(x):
        return te.compute(x.shape, lambda *i: tvm.te.max(x(*i), tvm.tir.const(0, x.dtype)), name="clipB")

    x = te.placeholder((2, 3), name="x", dtype="int32")
    assert clip_like(x).op.tag == "elemwise" == topi.tag.ELEMWISE
    assert topi.tag.is_broadcast(topi.tag.BROADCAST) and topi.tag.is_injective("injective")
    assert not topi.tag.is_broadcast("conv2d_dense")


def test_get_const_tuple_and_int():
    x = te.placeholder((2, 3, 4), name="x", dtype="int8")
    assert topi.utils.get_const_tuple(x.shape) == (2, 3, 4)
    assert topi.utils.get_const_int(tvm.tir.const(7, "int32") * 2) == 14
    with pytest.raises(ValueError, match="entry 1"):
        topi.utils.get_const_tuple((1, te.var("n")))


def test_broadcast_operators_shapes_tags_and_dtypes():
    a = te.placeholder((2, 3, 4, 4), name="a", dtype="int32")
    b = te.placeholder((2, 3, 1, 1), name="b", dtype="int32")
    s = topi.add(a, b)
    assert topi.utils.get_const_tuple(s.shape) == (2, 3, 4, 4) and s.op.tag == topi.tag.BROADCAST
    r = topi.right_shift(s, 8)
    assert r.op.tag == topi.tag.ELEMWISE and r.dtype == "int32"
    c = topi.cast(r, "int8")
    assert c.dtype == "int8" and c.op.tag == topi.tag.ELEMWISE
    with pytest.raises(ValueError, match="do not broadcast"):
        topi.add(a, te.placeholder((2, 2, 1, 1), name="bad", dtype="int32"))
    with pytest.raises(TypeError, match="dtypes"):
        topi.add(a, te.placeholder((2, 3, 1, 1), name="f", dtype="int8"))


def test_pickle_memoize_caches_by_arguments(tmp_path, monkeypatch):
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path))
    calls = []

    @pickle_memoize.memoize("vta.tests.upstream.memo")
    def get_ref_data(n):
        calls.append(n)
        return np.arange(n)

    np.testing.assert_array_equal(get_ref_data(3), np.arange(3))
    get_ref_data(3)
    get_ref_data(4)
    assert calls == [3, 4]
    assert not (tmp_path / "pickle_memoize" / "vta.tests.upstream.memo.pkl").exists()


def test_pickle_memoize_save_at_exit_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path))
    cache = pickle_memoize.Cache("vta.tests.upstream.saved", save_at_exit=True)
    cache.cache[(2,)] = "two"
    cache.dirty = True
    cache.save()
    with open(tmp_path / "pickle_memoize" / "vta.tests.upstream.saved.pkl", "rb") as fh:
        assert pickle.load(fh) == {(2,): "two"}
    again = pickle_memoize.Cache("vta.tests.upstream.saved", save_at_exit=True)
    assert again.cache == {(2,): "two"}
    with pytest.raises(ValueError, match="memoize key"):
        pickle_memoize.memoize("../escape")


def test_program_fpga_and_reconfig_runtime_are_no_ops_on_simulators(env):
    from vta import program_fpga, reconfig_runtime

    assert env.TARGET == "sim"
    assert program_fpga(None, bitstream=None) is None
    assert reconfig_runtime(None) is None


def test_program_fpga_on_a_board_says_why(env):
    from vta.env import Environment
    from vta.errors import RPCError

    with Environment({**env.cfg_dict, "TARGET": "pynq"}):
        with pytest.raises(RPCError, match="pynq.*no bitstream"):
            vta.program_fpga(None)
        with pytest.raises(RPCError, match="reconfig_runtime"):
            vta.reconfig_runtime(None)


def test_vta_top_is_reachable_after_import_vta():
    for name in ("conv2d_packed", "schedule_conv2d_packed", "dense_packed", "schedule_dense_packed",
                 "group_conv2d_packed", "schedule_group_conv2d_packed", "conv2d_transpose_packed",
                 "schedule_conv2d_transpose_packed"):
        assert callable(getattr(vta.top, name))
    with pytest.raises(AttributeError, match="no_such"):
        _ = vta.no_such


def test_vta_top_checks_upstream_arguments(env):
    data = te.placeholder((1, 1, 4, 4, env.BATCH, env.BLOCK_IN), name="data", dtype=env.inp_dtype)
    kernel = te.placeholder((1, 1, 3, 3, env.BLOCK_OUT, env.BLOCK_IN), name="kernel", dtype=env.wgt_dtype)
    with pytest.raises(ValueError, match="not packed"):
        vta.top.conv2d_packed(data, kernel, (1, 1), (1, 1, 1, 1), (1, 1), "NCHW", env.acc_dtype)
    with pytest.raises(ValueError, match="does not match"):
        vta.top.conv2d_packed(data, kernel, (1, 1), (1, 1, 1, 1), (1, 1), "NCHW7n3c", env.acc_dtype)
    res = vta.top.conv2d_packed(data, kernel, (1, 1), (1, 1, 1, 1), (1, 1),
                                "NCHW%dn%dc" % (env.BATCH, env.BLOCK_IN), env.acc_dtype)
    assert topi.utils.get_const_tuple(res.shape) == (1, 1, 4, 4, env.BATCH, env.BLOCK_OUT)
    assert res.op.tag == "conv2d_dense" and res.dtype == env.acc_dtype
    d = te.placeholder((1, 2, env.BATCH, env.BLOCK_IN), name="d", dtype=env.inp_dtype)
    w = te.placeholder((3, 2, env.BLOCK_OUT, env.BLOCK_IN), name="w", dtype=env.wgt_dtype)
    assert vta.top.dense_packed(d, w, None, env.acc_dtype).op.tag == "dense_pack"
    with pytest.raises(ValueError, match="bias"):
        vta.top.dense_packed(d, w, te.placeholder((3,), name="b", dtype="int32"), env.acc_dtype)
