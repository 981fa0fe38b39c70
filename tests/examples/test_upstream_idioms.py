"""Upstream VTA unit-test code with only its imports changed (reference 7.2 style).

The function bodies follow upstream ``test_vta_insn.py`` idioms: ``vta.testing.run``,
``with vta.build_config()``, ``te.compute(..., "name")`` with tensor ``.op.axis``,
``tvm.nd.empty(shape, device=, dtype=)``, ``remote.device(str(env.target))``,
``tvm.tir.const`` and ``tvm.te.max``; results are checked with NumPy.
"""

from __future__ import annotations

import numpy as np

from vta import tvm
from vta.tvm import te
from vta.tvm.contrib import utils
import vta
from vta.testing import simulator


def test_save_load_out_style(env):
    def _run(env, remote):
        n = 6
        shape = (n, n, env.BATCH, env.BLOCK_OUT)
        x = te.placeholder(shape, name="x", dtype=env.acc_dtype)
        x_buf = te.compute(shape, lambda *i: x(*i), "x_buf")
        y_buf = te.compute(shape, lambda *i: x_buf(*i) >> 0, "y_buf")  # a no-op kept on the ALU
        y = te.compute(shape, lambda *i: y_buf(*i).astype(env.inp_dtype), "y")
        s = te.create_schedule(y.op)
        s[x_buf].set_scope(env.acc_scope)
        s[x_buf].pragma(x_buf.op.axis[0], env.dma_copy)
        s[y_buf].set_scope(env.acc_scope)
        s[y_buf].pragma(y_buf.op.axis[0], env.alu)
        s[y].pragma(y.op.axis[0], env.dma_copy)
        with vta.build_config():
            m = vta.build(s, [x, y], tvm.target.Target("ext_dev", host=env.target_host))
        temp = utils.tempdir()
        m.save(temp.relpath("load_act.o"))
        remote.upload(temp.relpath("load_act.o"))
        f = remote.load_module("load_act.o")
        dev = remote.device(str(env.target))
        x_np = np.random.default_rng(0).integers(1, 10, size=shape).astype(x.dtype)
        x_nd = tvm.nd.array(x_np, dev)
        y_nd = tvm.nd.empty(x_np.shape, device=dev, dtype=y.dtype)
        simulator.clear_stats()
        f(x_nd, y_nd)
        np.testing.assert_equal(y_nd.numpy(), x_np.astype(y.dtype))
        stats = simulator.stats()
        assert stats["acc_load_nbytes"] == x_np.nbytes and stats["out_store_nbytes"] == x_np.size
        temp.remove()

    vta.testing.run(_run)


def test_relu_with_tir_const_style(env):
    def _run(env, remote):
        m = 8
        shape = (m, 1, env.BATCH, env.BLOCK_OUT)
        a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
        a_buf = te.compute(shape, lambda *i: a(*i), "a_buf")
        max_buf = te.compute(shape, lambda *i: tvm.te.max(a_buf(*i), tvm.tir.const(0, a_buf.dtype)), "max_buf")
        res = te.compute(shape, lambda *i: max_buf(*i).astype(env.inp_dtype), "res")
        s = te.create_schedule(res.op)
        for t in (a_buf, max_buf):
            s[t].set_scope(env.acc_scope)
        s[a_buf].pragma(a_buf.op.axis[0], env.dma_copy)
        s[max_buf].pragma(max_buf.op.axis[0], env.alu)
        s[res].pragma(res.op.axis[0], env.dma_copy)
        with vta.build_config():
            mod = vta.build(s, [a, res], env.target, target_host=env.target_host, name="relu")
        temp = utils.tempdir()
        mod.save(temp.relpath("relu.o"))
        remote.upload(temp.relpath("relu.o"))
        f = remote.load_module("relu.o")
        dev = remote.ext_dev(0)
        a_np = np.random.default_rng(1).integers(-100, 100, size=shape).astype(a.dtype)
        res_nd = tvm.nd.array(np.zeros(shape, dtype=res.dtype), dev)
        f(tvm.nd.array(a_np, dev), res_nd)
        tvm.testing.assert_allclose(res_nd, np.maximum(a_np, 0).astype(res.dtype))
        temp.remove()

    vta.testing.run(_run)
